"""Each output format draws a ``Report``'s tables."""

from __future__ import annotations

__all__ = ["FORMATS", "render", "render_report"]

import csv
import html
import io
import json
import re

from ..result import Result
from .report import Report, report_of

FORMATS = ("table", "markdown", "csv", "json", "latex", "html")


def render(result: Result, fmt: str = "table", *, steps: bool = True) -> str:
    """Render a run in ``fmt`` (one of ``FORMATS``)."""
    if fmt == "json":
        return dump_json(result.to_dict(steps=steps))
    return render_report(report_of(result, steps=steps), fmt)


def _compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def dump_json(obj: dict) -> str:
    """One key per line at the top level, and one entry per line inside ``memory``,
    ``registers`` and ``steps``; everything below that compact. (json's ``indent`` turns
    off its C encoder, which made a run with a million-element array spend seconds here.)"""
    lines = ["{"]
    items = list(obj.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if key in ("memory", "registers", "steps") and value:
            if isinstance(value, dict):
                entries = [f"    {_compact(k)}: {_compact(v)}" for k, v in value.items()]
                lines += [f"  {_compact(key)}: {{", ",\n".join(entries), f"  }}{comma}"]
            else:
                lines += [f"  {_compact(key)}: [", ",\n".join("    " + _compact(v) for v in value), f"  ]{comma}"]
        else:
            lines.append(f"  {_compact(key)}: {_compact(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_report(report: Report, fmt: str) -> str:
    if fmt == "table":
        return _terminal(report)
    if fmt == "markdown":
        return _markdown(report)
    if fmt == "csv":
        return _csv(report)
    if fmt == "latex":
        return _latex(report)
    if fmt == "html":
        return _html(report)
    if fmt == "json":
        return json.dumps({s.title.lower(): [dict(zip(s.headers, r)) for r in s.rows] for s in report.sections},
                          indent=2, ensure_ascii=False) + "\n"
    raise ValueError(f"unknown format {fmt!r}")


def _cell(v) -> str:
    return "" if v is None else str(v)


def _terminal(report: Report) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False, color_system=None, highlight=False)
    for s in report.sections:
        t = Table(title=s.title, box=box.SIMPLE_HEAVY, title_justify="left", show_edge=False)
        for i, h in enumerate(s.headers):
            align = s.align[i] if i < len(s.align) else "l"
            t.add_column(h, justify="right" if align == "r" else "left", overflow="fold")
        for row in s.rows:
            t.add_row(*(Text(_cell(c)) for c in row))
        console.print(t)
    for n in report.notes:
        console.print(Text(n))
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _markdown(report: Report) -> str:
    out = []
    for s in report.sections:
        out.append(f"### {s.title}\n")
        out.append("| " + " | ".join(_md_escape(h) for h in s.headers) + " |")
        aligns = [(s.align[i] if i < len(s.align) else "l") for i in range(len(s.headers))]
        out.append("|" + "|".join("---:" if a == "r" else "---" for a in aligns) + "|")
        for row in s.rows:
            out.append("| " + " | ".join(_md_escape(_cell(c)) for c in row) + " |")
        out.append("")
    for n in report.notes:
        out.append(f"_{n}_\n")
    return "\n".join(out).rstrip("\n") + "\n"


def _csv(report: Report) -> str:
    """The first section as CSV (the step table when steps are shown, else the summary)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    s = report.sections[0]
    w.writerow(s.headers)
    for row in s.rows:
        w.writerow([_cell(c) for c in row])
    return buf.getvalue()


_SUBS = {c: str(i) for i, c in enumerate("₀₁₂₃₄₅₆₇₈₉")}
_TEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                "~": r"\textasciitilde{}", "^": r"\^{}", "\\": r"\textbackslash{}"}


def _tex_text(text: str) -> str:
    return "".join(_TEX_SPECIAL.get(c, c) for c in text)


def _tex_math(text: str) -> str:
    """A value cell in math mode: subscripts, e^(...), products, the minus sign."""
    if not text:
        return ""
    if re.fullmatch(r"-?[\d.]+(e[+-]?\d+)?|-?inf|nan", text):
        return f"${text}$" if text not in ("inf", "-inf", "nan") else {"inf": r"$\infty$", "-inf": r"$-\infty$", "nan": r"\textsc{nan}"}[text]
    t = re.sub(r"([₀-₉,]+)", lambda m: "_{" + "".join(_SUBS.get(c, c) for c in m.group(1)) + "}", text)
    t = t.replace("−", "-").replace("·", r"\,").replace("…", r"\dots ")
    t = re.sub(r"e\^\(", r"e^{(", t)
    # close e^{( ... ) groups
    out, depth_stack = [], []
    i = 0
    while i < len(t):
        if t.startswith("e^{(", i):
            out.append("e^{")
            depth_stack.append(0)
            i += 4
            continue
        c = t[i]
        if depth_stack:
            if c == "(":
                depth_stack[-1] += 1
            elif c == ")":
                if depth_stack[-1] == 0:
                    depth_stack.pop()
                    out.append("}")
                    i += 1
                    continue
                depth_stack[-1] -= 1
        out.append(c)
        i += 1
    t = "".join(out).replace("max(", r"\max(")
    t = re.sub(r"e\^([a-zA-Z])(_\{\d+\})?", lambda m: "e^{" + m.group(1) + (m.group(2) or "") + "}", t)
    return f"${t}$"


def _latex(report: Report) -> str:
    out = []
    for s in report.sections:
        cols = "".join("r" if (s.align[i] if i < len(s.align) else "l") == "r" else "l" for i in range(len(s.headers)))
        out.append(f"% {s.title}")
        out.append(f"\\begin{{tabular}}{{{cols}}}")
        out.append("\\hline")
        out.append(" & ".join(_tex_text(h) for h in s.headers) + r" \\")
        out.append("\\hline")
        math_cols = set(range(2, len(s.headers))) if s.title == "Steps" else set()
        for row in s.rows:
            cells = [(_tex_math(_cell(c)) if i in math_cols else _tex_text(_cell(c))) for i, c in enumerate(row)]
            if s.title == "Steps":
                cells[1] = r"\texttt{" + cells[1] + "}"
            out.append(" & ".join(cells) + r" \\")
        out.append("\\hline")
        out.append("\\end{tabular}")
        out.append("")
    for n in report.notes:
        out.append(f"% {n}")
    return "\n".join(out).rstrip("\n") + "\n"


def _html(report: Report) -> str:
    out = ['<div class="toym-report">']
    for s in report.sections:
        out.append(f"<table>\n<caption>{html.escape(s.title)}</caption>")
        out.append("<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in s.headers) + "</tr></thead>")
        out.append("<tbody>")
        for row in s.rows:
            cells = []
            for i, c in enumerate(row):
                a = s.align[i] if i < len(s.align) else "l"
                style = ' style="text-align:right"' if a == "r" else ""
                text = html.escape(_cell(c))
                if s.title == "Steps" and i == 1:
                    text = f"<code>{text}</code>"
                cells.append(f"<td{style}>{text}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</tbody>\n</table>")
    for n in report.notes:
        out.append(f"<p>{html.escape(n)}</p>")
    out.append("</div>")
    return "\n".join(out) + "\n"
