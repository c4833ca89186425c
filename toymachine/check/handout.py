"""The sheet a student gets, rendered from the problem file (their variant): the statement,
the machine, the inputs, what to compute, the allowed instructions, the budgets and points.

``handout(problem, fmt)`` with ``fmt`` markdown | html | latex. The statement is the
lecturer's Markdown, passed through in Markdown, escaped in HTML (in a ``<pre>``-free
paragraph per blank-line block) and in LaTeX through the project's one escaping function
(``render.tex.tex_escape``). ``problem_index`` lists a folder of problems.
"""

from __future__ import annotations

__all__ = ["handout", "handout_rows", "problem_index", "HANDOUT_FORMATS"]

import html
import os
import re
from pathlib import Path

from ..render.tex import PACKAGES_LINE, tex_escape
from .feedback import md_escape
from .problem import BUDGETS, Problem, load_problem
from .rules import CHECK_NAMES

HANDOUT_FORMATS = ("markdown", "html", "latex")


def _num(x) -> str:
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    return f"{x:g}" if isinstance(x, float) else str(x)


def _input_text(spec) -> str:
    shape = "×".join(str(n) for n in spec.shape)
    if not spec.random:
        return f"{shape}, given: {spec.value.tolist()}"
    if spec.dist == "normal":
        return f"{shape}, random (standard normal)"
    return f"{shape}, random ({spec.dist} in [{_num(spec.low)}, {_num(spec.high)}])"


def handout_rows(problem: Problem) -> dict[str, list[tuple[str, str]]]:
    """The sheet's tables: section → (what, value) rows."""
    m = problem.machine
    machine = [("machine", m.name), ("registers", "unlimited" if m.registers is None else
                                     f"{m.registers} (R0–R{m.registers - 1})")]
    if m.sram_words is not None:
        machine.append(("SRAM (words)", str(m.sram_words)))
    inputs = [(s.name, _input_text(s)) for s in problem.inputs]
    expect = [(e.target, e.text) for e in problem.expect]
    names = {v: k for k, v in CHECK_NAMES.items()}
    grading = []
    for name, rule in problem.rules.items():
        if rule.hidden:
            grading.append((f"{name} (hidden)", f"{_num(rule.points)} points"))
        elif rule.kind == "value":
            grading.append((name, f"{_num(rule.points)} points: within {_num(problem.tolerance)} of the expected "
                                  f"value on {problem.trials} random draw(s)"))
        elif rule.kind == "ops":
            grading.append((name, f"{_num(rule.points)} points: only {', '.join(problem.allowed_ops or ())}"))
        else:
            what = BUDGETS.get(names.get(name, ""), name)
            tiers = ", ".join(f"≤ {_num(lim)}: {_num(pts)}" for lim, pts in rule.tiers)
            grading.append((name, f"{what}: {tiers} points"))
    grading.append(("total", f"{_num(problem.max_score)} points (budgets count once every value is right)"))
    hand_in = [("file", problem.submission or "one .asm file (any name)")]
    if problem.deadline is not None:
        hand_in.append(("due", problem.deadline.describe()))
    return {"Machine": machine, "Inputs": inputs, "Compute": expect, "Grading": grading, "Hand in": hand_in}


_INLINE = re.compile(r"\*\*(.+?)\*\*|`([^`]+)`")


def _inline(text: str, escape, bold, code) -> str:
    """The statement's **bold** and `code` spans in another format; the rest through ``escape``."""
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out.append(escape(text[pos:m.start()]))
        out.append(bold(escape(m.group(1))) if m.group(1) is not None else code(escape(m.group(2))))
        pos = m.end()
    return "".join(out) + escape(text[pos:])


def _md_text(text: str) -> str:
    """``<`` and ``&`` as entities: no tag or entity of the text reaches a Markdown renderer's HTML."""
    return text.replace("&", "&amp;").replace("<", "&lt;")


def _md_statement(text: str) -> str:
    """The statement in Markdown: its **bold** and `code` kept, raw HTML (``<script>``, a variant's
    ``<i>``) shown as text, as the HTML and LaTeX sheets show it — never run by a Markdown renderer."""
    out, pos = [], 0
    for m in _INLINE.finditer(text):  # a code span is literal in Markdown: it stays as written
        out += [_md_text(text[pos:m.start()]), m.group(0) if m.group(2) is not None else f"**{_md_text(m.group(1))}**"]
        pos = m.end()
    return "".join(out) + _md_text(text[pos:])


def _title(problem: Problem) -> str:
    return problem.title + (f" — {problem.variant_label}" if problem.variant_label else "")


def handout(problem: Problem | str | os.PathLike, fmt: str = "markdown", *, student: str | None = None) -> str:
    """The sheet of a problem (the student's variant), or of every problem of an assignment file."""
    if not isinstance(problem, Problem):
        from .course import load_course_file

        assignment = load_course_file(problem)
        if not assignment.single:
            return _assignment_handout(assignment, fmt, student)
        problem = load_problem(problem, student=student)
    return _handout(problem, fmt)


