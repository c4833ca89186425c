"""Which points are small enough to simulate: the one rule ``toym memory`` and ``toym sweep`` share.

A point the rule refuses is costed by its closed form alone — already held equal to the simulator
on the points it accepts (the tests, and every sweep row whose ``sim = formula`` reads yes) — and
its row says so. The size is the score elements the program computes (batch·heads·n·nk for
attention: the work that grows fastest); a generator with no size is always simulated.
"""

from __future__ import annotations

__all__ = ["CHECK_ELEMENTS", "closed_form_point", "guarded", "point_error", "simulable"]

from collections.abc import Callable
from typing import Any

from ..cost import Cost
from ..errors import MachineLimitError, Opt, ToyMachineError
from ..machine import Machine

CHECK_ELEMENTS = 1 << 22  # score elements: one head of n = 2048 (a few seconds of simulation)


def simulable(elements: int | None) -> bool:
    """Simulate a point of this many score elements (None: no size known — simulate)?"""
    return elements is None or elements <= CHECK_ELEMENTS


def point_error(e: ToyMachineError) -> dict[str, str]:
    """An infeasible point's error as a value: its kind, message and hint."""
    return {"kind": type(e).__name__, "message": e.message, "hint": e.hint or ""}


def guarded(strict: bool, fn: Callable, *args):
    """``fn(*args)``, or its error as a value (``strict``: raised)."""
    try:
        return fn(*args)
    except ToyMachineError as e:
        if strict:
            raise
        return point_error(e)


def closed_form_point(formula: Cost, cycles: float | None, machine: Machine) -> dict[str, Any]:
    """What a ``SweepRow`` takes from a run, from the closed form instead (a point too big to simulate);
    a ``MachineLimitError`` where the simulator would stop (the SRAM overflows)."""
    b = formula.breakdown
    limit = machine.onchip_words
    if "SRAM peak" in b and limit is not None and b["SRAM peak"] > limit:  # what the simulator would stop at
        raise MachineLimitError(f"SRAM overflow: the program needs {b['SRAM peak']:,} words at its peak (closed "
                                f"form), the machine's {machine.onchip_name.upper()} holds {limit:,}",
                                hint=("use smaller blocks (", Opt("block_m"), "/", Opt("block_n"), ") or leave them "
                                      "to the machine's SRAM"))
    extra: dict[str, Any] = {}
    if "SRAM peak" in b:
        extra["sram_peak"] = b["SRAM peak"]
        extra["flops"] = {"matmul": b["matmul FLOPs"], "other": b["other FLOPs"]}
        extra["memory_peak"] = {"hbm": b["HBM footprint"] * machine.word_bytes,
                                machine.onchip_name: b["SRAM peak"] * machine.word_bytes}
        words = b["HBM reads"] + b["HBM writes"]
        if words:
            extra["intensity"] = {"flops_per_byte": (b["matmul FLOPs"] + b["other FLOPs"]) / (words * machine.word_bytes)}
        if machine.clock_hz and formula.work is not None and not machine.has_units:
            w = machine.work_cycles(**formula.work)
            hbm_s, compute_s = w["hbm"] / machine.clock_hz, (w["tensor"] + w["vector"] + w["sfu"]) / machine.clock_hz
            extra["time_s"] = max(hbm_s, compute_s)
            extra["roofline"] = {"hbm_s": hbm_s, "compute_s": compute_s,
                                 "bound": "memory" if hbm_s >= compute_s else "compute"}
    return dict(cycles=cycles if cycles is not None else 0, loads=formula.ops.get("LOAD", 0),
                stores=formula.ops.get("STORE", 0), reads=b.get("HBM reads", formula.reads),
                writes=b.get("HBM writes", formula.writes), registers=formula.registers, ops=dict(formula.ops),
                extra=extra)
