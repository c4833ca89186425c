"""The Python API the CLI is a thin layer over.

>>> from toymachine import parse, simulate
>>> r = simulate(parse(".data x = [1, 2]\\nLOAD x[0], R0\\nLOAD x[1], R1\\nADD R0, R1, R2\\nSTORE R2, y[0]"))
>>> r.memory["y"], r.cycles
([3.0], 5)
"""

from __future__ import annotations

__all__ = ["run_file"]

import sys

from .asm import Chunks, decode_source, open_error
from .machine import resolve_machine
from .sim.memory import load_data_file
from .result import Result
from .sim import simulate


def run_file(path: str, *, machine: str | None = None, registers: int | None = None, data: str | None = None,
             seed: int = 0, symbolic: bool = False, steps: bool | None = None, dtype: str | None = None,
             strict_numerics: bool = False) -> Result:
    """Run a trace file (``-`` = standard input), streaming its lines."""
    mach = resolve_machine(machine)
    arrays = load_data_file(data) if data else None
    kwargs = dict(registers=registers, seed=seed, symbolic=symbolic, steps=steps, dtype=dtype,
                  strict_numerics=strict_numerics)
    if path == "-":
        return simulate(Chunks(sys.stdin.buffer, "<stdin>"), mach, arrays, file="<stdin>", **kwargs)
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
            return simulate(fh, mach, arrays, file=path, **kwargs)
        except UnicodeDecodeError:
            with open(path, "rb") as raw:
                decode_source(raw.read(), path)  # raises with the line and column
            raise
