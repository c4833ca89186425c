"""A run's compute units and memory peak as table rows (machines with ``mxu``/``vpu``, seed 002's
TPU): one row per unit with its cycles, and the total — the units in sequence, as the seed counts.
``report.report_of`` puts them in the summary and a ``Units`` table."""

from __future__ import annotations

__all__ = ["UNITS_HEADERS", "units_rows", "memory_peak_text"]

UNITS_HEADERS = ("unit", "cycles", "detail")


def _num(v) -> str:
    if isinstance(v, float) and not v.is_integer():
        return f"{v:.6g}"
    return str(int(v))


def memory_peak_text(peak: dict) -> str:
    """``hbm 526336 B, vmem 1314820 B``: the most bytes each level held at once."""
    return ", ".join(f"{level} {value} B" for level, value in peak.items())


def units_rows(units: dict) -> tuple[tuple[str, str, str], ...]:
    """The rows of the ``Units`` table of a run's ``units`` (``sim.engines.units.report``)."""
    mxu, vpu, dma = units["mxu"], units["vpu"], units["dma"]
    return (
        ("MXU", _num(mxu["cycles"]),
         f"{mxu['macs']} MACs in {mxu['passes']} pass(es); utilization {100 * mxu['utilization']:.1f}% of one "
         f"array ({100 * mxu['utilization_of_all']:.1f}% of all)"),
        ("VPU", _num(vpu["cycles"]), ", ".join(f"{op} {_num(c)}" for op, c in vpu["by_op"].items())),
        ("DMA", "" if dma["cycles"] is None else _num(dma["cycles"]),
         f"{dma['bytes']} B between HBM and on-chip memory; overlaps the compute units (not in the total)"),
        ("total", _num(units["total"]), "MXU + VPU (+ scalar instructions), in sequence"),
    )
