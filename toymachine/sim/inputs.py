"""No silent defaults: arrays a run read that nothing gave, and traces with no instruction.

An array read but never given (no ``.data``, ``--data`` or ``.array``) still takes its
deterministic random values (``sim.memory``) — useful for cost experiments — but the run says
so: ``unset_inputs`` returns one located ``DataError`` per such array, which the CLI prints as a
warning (``warning: array 'X' is read but never given … did you mean 'x'?``) and which
``simulate(strict_inputs=True)`` (``toym run --strict``, ``toymachine.check``) raises instead.
The suggestion is a given array whose name differs only in case or by one edit.

Called once, after the run, from ``sim.simulate``: nothing here is on the interpreter's path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["unset_inputs", "close_name", "empty_trace"]

import re

from ..errors import AsmError, DataError, Location

if TYPE_CHECKING:
    from .run import Run


def _one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one insertion, deletion, substitution or adjacent swap."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    if len(a) > len(b):
        a, b = b, a
    return any(b[:i] + b[i + 1:] == a for i in range(len(b)))


def close_name(name: str, candidates) -> str | None:
    """The candidate ``name`` was probably meant to be: same letters in another case first,
    then one edit away (case ignored). None if there is none, or more than one equally close."""
    cands = [c for c in candidates if c != name]
    same_case = [c for c in cands if c.lower() == name.lower()]
    if len(same_case) == 1:
        return same_case[0]
    near = sorted(c for c in cands if _one_edit(c.lower(), name.lower()))
    return near[0] if len(near) == 1 else None


def _column(src: str | None, name: str) -> tuple[int, int]:
    if src is None:
        return 0, 1
    m = re.search(r"(?<![\w.])" + re.escape(name) + r"\s*\[", src)
    return (m.start() + 1, len(name)) if m else (0, 1)


def unset_inputs(run: Run, strict: bool = False) -> list[DataError]:
    """One located error per array read but never given (in order of first use); ``strict``:
    worded as the error ``--strict`` makes it."""
    arrays = run.memory.arrays
    given = [n for n, a in arrays.items() if a.given or a.fixed or a.fill is not None]
    out = []
    for name in sorted(arrays, key=lambda n: run.used_arrays.get(n, 0)):
        a = arrays[name]
        if not a.randomised or a.given or a.fixed or a.fill is not None:
            continue
        line = run.used_arrays.get(name, 0)
        src = run.first_use_text.get(name) or (run.source(line) if line else None)
        col, length = _column(src, name)
        guess = close_name(name, given)
        message = f"array '{name}' is read but never given (no .data, --data or .array)"
        if guess:
            message += f": did you mean '{guess}'?"
        give = f"give it with .data {name} = […], --data FILE or .array {name}[n]" + \
            (f", or read '{guess}'" if guess else "")
        hint = (f"{give} (this is --strict: without it the array takes deterministic random values)" if strict else
                f"it holds deterministic random values (seed {run.memory.seed}); {give}; --strict makes this an error")
        out.append(DataError(message, loc=Location(run.file, line, col, src, length), hint=hint))
    return out


def empty_trace(file: str) -> AsmError:
    return AsmError("the trace has no instructions: there is nothing to run", loc=Location(file),
                    hint="write one instruction per line, e.g. LOAD x[0], R0 (lines starting with ; or # are "
                         "comments; .data/.array lines only declare arrays)")
