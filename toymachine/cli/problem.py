"""``toym problem show FILE`` (the handout: statement, machine, inputs, budgets, points, for a
student's variant) and ``toym problem list DIR`` (a problem set at a glance)."""

from __future__ import annotations

__all__ = ["problem_app"]

from enum import Enum

import typer

from .check import student_option
from .common import Format, format_option, guard, output_option, write_output

problem_app = typer.Typer(help="Problem files: handouts and problem sets.", no_args_is_help=True)

HandoutFormat = Enum("HandoutFormat", {f: f for f in ("markdown", "html", "latex")}, type=str)  # type: ignore[misc]


@problem_app.command("show")
def show_command(
    file: str = typer.Argument(..., help="Problem file (YAML)."),
    student: str | None = student_option(),
    fmt: HandoutFormat = typer.Option("markdown", "--format", "-f", help="Output format: markdown, html, latex."),
    output: str | None = output_option(),
) -> None:
    """The handout: statement, machine, inputs, what to compute, allowed instructions, budgets and points."""
    from ..check.handout import handout

    with guard():
        write_output(handout(file, fmt.value, student=student or None), output)


@problem_app.command("list")
def list_command(
    folder: str = typer.Argument(..., help="A folder of problem files."),
    fmt: Format = format_option(),
    output: str | None = output_option(),
) -> None:
    """Every problem file in a folder: title, points, variants, machine."""
    from ..check.handout import problem_index
    from ..render import render_report
    from ..render.report import Report, Section

    with guard(fmt):
        rows = tuple((name, title, points, variants or "", machine)
                     for name, title, points, variants, machine in problem_index(folder))
        section = Section(folder, ("file", "title", "points", "variants", "machine"), rows, align=("l", "l", "r", "r", "l"))
        write_output(render_report(Report(folder, (section,)), fmt.value), output)
