"""Overlap on a TPU, as a schedule of a tile program (seed 002, "No threads", "Pallas: what it would
take"): what four independent MXUs and DMA double-buffering would do to the cycles of the programs
``toym run`` prices in sequence.

Every instruction of the program becomes a task on a unit, priced as ``machine.units`` prices it:

* MXU — a MAC_Z/MAC of (M, K)·(K, N) is split into its weight blocks, one pass each of
  M + k + n − 2 cycles (``MXU.matmul``). With ``mxus = 1`` the machine's arrays work as one chained
  MXU (toym's model: the cheapest arrangement of all ``count`` arrays, one matmul at a time); with
  ``mxus = count`` the arrays are independent 128 × 128 units and the passes of any matmuls whose
  operands are ready run on whichever array is free (a K-split's partial sums accumulate in place).
  A MAC's "+ C" is then a VPU ADD.
* VPU — ⌈elements / lanes⌉ × cycles per vector; one VPU.
* DMA — a LOAD/STORE moves words × word_bytes at ``hbm_bytes_per_cycle``; one DMA engine.

Two switches, four models:

* ``overlap_compute`` — False: compute instructions run one at a time, in program order (the seed's
  sequence, MXU + VPU). True: each starts as soon as its operands are ready and a unit is free
  (registers renamed: a later tile never waits for an earlier one it does not read — what ``vmap``
  tells XLA about query blocks).
* ``double_buffer`` — False: every LOAD/STORE waits for all the work before it, and all the work after
  it waits for it (load, wait, compute — the seed's guess at ``fori_loop``). True: the DMA engine runs
  ahead, each LOAD into a register waiting only for the readers of that register's tile two loads
  back (two buffers per register), each STORE for its tile, a LOAD for an earlier STORE to the same
  block.

The baseline (False, False) is every task in sequence: MXU + VPU + DMA cycles of the run.
Tile shapes come from the program itself (LOAD blocks, FILL sizes, matmul and broadcast shapes), so
any program the generators make is scheduled without simulating it.
"""

from __future__ import annotations

__all__ = ["ScheduleTotals", "program_tasks", "schedule_cycles", "MODELS"]

from dataclasses import dataclass

from ..errors import ConfigError
from ..isa import ISA
from ..machine import Machine
from ..machine.units import MXU
from ..program import Program, Reg, Span

MODELS = {  # name → (overlap_compute, double_buffer, independent MXUs)
    "in order, no overlap": (False, False, False),
    "4 MXUs": (True, False, True),
    "DMA double-buffered": (False, True, False),
    "4 MXUs + double-buffered": (True, True, True),
}


@dataclass(frozen=True)
class ScheduleTotals:
    cycles: float
    mxu: float  # busy cycles summed over the arrays
    vpu: float
    dma: float


def _shape_of_mem(mem, shapes: dict) -> tuple[int, int]:
    full = shapes[mem.array]
    dims = []
    for ax, i in enumerate(mem.index):
        if isinstance(i, Span):
            a = 0 if i.start is None else i.start
            b = full[ax] if i.stop is None else i.stop
            dims.append(b - a)
    if len(dims) == 1:
        dims.append(1)
    return (dims[-2], dims[-1]) if len(dims) >= 2 else (1, 1)


def program_tasks(program: Program, machine: Machine) -> list[tuple]:
    """(kind, unit, dims, srcs, dst, mem) per instruction: dims (m, k, n) for matmuls, else the
    elements (VPU) or words (DMA); srcs/dst register names; mem (array, block) for LOAD/STORE."""
    if not machine.has_units:
        raise ConfigError(f"machine {machine.name} has no compute units to schedule on",
                          key="machine", suggestion="tpu-v5e")
    shapes = {a.name: tuple(a.shape) for a in program.arrays if a.shape is not None}
    regs: dict[str, tuple[int, int]] = {}
    out: list[tuple] = []
    for ins in program.instrs:
        spec = ISA[ins.op]
        a = ins.args
        if spec.kind == "load":
            mem, load_dst = ins.mem(0), ins.reg(1)
            regs[load_dst.name] = _shape_of_mem(mem, shapes)
            r, c = regs[load_dst.name]
            out.append(("load", "dma", r * c, (), load_dst.name, (mem.array, str(mem))))
            continue
        if spec.kind == "store":
            src, mem = ins.reg(0), ins.mem(1)
            r, c = regs[src.name]
            out.append(("store", "dma", r * c, (src.name,), None, (mem.array, str(mem))))
            continue
        dst = ins.reg(len(a) - 1).name
        srcs = tuple(x.name for pos, x in enumerate(a) if spec.signature[pos] == "src" and isinstance(x, Reg))
        if spec.kind == "fill":
            regs[dst] = (int(ins.value(1)), int(ins.value(2)))
        elif ins.op in ("MAC_Z", "MAC"):
            sa, sb = ins.reg(0), ins.reg(1)
            ra, rb = regs[sa.name], regs[sb.name]
            m, k = (ra[1], ra[0]) if sa.transpose else ra
            n = rb[0] if sb.transpose else rb[1]
            regs[dst] = (m, n)
            out.append(("matmul", "mxu", (m, k, n), srcs[:2], dst if ins.op == "MAC_Z" else dst + "'", None))
            if ins.op == "MAC":
                out.append(("vector", "vpu", m * n, (dst + "'", srcs[2]), dst, "ADD"))
            continue
        elif ins.op in ("ROWMAX", "ROWSUM"):
            rows, cols = regs[srcs[0]]
            regs[dst] = (rows, 1)
            out.append(("vector", "vpu", rows * cols, srcs, dst, ins.op))
            continue
        else:
            got = [regs[s] for s in srcs if s in regs]
            regs[dst] = (max(g[0] for g in got), max(g[1] for g in got)) if got else (1, 1)
        r, c = regs[dst]
        out.append(("vector", "vpu", r * c, srcs, dst, ins.op))
    return out


