"""``toym optimize matmul|attention-tile`` and ``toym analyze``: options → one call of
``toymachine.optimize`` → render. JSON (``-f json``) is the result's ``to_dict()``; every other
format draws its ``Report``. ``--emit FILE`` also writes the schedule (or the winning tile
program) as assembly. Exit status 1 when a requested check fails (the simulated block-size
winner differs from its closed form), 2 on any error."""

from __future__ import annotations

__all__ = ["optimize_app", "analyze_command"]

import json
import sys
from enum import Enum
from typing import Any

import typer

from ..asm import parse, parse_file
from ..errors import ConfigError
from ..experiments.sweep import parse_values
from ..gen.registry import Param
from ..gen.scalar.attention import ORDERS as SCALAR_ORDERS
from ..gen.tile import ALGOS as TILE_ALGOS
from ..gen.tile import ORDERS as TILE_ORDERS
from ..gen.tile import PASSES
from ..machine import resolve_machine
from ..optimize import (
    analysis_report,
    analyze,
    block_table,
    block_table_report,
    blocks_report,
    matmul_report,
    optimize_blocks,
    optimize_matmul,
)
from ..render import render_report
from .common import Format, guard, machine_option, output_option, write_output

Pass = Enum("Pass", {p: p for p in PASSES}, type=str)  # type: ignore[misc]
BlockAlgo = Enum("BlockAlgo", {a.replace("-", "_"): a for a in TILE_ALGOS}, type=str)  # type: ignore[misc]
BlockOrder = Enum("BlockOrder", {o: o for o in TILE_ORDERS + SCALAR_ORDERS}, type=str)  # type: ignore[misc]

