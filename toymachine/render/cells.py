"""What a ``Report`` cell can hold, and its text in each kind of format.

A cell is plain text (``str``), a number (``int``, ``float``, ``Num``), a quantity with units
(``Qty``: ``147456 words (294912 B)``), an instruction (``Code``), a symbolic expression
(``Sym``) or an array's contents (``Arr``). Every human format (table, markdown, csv, latex,
html) shows numbers to significant digits (``sig``); JSON (``json_cell``) keeps them whole.
Formats ask this module for a cell's text, so one number prints the same everywhere.
"""

from __future__ import annotations

__all__ = ["Num", "Qty", "Code", "Sym", "Arr", "sig", "text_of", "json_cell", "is_numeric", "csv_value",
           "MAX_SHOWN", "EDGE"]

import math
from dataclasses import dataclass
from typing import Any

DIGITS = 6  # significant digits of a float in every human format


def sig(v: Any, digits: int = DIGITS) -> str:
    """A number as short, stable text: integers whole, floats to ``digits`` significant
    digits (``27521.3``, ``1.5e-07``), ``inf``/``-inf``/``nan`` by name."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if abs(v) < 1e15 and (v == int(v) or abs(v) >= 10 ** digits):
        return str(round(v))  # whole, or too big for a fraction to matter: 12345678.5 → 12345678 (no 1.23457e+07)
    return f"{v:.{digits}g}"


@dataclass(frozen=True)
class Num:
    """A number shown to ``digits`` significant digits."""

    value: float
    digits: int = DIGITS


@dataclass(frozen=True)
class Qty:
    """A number with its unit, and further views of it: ``Qty(147456, "words", ((294912, "B"),))``
    prints ``147456 words (294912 B)``; CSV gives one row per (value, unit)."""

    value: float
    unit: str = ""
    also: tuple[tuple[float, str], ...] = ()
    note: str = ""  # trailing text, e.g. "of 116736 (18%)"
    digits: int = DIGITS


@dataclass(frozen=True)
class Code:
    """An instruction or a flag: monospace in LaTeX and HTML (and in markdown with ``md``)."""

    text: str
    md: bool = False  # markdown: `text` (a flag in the README); instructions stay plain


@dataclass(frozen=True)
class Sym:
    """A symbolic value (``sim.symbolic.Expr``), abbreviated to ``limit`` characters by
    whole terms (``render.expr``); ``namer`` names whole expressions (c₀₀, m)."""

    expr: Any
    namer: Any = None
    limit: int = 0


MAX_SHOWN = 64  # arrays with more elements are summarised in tables (JSON: see render.jsonout)
EDGE = 3  # items shown at each end of a summarised dimension
TILE_CELL_MAX = 16  # tiles with at most this many elements show their values in table cells
TILE_DIGITS = 3  # …to this many significant digits


@dataclass(frozen=True)
class Arr:
    """An array's contents (nested lists of numbers, expressions or None = never written)."""

    values: Any
    symbolic: bool = False

    def count(self) -> int:
        return _count(self.values)

    def shape(self) -> tuple[int, ...]:
        return _shape(self.values)


def _count(values) -> int:
    return sum(_count(v) for v in values) if isinstance(values, list) else 1


def _shape(values) -> tuple[int, ...]:
    return (len(values),) + _shape(values[0]) if isinstance(values, list) and values else ()


def unit_for(value: float, unit: str) -> str:
    """The unit as text beside ``value``: singular for exactly 1 (1 word, 1 cycle)."""
    if value == 1 and len(unit) > 2 and unit.endswith("s"):
        return unit[:-1]
    return unit


def is_numeric(cell: Any) -> bool:
    return isinstance(cell, (int, float, Num, Qty)) and not isinstance(cell, bool)


