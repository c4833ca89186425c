"""``toym sweep``: a generator over its parameters' ranges, one cost row per point (options →
``toymachine.experiments.sweep`` → a report, and a plot). Exit 1 when a simulated count differs
from its closed form."""

from __future__ import annotations

__all__ = ["sweep_command", "SWEEP_CONTEXT"]

import sys
from typing import Optional

import typer

from ..errors import ConfigError
from ..experiments.sweep import expand_grid, plot_sweep, sweep, sweep_report
from ..gen.registry import generator_names, get_generator
from ..machine import resolve_machine
from ..render import render_report
from ..render.report import Report, Section
from .common import Format, guard, write_output


SWEEP_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True,
                 "help_option_names": ["-h", "--help"]}


def _grid_from_args(spec, args: list[str]) -> dict[str, str]:
    """``--name VALUES`` / ``--name=VALUES`` pairs from the command line, checked against ``spec``."""
    grid: dict[str, str] = {}
    i = 0
    while i < len(args):
        token = args[i]
        if not token.startswith("--") or len(token) == 2:
            raise ConfigError(f"unexpected argument '{token}'",
                              hint=f"parameters are given as --name VALUES, e.g. {spec.params[0].flag} 2,4,8")
        name, eq, value = token[2:].partition("=")
        if not eq:
            if i + 1 >= len(args):
                raise ConfigError(f"--{name} needs values", hint="e.g. --n 2,4,8 or --registers 3..6")
            value = args[i + 1]
            i += 1
        param = spec.param(name.replace("-", "_"))
        if param.name in grid:
            raise ConfigError(f"{param.flag} is given twice", hint="give one list: --n 2,4,8")
        grid[param.name] = value
        i += 1
    return grid


def _generators_report():
    rows = []
    for name in generator_names():
        spec = get_generator(name)
        for p in spec.params:
            allowed = ", ".join(p.choices) if p.choices else ("≥ " + str(p.minimum) if p.minimum is not None else "")
            rows.append((name, p.flag, "" if p.default is None else str(p.default), allowed, p.help))
    return Report("generators", (Section("Generators", ("generator", "parameter", "default", "values", "meaning"),
                                         tuple(rows)),))


def sweep_command(
    ctx: typer.Context,
    generator: Optional[str] = typer.Argument(None, help="Generator to sweep: matmul, softmax, attention, variance "
                                                         "(--list shows all and their parameters)."),
    fmt: Format = typer.Option("table", "--format", "-f", help="Output format."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the table to FILE."),
    plot: Optional[str] = typer.Option(None, "--plot", help="Also draw the sweep to FILE.png or FILE.svg "
                                                            "(needs matplotlib: the 'plot' extra)."),
    x: Optional[str] = typer.Option(None, "--x", help="Parameter on the plot's x axis (default: the first that varies)."),
    metric: str = typer.Option("cycles", "--y", help="Plotted metric: cycles, loads, stores, reads, writes, "
                                                     "traffic (with its lower bound), registers, intensity (FLOPs "
                                                     "per word; tile machine per byte); tile machine: sram_peak, "
                                                     "flops, time_s "
                                                     "(time_s needs a machine with a clock, e.g. --machine h100)."),
    machine: Optional[str] = typer.Option(None, "--machine", "-m", help="Machine YAML file or preset (per-op cycles)."),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress",
                                            help="Progress bar on stderr (default: when stderr is a terminal)."),
    list_generators: bool = typer.Option(False, "--list", help="List the generators and their parameters."),
) -> None:
    """Run a generator over its parameters' ranges: one cost row per point.

    One row per point: parameters,
    simulated cycles, LOADs, STOREs, DRAM reads/writes, registers, the closed-form cycles,
    whether simulation equals the formula, the lower bound and the gap to it.

    Give parameters as --NAME VALUES: 7 | 2,4,8 | 3..6 (inclusive) | 2..16+2 (step) |
    10..100000*10 (geometric) | inner,outer. Example:
    toym sweep matmul --n 2,4 --registers 3..6 --schedule inner,outer

    Exit status 1 if any simulated count differs from its formula.
    """
    with guard():
        if list_generators:
            write_output(render_report(_generators_report(), fmt.value), output)
            return
        if generator is None:
            raise ConfigError("which generator? e.g. toym sweep matmul --registers 3..6",
                              hint="toym sweep --list shows the generators and their parameters")
        spec = get_generator(generator)
        grid = _grid_from_args(spec, list(ctx.args))
        points = len(expand_grid(spec, grid))
        base = resolve_machine(machine)
        show = progress if progress is not None else sys.stderr.isatty()
        if show and points > 1:
            rows = _sweep_with_progress(spec, grid, base, points)
        else:
            rows = sweep(spec, grid, machine=base)
        write_output(render_report(sweep_report(rows, spec), fmt.value), output)
        if plot:
            plot_sweep(rows, spec, plot, x=x, metric=metric)
        if any(r.matches is False for r in rows):
            typer.echo("error: a simulated count differs from its closed-form cost (sim = formula: NO)", err=True)
            raise typer.Exit(1)


def _sweep_with_progress(spec, grid, base, points: int):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(f"sweep {spec.name}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("sweep", total=points)
        return sweep(spec, grid, machine=base, on_point=lambda done, total: bar.update(task, completed=done))
