"""A run as titled tables: the shape every format draws.

A ``Report`` is sections (``Section``: title, headers, rows of cells — ``render.cells``) and
notes. ``report_of(result)`` builds a run's: steps (if kept), the summary (cycles and, on a
machine with rates, how they add up, the roofline time and which bound limits; memory traffic
in words and bytes, named as the machine names its memory: DRAM, or HBM on a tile machine),
instruction counts and the arrays written.
"""

from __future__ import annotations

__all__ = ["Report", "Section", "report_of", "value_text", "memory_name", "seconds", "DISPLAY"]

from dataclasses import dataclass, field
from typing import Any

from ..result import Result
from .cells import Arr, Code, Num, Qty, Sym, sig, value_text
from .display import DISPLAY
from .units import UNITS_HEADERS, memory_peak_text, units_rows


@dataclass(frozen=True)
class Section:
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    note: str = ""
    align: tuple[str, ...] = ()  # per column: "l" or "r"
    keys: tuple[str, ...] = ()  # JSON keys of the columns (default: the headers)
    preface: tuple[str, ...] = ()  # lines shown above the table (e.g. the columns constant in every row)
    key_columns: int = 1  # leading columns repeated when a wide table is folded
    collapse: bool = False  # human formats: columns constant in every row go into one preface line

    def aligns(self) -> tuple[str, ...]:
        return tuple(self.align[i] if i < len(self.align) else "l" for i in range(len(self.headers)))

    def json_keys(self) -> tuple[str, ...]:
        return self.keys if len(self.keys) == len(self.headers) else self.headers


@dataclass(frozen=True)
class Report:
    title: str
    sections: tuple[Section, ...]
    notes: tuple[str, ...] = field(default=())

    def _repr_html_(self) -> str | None:  # Jupyter shows sweep tables, the ISA, … as tables
        show = DISPLAY.get("text/html")
        return show(self) if show else None

    def _repr_markdown_(self) -> str | None:
        show = DISPLAY.get("text/markdown")
        return show(self) if show else None




SYMBOLIC_LIMIT = 60  # characters of a register's expression in the step table (whole terms)


def memory_name(result: Result) -> str:
    """What the machine calls its memory: HBM on a tile machine (SRAM, rates), else DRAM."""
    return "HBM" if "sram_peak" in result.extra else "DRAM"


