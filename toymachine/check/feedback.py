"""What a student sees: their grade as a Markdown or HTML page (``feedback/<id>.md``, ``.html``).

A hidden check shows its name and worth, never its result, figure or message; the score
shown counts the visible checks (the hidden ones are in the lecturer's gradebook). Every text
that can come from a submission (error messages quote its lines) is escaped: Markdown
punctuation backslashed, multi-line messages in a fence longer than any run of backticks in
them, HTML through ``html.escape``.
"""

from __future__ import annotations

__all__ = ["student_rows", "feedback_markdown", "feedback_html", "md_escape", "visible_score", "withheld",
           "student_message"]

import html
import re

from .report import Check, CheckReport

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|&#!{}])")


def md_escape(text: str) -> str:
    """Text safe in a Markdown table cell or paragraph (one line)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\r", " ").replace("\n", " ")


def _num(x) -> str:
    if x is None:
        return ""
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def withheld(report: CheckReport, check: Check) -> bool:
    """A visible budget or instruction check whose points depend on a hidden value check (budgets
    count only once every value is right): its points would tell the hidden result, so a student
    sees its figure and gets its points with the hidden checks."""
    return (not check.hidden and check.kind in ("budget", "ops")
            and any(c.hidden and c.kind == "value" for c in report.checks))


def student_message(report: CheckReport, check: Check) -> str:
    """A check's message as a student sees it: no word of a hidden result."""
    if withheld(report, check):
        return check.message + " (points released with the hidden checks)"
    return check.text


def visible_score(report: CheckReport) -> tuple[float, float, float]:
    """(score on the visible checks, their max, points of the hidden checks and of those that
    depend on them)."""
    seen = [c for c in report.checks if not c.hidden and not withheld(report, c)]
    hidden = sum(c.max_points for c in report.checks if c.hidden or withheld(report, c))
    ran = any(c.kind != "run" for c in report.checks)
    visible_max = sum(c.max_points for c in seen) if ran else report.max_score
    return sum(c.points for c in seen), visible_max, hidden


def student_rows(report: CheckReport) -> list[tuple[str, str, str, str]]:
    """(check, result, points, detail) rows of the student's view."""
    rows = []
    for c in report.checks:
        if c.hidden:
            rows.append((c.name, "hidden", f"?/{_num(c.max_points)}", "graded; the result is released later"))
        elif withheld(report, c):
            rows.append((c.name, "pass" if c.passed else "FAIL", f"?/{_num(c.max_points)}", student_message(report, c)))
        elif c.kind == "run":
            rows.append(("run", "FAIL", "", c.message.splitlines()[0] if c.message else ""))
        else:
            rows.append((c.name, "pass" if c.passed else "FAIL", f"{_num(c.points)}/{_num(c.max_points)}",
                         c.text))
    return rows


def _header(report: CheckReport, student: str) -> list[tuple[str, str]]:
    score, most, hidden = visible_score(report)
    lines = [("Student", student)]
    if report.variant:
        lines.append(("Variant", report.variant))
    text = f"{_num(score)} / {_num(most)}"
    if hidden:
        text += f" (and {_num(hidden)} points of hidden checks, released later)"
    lines.append(("Score", text))
    lines += [("Note", note) for note in report.notes]
    return lines


def _fence(text: str) -> str:
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, run + 1)


def _details(report: CheckReport) -> list[str]:
    """Multi-line messages of visible checks (the located errors), verbatim."""
    return [c.message for c in report.checks if not c.hidden and "\n" in c.message]


def feedback_markdown(report: CheckReport, student: str) -> str:
    out = [f"# {md_escape(report.problem)}", ""]
    out += [f"- **{k}**: {md_escape(v)}" for k, v in _header(report, student)]
    out += ["", "| check | result | points | detail |", "|---|---|---:|---|"]
    out += ["| " + " | ".join(md_escape(cell) for cell in row) + " |" for row in student_rows(report)]
    for message in _details(report):
        fence = _fence(message)
        out += ["", f"{fence}text", message, fence]
    return "\n".join(out) + "\n"


def feedback_html(report: CheckReport, student: str) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>{e(report.problem)} — {e(student)}</title>",
           "<style>body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
           "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}"
           ".FAIL{color:#b00}.pass{color:#070}pre{background:#f6f6f6;padding:.6em;overflow:auto}</style>",
           "</head>", "<body>", f"<h1>{e(report.problem)}</h1>", "<ul>"]
    out += [f"<li><b>{e(k)}</b>: {e(v)}</li>" for k, v in _header(report, student)]
    out += ["</ul>", "<table>", "<thead><tr><th>check</th><th>result</th><th>points</th><th>detail</th></tr></thead>",
            "<tbody>"]
    for name, result, points, detail in student_rows(report):
        out.append(f'<tr><td>{e(name)}</td><td class="{e(result)}">{e(result)}</td><td>{e(points)}</td>'
                   f"<td>{e(detail)}</td></tr>")
    out += ["</tbody>", "</table>"]
    out += [f"<pre>{e(m)}</pre>" for m in _details(report)]
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"
