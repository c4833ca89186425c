"""Compute units on the tile machine (seed 002's TPU): what each tile instruction costs on the MXU,
the VPU or the DMA engine of a machine that declares them (``machine.units`` has the prices, the
cost model ``cost.units`` their sums in closed form), and the run's ``units`` and ``memory_peak``.

The tile engine asks ``pricer`` for one closure per compiled arithmetic instruction and calls it
with the registers and the result after computing: ``price(regs, r)`` adds the instruction's
cycles to the run's accumulator ``run.units`` (``MXU_CYCLES``, ``MACS``, ``PASSES``,
``VPU_CYCLES``) and its VPU cycles to ``run.vpu_by_op``. Machines without units get no pricer, so
the GPU presets run the same code as before.

``memory_peak`` (every tile run): the most bytes each level holds at once — HBM: every array the
program declares, for the whole run; on chip (``sram``, or ``vmem`` on a machine that declares
VMEM): the T-register peak plus the R registers, × ``word_bytes``.
"""

from __future__ import annotations

__all__ = ["setup", "pricer", "report", "memory_peak", "MXU_CYCLES", "MACS", "PASSES", "VPU_CYCLES"]

import math
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..run import Run


MXU_CYCLES, MACS, PASSES, VPU_CYCLES = range(4)


def setup(run: Run) -> None:
    run.units = [0, 0, 0, 0] if run.machine.has_units else None
    run.vpu_by_op = Counter()
    if run.machine.accounting == "seed-002":
        from . import (
            seed_units,  # seed 002's accounting, loaded only for its machine (a fast start)
        )

        seed_units.seed_setup(run)


def pricer(run: Run, op: str, srcs: tuple, ins=None) -> Callable | None:
    """The closure that charges one execution of ``op`` (None on a machine without units).
    ``srcs``: the operands as ``(slot, transposed, position)``; ``ins`` the instruction (a machine
    with ``accounting: seed-002`` is priced by ``seed_units``, seed 002's own accounting)."""
    machine = run.machine
    if not machine.has_units:
        return None
    if machine.accounting == "seed-002":
        from . import seed_units

        return seed_units.seed_pricer(run, op, srcs, ins)
    acc, by_op = run.units, run.vpu_by_op
    vpu = machine.vpu
    lanes = vpu.lanes
    if op in ("MAC_Z", "MAC"):
        mxu = machine.mxu
        sa, ta, _ = srcs[0]
        add = vpu.per_vector("ADD") if op == "MAC" else 0

        def price_matmul(regs, r):
            m, n = r.shape
            k = regs[sa].shape[0 if ta else 1]
            cycles, passes = mxu.matmul(m, k, n)
            acc[MXU_CYCLES] += cycles
            acc[MACS] += m * k * n
            acc[PASSES] += passes
            if add:  # MAC's "+ C" runs on the VPU
                c = -(-r.size // lanes) * add
                acc[VPU_CYCLES] += c
                by_op["ADD"] += c

        return price_matmul
    per = vpu.per_vector(op)
    if op in ("ROWMAX", "ROWSUM"):  # a row reduction reads every element of its operand
        s = srcs[0][0]

        def price_reduce(regs, r):
            c = -(-regs[s].size // lanes) * per
            acc[VPU_CYCLES] += c
            by_op[op] += c

        return price_reduce

    def price_vector(regs, r):
        c = -(-r.size // lanes) * per
        acc[VPU_CYCLES] += c
        by_op[op] += c

    return price_vector


def _int(x):
    return int(x) if float(x).is_integer() else x


def memory_peak(run: Run, machine, arrays: dict) -> dict:
    """Bytes each memory level holds at its peak: ``{"hbm": …, "sram"|"vmem": …}``."""
    hbm_words = sum(math.prod(a.shape) for a in arrays.values() if a.shape)
    return {"hbm": hbm_words * machine.word_bytes,
            machine.onchip_name: (run.sram_peak + run.n_scalar) * machine.word_bytes}


def report(run: Run, machine, issue: float) -> dict:
    """The ``units`` of a run on a machine with units (``{}`` otherwise): per unit its cycles (MXU:
    MACs, passes, utilisation; VPU: cycles by instruction; DMA: bytes and cycles, overlapped) and
    ``total`` = issue + MXU + VPU, the units in sequence."""
    if run.units is None:
        return {}
    mxu = machine.mxu
    cyc, macs, passes, vcyc = run.units
    dma_bytes = (run.tile_reads + run.tile_writes) * machine.word_bytes
    units = {
        "mxu": {"cycles": _int(cyc), "macs": macs, "passes": passes,
                "utilization": macs / (cyc * mxu.cells) if cyc else 0.0,
                "utilization_of_all": macs / (cyc * mxu.cells * mxu.count) if cyc else 0.0},
        "vpu": {"cycles": _int(vcyc), "by_op": {op: _int(c) for op, c in sorted(run.vpu_by_op.items())}},
        "dma": {"bytes": dma_bytes,
                "cycles": _int(dma_bytes / machine.hbm_bytes_per_cycle) if machine.hbm_bytes_per_cycle else None,
                "overlapped": True},
        "total": _int(issue + cyc + vcyc),
    }
    return {"units": units}
