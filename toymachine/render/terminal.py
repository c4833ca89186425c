"""``--format table``: rich tables for a terminal, folded to its width.

Numbers never wrap: a numeric column is as wide as its widest number. A table wider than the
terminal is *folded*: its leading key columns (the step and instruction, a sweep's parameters)
are repeated and the other columns go into as many blocks as needed, each fitting the width
(``(columns 1–9 of 23)`` in the title). Text (an expression, an array) may wrap at spaces. With
no width (output to a file or a pipe) a table is as wide as its contents.
"""

from __future__ import annotations

__all__ = ["render_table", "terminal_width"]

import io
import shutil
import sys
from typing import TYPE_CHECKING

from .cells import is_numeric, text_of
from .report import Report, Section

if TYPE_CHECKING:
    from rich.console import JustifyMethod

_PAD = 3  # rich's SIMPLE_HEAVY box: one space either side and a separator


def terminal_width() -> int | None:
    """The terminal's width when standard output is one, else None (no limit)."""
    try:
        if sys.stdout.isatty():
            return shutil.get_terminal_size((100, 24)).columns
    except (AttributeError, ValueError, OSError):
        pass
    return None


def _natural(s: Section, texts: list[list[str]], i: int) -> int:
    cells = [len(r[i]) for r in texts]
    return max([max((len(w) for w in s.headers[i].split()), default=1)] + cells) + _PAD


def _groups(s: Section, texts: list[list[str]], width: int | None) -> list[list[int]]:
    ncol = len(s.headers)
    if width is None or ncol <= 1:
        return [list(range(ncol))]
    widths = [_natural(s, texts, i) for i in range(ncol)]
    if sum(widths) <= width:
        return [list(range(ncol))]
    keys = list(range(min(s.key_columns, ncol - 1)))
    room = width - sum(widths[i] for i in keys)
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i in range(len(keys), ncol):
        if current and used + widths[i] > room:
            groups.append(keys + current)
            current, used = [], 0
        current.append(i)
        used += widths[i]
    if current:
        groups.append(keys + current)
    return groups


def render_table(report: Report, width: int | None = None) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, width=width or 100_000, force_terminal=False, color_system=None, highlight=False,
                      emoji=False, markup=False)
    for s in report.sections:
        texts = [[text_of(c) for c in row] for row in s.rows]
        numeric = [bool(s.rows) and all(is_numeric(r[i]) or r[i] is None for r in s.rows)
                   for i in range(len(s.headers))]
        groups = _groups(s, texts, width)
        aligns = s.aligns()
        for g, cols in enumerate(groups):
            title = s.title
            if len(groups) > 1:
                first, last = cols[min(s.key_columns, len(cols) - 1)] + 1, cols[-1] + 1
                title += f" (columns {first}–{last} of {len(s.headers)})"
            console.print(Text(title))
            if g == 0:
                for line in s.preface:
                    console.print(Text(line))
            t = Table(box=box.SIMPLE_HEAVY, show_edge=False)
            for i in cols:
                justify: JustifyMethod = "right" if aligns[i] == "r" else "left"
                if numeric[i]:
                    t.add_column(s.headers[i], justify=justify, no_wrap=True,
                                 min_width=max((len(r[i]) for r in texts), default=1))
                else:
                    t.add_column(s.headers[i], justify=justify, overflow="fold")
            for row in texts:
                t.add_row(*(Text(row[i]) for i in cols))
            console.print(t)
    for n in report.notes:
        console.print(Text(n))
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"
