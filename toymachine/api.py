"""The Python API the CLI is a thin layer over.

>>> from toymachine import parse, simulate
>>> r = simulate(parse(".data x = [1, 2]\\nLOAD x[0], R0\\nLOAD x[1], R1\\nADD R0, R1, R2\\nSTORE R2, y[0]"))
>>> r.memory["y"], r.cycles
([3.0], 5)
"""

from __future__ import annotations

__all__ = ["run_file"]

import os
import sys
from typing import Any, Callable, Iterable, Iterator

from .asm import Chunks, binary_chunks, decode_source, open_error, text_chunks
from .errors import Location
from .limits import LIMITS
from .machine import Machine, resolve_machine
from .sim.datafile import load_data
from .result import Result
from .sim import simulate


def run_file(path: str, *, machine: str | Machine | None = None, registers: int | None = None,
             data: str | dict | None = None,
             seed: int = 0, symbolic: bool = False, steps: bool | None = None, dtype: str | None = None,
             strict_numerics: bool = False, strict_inputs: bool = False,
             progress: Callable[[int, int], None] | None = None, step_limit: int | None = None) -> Result:
    """Run a trace file (``-`` = standard input), streaming its lines.

    ``strict_inputs``: an array read but never given is an error (``DataError``), not a
    warning in ``Result.warnings``. ``progress(done, total)`` is called as the file is read
    (bytes of the file; for standard input characters, total 0). ``steps=None`` keeps the step
    rows of runs of at most ``step_limit`` steps (default: the simulator's, 200). ``machine`` may
    be a ``Machine`` and ``data`` the arrays themselves (``toym run --problem``: the exercise's)."""
    mach = machine if isinstance(machine, Machine) else resolve_machine(machine)
    arrays: dict | None
    if isinstance(data, dict):
        arrays, data_warns = data, []
    else:
        arrays, data_warns = load_data(data) if data else (None, [])
    if data_warns and strict_inputs:
        raise data_warns[0]
    kwargs: dict[str, Any] = dict(registers=registers, seed=seed, symbolic=symbolic, steps=steps, dtype=dtype,
                  strict_numerics=strict_numerics, strict_inputs=strict_inputs)
    if step_limit is not None:
        kwargs["step_limit"] = step_limit
    if path == "-":
        chunks = binary_chunks(sys.stdin.buffer, "<stdin>")
        return _with(simulate(Chunks(_counted(chunks, None, 0, progress) if progress else chunks), mach, arrays,
                              file="<stdin>", **kwargs), data_warns)
    try:
        with open(path, "rb") as probe:
            head = probe.read(8192)
        if b"\x00" in head:
            decode_source(head, path)  # raises: a binary file
        fh = open(path, encoding="utf-8", newline=None)
    except OSError as exc:
        raise open_error(path, exc) from None
    with fh:
        try:
            size = os.path.getsize(path)
            LIMITS["trace_bytes"].check(size, f"trace {path}", loc=Location(path))
            chunks = text_chunks(fh)
            if progress:
                chunks = _counted(chunks, getattr(fh, "buffer", None), size, progress)
            return _with(simulate(Chunks(chunks), mach, arrays, file=path, **kwargs), data_warns)
        except UnicodeDecodeError:
            with open(path, "rb") as raw:
                decode_source(raw.read(), path)  # raises with the line and column
            raise


def _with(result: Result, warnings: list) -> Result:
    """``result`` with the data file's warnings first."""
    if not warnings:
        return result
    import dataclasses

    return dataclasses.replace(result, warnings=tuple(warnings) + tuple(result.warnings))


def _counted(chunks: Iterable[str], raw, total: int, progress: Callable[[int, int], None]) -> Iterator[str]:
    """``chunks`` again, calling ``progress(done, total)`` after each — bytes of a file read so far
    (``raw``: its binary buffer; total: its size), or characters of a stream (total 0: unknown)."""
    done = 0
    for chunk in chunks:
        yield chunk
        done = min(raw.tell(), total) if raw is not None else done + len(chunk)
        progress(done, total)
    progress(total or done, total)
