"""Seed 002's TPU table from simulated runs (``toym tpu-table``): causal attention, one head, standard
(fused: the scores on chip) against FlashAttention-2 at each block size, on a machine with compute
units — MXU and VPU cycles, their total (in sequence, as the seed adds them), MXU utilisation and
"vs standard" (total ÷ standard's total). Every figure comes from ``simulate`` on the program
``toym gen attention --level tile … --causal --machine M`` prints; on ``tpu-v5e-seed`` (the seed's
own accounting) they are the seed's, cycle for cycle, and the table shows the seed's column beside
them at its point (n = 512, d = 64, blocks 64 and 128). ``schedule_section`` adds the overlap model
of ``cost.tpu_schedule`` (four MXUs, DMA double-buffering) and ``predicted_time_section`` the
wall-clock model (``cost.tpu_time``).
"""

from __future__ import annotations

__all__ = ["TpuColumn", "tpu_columns", "tpu_table", "tpu_report", "SEED_POINT"]

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..cost.tpu_schedule import MODELS, schedule_cycles
from ..cost.tpu_seed import SEED_TABLE
from ..errors import ConfigError, Opt
from ..gen.tile import attention_program
from ..machine import Machine
from ..params import check_int
from ..program import Program
from ..render.report import Report, Section
from ..sim import simulate

SEED_POINT = (512, 64, (64, 128))  # n, d, blocks of the seed's table
MAX_N = 8192  # simulated points: the standard program's n × n scores (2²⁶ elements) bound the cost
MAX_D = 1024  # head dimension: Q, K, V, O are n × d each
MAX_TILES = 10_000  # (query block, key block) pairs a causal FlashAttention-2 program visits: its length


@dataclass(frozen=True)
class TpuColumn:
    """One column of the table: ``label`` (block=64 … standard), the program and its run's units."""

    label: str
    key: object  # the seed table's key: the block or "standard"
    program: Program
    mxu: float
    vpu: float
    total: float
    utilization: float
    by_op: dict


