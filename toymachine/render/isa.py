"""Reference tables generated from the code's own declarations (the ISA table)."""

from __future__ import annotations

__all__ = ["isa_report", "isa_markdown"]

from ..isa import ISA
from .report import Report, Section

_UNIT = {"memory": "HBM ↔ SRAM", "mac": "tensor core", "alu": "vector unit", "sfu": "special-function unit"}


def isa_report() -> Report:
    """Every instruction: its scalar form (the seed's), its tile form, FLOPs, unit."""
    rows = tuple((spec.syntax, spec.operation or "— (tiles only)", spec.tile_operation, spec.tile_flops,
                  f"{spec.cost_class}: {_UNIT[spec.cost_class]}", spec.kind)
                 for spec in ISA.values())
    notes = ("R registers hold one word, T registers a tile in SRAM; an instruction naming a T register or a "
             "block address (Q[0:64, :]) runs on tiles. Cost: the machine's cycles per instruction (1 by default) "
             "plus, where the machine gives rates, words moved / HBM rate and FLOPs / the unit's rate.",)
    return Report("Instruction set", (Section("Instruction set", ("Instruction", "Operation", "On tiles",
                                                                   "Tile FLOPs", "Unit", "Kind"), rows),), notes)


def isa_markdown() -> str:
    from .formats import render_report

    return render_report(isa_report(), "markdown")
