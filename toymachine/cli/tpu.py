"""``toym tpu-table``: seed 002's TPU table from simulated runs (options → ``experiments.tpu`` → a
report): standard against FlashAttention-2 per block — MXU, VPU, total cycles, MXU utilisation,
vs standard — on a machine with compute units (``tpu-v5e-seed``: the seed's figures to the cycle)."""

from __future__ import annotations

__all__ = ["tpu_table_command"]


import typer

from ..errors import ConfigError
from ..experiments.sweep import parse_values
from ..experiments.tpu import tpu_report
from ..gen.registry import Param
from ..machine import resolve_machine
from ..render import render_report
from .common import Format, guard, write_output


def tpu_table_command(
    machine: str | None = typer.Option("tpu-v5e-seed", "--machine", "-m",
                                          help="Machine with compute units: tpu-v5e-seed (seed 002's accounting) "
                                               "or tpu-v5e (toym's), or a YAML file."),
    n: str = typer.Option("512", "--n", help="Sequence length (--table times: a list, 512..4096*2)."),
    d: int = typer.Option(64, "--d", help="Head dimension."),
    block_m: str = typer.Option("64,128", "--block-m", help="FlashAttention block sizes (Br = Bc), a comma list."),
    table_kind: str = typer.Option("cycles", "--table", help="cycles: the seed's TPU table (and, on tpu-v5e, the "
                                                             "overlap model); times: its wall-clock tables as "
                                                             "predicted times (a model)."),
    fmt: Format = typer.Option("table", "--format", "-f", help="Output format."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write the table to FILE."),
) -> None:
    """Seed 002's TPU table ("What the emulator revealed") from simulated runs.

    toym tpu-table prints the seed's table on tpu-v5e-seed, with the seed's column beside it;
    toym tpu-table --machine tpu-v5e prints toym's own TPU model of the same programs and the overlap
    model; toym tpu-table --machine tpu-v5e --table times --n 512..16384*2 the predicted times.
    """
    with guard():
        mach = resolve_machine(machine)
        ns = parse_values(n, Param("n", int, 512, "sequence length", minimum=1))
        if table_kind == "times":
            from ..experiments.tpu_time import time_report, time_rows

            if d != 64 or block_m != "64,128":  # the times table is at the seed's point: say so, never drop a flag
                raise ConfigError("--table times is at the seed's point (d = 64, FlashAttention-2 blocks of 128); "
                                  "it takes no --d or --block-m", hint="leave them out, or use --table cycles")

            write_output(render_report(time_report(mach, time_rows(mach, ns)), fmt.value), output)
            return
        if table_kind != "cycles":
            raise ConfigError(f"--table must be cycles or times, got {table_kind!r}")
        if len(ns) != 1:
            raise ConfigError("the TPU table is for one --n", hint="give one value, e.g. --n 512 (lists: --table times)")
        blocks = parse_values(block_m, Param("block_m", int, 64, "block size", minimum=1))
        write_output(render_report(tpu_report(mach, n=ns[0], d=d, blocks=blocks), fmt.value), output)