def schedule_cycles(program: Program, machine: Machine, *, overlap_compute: bool, double_buffer: bool,
                    independent_mxus: bool) -> ScheduleTotals:
    """The program's cycles under one model (module docstring)."""
    tasks = program_tasks(program, machine)
    mxu, vpu = machine.mxu, machine.vpu
    if mxu is None or vpu is None:
        raise ConfigError(f"machine {machine.name} needs both an mxu and a vpu to schedule on",
                          key="machine", suggestion="tpu-v5e")
    one = MXU(mxu.rows, mxu.cols, 1)
    arrays = [0.0] * (mxu.count if independent_mxus else 1)
    vpu_free = dma_free = 0.0
    ready: dict[str, float] = {}  # register → when its current tile is ready
    readers: dict[str, float] = {}  # register → when the last reader of its current tile finishes
    older: dict[str, float] = {}  # register → when the readers of its previous tile finished (buffer 2)
    stored: dict[str, float] = {}  # HBM block → when the last STORE to it finished
    last_compute = barrier = end = 0.0
    busy = {"mxu": 0.0, "vpu": 0.0, "dma": 0.0}
    for kind, unit, dims, srcs, dst, extra in tasks:
        start = max([barrier] + [ready.get(s, 0.0) for s in srcs])
        if unit == "dma":
            words = dims * machine.word_bytes / machine.hbm_bytes_per_cycle
            array, block = extra
            if double_buffer:
                start = max(start, dma_free, stored.get(block, 0.0))
                if kind == "load":
                    start = max(start, older.get(dst, 0.0))
            else:
                start = max(start, end, dma_free)
            finish = start + words
            dma_free = finish
            busy["dma"] += words
            if kind == "store":
                stored[block] = finish
            if not double_buffer:
                barrier = finish
        else:
            if not overlap_compute:
                start = max(start, last_compute)
            if unit == "mxu":
                m, k, n = dims
                if independent_mxus:
                    passes = _passes(one, m, k, n)
                    finish = start
                    for p in passes:
                        i = min(range(len(arrays)), key=lambda j: max(arrays[j], start))
                        s = max(arrays[i], start)
                        arrays[i] = s + p
                        finish = max(finish, s + p)
                        busy["mxu"] += p
                else:
                    cyc, _ = mxu.matmul(m, k, n)
                    s = max(arrays[0], start)
                    finish = arrays[0] = s + cyc
                    busy["mxu"] += cyc
            else:
                cyc = -(-dims // vpu.lanes) * vpu.per_vector(extra)
                s = max(vpu_free, start)
                finish = vpu_free = s + cyc
                busy["vpu"] += cyc
            last_compute = finish
        for s in srcs:
            readers[s] = max(readers.get(s, 0.0), finish)
        if dst is not None:
            if kind == "load":
                older[dst] = readers.get(dst, 0.0)
            readers[dst] = finish
            ready[dst] = finish
        end = max(end, finish)
    return ScheduleTotals(end, busy["mxu"], busy["vpu"], busy["dma"])


def _passes(mxu: MXU, m: int, k: int, n: int) -> list[int]:
    """The weight blocks of one matmul on a single array: one pass each, M + k_b + n_b − 2 cycles."""
    tk, tn = -(-k // mxu.rows), -(-n // mxu.cols)
    ks = [mxu.rows] * (tk - 1) + [k - mxu.rows * (tk - 1)]
    ns = [mxu.cols] * (tn - 1) + [n - mxu.cols * (tn - 1)]
    return [m + x + y - 2 for x in ks for y in ns]