def _assignment_handout(assignment, fmt: str, student: str | None) -> str:
    """One sheet: the assignment's title, its files and due date, then each problem's sheet (each
    with the file it names: the assignment's ``submission`` for it)."""
    import dataclasses

    problems = [dataclasses.replace(load_problem(p.problem, student=student), submission=p.submission)
                for p in assignment.parts]
    due = assignment.deadline.describe() if assignment.deadline is not None else ""
    files = [(f"{p.id}", f"{p.submission} ({_num(pr.max_score) if p.points is None else _num(p.points)} points)")
             for p, pr in zip(assignment.parts, problems)]
    if fmt == "markdown":
        out = [f"# {md_escape(assignment.title)}", ""]
        if assignment.statement:
            out += [_md_statement(assignment.statement.strip()), ""]
        out += ["Hand in these files:", "", "| problem | file |", "|---|---|"]
        out += [f"| {md_escape(k)} | {md_escape(v)} |" for k, v in files] + [""]
        if due:
            out += [f"Due: {md_escape(due)}.", ""]
        return "\n".join(out) + "\n" + "\n".join(_handout(pr, fmt) for pr in problems)
    if fmt == "html":
        e = html.escape
        body = "".join(f"<li>{e(k)}: <code>{e(v)}</code></li>" for k, v in files)
        head = f"<h1>{e(assignment.title)}</h1><p>Hand in these files:</p><ul>{body}</ul>" + \
            (f"<p>Due: {e(due)}.</p>" if due else "")
        sheets = [_handout(pr, fmt) for pr in problems]
        inner = [sh[sh.index("<body>") + len("<body>"):sh.index("</body>")] for sh in sheets]
        first = sheets[0]
        return first[:first.index("<body>") + len("<body>")] + head + "".join(inner) + "</body>\n</html>\n"
    if fmt == "latex":
        rows = "".join(f"{tex_escape(k)} & \\texttt{{{tex_escape(v)}}} \\\\\n" for k, v in files)
        lines = [f"\\section*{{{tex_escape(assignment.title)}}}", "Hand in these files:\n", "\\begin{tabular}{ll}",
                 rows.rstrip("\n"), "\\end{tabular}", ""]
        if due:
            lines.append(f"Due: {tex_escape(due)}.\n")
        sheets = [_handout(pr, fmt).split("\n", 1)[1] for pr in problems]  # one packages line, at the top
        return PACKAGES_LINE + "\n" + "\n".join(lines) + "\n" + "".join(sheets)
    return _handout(problems[0], fmt)


def _handout(problem: Problem, fmt: str) -> str:
    rows = handout_rows(problem)
    if fmt == "markdown":
        out = [f"# {md_escape(_title(problem))}", ""]
        if problem.statement:
            out += [_md_statement(problem.statement.strip()), ""]
        for section, items in rows.items():
            out += [f"## {section}", "", "| | |", "|---|---|"]
            out += [f"| {md_escape(k)} | {md_escape(v)} |" for k, v in items] + [""]
        if problem.allowed_ops:
            out += [f"Allowed instructions: {', '.join(problem.allowed_ops)}.", ""]
        return "\n".join(out)
    if fmt == "html":
        e = html.escape
        out = ["<!DOCTYPE html>", '<html lang="en">', '<head><meta charset="utf-8">', f"<title>{e(problem.title)}</title>",
               "<style>body{font-family:system-ui,sans-serif;max-width:50em;margin:2em auto;padding:0 1em}"
               "table{border-collapse:collapse}td{border:1px solid #ccc;padding:.2em .6em}</style></head>",
               "<body>", f"<h1>{e(_title(problem))}</h1>"]
        out += [f"<p>{_inline(block.strip(), e, lambda t: f'<strong>{t}</strong>', lambda t: f'<code>{t}</code>')}</p>"
                for block in problem.statement.split("\n\n") if block.strip()]
        for section, items in rows.items():
            out += [f"<h2>{e(section)}</h2>", "<table>"]
            out += [f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in items] + ["</table>"]
        out += ["</body>", "</html>"]
        return "\n".join(out) + "\n"
    if fmt == "latex":
        out = [PACKAGES_LINE, f"\\section*{{{tex_escape(_title(problem))}}}"]
        out += [_inline(block.strip(), tex_escape, lambda t: f"\\textbf{{{t}}}", lambda t: f"\\texttt{{{t}}}") + "\n"
                for block in problem.statement.split("\n\n") if block.strip()]
        for section, items in rows.items():
            out += [f"\\subsection*{{{tex_escape(section)}}}", "\\begin{tabular}{ll}"]
            out += [f"{tex_escape(k)} & {tex_escape(v)} \\\\" for k, v in items] + ["\\end{tabular}", ""]
        return "\n".join(out) + "\n"
    from ..errors import ConfigError

    raise ConfigError(f"unknown handout format {fmt!r}", hint=f"choose one of {', '.join(HANDOUT_FORMATS)}")


def problem_index(folder: str | os.PathLike) -> list[tuple[str, str, float, int, str]]:
    """(file, title, points, variants, machine) of every problem file in ``folder``, by name;
    a file that does not load is listed with its error's first line as the title."""
    from ..errors import ConfigError, Location, ToyMachineError

    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise ConfigError(f"no such folder: {folder}", loc=Location(folder), hint="e.g. toym problem list examples/problems")
    rows = []
    for path in sorted(Path(folder).glob("*.y*ml")):
        try:
            p = load_problem(path)
            rows.append((path.name, p.title, p.max_score, p.variant_count, p.machine.name))
        except ToyMachineError as exc:
            rows.append((path.name, "error: " + exc.text.splitlines()[0], 0, 0, ""))
    return rows