def seconds(t: float) -> Qty:
    """A time with an SI prefix: 9.79678e-08 → 97.9678 ns."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"), (1e-12, "ps")):
        if abs(t) >= scale or unit == "ps":
            return Qty(t / scale, unit)
    return Qty(t, "s")  # pragma: no cover


def _words(n: int, word_bytes: int, note: str = "") -> Qty:
    return Qty(n, "words", ((n * word_bytes, "B"),), note=note)


def report_of(result: Result, *, steps: bool = True, sym=None) -> Report:
    """The tables of a run: steps (if kept), summary, operation counts, written arrays."""
    namer = result.namer
    sections = []
    notes = []
    if steps and result.steps:
        headers = ("Step", "Instruction") + result.register_names
        if result.symbolic:
            cell = (lambda v: None if v is None else Sym(v, namer, SYMBOLIC_LIMIT)) if sym is None else sym
        else:
            cell = (lambda v: v if v is None or isinstance(v, (int, float)) else value_text(v)) if sym is None else sym
        rows = tuple((s.step, Code(s.instruction)) + tuple(cell(v) for v in s.registers) for s in result.steps)
        sections.append(Section("Steps", headers, rows, align=("r", "l") + ("l",) * len(result.register_names),
                                key_columns=2))
    elif steps and result.steps_dropped:
        notes.append(f"{result.instructions} steps: too many to show by default (use --steps to show them)")
    summary = _summary(result)
    if any(note for _, _, note in summary):
        sections.append(Section("Summary", ("Metric", "Value", "Note"), tuple(summary), align=("l", "r", "l")))
    else:
        sections.append(Section("Summary", ("Metric", "Value"), tuple(r[:2] for r in summary), align=("l", "r")))
    d = result.to_dict(steps=False)
    if "units" in d:
        sections.append(Section("Units", UNITS_HEADERS, units_rows(d["units"]), align=("l", "r", "l")))
    if result.ops:
        sections.append(Section("Instructions", ("Opcode", "Count"), tuple((k, v) for k, v in result.ops.items()),
                                align=("l", "r")))
    written = [name for name in result.memory if name in result.written_arrays]
    if written:
        sections.append(Section("Memory", ("Array", "Contents"),
                                tuple((name, Arr(result.memory[name], result.symbolic)) for name in written),
                                align=("l", "l")))
    return Report(result.file, tuple(sections), tuple(notes))


def _summary(result: Result) -> list[tuple[str, Any, str]]:
    """(metric, value, note) rows."""
    d = result.extra
    mem = memory_name(result)
    wb = result.word_bytes
    breakdown = d.get("cycle_breakdown") or {}
    rated = any(v for k, v in breakdown.items() if k != "issue")
    rows: list[tuple[str, Any, str]] = []
    if rated:
        parts = " + ".join(f"{_UNIT_NAMES.get(k, k)} {sig(v)}" for k, v in breakdown.items() if v)
        clocked = (result.machine or {}).get("clock_hz") is not None
        half = "" if all(float(v).is_integer() for v in breakdown.values()) else (
            " (averages of the machine's rates, not whole cycles" + ("; its time is below)" if clocked else ")"))
        rows.append(("cycles", Qty(result.cycles, "cycles"),
                     f"in order, units never overlap: {parts}{half}"))
    else:
        rows.append(("cycles", Num(result.cycles), ""))
    roof = d.get("roofline")
    if "time_s" in d and roof:
        t = seconds(d["time_s"])
        hbm, comp = seconds(roof["hbm_s"]), seconds(roof["compute_s"])
        rows.append(("time (roofline)", t, f"units overlap perfectly: max(HBM {sig(hbm.value, 4)} {hbm.unit}, "
                                           f"compute {sig(comp.value, 4)} {comp.unit})"))
        rows.append(("bound", roof["bound"], "HBM time ≥ compute time" if roof["bound"] == "memory"
                     else "compute time > HBM time"))
    rows += [
        ("instructions", result.instructions, ""),
        (f"{mem} reads", _words(result.dram_reads, wb), ""),
        (f"{mem} writes", _words(result.dram_writes, wb), ""),
        ("registers used", result.registers_used, ""),
    ]
    if "ACC" in result.register_names:
        rows.append(("MAC accumulator", "ACC", "inside the MAC unit, not a register"))
    if "sram_peak" in d:
        cap = d.get("sram_words")
        rows.append(("SRAM peak", _words(d["sram_peak"], wb),
                     f"of {cap} words ({100 * d['sram_peak'] / cap:.0f}%)" if cap else "no SRAM limit"))
    if "hbm_footprint" in d:
        rows.append((f"{mem} footprint", _words(d["hbm_footprint"], wb), "words the arrays occupy"))
    if "flops" in d:
        rows.append(("matmul FLOPs", Qty(d["flops"]["matmul"], "FLOPs"), "tensor core"))
        sfu = d.get("sfu_ops", 0)
        rows.append(("other FLOPs", Qty(d["flops"]["other"], "FLOPs"),
                     f"vector unit; {sfu} of them EXP/LOG (special-function unit)" if sfu else "vector unit"))
    if "memory_peak" in d:
        rows.append(("memory peak", memory_peak_text(d["memory_peak"]), "bytes held at once, per memory level"))
    ai = d.get("intensity")
    if ai and ai["flops_per_word"] is not None:  # tile machines (HBM in bytes) lead with FLOPs/byte
        per_word, per_byte = sig(ai["flops_per_word"], 4), sig(ai["flops_per_byte"], 4)
        rows.append(("intensity", f"{per_byte} FLOPs/byte ({per_word} per word)" if "sram_peak" in d
                     else f"{per_word} FLOPs/word ({per_byte} per byte)", "FLOPs per unit of memory traffic"))
    if result.dtype != "fp64":
        rows.append(("dtype", result.dtype, ""))
    for a in result.alarms:
        rows.append((f"alarm: {a.kind}", f"step {a.step} (line {a.line}): {a.instruction}", ""))
    fu = result.first_underflow
    if result.underflows and fu is not None:
        rows.append(("underflows", result.underflows, f"first: step {fu.step}, line {fu.line}: {fu.instruction}"))
    return rows


_UNIT_NAMES = {"hbm": "HBM", "sfu": "SFU"}
