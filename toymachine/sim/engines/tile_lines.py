"""Text mode's fast path for tile LOAD/STORE lines: ``LOAD Q[12:14, :], T0`` /
``STORE T1, O[12:14, 0:4]`` read by one regular expression instead of the general parser.

A trace whose tile addresses are all new (every block line a first sight) spends most of its
time parsing them; here a canonical line — upper-case mnemonic, one ``[...]`` of literal indices
and ``start:stop`` spans, a canonical ``T<n>`` register, no comment — becomes the same ``Instr``
the parser builds and is compiled by the same engine (``engines.compile_instr``). Anything else (lower case,
``.T``, ``a[0][1:2]`` brackets, an index at or past ``limits.array_elements``, a malformed slice)
returns None and takes the general path, which reports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["compile_tile_line"]

import re

from ...limits import LIMITS
from ...program import Instr, Mem, Reg, Span
from . import tile

if TYPE_CHECKING:
    from ..run import Run

_T = r"(T(?:0|[1-9][0-9]{0,3}))"
_ADDR = r"([A-Za-z_][A-Za-z0-9_]*)\[([0-9:, ]+)\]"
_NUM = "([0-9]{1,7})?"
_TWO_SPANS = re.compile(rf"{_NUM}:{_NUM}, ?{_NUM}:{_NUM}\Z")  # the common case: Q[12:14, :]
_LINE = re.compile(rf"[ \t]*(?:LOAD[ \t]+{_ADDR},[ \t]*{_T}|STORE[ \t]+{_T},[ \t]*{_ADDR})[ \t]*\Z")


def _items(inner: str, cap: int) -> tuple | None:
    """The index items of ``inner`` (the text between the brackets), as the parser reads them."""
    items: list = []
    for piece in inner.split(","):
        p = piece.strip()
        if ":" in p:
            a, _, b = p.partition(":")
            a, b = a.strip(), b.strip()
            if (a and not (a.isdigit() and len(a) <= 7)) or (b and not (b.isdigit() and len(b) <= 7)):
                return None
            start = int(a) if a else None
            stop = int(b) if b else None
            if (start is not None and start >= cap) or (stop is not None and stop >= cap):
                return None
            items.append(Span(start, stop))
        elif p.isdigit() and len(p) <= 7 and int(p) < cap:
            items.append(int(p))
        else:
            return None
    return tuple(items)


def compile_tile_line(run: Run, n: int, text: str):
    """The code of a canonical tile LOAD/STORE line, or None (the general path compiles it)."""
    m = _LINE.match(text)
    if m is None or ":" not in text:
        return None
    name, inner, reg, sreg, sname, sinner = m.groups()
    cap = run.__dict__.get("tile_line_cap")
    if cap is None:  # the limit in force, read once a run
        cap = run.tile_line_cap = LIMITS["array_elements"].value()
    two = _TWO_SPANS.match(inner if name is not None else sinner)
    if two is not None:
        a, b, c, d = [None if x is None else int(x) for x in two.groups()]
        if any(x is not None and x >= cap for x in (a, b, c, d)):
            return None
        items = (Span(a, b), Span(c, d))
    else:
        items = _items(inner if name is not None else sinner, cap)
    if items is None:
        return None
    if name is not None:
        ins = Instr("LOAD", (Mem(name, items), Reg(reg)), n)
    else:
        ins = Instr("STORE", (Reg(sreg), Mem(sname, items)), n)
    return tile.compile(run, ins, n, text.strip())  # the engine engines.compile_instr picks (tile claims a T register)
