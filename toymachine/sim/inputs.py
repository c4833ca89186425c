"""No silent defaults: arrays a run read that nothing gave, and traces with no instruction.

An array read but never given (no ``.data``, ``--data`` or ``.array``) still takes its
deterministic random values (``sim.memory``) — useful for cost experiments — but the run says
so: ``unset_inputs`` returns one located ``DataError`` per such array, which the CLI prints as a
warning and which ``simulate(strict_inputs=True)`` (``toym run --strict``, ``toymachine.check``)
raises instead. The suggestion is a given array whose name differs only in case or by one edit.

A read that is surely a typo is an error in every mode (``misread_inputs``): the name differs from a
given array's only in case (``A`` where ``a`` is given), or by one edit where both names have at least
three characters (``scroes`` for ``scores``). Shorter names are not judged: every one- or two-letter
name is one edit from another (``a``, ``b``, ``x1``, ``x2`` are distinct arrays).

Called once, after the run, from ``sim.simulate``: nothing here is on the interpreter's path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["unset_inputs", "misread_inputs", "close_name", "empty_trace"]

import re

from ..errors import AsmError, DataError, Location, Opt

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


MISREAD_MIN_LENGTH = 3  # one edit apart is a typo only between names this long (a, b, x1, x2 are distinct)


def _surely_misread(name: str, guess: str) -> bool:
    return name.lower() == guess.lower() or min(len(name), len(guess)) >= MISREAD_MIN_LENGTH


def _unset(run: Run) -> list[tuple[str, str | None]]:
    """(name, the given array it is close to, or None) for each array read but never given, in order of first use."""
    arrays = run.memory.arrays
    given = [n for n, a in arrays.items() if a.given or a.fixed or a.fill is not None]
    return [(name, close_name(name, given)) for name in sorted(arrays, key=lambda n: run.used_arrays.get(n, 0))
            if arrays[name].randomised and not (arrays[name].given or arrays[name].fixed or arrays[name].fill is not None)]


def _where(run: Run, name: str) -> Location:
    line = run.used_arrays.get(name, 0)
    src = run.first_use_text.get(name) or (run.source(line) if line else None)
    col, length = _column(src, name)
    return Location(run.file, line, col, src, length)


def misread_inputs(run: Run) -> list[DataError]:
    """One located error per array read but never given whose name is surely a typo of a given one's."""
    return [DataError(f"array '{name}' is read but never given: did you mean '{guess}'?", loc=_where(run, name),
                      hint=(f"'{guess}' is given; read '{guess}', or give '{name}' with .data {name} = […], ",
                            Opt("data", "FILE"), f" or .array {name}[n]"))
            for name, guess in _unset(run) if guess is not None and _surely_misread(name, guess)]


def unset_inputs(run: Run, strict: bool = False) -> list[DataError]:
    """One located error per array read but never given (in order of first use) and not a typo
    (``misread_inputs`` has those); ``strict``: worded as the error ``--strict`` makes it."""
    out = []
    for name, guess in _unset(run):
        if guess is not None and _surely_misread(name, guess):
            continue
        message = (f"array '{name}' is read but never given (no .data, ", Opt("data"), " or .array)"
                   + (f": did you mean '{guess}'?" if guess else ""))
        give = (f"give it with .data {name} = […], ", Opt("data", "FILE"), f" or .array {name}[n]"
                + (f", or read '{guess}'" if guess else ""))
        hint = (*give, " (this is ", Opt("strict"), ": without it the array takes deterministic random values)") \
            if strict else (f"it holds deterministic random values (seed {run.memory.seed}); ", *give, "; ",
                            Opt("strict"), " makes this an error")
        out.append(DataError(message, loc=_where(run, name), hint=hint))
    return out


def empty_trace(file: str) -> AsmError:
    return AsmError("the trace has no instructions: there is nothing to run", loc=Location(file),
                    hint="write one instruction per line, e.g. LOAD x[0], R0 (lines starting with ; or # are "
                         "comments; .data/.array lines only declare arrays)")
