"""The simulator: ``simulate(Program, Machine, data) -> Result``.

``simulate`` sets a run up and builds its ``Result``; ``run`` holds a run's state; ``loop`` is
the interpreter loop; ``text`` streams a trace in chunks (``lines``: lines mode's cache, ``cut``:
template mode's cut); ``compiled`` is the one door to the compiled path (``compiler/``: the parts of
a run that repeat, as generated functions; ``docs/explanation/speed-layer.md``); ``engines/`` says
what each instruction does on each level of machine (``scalar`` words, ``tile`` tiles in SRAM);
``memory`` is DRAM/HBM (given, declared or deterministic random arrays); ``symbolic`` the
expressions of ``--symbolic``.
"""

from __future__ import annotations

__all__ = ["simulate", "DEFAULT_STEP_LIMIT"]

from .simulate import DEFAULT_STEP_LIMIT, simulate
