"""``toym check TRACE --problem FILE``: grade a trace against a problem set (``toymachine.check``).

TRACE may be one student's folder (Gradescope's /autograder/submission): the problem's
``submission:`` file in it, else its one .asm. ``--format gradescope`` prints Gradescope's
results.json. Exit status: 0 every check passed, 1 a check failed (a wrong value, a blown
budget, a trace that does not run), 2 an error (the problem file, a missing trace, usage).
"""

from __future__ import annotations

__all__ = ["check_command"]

import os
import sys
from enum import Enum
from typing import Any

import typer

from ..check import check_trace, load_problem
from ..machine import resolve_machine
from ..render import FORMATS
from .common import guard, machine_option, output_option, write_output

CheckFormat = Enum("CheckFormat", {f: f for f in FORMATS + ("gradescope",)}, type=str)  # type: ignore[misc]


def student_option() -> Any:
    return typer.Option(None, "--student", help="Student ID: picks the student's variant of a problem with "
                                                "variants (the same ID, the same variant).")


def check_command(
    trace: str = typer.Argument(..., help="The trace to grade (.asm), a student's folder, or - for standard input."),
    problem: str = typer.Option(..., "--problem", "-p", help="Problem file (YAML): inputs, expected arrays, machine, budgets."),
    machine: str | None = machine_option("Run on this machine (preset or YAML file) instead of the problem's."),
    seed: int | None = typer.Option(None, "--seed", min=0, help="Seed of the random inputs (default: the problem's, else 0)."),
    trials: int | None = typer.Option(None, "--trials", min=1, max=1000, help="Random input draws (default: the problem's, else 3)."),
    student: str | None = student_option(),
    fmt: CheckFormat = typer.Option("table", "--format", "-f", help="Output format: table, markdown, csv, json, "
                                    "latex, html, html-fragment, gradescope (results.json)."),
    output: str | None = output_option(),
    allow_outside: bool = typer.Option(False, "--allow-outside", help="Let the problem's machine: file lie outside "
                                                                       "the problem's folder."),
) -> None:
    """Grade a trace: run it on the problem's machine with its inputs (several random draws), compare
    every expected array and check every budget; print the score; exit 0 when all pass, 1 when one fails."""
    with guard(fmt):
        loaded = load_problem(problem, student=student or None, allow_outside=allow_outside)
        override = resolve_machine(machine) if machine else None
        if os.path.isdir(trace):
            from ..check.gradebook import check_submission

            grade = check_submission(trace, loaded, student=student or None, seed=seed, trials=trials,
                                     machine=override)
        else:
            source = trace
            if trace == "-":
                text = sys.stdin.read()
                source = text if text.endswith("\n") else text + "\n"  # text, not a path
            grade = check_trace(source, loaded, seed=seed, trials=trials, name="<stdin>" if trace == "-" else None,
                                machine=override)
        if fmt.value == "gradescope":
            from ..check.gradescope import gradescope_json

            text = gradescope_json(grade)
        else:
            text = grade.render(fmt.value)
        write_output(text, output)
    if not grade.passed:
        raise typer.Exit(1)
