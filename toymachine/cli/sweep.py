"""``toym sweep``: a generator over its parameters' ranges, one cost row per point (options →
``toymachine.experiments.sweep`` → a report, and a plot). Exit 1 when a simulated count differs
from its closed form."""

from __future__ import annotations

__all__ = ["sweep_command", "SWEEP_CONTEXT"]

from enum import Enum

import typer

from ..api import sweep_table
from ..errors import ConfigError, Location
from ..experiments.columns import columns_report
from ..experiments.parallel import EXECUTORS, default_jobs
from ..experiments.plot import MAX_SERIES
from ..experiments.sweep import check_plot, expand_grid, plot_sweep
from ..gen.registry import generator_names, get_generator
from ..machine import resolve_machine
from ..render import render_report
from ..render.report import Report, Section
from ..render.terminal import terminal_width
from .common import (
    Format,
    format_option,
    guard,
    machine_option,
    output_option,
    progress_bar,
    progress_option,
    show_progress,
    write_output,
)
from .usage import command_line_location, raw_args
from .vocabulary import ORDER_SYNONYMS, flag_of, flag_words, short_flag

SWEEP_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True,
                 "help_option_names": ["-h", "--help"]}


def _grid_from_args(spec, args: list[str], locate=None) -> dict[str, str]:
    """``--name VALUES`` / ``--name=VALUES`` pairs from the command line, checked against ``spec``;
    a parameter's short form from the vocabulary works too (``-r 3..6`` is ``--registers 3..6``).
    ``locate(i)``: the command-line location of ``args[i]``, for an error about it."""
    grid: dict[str, str] = {}
    i = 0
    while i < len(args):
        at = i
        try:
            i = _grid_pair(spec, args, i, grid)
        except ConfigError as err:
            if locate is not None and err.loc is None:
                err.loc = locate(at)
            raise
    return grid


def _grid_pair(spec, args: list[str], i: int, grid: dict[str, str]) -> int:
    """Read the pair at ``args[i]`` into ``grid``; return the index after it."""
    token = args[i]
    if token.startswith("-") and not token.startswith("--") and len(token) >= 2:
        name, value, eq = _short_param(spec, token)
    elif token.startswith("--") and len(token) > 2:
        name, eq, value = token[2:].partition("=")
    else:
        raise ConfigError(f"unexpected argument '{token}'",
                          hint=f"parameters are given as --NAME VALUES, e.g. {flag_words(spec.params[0].name)} 2,4,8")
    if not eq:
        if i + 1 >= len(args):
            raise ConfigError(f"--{name} needs values", hint=f"e.g. --{name} 2,4,8 or 3..6")
        value = args[i + 1]
        i += 1
    param = _param(spec, name)
    _lookalike_value(param, value)
    if param.name in grid:
        raise ConfigError(f"{flag_words(param.name)} is given twice", hint="give one list: --n 2,4,8")
    if param.name == "order" and param.choices:  # inner ≡ row, outer ≡ col: one vocabulary
        synonyms = ORDER_SYNONYMS["tile" if "row" in param.choices else "scalar"]
        value = ",".join(synonyms.get(v.strip(), v.strip()) for v in value.split(","))
    grid[param.name] = value
    return i + 1


def _short_param(spec, token: str) -> tuple[str, str, str]:
    """``-r`` / ``-r3..6`` → (``registers``, the attached value, whether one was attached): the
    vocabulary's short form of one of ``spec``'s parameters, else a look-alike error."""
    flag = short_flag(token[:2])
    names = {flag_words(p.name) for p in spec.params}
    if flag is None or flag.name.split("/")[0] not in names:
        long = "--" + token[1:2]
        meant = f"; did you mean {long} ({f.meaning})?" if long in names and (f := flag_of(long)) else ""
        what = f"{token[:2]} is {flag.name.split('/')[0]}, which sweep {spec.name} does not take" if flag else \
            f"sweep {spec.name} has no option {token[:2]}"
        raise ConfigError(what + meant, hint=f"its parameters are {', '.join(flag_words(p.name) for p in spec.params)} "
                                             "(toym sweep --list)")
    return flag.name.split("/")[0][2:], token[2:], "=" if len(token) > 2 else ""


# the sweep's own short forms: a one-letter parameter (--m) given what its short look-alike takes
_OWN_SHORTS = {"-m": "--machine", "-f": "--format", "-o": "--output", "-j": "--jobs"}


def _lookalike_value(param, value: str) -> None:
    """``--m toy3``: matmul's rows given a machine's name — ``-m`` (``--machine``) was meant."""
    short = "-" + param.name
    if short in _OWN_SHORTS and param.kind is int and value and not (value[0].isdigit() or value[0] == "-" or
                                                                     value.split(",")[0].strip().lower() == "none"):
        shown = value if len(value) <= 40 and value.isprintable() else ascii(value[:40])[1:-1] + "…"
        raise ConfigError(f"{flag_words(param.name)} is {f.meaning if (f := flag_of(flag_words(param.name))) else param.help}, "
                          f"not '{shown}'; did you mean {short} ({_OWN_SHORTS[short]})?",
                          hint=f"write {short} {shown} for the {_OWN_SHORTS[short][2:]}; {flag_words(param.name)} takes whole "
                               f"numbers: 2,4,8 or 3..6")


def _param(spec, name: str):
    """The generator's parameter ``--name``; for a name it lacks, say which commands take that flag."""
    try:
        return spec.param(name.replace("-", "_"))
    except ConfigError as err:
        flag = flag_of("--" + name)
        if flag is not None:
            err.context = f"{flag.name}: {flag.meaning}"
        raise


