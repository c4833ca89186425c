"""A run as titled tables of text: the shape every format draws."""

from __future__ import annotations

__all__ = ["Report", "Section", "report_of", "format_number", "value_text"]

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from ..result import Result
from .units import UNITS_HEADERS, memory_peak_text, units_rows


@dataclass(frozen=True)
class Section:
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    note: str = ""
    align: tuple[str, ...] = ()  # per column: "l" or "r"


@dataclass(frozen=True)
class Report:
    title: str
    sections: tuple[Section, ...]
    notes: tuple[str, ...] = field(default=())


def format_number(v: float, digits: int = 6) -> str:
    """Short, stable text for a float: integers without a point, else 6 significant digits."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.{digits}g}"


def value_text(v: Any, sym: Callable[[Any], str] | None = None) -> str:
    if v is None:
        return ""
    if isinstance(v, (int, float)):
        return format_number(v)
    if hasattr(v, "shape"):
        return f"tile{tuple(v.shape)}"
    return sym(v) if sym else str(v)


MAX_SHOWN = 64  # arrays with more elements are summarised in tables (JSON keeps them whole)
EDGE = 3  # items shown at each end of a summarised dimension


def _count(values) -> int:
    return sum(_count(v) for v in values) if isinstance(values, list) else 1


def _shape(values) -> tuple[int, ...]:
    return (len(values),) + _shape(values[0]) if isinstance(values, list) and values else ()


def _array_text(values, sym, summarise: bool | None = None) -> str:
    """Nested lists as text; big arrays as ``(1024×64) [[…, …], …]`` with edge items only."""
    if summarise is None:
        summarise = _count(values) > MAX_SHOWN
        if summarise:
            dims = "×".join(str(n) for n in _shape(values))
            return f"({dims}) " + _array_text(values, sym, True)
    if isinstance(values, list):
        if summarise and len(values) > 2 * EDGE:
            items = [_array_text(v, sym, True) for v in values[:EDGE]] + ["…"] + \
                    [_array_text(v, sym, True) for v in values[-EDGE:]]
        else:
            items = [_array_text(v, sym, summarise) for v in values]
        return "[" + ", ".join(items) + "]"
    if values is None:
        return "·"
    return value_text(values, sym)


def report_of(result: Result, *, steps: bool = True, sym: Callable[[Any], str] | None = None) -> Report:
    """The tables of a run: steps (if kept), summary, operation counts, written arrays."""
    if sym is None and result.symbolic:
        from ..sim.symbolic import render as render_expr

        namer = getattr(result, "namer", None)
        sym = lambda e: render_expr(e, namer, limit=60)  # noqa: E731
        mem_sym = lambda e: render_expr(e, None, limit=0)  # noqa: E731
    else:
        mem_sym = sym
    sections = []
    notes = []
    if steps and result.steps:
        headers = ("Step", "Instruction") + result.register_names
        rows = tuple((s.step, s.instruction) + tuple(value_text(v, sym) for v in s.registers) for s in result.steps)
        sections.append(Section("Steps", headers, rows, align=("r", "l") + ("l",) * len(result.register_names)))
    elif steps and result.steps_dropped:
        notes.append(f"{result.instructions} steps: too many to show by default (use --steps to show them)")
    d = result.to_dict(steps=False)
    summary = [
        ("cycles", format_number(result.cycles)),
        ("instructions", str(result.instructions)),
        ("DRAM reads", f"{result.dram_reads} ({result.read_bytes} B)"),
        ("DRAM writes", f"{result.dram_writes} ({result.write_bytes} B)"),
        ("registers used", str(result.registers_used)),
    ]
    if "ACC" in result.register_names:
        summary.append(("MAC accumulator", "ACC (inside the MAC unit)"))
    for key in ("sram_peak", "time_s"):
        if key in d:
            summary.append((key.replace("_", " "), value_text(d[key])))
    if "memory_peak" in d:
        summary.append(("memory peak", memory_peak_text(d["memory_peak"])))
    if "flops" in d:
        summary.append(("flops", ", ".join(f"{k} {v}" for k, v in d["flops"].items())))
    ai = d.get("intensity")
    if ai and ai["flops_per_word"] is not None:  # tile machines (HBM in bytes) lead with FLOPs/byte
        per_word, per_byte = format_number(ai["flops_per_word"], 4), format_number(ai["flops_per_byte"], 4)
        summary.append(("intensity", f"{per_byte} FLOPs/byte ({per_word} per word)" if "sram_peak" in d
                        else f"{per_word} FLOPs/word ({per_byte} per byte)"))
    if result.dtype != "fp64":
        summary.append(("dtype", result.dtype))
    if result.alarms or result.underflows:
        for a in result.alarms:
            summary.append((f"alarm: {a.kind}", f"step {a.step} (line {a.line}): {a.instruction}"))
        if result.underflows:
            fu = result.first_underflow
            summary.append(("underflows", f"{result.underflows} (first: step {fu.step}, line {fu.line}: {fu.instruction})"))
    sections.append(Section("Summary", ("Metric", "Value"), tuple(summary), align=("l", "r")))
    if "units" in d:
        sections.append(Section("Units", UNITS_HEADERS, units_rows(d["units"]), align=("l", "r", "l")))
    if result.ops:
        sections.append(Section("Instructions", ("Opcode", "Count"), tuple((k, v) for k, v in result.ops.items()),
                                align=("l", "r")))
    written = [(name, vals) for name, vals in result.memory.items() if name in result.written_arrays]
    if written:
        sections.append(Section("Memory", ("Array", "Contents"),
                                tuple((name, _array_text(vals, mem_sym)) for name, vals in written), align=("l", "l")))
    return Report(result.file, tuple(sections), tuple(notes))

