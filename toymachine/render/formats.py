"""Each output format draws a ``Report``'s tables (``render_report``); a run's JSON is its
contract (``render``). One module per format beside this one: ``terminal`` (table), ``latex``,
``csvout``, ``jsonout``; markdown and HTML are short enough to live here."""

from __future__ import annotations

__all__ = ["FORMATS", "render", "render_report", "dump_json", "summary_html"]

import dataclasses
import html
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import Namer, field_words
from .display import DISPLAY
from .jsonout import MEMORY_MAX, dump_json, result_json, select_fields

if TYPE_CHECKING:  # the tables' modules load with the first table drawn: a JSON run needs none
    from ..program import Program
    from ..result import Result
    from .report import Report

FORMATS = ("table", "markdown", "csv", "json", "latex", "html", "html-fragment")


def render(result: Result, fmt: str = "table", *, steps: bool = True, width: int | None = None,
           fields: Iterable[str] | None = None, memory: bool = True, memory_max: int | None = MEMORY_MAX,
           program: Program | None = None, name: Namer = field_words) -> str:
    """Render a run in ``fmt`` (one of ``FORMATS``). JSON: ``fields`` selects keys,
    ``memory_max`` summarises bigger arrays (None: whole), ``memory=False`` drops ``memory``.
    ``width``: the terminal's, for ``table`` (None: as wide as the contents). ``html`` is the
    step viewer (``render/page.py``); ``program``, the program that ran, gives it the source."""
    if fmt == "json":
        d = result_json(result, steps=steps, memory=memory, memory_max=memory_max, name=name)
        if fields is not None:
            d = select_fields(d, fields)
        return dump_json(d)
    if fmt == "html":  # the step viewer: one self-contained page
        from .page import page_html

        return page_html(result, steps=steps, program=program, summary=summary_html(result))
    from .report import report_of

    return render_report(report_of(result, steps=steps), fmt, width=width)


def summary_html(result: Result) -> str:
    """A run's summary tables (no steps) as an HTML fragment: the step viewer's appendix."""
    from .report import report_of

    return render_report(report_of(result, steps=False), "html-fragment")


def render_report(report: Report, fmt: str, *, width: int | None = None, latex_fit: bool = False) -> str:
    """Draw ``report`` in ``fmt``. Human formats (table, markdown, latex, html) list a section's
    constant columns above it (``Section.collapse``); CSV and JSON keep every column. ``latex_fit``:
    LaTeX tables scaled to fit a beamer frame (``render.latex``)."""
    from .cells import json_cell
    from .columns import collapse_constant

    if fmt in ("table", "markdown", "latex", "html", "html-fragment"):
        report = dataclasses.replace(report, sections=tuple(collapse_constant(s) for s in report.sections))
    if fmt == "table":
        from .terminal import render_table

        return render_table(report, width)
    if fmt == "markdown":
        return _markdown(report)
    if fmt == "csv":
        from .csvout import render_csv

        return render_csv(report)
    if fmt == "latex":
        from .latex import render_latex

        return render_latex(report, fit=latex_fit)
    if fmt == "html":  # a whole page (doctype, inline style) around the tables
        from .page import document_html

        return document_html(report, _html(report))
    if fmt == "html-fragment":  # the bare tables, for slides and notebooks
        return _html(report)
    if fmt == "json":
        return json.dumps({s.title.lower(): [dict(zip(s.json_keys(), (json_cell(c) for c in r))) for r in s.rows]
                           for s in report.sections}, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    raise ValueError(f"unknown format {fmt!r}")


def _md_escape(text: str) -> str:
    """Markdown text from any input: HTML is shown, never rendered (& < > as entities), a cell
    stays in its column (\\|) and on its line."""
    return html.escape(" ".join(text.splitlines()), quote=False).replace("|", "\\|")


def _md_code(text: str) -> str:
    """An instruction as a code span (its text is literal there); one holding a backtick, which
    would end the span, is escaped text instead."""
    if "`" in text:
        return _md_escape(text)
    return "`" + " ".join(text.splitlines()).replace("|", "\\|") + "`"


def _markdown(report: Report) -> str:
    from .cells import Code, text_of

    out = []
    for s in report.sections:
        out.append(f"### {_md_escape(s.title)}\n")
        for line in s.preface:
            out.append(_md_escape(line) + "\n")
        out.append("| " + " | ".join(_md_escape(h) for h in s.headers) + " |")
        out.append("|" + "|".join("---:" if a == "r" else "---" for a in s.aligns()) + "|")
        for row in s.rows:
            out.append("| " + " | ".join(_md_code(c.text) if isinstance(c, Code) and c.md and c.text else
                                         _md_escape(text_of(c)) for c in row) + " |")
        out.append("")
    for n in report.notes:
        out.append(f"_{_md_escape(n)}_\n")
    return "\n".join(out).rstrip("\n") + "\n"


def _html(report: Report) -> str:
    import html

    from .cells import Code, text_of

    out = ['<div class="toym-report">']
    for s in report.sections:
        for line in s.preface:
            out.append(f"<p>{html.escape(line)}</p>")
        out.append(f"<table>\n<caption>{html.escape(s.title)}</caption>")
        out.append("<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in s.headers) + "</tr></thead>")
        out.append("<tbody>")
        aligns = s.aligns()
        for row in s.rows:
            cells = []
            for i, c in enumerate(row):
                style = ' style="text-align:right"' if aligns[i] == "r" else ""
                text = html.escape(text_of(c))
                if isinstance(c, Code):
                    text = f"<code>{text}</code>"
                cells.append(f"<td{style}>{text}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</tbody>\n</table>")
    for n in report.notes:
        out.append(f"<p>{html.escape(n)}</p>")
    out.append("</div>")
    return "\n".join(out) + "\n"


DISPLAY.update({"text/html": lambda report: render_report(report, "html-fragment"),  # Report's Jupyter reprs
                "text/markdown": lambda report: render_report(report, "markdown")})