optimize_app = typer.Typer(
    help="Provably optimal schedules and block sizes: the least-cycle matmul schedule on R registers "
         "(A* search, proven optimal or best found with the gap), FlashAttention's (Br, Bc) and loop order "
         "under an SRAM of M words beside the paper's rule.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_FORMAT = typer.Option("table", "--format", "-f", help="Output format (json: the result's fields).")
_OUTPUT = output_option("Write the report to FILE instead of standard output.")
_EMIT = typer.Option(None, "--emit", help="Also write the schedule found, as assembly, to FILE (.asm).")


def _json(obj: dict) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _write(result, report, fmt: Format, output: str | None) -> None:
    text = _json(result.to_dict()) if fmt.value == "json" else render_report(report, fmt.value)
    write_output(text, output)


@optimize_app.command("matmul")
def optimize_matmul_command(
    n: int = typer.Option(2, "--n", help="Columns of B and C; also m and k unless given."),
    m: int | None = typer.Option(None, "--m", help="Rows of A and C (default n)."),
    k: int | None = typer.Option(None, "--k", help="Columns of A, rows of B (default n)."),
    registers: int | None = typer.Option(None, "--registers", "-r", help="Register count R (default: the "
                                            "machine's, else 3)."),
    machine: str | None = machine_option("Machine preset or YAML file: its per-instruction cycles, its "
                                            "register count (unless -r), its MAC accumulator."),
    time_limit: float = typer.Option(60.0, "--time-limit", help="Seconds the search may take; then the best "
                                                                "schedule found and the gap to the bound."),
    mac_accumulator: bool = typer.Option(False, "--mac-accumulator", help="The MAC unit keeps its own accumulator "
                                                                          "ACC: R registers + ACC (implied by a "
                                                                          "--machine that has one)."),
    spills: bool = typer.Option(False, "--spills/--no-spills", help="Also search schedules that spill partial "
                                                                    "sums (STORE, LOAD back)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the .data inputs of the emitted schedule."),
    emit: str | None = _EMIT,
    fmt: Format = _FORMAT,
    output: str | None = _OUTPUT,
) -> None:
    """The least-cycle LOAD/MAC_Z/MAC/STORE schedule of C = A·B on R registers (seed 000's puzzles):
    proven optimal when the search completes within --time-limit, else the best found and the gap."""
    with guard(fmt):
        mach = resolve_machine(machine) if machine is not None else None
        r = registers if registers is not None else ((mach.registers if mach else None) or 3)
        acc = True if mac_accumulator else None  # None: the machine says
        opt = optimize_matmul(n, r, m=m, k=k, machine=mach, time_limit=time_limit, spills=spills, seed=seed,
                              mac_accumulator=acc)
        if emit:
            write_output(opt.program.to_text(), emit)
        _write(opt, matmul_report(opt), fmt, output)


@optimize_app.command("attention-tile")
def optimize_attention_tile_command(
    n: int = typer.Option(256, "--n", help="Sequence length."),
    d: int = typer.Option(64, "--d", help="Head dimension."),
    sram: str = typer.Option(..., "--sram", help="SRAM size M in words; a list or range (4096..65536*2) prints "
                                                 "the table over M: where the paper's rule is optimal."),
    pass_: Pass = typer.Option("forward", "--pass", help="forward or backward."),
    causal: bool = typer.Option(False, "--causal/--no-causal", help="Causal mask."),
    heads: int = typer.Option(1, "--heads", help="Heads (HBM words scale with them)."),
    algo: BlockAlgo | None = typer.Option(None, "--algo", help="Only this algorithm: fa1 (K_j, V_j outer), fa2 "
                                                                  "(Q_i outer) or eager (its matmul tiles); default "
                                                                  "fa1 and fa2."),
    order: BlockOrder | None = typer.Option(None, "--order", help="Backward: only row (inner), col (outer) or "
                                                                     "split; default all three."),
    machine: str | None = machine_option("Machine preset or YAML file: with HBM and compute rates the search "
                                            "minimises time, else HBM words."),
    emit: str | None = typer.Option(None, "--emit", help="Also write the winner's tile program to FILE (.asm)."),
    fmt: Format = _FORMAT,
    output: str | None = _OUTPUT,
) -> None:
    """FlashAttention's block sizes: every feasible (Br, Bc) and loop order under the SRAM for the least
    HBM traffic (or time), beside the paper's Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d) and the Θ(N²d²/M) bound;
    the winner is simulated against its closed form (exit 1 if they differ)."""
    with guard(fmt):
        mach = resolve_machine(machine) if machine is not None else None
        sizes = parse_values(sram, Param("sram", int, None, "SRAM words", minimum=1))
        o = {"inner": "row", "outer": "col"}.get(order.value, order.value) if order else None
        a = algo.value if algo else None
        if len(sizes) > 1:
            if emit:
                raise ConfigError("--emit writes one winner's program; give one --sram size with it")
            rows = block_table(n=n, d=d, sram_list=sizes, pass_=pass_.value, causal=causal, heads=heads, algo=a,
                               order=o, machine=mach)
            report = block_table_report(rows, n=n, d=d)
            text = render_report(report, fmt.value)
            if fmt.value == "json":
                text = _json({"n": n, "d": d, "rows": [_row_json(r) for r in rows]})
            write_output(text, output)
            return
        s = optimize_blocks(n=n, d=d, sram_words=sizes[0], pass_=pass_.value, causal=causal, heads=heads, algo=a,
                            order=o, machine=mach)
        if emit:
            from ..gen.tile import attention_program

            kw: dict[str, Any] = dict(order=s.best.order) if s.best.order else {}
            write_output(attention_program(n=n, d=d, algo=s.best.algo, pass_=pass_.value, heads=heads, causal=causal,
                                           block_m=s.best.br, block_n=s.best.bc, sram_words=s.sram_words,
                                           **kw).to_text(), emit)
        _write(s, blocks_report(s), fmt, output)
    if s.verified is not None and not s.verified["matches_closed_form"]:
        raise typer.Exit(1)


def _row_json(r: dict) -> dict:
    return {"sram_words": r["sram_words"], "loop": r["loop"], "best": r["best"].to_dict(),
            "paper": r["paper"].to_dict() if r["paper"] else None, "note": r["note"], "bound_n2d2_over_m": r["bound"],
            "paper_optimal": r["paper_optimal"]}


def analyze_command(
    trace: str = typer.Argument(..., help="The trace: an .asm file, or - for standard input."),
    registers: int | None = typer.Option(None, "--registers", "-r", help="Registers of the allocation (default: "
                                            "the machine's, else as many as the trace names)."),
    machine: str | None = machine_option("Machine preset or YAML file: per-instruction cycles, register count."),
    emit: str | None = typer.Option(None, "--emit", help="Also write the trace re-allocated that way (same "
                                                            "instructions, same order, R registers) to FILE."),
    fmt: Format = _FORMAT,
    output: str | None = _OUTPUT,
) -> None:
    """How far a trace is from an optimal register allocation of its own order of computation: the
    fewest LOADs/STOREs any allocation of that order needs (Belady's MIN), the bound for its outputs in
    any order, and which LOADs are redundant ("line 9 reloads a[0][1], which an optimal allocation would
    have kept in a register")."""
    with guard(fmt):
        mach = resolve_machine(machine) if machine is not None else None
        program = parse(sys.stdin.read(), "<stdin>") if trace == "-" else parse_file(trace)
        an = analyze(program, registers=registers, machine=mach)
        if emit:
            write_output(an.program.to_text(), emit)
        _write(an, analysis_report(an), fmt, output)
