"""``toym numerics``: options →
``toymachine.experiments.numerics_table`` → a report. Exit 0 (it reports, it checks
nothing), 2 for bad options."""

from __future__ import annotations

__all__ = ["numerics_command"]

import json
from enum import Enum

import typer

from ..experiments.numerics import ALGOS, LEVELS, numerics_report, numerics_table
from ..render import render_report
from ..render.terminal import terminal_width
from .common import Format, alias, format_option, guard, output_option, write_output

Level = Enum("Level", {lv: lv for lv in LEVELS}, type=str)  # type: ignore[misc]
Algo = Enum("Algo", {a.replace("-", "_"): a for a in ALGOS}, type=str)  # type: ignore[misc]


def numerics_command(
    level: Level = typer.Option("tile", "--level", help="tile: the SRAM/HBM machine (default); scalar: the register "
                                                        "machine (slow: default n = 16)."),
    algo: Algo = typer.Option("fa2", "--algo", help="fa2 (query blocks outside), fa1 (key blocks outside), or (tile "
                                                    "only) eager, standard, standard-3pass, fused. Scalar: fa2 = "
                                                    "inner order, fa1 = outer."),
    n: int | None = typer.Option(None, "--n", help="Sequence length (default 256 tile, 16 scalar)."),
    d: int = typer.Option(64, "--d", help="Head dimension."),
    batch: int = typer.Option(1, "--batch", help="Tile level: batch size."),
    heads: int = typer.Option(1, "--heads", help="Tile level: heads."),
    causal: bool = typer.Option(False, "--causal/--no-causal", help="Tile level: causal mask."),
    block_m: int | None = typer.Option(None, "--block-m", help="Tile level: query block rows Br (default 64)."),
    block_n: int | None = typer.Option(None, "--block-n", help="Tile level: key block rows Bc (default 64)."),
    variant: str | None = typer.Option(None, "--variant", help="Comma list of exact, no-max, no-rescale "
                                                                  "(default: all)."),
    dtype: str | None = typer.Option(None, "--dtype", help="Comma list of fp64, fp32, bf16, fp16 (default: all)."),
    variants: str | None = typer.Option(None, "--variants", hidden=True, help="Old spelling of --variant."),
    dtypes: str | None = typer.Option(None, "--dtypes", hidden=True, help="Old spelling of --dtype."),
    seed: int = typer.Option(0, "--seed", help="Seed of the inputs (the machine's deterministic random values)."),
    scale: float | None = typer.Option(None, "--scale", help="Softmax scale τ on the scores (default 1/√d, as seed "
                                                                "003; 1 = seed 000's scale folded into an unscaled Q)."),
    table_kind: str = typer.Option("break", "--table", help="break: seed 003's break-it table (default); bf16: seed "
                                                            "002's bf16 error table on its three shapes."),
    trials: int = typer.Option(5, "--trials", help="--table bf16: input seeds --seed … --seed + trials − 1 (spread)."),
    fmt: Format = format_option(),
    output: str | None = output_option(),
) -> None:
    """Seed 003's break-it experiments: variant × dtype → max error, first alarm.

    Attention with the exact online softmax,
    without the running max (no-max) and without the rescaling (no-rescale), in each number
    format, on the same inputs. One row per (variant, dtype): max |O − reference| against
    float64 numpy (nan/inf when outputs are), whether O is finite, the machine's alarms (first
    overflow, NaN, division by zero, with step, line, instruction and the tile or query/key
    it fell in) and the count of underflows.

    Example: toym numerics --scale 1 --dtype fp32,fp16. With --table bf16: seed 002's correctness
    check (n = 257, 513, 777) as bf16 inputs with fp32 accumulation, its max_abs beside toym's.
    """
    with guard(fmt):
        if table_kind != "break":
            given = [flag for flag, value, default in (
                ("--level", level.value, "tile"), ("--algo", algo.value, "fa2"), ("--n", n, None), ("--d", d, 64),
                ("--batch", batch, 1), ("--heads", heads, 1), ("--causal", causal, False), ("--block-m", block_m, None),
                ("--block-n", block_n, None), ("--variant", variant or variants, None),
                ("--dtype", dtype or dtypes, None), ("--scale", scale, None)) if value != default]
            if given and table_kind == "bf16":  # seed 002's three shapes: a break-it flag would be silently dropped
                from ..errors import ConfigError

                raise ConfigError(f"--table {table_kind} is seed 002's three shapes; it takes no {', '.join(given)}",
                                  hint="its options are --seed, --trials, --format, --output")
            _bf16_table(table_kind, seed, trials, fmt, output)
            return
        variants = alias("--variant", "--variants", variant, variants)
        dtypes = alias("--dtype", "--dtypes", dtype, dtypes)
        table = numerics_table(level=level.value, algo=algo.value, n=n, d=d, batch=batch, heads=heads, causal=causal,
                               block_m=block_m, block_n=block_n, variants=variants, dtypes=dtypes, seed=seed,
                               scale=scale)
        if fmt.value == "json":
            text = json.dumps(table.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        else:
            text = render_report(numerics_report(table), fmt.value,
                                 width=terminal_width() if output in (None, "-") else None)
        write_output(text, output)


def _bf16_table(kind: str, seed: int, trials: int, fmt: Format, output: str | None) -> None:
    from ..errors import ConfigError
    from ..experiments.bf16 import bf16_report, bf16_rows

    if kind != "bf16":
        raise ConfigError(f"--table must be break or bf16, got {kind!r}")
    write_output(render_report(bf16_report(bf16_rows(seed=seed, trials=trials), seed=seed), fmt.value), output)