def _location(ctx: typer.Context, k: int):
    """Where ``ctx.args[k]`` (the sweep's k-th parameter word) is on the whole command line."""
    full = raw_args(ctx)
    token, before = ctx.args[k], ctx.args[:k].count(ctx.args[k])
    hits = [j for j, a in enumerate(full) if a == token]
    return command_line_location(full, hits[before] if before < len(hits) else None)


def _generators_report():
    rows = []
    for name in generator_names():
        spec = get_generator(name)
        for p in spec.params:
            allowed = ", ".join(p.choices) if p.choices else ("≥ " + str(p.minimum) if p.minimum is not None else "")
            rows.append((name, flag_words(p.name), "" if p.default is None else str(p.default), allowed, p.help))
    return Report("generators", (Section("Generators", ("generator", "parameter", "default", "values", "meaning"),
                                         tuple(rows)),))


Executor = Enum("Executor", {e: e for e in EXECUTORS}, type=str)  # type: ignore[misc]


def sweep_command(
    ctx: typer.Context,
    generator: str | None = typer.Argument(None, help="Generator to sweep: matmul, softmax, attention, variance "
                                                         "(--list shows all and their parameters)."),
    fmt: Format = format_option(),
    output: str | None = output_option("Write the table to FILE instead of standard output."),
    plot: str | None = typer.Option(None, "--plot", help="Also draw the sweep to FILE.png or FILE.svg "
                                                            "(needs matplotlib: the 'plot' extra)."),
    x: str | None = typer.Option(None, "--x", help="Parameter on the plot's x axis (default: the numeric one swept "
                                                      "over the most values)."),
    size: str = typer.Option("slide", "--size", help="Plot size: slide (16:9, large type) or page (7 × 4.5 in)."),
    max_series: int = typer.Option(MAX_SERIES, "--max-series", min=1, help="The most lines a plot draws (one per "
                                                                            "combination of the other swept "
                                                                            "parameters); more is an error."),
    metric: str = typer.Option("cycles", "--y", help="Plotted metric, a column's name: cycles, loads, stores, "
                                                     "dram_reads, dram_writes, traffic (with its lower bound), "
                                                     "registers_used, intensity, gap …; tile machine: sram_peak, "
                                                     "flops, time_s (a machine with a clock, e.g. --machine h100) "
                                                     "— --columns help lists them all."),
    latex_fit: bool = typer.Option(False, "--latex-fit", help="With --format latex: scale each table down to fit "
                                                             "the line width and a beamer frame's height "
                                                             "(graphicx's \\resizebox; beamer loads graphicx)."),
    machine: str | None = machine_option("Machine preset or YAML file: per-instruction cycles, unit rates, clock "
                                            "(each point's registers/SRAM come from its parameters)."),
    columns: str | None = typer.Option(None, "--columns", help="Only these columns, in this order (e.g. "
                                                                  "n,algo,cycles,dram_reads,gap: the JSON keys; "
                                                                  "headers and older names work too; 'help' lists "
                                                                  "them); default: all, with the columns that are the "
                                                                  "same in every row listed once above the table."),
    progress: bool | None = progress_option(),
    jobs: int | None = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes for the points (default: "
                                                                      "every core). The rows are the same, in the "
                                                                      "same order, for any number."),
    executor: Executor = typer.Option("local", "--executor", help="local: worker processes on this machine; dask: "
                                                                  "a Dask cluster (--scheduler; the 'dask' extra)."),
    scheduler: str | None = typer.Option(None, "--scheduler", help="Dask scheduler address, tcp://HOST:PORT "
                                                                      "(with --executor dask)."),
    list_generators: bool = typer.Option(False, "--list", help="List the generators and their parameters."),
    strict: bool = typer.Option(False, "--strict", help="Stop (exit 2) at the first infeasible point (blocks that "
                                                        "overflow the SRAM, a refused parameter …) instead of a row "
                                                        "saying why."),
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
    with guard(fmt):
        width = terminal_width() if output in (None, "-") else None
        if list_generators:
            write_output(render_report(_generators_report(), fmt.value, width=width), output)
            return
        if columns is not None and columns.strip() == "help":  # the column vocabulary (of one generator)
            spec = get_generator(generator) if generator else None
            params = [(p.name, p.help) for p in spec.params] if spec else []
            write_output(render_report(columns_report(params), fmt.value, width=width), output)
            return
        if generator is None:
            raise ConfigError("which generator? e.g. toym sweep matmul --registers 3..6",
                              hint="toym sweep --list shows the generators and their parameters")
        if latex_fit and fmt.value != "latex":
            raise ConfigError(f"--latex-fit scales LaTeX tables; the format is {fmt.value}", loc=Location("--latex-fit"),
                              hint="add --format latex, or drop --latex-fit")
        spec = get_generator(generator)
        grid = _grid_from_args(spec, list(ctx.args), locate=lambda k: _location(ctx, k))
        points = expand_grid(spec, grid)
        if plot:  # before the sweep runs: a bad --plot fails at once
            check_plot(spec, points, plot, x=x, metric=metric, size=size, max_series=max_series)
        base = resolve_machine(machine)
        with progress_bar(f"sweep {spec.name}", show_progress(progress) and len(points) > 1) as update:
            report, rows = sweep_table(spec, grid, machine=base, columns=columns, on_point=update,
                                       jobs=jobs or default_jobs(), executor=executor.value, scheduler=scheduler,
                                       strict=strict)
        write_output(render_report(report, fmt.value, width=width, latex_fit=latex_fit), output)
        if plot:
            plot_sweep([r for r in rows if r.error is None], spec, plot, x=x, metric=metric, size=size,
                       max_series=max_series)
        if any(r.matches is False for r in rows):
            typer.echo("error: a simulated count differs from its closed-form cost (sim = formula: NO)", err=True)
            raise typer.Exit(1)
