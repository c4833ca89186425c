"""``toym check TRACE --problem FILE``: grade a trace against a problem set (``toymachine.check``).

Exit status: 0 every check passed, 1 a check failed (a wrong value, a blown budget, a trace
that does not run), 2 an error (the problem file, a missing trace, usage).
"""

from __future__ import annotations

__all__ = ["check_command"]

import sys
from typing import Optional

import typer

from ..check import check_trace
from ..machine import resolve_machine
from .common import Format, format_option, guard, machine_option, output_option, write_output


def check_command(
    trace: str = typer.Argument(..., help="The trace to grade (.asm), or - for standard input."),
    problem: str = typer.Option(..., "--problem", "-p", help="Problem file (YAML): inputs, expected arrays, machine, budgets."),
    machine: Optional[str] = machine_option("Run on this machine (preset or YAML file) instead of the problem's."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, help="Seed of the random inputs (default: the problem's, else 0)."),
    trials: Optional[int] = typer.Option(None, "--trials", min=1, help="Random input draws (default: the problem's, else 3)."),
    fmt: Format = format_option(),
    output: Optional[str] = output_option(),
    allow_outside: bool = typer.Option(False, "--allow-outside", help="Let the problem's machine: file lie outside "
                                                                       "the problem's folder."),
) -> None:
    """Grade a trace: run it on the problem's machine with its inputs (several random draws), compare
    every expected array and check every budget; exit 0 when all pass, 1 when one fails."""
    with guard(fmt):
        source = trace
        if trace == "-":
            text = sys.stdin.read()
            source = text if text.endswith("\n") else text + "\n"  # text, not a path
        grade = check_trace(source, problem, seed=seed, trials=trials, name="<stdin>" if trace == "-" else None,
                            machine=resolve_machine(machine) if machine else None, allow_outside=allow_outside)
        write_output(grade.render(fmt.value), output)
    if not grade.passed:
        raise typer.Exit(1)
