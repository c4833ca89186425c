"""``--format csv``: every section of a report in one rectangular CSV.

The first column, ``table``, names the section each row belongs to (``Steps``, ``Summary``,
``Instructions``, ``Memory``; ``Sweep``; ``Numerics`` …); the other columns are the union of
the sections' headers in order of first appearance, each row filling its own section's columns
and leaving the rest empty — so ``csv.DictReader`` (or pandas: ``df[df.table == "Summary"]``)
reads any of them. Numeric cells are bare numbers to significant digits; a quantity with units
(``147456 words (294912 B)``) gives one row per unit, with the unit in a ``Unit`` column beside
its value (``Value``, ``Unit``). A text cell that a spreadsheet would run as a formula (it starts
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return: OWASP's rule) gets a leading ``'``;
numbers (``-1.5``) are left as they are.
"""

from __future__ import annotations

__all__ = ["render_csv", "inert"]

import csv
import io
from collections.abc import Sequence

from .cells import Qty, csv_value, sig
from .report import Report, Section


def _section_rows(s: Section) -> tuple[list[str], list[list[str]]]:
    """The section's CSV headers and rows: a column holding quantities gets a unit column."""
    qty_cols = [i for i in range(len(s.headers)) if any(isinstance(r[i], Qty) for r in s.rows)]
    headers: list[str] = []
    for i, h in enumerate(s.headers):
        headers.append(h)
        if i in qty_cols:
            headers.append("Unit" if h == "Value" else f"{h} unit")
    rows: list[list[str]] = []
    for r in s.rows:
        views: list[Sequence[tuple[str, ...]]] = []  # per column: its (value[, unit]) views; a multi-unit quantity has several
        for i, cell in enumerate(r):
            if i not in qty_cols:
                views.append([(csv_value(cell),)])
            elif isinstance(cell, Qty):
                views.append([(sig(cell.value, cell.digits), cell.unit)] +
                             [(sig(v, cell.digits), u) for v, u in cell.also])
            else:
                views.append([(csv_value(cell), "")])
        for k in range(max(len(v) for v in views)):
            rows.append([x for v in views for x in v[min(k, len(v) - 1)]])
    return headers, rows


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def inert(value) -> str:
    """A CSV cell no spreadsheet runs: text starting with = + - @ tab CR is prefixed with ``'``."""
    text = value if isinstance(value, str) else str(value)
    if text.startswith(_FORMULA):
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


def render_csv(report: Report) -> str:
    parts = [_section_rows(s) for s in report.sections]
    columns: list[str] = []
    for headers, _ in parts:
        for h in headers:
            if h not in columns:
                columns.append(h)
    index = {h: i for i, h in enumerate(columns)}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([inert(c) for c in ["table"] + columns])
    for s, (headers, rows) in zip(report.sections, parts):
        for row in rows:
            out = [""] * len(columns)
            for h, v in zip(headers, row):
                out[index[h]] = v
            w.writerow([inert(c) for c in [s.title] + out])
    return buf.getvalue()
