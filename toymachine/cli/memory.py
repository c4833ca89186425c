"""``toym memory``: peak memory of attention against n (options → ``toymachine.experiments.memory``
→ a report, and a plot) — seed 002's "Memory scaling" table and seed 003's quadratic-vs-linear
picture. Exit 1 when a simulated ``memory_peak`` differs from its formula."""

from __future__ import annotations

__all__ = ["memory_command"]

from enum import Enum

import typer

from ..experiments.memory import memory_report, memory_rows, plot_memory
from ..experiments.sweep import parse_values
from ..gen.registry import Param
from ..machine import resolve_machine
from ..render import render_report
from .common import Format, guard, write_output

PlotMetric = Enum("PlotMetric", {"memory_peak": "memory_peak", "onchip_peak": "onchip_peak"}, type=str)


def memory_command(
    n: str = typer.Option("512..32768*2", "--n", help="Sequence lengths: 512 | 512,1024 | 512..32768*2."),
    d: int = typer.Option(64, "--d", help="Head dimension."),
    algo: str = typer.Option("standard,fused,fa2", "--algo", help="Algorithms, a comma-separated list: eager (one "
                                                                  "kernel per op), standard (S, P in HBM), fused "
                                                                  "(S on chip), fa1, fa2 …"),
    machine: str | None = typer.Option(None, "--machine", "-m", help="Machine YAML file or preset: word size "
                                          "and on-chip capacity (tpu-v5e: seed 002's table; a100: seed 003's)."),
    batch: int = typer.Option(1, "--batch", help="Batch size."),
    heads: int = typer.Option(1, "--heads", help="Heads."),
    causal: bool = typer.Option(True, "--causal/--no-causal", help="Causal mask (the seeds' setting)."),
    block_m: int | None = typer.Option(None, "--block-m", help="Query block rows (standard, fa2)."),
    block_n: int | None = typer.Option(None, "--block-n", help="Key/value block rows (standard, fa2)."),
    check: bool = typer.Option(True, "--check/--no-check", help="Simulate the points with n² ≤ 2²² and compare "
                                                                "their memory_peak with the formula."),
    plot: str | None = typer.Option(None, "--plot", help="Also draw peak memory against n, log axes, to "
                                                            "FILE.png or FILE.svg (needs matplotlib)."),
    metric: PlotMetric = typer.Option("memory_peak", "--y", help="Plotted metric: memory_peak (HBM: seed 003's "
                                                                "picture) or onchip_peak (SRAM/VMEM)."),
    fmt: Format = typer.Option("table", "--format", "-f", help="Output format."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write the table to FILE."),
) -> None:
    """Peak memory of attention against n: seed 002's memory-scaling table and seed 003's picture.

    toym memory --machine tpu-v5e --n 512..32768*2 --d 64 prints seed 002's table (scores and
    output MB, ratio, fits in VMEM); toym memory --machine a100 --n 1024..32768*2 --batch 2 --heads 8
    --algo standard,fa2 --plot memory.png draws seed 003's quadratic-vs-linear curves.
    Exit status 1 if a simulated memory_peak differs from its formula.
    """
    with guard():
        mach = resolve_machine(machine)
        ns = parse_values(n, Param("n", int, 512, "sequence length", minimum=1))
        algos = [a.strip() for a in algo.split(",") if a.strip()]
        rows = memory_rows(ns=ns, d=d, machine=mach, algos=algos, batch=batch, heads=heads, causal=causal,
                           block_m=block_m, block_n=block_n, check=check)
        write_output(render_report(memory_report(rows, mach, batch=batch, heads=heads), fmt.value), output)
        if plot:
            plot_memory(rows, plot, level="hbm" if metric.value == "memory_peak" else "onchip")
        if any(r.checked is False for r in rows):
            typer.echo("error: a simulated memory_peak differs from its formula (sim = formula: NO)", err=True)
            raise typer.Exit(1)
