"""Reference tables generated from the code's own declarations (the ISA table)."""

from __future__ import annotations

__all__ = ["isa_report", "isa_markdown"]

from .isa import ISA
from .render.report import Report, Section


def isa_report() -> Report:
    rows = tuple((spec.syntax, spec.operation, spec.cost_class, spec.kind) for spec in ISA.values())
    return Report("Instruction set", (Section("Instruction set", ("Instruction", "Operation", "Unit", "Kind"), rows),))


def isa_markdown() -> str:
    from .render import render_report

    return render_report(isa_report(), "markdown")
