"""The ``toym gen`` and ``toym sweep`` commands (registered on the app in ``cli.py``).

Thin, like the rest of the CLI: options → one library call (``toymachine.gen``,
``toymachine.sweep``) → text. Errors are ``ToyMachineError``s, mapped to exit status 2 by
``cli.guard``; ``sweep`` exits 1 when a simulated count differs from its closed form.
"""

from __future__ import annotations

__all__ = ["gen_app", "sweep_command", "SWEEP_CONTEXT"]

import sys
from enum import Enum
from typing import Optional

import typer

from .gen.attention import ORDERS, VARIANTS
from .gen.matmul import SCHEDULES
from .gen.softmax import ALGOS
from .render import FORMATS

Format = Enum("Format", {f: f for f in FORMATS}, type=str)
Schedule = Enum("Schedule", {s: s for s in SCHEDULES}, type=str)
SoftmaxAlgo = Enum("SoftmaxAlgo", {a: a for a in ALGOS}, type=str)
Order = Enum("Order", {o: o for o in ORDERS + ("row", "col", "split")}, type=str)
Variant = Enum("Variant", {v.replace("-", "_"): v for v in VARIANTS}, type=str)
Level = Enum("Level", {"scalar": "scalar", "tile": "tile"}, type=str)
TileAlgo = Enum("TileAlgo", {a: a for a in ("standard", "fa1", "fa2")}, type=str)
Pass = Enum("Pass", {p: p for p in ("forward", "backward")}, type=str)

gen_app = typer.Typer(
    help="Write a generated program (assembly with a header giving its cost formula) to stdout or -o FILE. "
         "Pipe it into `toym run -`.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_OUTPUT = typer.Option(None, "--output", "-o", help="Write to FILE instead of standard output.")
_DATA = typer.Option(True, "--data/--no-data", help="Include .data inputs (deterministic, from --seed), or leave "
                                                    "them to the simulator's random values.")
_SEED = typer.Option(0, "--seed", help="Seed of the .data inputs.")


def _emit(build) -> None:
    """Build a Program and write its text; errors exit 2."""
    from .cli import guard, write_output

    with guard():
        program, path = build()
        write_output(program.to_text(), path)


@gen_app.command("matmul")
def gen_matmul(
    n: int = typer.Option(2, "--n", help="Columns of B and C; also m and k unless given."),
    m: Optional[int] = typer.Option(None, "--m", help="Rows of A and C (default n)."),
    k: Optional[int] = typer.Option(None, "--k", help="Columns of A, rows of B (default n)."),
    registers: int = typer.Option(3, "--registers", "-r", help="Register count R (at least 3)."),
    schedule: Schedule = typer.Option("best", "--schedule", help="inner, outer, or the cheapest that fits R."),
    output: Optional[str] = _OUTPUT, data: bool = _DATA, seed: int = _SEED,
) -> None:
    """C = A·B on an R-register machine (seed 000, Problems 1–3)."""
    from .gen.matmul import matmul_program

    _emit(lambda: (matmul_program(n=n, registers=registers, schedule=schedule.value, m=m, k=k,
                                  with_data=data, seed=seed), output))


@gen_app.command("softmax")
def gen_softmax(
    n: int = typer.Option(6, "--n", help="Number of elements."),
    algo: SoftmaxAlgo = typer.Option("online", "--algo", help="naive (no max), safe (3 passes) or online (2 passes)."),
    output: Optional[str] = _OUTPUT, data: bool = _DATA, seed: int = _SEED,
) -> None:
    """Softmax of x[0..n−1] (seed 000, Problems 4 and 5)."""
    from .gen.softmax import softmax_program

    _emit(lambda: (softmax_program(n=n, algo=algo.value, with_data=data, seed=seed), output))


@gen_app.command("variance")
def gen_variance(
    n: int = typer.Option(6, "--n", help="Number of elements (at least 2)."),
    output: Optional[str] = _OUTPUT, data: bool = _DATA, seed: int = _SEED,
) -> None:
    """Welford's one-pass sample variance (seed 000, quiz 'Online variance'); 6 registers."""
    from .gen.variance import variance_program

    _emit(lambda: (variance_program(n=n, with_data=data, seed=seed), output))


@gen_app.command("attention")
def gen_attention(
    level: Level = typer.Option("scalar", "--level", help="scalar: the register machine; tile: the SRAM/HBM machine."),
    n: int = typer.Option(4, "--n", help="Sequence length (rows of Q, K, V)."),
    d: int = typer.Option(2, "--d", help="Head dimension."),
    registers: Optional[int] = typer.Option(None, "--registers", "-r",
                                            help="Scalar level: Register count (default: the minimum needed)."),
    order: Optional[Order] = typer.Option(None, "--order", help="Scalar level: inner (query loop outside) or outer "
                                                                "(KV loop outside), default inner. Tile backward: "
                                                                "row or col iteration over dS (default row), or split: the FA2 kernel's three launches."),
    output_slots: Optional[int] = typer.Option(None, "--output-slots", help="Scalar, outer order: Output rows kept "
                                                                            "resident (default: as many as fit)."),
    variant: Variant = typer.Option("exact", "--variant", help="exact, no-max or no-rescale (seed 003's breaks)."),
    algo: Optional[TileAlgo] = typer.Option(None, "--algo", help="Tile level: standard, fa1 or fa2."),
    batch: Optional[int] = typer.Option(None, "--batch", help="Tile level: Batch size."),
    heads: Optional[int] = typer.Option(None, "--heads", help="Tile level: Number of heads."),
    causal: Optional[bool] = typer.Option(None, "--causal/--no-causal", help="Tile level: Causal mask."),
    block_m: Optional[int] = typer.Option(None, "--block-m", help="Tile level: Query block rows."),
    block_n: Optional[int] = typer.Option(None, "--block-n", help="Tile level: Key/value block rows."),
    sram: Optional[int] = typer.Option(None, "--sram", help="Tile level: SRAM size in words."),
    pass_: Optional[Pass] = typer.Option(None, "--pass", help="Tile level: forward or backward."),
    precompute_d: Optional[bool] = typer.Option(None, "--precompute-d/--no-precompute-d",
                                                help="Tile backward: D = rowsum(dO∘O) precomputed (K, V loaded once "
                                                     "per block) or not (K loaded twice). Default: precomputed."),
    scale: Optional[float] = typer.Option(None, "--scale", help="Tile level: softmax scale τ (default 1/√d; 1 = "
                                                                "Q given pre-scaled, as seed 000 folds it in)."),
    output: Optional[str] = _OUTPUT,
    data: Optional[bool] = typer.Option(None, "--data/--no-data", help="Include .data inputs (deterministic, from "
                                        "--seed), or leave them to the simulator's random values. Default: --data "
                                        "at scalar level, --no-data at tile level (tile inputs are large)."),
    seed: int = _SEED,
) -> None:
    """Attention softmax(QKᵀ)·V: scalar machine (seed 000, 'Inner Product vs. Outer Product in
    Attention') or, with --level tile, the tile machine's generator."""
    from .errors import ConfigError

    scalar_only = {"--registers": registers, "--output-slots": output_slots}
    tile_only = {"--algo": algo, "--batch": batch, "--heads": heads, "--causal": causal, "--block-m": block_m,
                 "--block-n": block_n, "--sram": sram, "--pass": pass_, "--precompute-d": precompute_d,
                 "--scale": scale}
    with_data = data if data is not None else level.value == "scalar"

    def build():
        wrong = [k for k, v in (scalar_only if level.value == "tile" else tile_only).items() if v is not None]
        if order is not None and (order.value in ("row", "col", "split")) != (level.value == "tile"):
            wrong.append(f"--order {order.value}")
        if wrong:
            raise ConfigError(f"{', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} not an option of "
                              f"--level {level.value}", hint="see toym gen attention --help: options say which "
                                                            "level they belong to")
        if level.value == "scalar":
            from .gen.attention import attention_program

            return attention_program(n=n, d=d, order=(order or Order.inner).value, registers=registers,
                                     output_slots=output_slots, variant=variant.value, with_data=with_data,
                                     seed=seed), output
        return _tile_attention(n=n, d=d, variant=variant.value, with_data=with_data, algo=algo, pass_=pass_,
                               batch=batch, heads=heads, causal=causal, block_m=block_m, block_n=block_n,
                               sram_words=sram, order=order, precompute_d=precompute_d, scale=scale,
                               seed=seed), output

    _emit(build)


def _tile_attention(**options):
    """``toymachine.gen.tile.attention_program`` with the options that were given."""
    from .errors import ConfigError

    try:
        from .gen.tile import attention_program
    except ModuleNotFoundError as exc:
        if exc.name != "toymachine.gen.tile":
            raise
        raise ConfigError("the tile-level attention generator (toymachine.gen.tile) is not installed",
                          hint="use --level scalar, or update toymachine") from None
    kwargs = {k: (v.value if isinstance(v, Enum) else v) for k, v in options.items()
              if v is not None or k in ("n", "d", "with_data", "variant")}
    return attention_program(**kwargs)


SWEEP_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True,
                 "help_option_names": ["-h", "--help"]}


