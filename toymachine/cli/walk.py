"""``toym walk``: a tiled run as seed 001's slides (options → ``api.run_file`` → ``experiments.walk``
→ a report): load K_j, V_j; load Q_i, O_i, ℓ_i, m_i; compute on chip; write back — with the words
on chip against M — and the watched array (O) after every (i, j) visit, as seed 001 prints it."""

from __future__ import annotations

__all__ = ["walk_command"]


import typer

from ..api import run_file
from ..experiments.walk import WALK_MAX_STEPS, walk_report
from ..render import render_report
from .common import Format, guard, write_output


def walk_command(
    file: str = typer.Argument(..., help="Tiled assembly program (.asm), or - for standard input."),
    machine: str | None = typer.Option(None, "--machine", "-m", help="Machine YAML file or preset (seed 001's "
                                                                       "walk: toysram-paper, M = 59)."),
    data: str | None = typer.Option(None, "--data", help="Input arrays: YAML (name: nested list), .npy "
                                                                 "or .npz."),
    seed: int = typer.Option(0, "--seed", help="Seed for the deterministic random values of arrays never given."),
    watch: str = typer.Option("O", "--watch", help="Array shown after every STORE to it (seed 001: O)."),
    fmt: Format = typer.Option("table", "--format", "-f", help="Output format."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write to FILE."),
) -> None:
    """A tiled run as seed 001's slides, and O after every (i, j) visit.

    toym walk programs/fa1_n5_d3.asm --machine toysram-paper is seed 001's walk (N = 5, d = 3,
    M = 59, Br = 3, Bc = 4); with --data, the arrays are yours (seed 001's second example:
    examples/data/seed001_example2.yaml); --format html draws the slides as an animation, the
    words on chip against M. Runs of at most 5,000 steps.
    """
    with guard():
        result = run_file(file, machine=machine, data=data, seed=seed, steps=None, step_limit=WALK_MAX_STEPS)
        if fmt.value == "html":  # the slides as an animation
            from ..experiments.walk import walk_frames
            from ..render.walk_page import walk_page

            write_output(walk_page(walk_frames(result, array=watch), f"Walk of {result.file}"), output)
            return
        write_output(render_report(walk_report(result, array=watch), fmt.value), output)
