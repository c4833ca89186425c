"""The door between the interpreter loop and the compiled path.

Every run can be done by the plain interpreter loop alone (``sim.loop.execute``: one dispatch per
instruction, the engines' closures for everything but the scalar kinds). The compiled path —
template blocks (``sim.blocks``, ``sim.tile_blocks``, ``sim.tile_batch``), a generated program's
blocks (``sim.program_blocks``) and lines mode's pieces (``sim.line_blocks``) — only makes the same
run faster. Each of its entry points reads ``ENABLED`` first and, where it is False, declines, and
the loop runs the instructions: ``ENABLED = False`` is the loop-only simulator the agreement tests
hold the compiled path equal to (``docs/explanation/speed-layer.md``).
"""

from __future__ import annotations

__all__ = ["ENABLED"]

# False: every instruction runs in the interpreter loop. True: the compiled path may run a chunk
# (it still declines what it cannot run exactly).
ENABLED = True