def text_of(cell: Any) -> str:
    """A cell as text (table, markdown, html)."""
    if cell is None:
        return ""
    if isinstance(cell, str):
        return cell
    if isinstance(cell, (bool, int, float)):
        return sig(cell)
    if isinstance(cell, Num):
        return sig(cell.value, cell.digits)
    if isinstance(cell, Qty):
        out = sig(cell.value, cell.digits) + (f" {unit_for(cell.value, cell.unit)}" if cell.unit else "")
        if cell.also:
            out += " (" + ", ".join(f"{sig(v, cell.digits)} {u}".rstrip() for v, u in cell.also) + ")"
        return out + (f" {cell.note}" if cell.note else "")
    if isinstance(cell, Code):
        return cell.text
    if isinstance(cell, Sym):
        from .expr import expr_text

        return expr_text(cell.expr, cell.namer, cell.limit)
    if isinstance(cell, Arr):
        return array_text(cell.values)
    if hasattr(cell, "shape"):  # a tile (ndarray)
        return tile_text(cell)
    return str(cell)


def tile_text(t) -> str:
    """A tile in a table cell: its values, rounded (``[[0.837, -0.144], [1.63, 0.498]]``), when it
    has at most ``TILE_CELL_MAX`` elements (seed 001's walk: 3 × 4 blocks); bigger ones by shape,
    ``tile(64, 64)`` (the step viewer shows any tile's values on demand)."""
    shape = tuple(int(x) for x in t.shape)
    if 0 < t.size <= TILE_CELL_MAX and len(shape) == 2:
        return _nested(t.tolist(), lambda x: sig(x, TILE_DIGITS), False)
    return f"tile{shape}"


def value_text(v: Any) -> str:
    """One element of an array or register: a number, an expression, a tile."""
    if v is None:
        return "·"
    if isinstance(v, (int, float)):
        return sig(v)
    if hasattr(v, "shape"):
        return tile_text(v)
    if hasattr(v, "op"):  # an Expr: memory shows it whole
        from .expr import expr_text

        return expr_text(v, None, 0)
    return str(v)


def array_text(values, leaf=value_text) -> str:
    """Nested lists as text; big arrays as ``(1024×64) [[…, …], …]`` with edge items only."""
    if _count(values) > MAX_SHOWN:
        dims = "×".join(str(n) for n in _shape(values))
        return f"({dims}) " + _nested(values, leaf, True)
    return _nested(values, leaf, False)


def _nested(values, leaf, summarise: bool, ellipsis: str = "…") -> str:
    if isinstance(values, list):
        if summarise and len(values) > 2 * EDGE:
            items = [_nested(v, leaf, True, ellipsis) for v in values[:EDGE]] + [ellipsis] + \
                    [_nested(v, leaf, True, ellipsis) for v in values[-EDGE:]]
        else:
            items = [_nested(v, leaf, summarise, ellipsis) for v in values]
        return "[" + ", ".join(items) + "]"
    return leaf(values)


def nested_items(values, leaf, ellipsis: str) -> str:
    """``array_text`` with another leaf renderer and ellipsis (LaTeX uses it)."""
    if _count(values) > MAX_SHOWN:
        return _nested(values, leaf, True, ellipsis)
    return _nested(values, leaf, False, ellipsis)


def csv_value(cell: Any) -> str:
    """A cell's CSV text: numbers bare (significant digits), everything else as text."""
    if isinstance(cell, Qty):
        return sig(cell.value, cell.digits)
    return text_of(cell)


def json_cell(cell: Any):
    """A cell as JSON: numbers whole (non-finite as strings), quantities as their value."""
    from ..result import json_value

    if isinstance(cell, Num):
        return json_value(float(cell.value))
    if isinstance(cell, Qty):
        return json_value(cell.value)
    if isinstance(cell, (Code, Sym, Arr)):
        return text_of(cell)
    if isinstance(cell, (bool, str)) or cell is None:
        return cell
    if isinstance(cell, (int, float)):
        return json_value(cell)
    return text_of(cell)
