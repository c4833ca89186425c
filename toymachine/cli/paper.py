"""``toym paper``: a paper's figure beside toym's computed one (options → ``experiments.papers`` →
a report): the published number, toym's, their ratio and the command behind toym's."""

from __future__ import annotations

__all__ = ["paper_command"]


import typer

from ..errors import ConfigError
from ..machine import resolve_machine
from ..render import render_report
from .common import Format, guard, write_output


def paper_command(
    name: str | None = typer.Argument(None, metavar="NAME", help="The figure (toym paper --list shows them)."),
    list_figures: bool = typer.Option(False, "--list", help="List the figures."),
    fmt: Format = typer.Option("table", "--format", "-f", help="Output format: table, markdown, csv, json, latex."),
    machine: str | None = typer.Option(None, "--machine", "-m", help="Machine preset or YAML file (default: "
                                                                        "a100, the papers' GPU)."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write to FILE instead of standard output."),
) -> None:
    """A paper's figure beside toym's: the published numbers, toym's, their ratio and the command
    that prints each of toym's (toym paper --list shows the figures)."""
    from ..experiments.papers import figure_report, figures_report

    with guard(fmt):
        if list_figures:
            report = figures_report()
        elif name is None:
            raise ConfigError("which figure? e.g. toym paper fa1-fig2", hint="toym paper --list shows the figures")
        else:
            report = figure_report(name, resolve_machine(machine) if machine else None)
        write_output(render_report(report, fmt.value), output)
