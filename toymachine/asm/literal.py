"""Nested list literals of numbers (``.data x = [[1, 2], [3, -inf]]``), parsed without eval."""

from __future__ import annotations

__all__ = ["parse_literal", "shape_of"]

import re

from ..errors import AsmError
from .lexer import make_loc, parse_number


def shape_of(values, file, line, text, col) -> tuple[int, ...]:
    def shape(v):
        if isinstance(v, list):
            if not v:
                raise AsmError("empty list in .data", loc=make_loc(file, line, text, col),
                               hint="every dimension needs at least one element")
            subs = [shape(x) for x in v]
            if any(s != subs[0] for s in subs):
                raise AsmError("ragged .data: rows have different lengths", loc=make_loc(file, line, text, col),
                               hint="every row of a nested list must have the same length")
            return (len(v),) + subs[0]
        return ()

    return shape(values)


_LIT_TOKEN = re.compile(r"\s*(?:(\[)|(\])|(,)|([+-]?(?:inf(?:inity)?|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))|(null))",
                        re.IGNORECASE | re.ASCII)
_MAX_DEPTH = 64  # numpy's most dimensions (limits.yaml_depth)


def parse_literal(text: str, *, file: str = "<input>", line: int = 0, source: str | None = None, col0: int = 1):
    """Parse a nested list literal of numbers (no eval): ``[[1, 2], [3, -inf]]``."""
    src = source if source is not None else text
    pos = 0

    def err(msg, at, hint="write a nested list of numbers, e.g. [[1, 2], [3, 4]]"):
        return AsmError(msg, loc=make_loc(file, line, src, col0 + at), hint=hint)

    def token():
        nonlocal pos
        m = _LIT_TOKEN.match(text, pos)
        if not m:
            rest = text[pos:].strip()
            if not rest:
                raise err("unexpected end of .data literal", len(text.rstrip()))
            at = pos + (len(text[pos:]) - len(text[pos:].lstrip()))
            raise err(f"unexpected '{rest.split()[0][:20]}' in .data literal", at)
        pos = m.end()
        return m

    def value(depth=1):
        start = pos
        m = token()
        if m.group(1):
            if depth > _MAX_DEPTH:
                raise err(f".data nested deeper than {_MAX_DEPTH} levels", m.start(1),
                          hint="a .data literal holds arrays of up to 64 dimensions")
            items = []
            # empty list?
            m2 = _LIT_TOKEN.match(text, pos)
            if m2 and m2.group(2):
                token()
                return items
            while True:
                items.append(value(depth + 1))
                m3 = token()
                if m3.group(2):
                    return items
                if not m3.group(3):
                    raise err("expected ',' or ']'", m3.start() + (len(m3.group(0)) - len(m3.group(0).lstrip())))
        if m.group(4):
            try:
                return float(parse_number(m.group(4)))
            except ValueError as exc:
                raise err(str(exc), m.start(4), hint="write a shorter number (numbers are float64)") from None
        at = m.start() + (len(m.group(0)) - len(m.group(0).lstrip()))
        raise err(f"unexpected '{m.group(0).strip()}' in .data literal", at if start >= 0 else 0)

    v = value()
    if text[pos:].strip():
        at = pos + (len(text[pos:]) - len(text[pos:].lstrip()))
        raise err(f"unexpected '{text[pos:].strip()[:20]}' after the literal", at)
    return v
