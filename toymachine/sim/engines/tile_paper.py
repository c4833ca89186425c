"""``sram_rule: paper``: which tile registers count against SRAM the way the FlashAttention paper
counts it — those a LOAD or STORE of a 2-D block of an HBM matrix names (its Q_i, K_j, V_j, O_i,
whose sizes its B_c = ⌈M/4d⌉ is chosen for), not S, the row statistics or temporaries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...program import Mem, Reg, Span, operands_of

if TYPE_CHECKING:
    from ..run import Run

__all__ = ["note_paper_registers", "paper_count"]


def note_paper_registers(run: Run, instrs) -> None:
    """``sram_rule: paper``: the registers any LOAD/STORE of a 2-D block names, known before the run
    (a register FILLed before its first STORE counts from the FILL on): ``Run.slot`` counts them."""
    for ins in instrs:
        if ins.op in ("LOAD", "STORE"):
            mem, reg = operands_of(ins) if ins.op == "LOAD" else operands_of(ins)[::-1]
            if isinstance(mem, Mem) and isinstance(reg, Reg) and sum(isinstance(i, Span) for i in mem.index) == 2:
                run.paper_names.add(reg.name)
                if reg.name in run.slots:
                    run.sram_counted.add(run.slots[reg.name])


def paper_count(run: Run, mem: Mem, slot: int) -> None:
    """Under ``sram_rule: paper`` a register counts against SRAM iff a 2-D block of an HBM array is
    loaded into it or stored from it (the paper's Q_i, K_j, V_j, O_i; not S, m, ℓ, temporaries).
    ``note_paper_registers`` finds them all before the run starts; this keeps the set complete."""
    if not run.sram_exact and sum(isinstance(i, Span) for i in mem.index) == 2:
        run.sram_counted.add(slot)