def tpu_columns(machine: Machine, *, n: int = 512, d: int = 64, blocks: Sequence[int] = (64, 128)) -> list[TpuColumn]:
    """FlashAttention-2 at each block (Br = Bc), then standard attention, simulated on ``machine``."""
    if not machine.has_units:
        raise ConfigError(f"machine {machine.name} has no compute units (mxu, vpu) to price the table",
                          key="machine", hint=("use ", Opt("machine", "tpu-v5e-seed"),
                                               " (the seed's accounting) or tpu-v5e (toym's)"))
    n, d = check_int("n", n, 1), check_int("d", d, 1)
    if n > MAX_N:
        raise ConfigError((Opt("n", n), f" is more than this table simulates ({MAX_N}: standard attention's n × n "
                           "scores)"), key="n", hint=("use ", Opt("n"), f" ≤ {MAX_N}"))
    if d > MAX_D:
        raise ConfigError((Opt("d", d), f" is more than this table simulates ({MAX_D})"), key="d",
                          hint=("use ", Opt("d"), f" ≤ {MAX_D}"))
    if not blocks:
        raise ConfigError((Opt("block_m"), " needs at least one block size"), key="block_m",
                          hint=("e.g. ", Opt("block_m", "64,128")))
    for b in blocks:
        t = -(-n // max(1, int(b)))
        if t * (t + 1) // 2 > MAX_TILES:  # the program's length, bounded before it is generated
            raise ConfigError((Opt("block_m", b), f" at n = {n} visits {t * (t + 1) // 2:,} tiles; this table "
                               f"simulates at most {MAX_TILES:,}"), key="block_m",
                              hint=("use ", Opt("block_m"), f" ≥ {-(-n // _blocks_for(MAX_TILES))}"))
    cols = []
    sizes: list[int | None] = [*dict.fromkeys(check_int("block_m", b, 1) for b in blocks), None]
    for size in sizes:
        kw: dict[str, Any] = {} if size is None else dict(block_m=size, block_n=size)
        algo = "standard" if size is None else "fa2"
        prog = attention_program(n=n, d=d, algo=algo, causal=True, machine=machine, **kw)
        u = simulate(prog, machine, steps=False).extra["units"]
        cols.append(TpuColumn("standard" if size is None else f"block={size}", "standard" if size is None else size, prog,
                              u["mxu"]["cycles"], u["vpu"]["cycles"], u["total"], u["mxu"]["utilization"],
                              u["vpu"]["by_op"]))
    return cols


def _blocks_for(tiles: int) -> int:
    """The most query blocks T with T(T+1)/2 ≤ tiles."""
    t = int(((8 * tiles + 1) ** 0.5 - 1) / 2)
    return t if t * (t + 1) // 2 <= tiles else t - 1


def _c(v) -> str:
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"


def tpu_table(machine: Machine, cols: list[TpuColumn], *, n: int, d: int) -> Section:
    """The seed's layout: one row per figure, one column per program (and the seed's, at its point)."""
    std = cols[-1].total
    seed = n == SEED_POINT[0] and d == SEED_POINT[1] and {c.key for c in cols[:-1]} <= set(SEED_POINT[2])
    rows: list[tuple[str, list[str], list[str] | None]] | None
    rows = [("Total cycles", [_c(c.total) for c in cols], [_c(SEED_TABLE[c.key]["total"]) for c in cols]),
            ("MXU cycles", [_c(c.mxu) for c in cols], [_c(SEED_TABLE[c.key]["mxu"]) for c in cols]),
            ("VPU cycles", [_c(c.vpu) for c in cols], [_c(SEED_TABLE[c.key]["vpu"]) for c in cols]),
            ("MXU utilization", [f"{100 * c.utilization:.1f}%" for c in cols],
             [f"{100 * SEED_TABLE[c.key]['utilization']:.1f}%" for c in cols]),
            ("vs standard", [f"{c.total / std:.2f}x" for c in cols],
             [f"{SEED_TABLE[c.key]['vs_standard']:.2f}x" for c in cols])] if seed else None
    if rows is None:
        rows = [("Total cycles", [_c(c.total) for c in cols], None), ("MXU cycles", [_c(c.mxu) for c in cols], None),
                ("VPU cycles", [_c(c.vpu) for c in cols], None),
                ("MXU utilization", [f"{100 * c.utilization:.1f}%" for c in cols], None),
                ("vs standard", [f"{c.total / std:.2f}x" for c in cols], None)]
    headers = ("",) + tuple(c.label for c in cols) + (("seed 002",) if seed else ())
    body = []
    for name, got, want in rows:
        extra: tuple[str, ...] = ()
        if seed and want is not None:
            extra = ("equal" if got == want else " / ".join(want),)
        body.append((name, *got, *extra))
    note = (f"n = {n}, d = {d}, causal, one head, on {machine.name}: toym gen attention --level tile --algo fa2 "
            f"--block-m B --block-n B (standard: --algo standard) --n {n} --d {d} --causal --machine {machine.name} "
            f"| toym run - --machine {machine.name}; total = MXU + VPU in sequence, as the seed adds them")
    return Section(f"Seed 002's TPU table on {machine.name}", headers, tuple(body), note=note,
                   align=("l",) + ("r",) * (len(headers) - 1))


TPU_NOTE = ("toym tpu-table: n, d, causal, one head; FlashAttention-2 per block (Br = Bc) and standard attention "
            "(fused: the scores kept in VMEM), each simulated on the machine; total = MXU + VPU in sequence, as "
            "the seed adds them; vs standard = total ÷ standard's total")


def schedule_section(machine: Machine, cols: list[TpuColumn]) -> Section | None:
    """Each column's program under the overlap models of ``cost.tpu_schedule``: cycles and the
    ratio to the in-order, no-overlap model (MXU + VPU + DMA in sequence)."""
    mxu = machine.mxu
    if mxu is None or not machine.hbm_bytes_per_cycle or machine.accounting != "toym":  # it prices as toym's units do
        return None
    rows = []
    base: dict[str, float] = {}
    for name, (oc, db, ind) in MODELS.items():
        cells = []
        for c in cols:
            t = schedule_cycles(c.program, machine, overlap_compute=oc, double_buffer=db, independent_mxus=ind)
            base.setdefault(c.label, t.cycles)
            cells.append(f"{_c(round(t.cycles))} ({base[c.label] / t.cycles:.2f}x)")
        rows.append((name, *cells))
    return Section(f"Overlap on {machine.name}: {mxu.count} MXUs, DMA double-buffering (a model)",
                   ("",) + tuple(c.label for c in cols), tuple(rows), align=("l",) + ("r",) * len(cols))


SCHEDULE_NOTE = ("Overlap (cost.tpu_schedule, a model): in order, no overlap = MXU + VPU + DMA in sequence (the "
                 "arrays chained as one MXU, every LOAD/STORE waited for); 4 MXUs = the arrays independent, each "
                 "matmul's passes on whichever is free, compute out of order as operands are ready; DMA "
                 "double-buffered = loads run ahead into a second buffer per register; (×) = speed-up over in order")


def tpu_report(machine: Machine, *, n: int = 512, d: int = 64, blocks: Sequence[int] = (64, 128),
               extra: Sequence[Section] = ()) -> Report:
    cols = tpu_columns(machine, n=n, d=d, blocks=blocks)
    sched = schedule_section(machine, cols)
    sections = (tpu_table(machine, cols, n=n, d=d),) + ((sched,) if sched else ()) + tuple(extra)
    return Report(f"TPU table on {machine.name}", sections, (TPU_NOTE,) + ((SCHEDULE_NOTE,) if sched else ()))