def _grid_from_args(spec, args: list[str]) -> dict[str, str]:
    """``--name VALUES`` / ``--name=VALUES`` pairs from the command line, checked against ``spec``."""
    from .errors import ConfigError

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
    from .gen.registry import generator_names, get_generator
    from .render.report import Report, Section

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
                                                     "traffic (with its lower bound), registers; tile machine: sram_peak, flops, time_s "
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
    from .cli import guard, write_output
    from .errors import ConfigError
    from .render import render_report

    with guard():
        if list_generators:
            write_output(render_report(_generators_report(), fmt.value), output)
            return
        if generator is None:
            raise ConfigError("which generator? e.g. toym sweep matmul --registers 3..6",
                              hint="toym sweep --list shows the generators and their parameters")
        from .gen.registry import get_generator
        from .machine import resolve_machine
        from .sweep import expand_grid, plot_sweep, sweep, sweep_report

        spec = get_generator(generator)
        grid = _grid_from_args(spec, list(ctx.args))
        points = len(expand_grid(spec, grid))
        base = resolve_machine(machine)
        show = progress if progress is not None else sys.stderr.isatty()
        if show and points > 1:
            rows = _sweep_with_progress(sweep, spec, grid, base, points)
        else:
            rows = sweep(spec, grid, machine=base)
        write_output(render_report(sweep_report(rows, spec), fmt.value), output)
        if plot:
            plot_sweep(rows, spec, plot, x=x, metric=metric)
        if any(r.matches is False for r in rows):
            typer.echo("error: a simulated count differs from its closed-form cost (sim = formula: NO)", err=True)
            raise typer.Exit(1)


def _sweep_with_progress(sweep, spec, grid, base, points: int):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(f"sweep {spec.name}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("sweep", total=points)
        return sweep(spec, grid, machine=base, on_point=lambda done, total: bar.update(task, completed=done))
