"""What each step of a run does, for the step viewer (``toym run --format html``).

Everything here is derived from the ``Result`` alone (its step rows, registers, final
memory and machine), so any recorded run can be replayed:

* each step row carries its instruction text; parsed back, the ISA signature says which
  operands it reads (``src``, a LOAD's ``mem``) and which it writes (``dst``, a STORE's ``mem``);
* registers after a step are the step row's values;
* a DRAM/HBM cell changes only at a STORE, to the stored register's value in that row;
* arrays' contents before the run are recovered in ``stepview_memory``.

Running counters follow the simulator's cost model (``toymachine.machine`` docstring):
a step costs its issue cycles ``cycles[op]`` plus words moved · word_bytes /
hbm_bytes_per_cycle, matmul FLOPs / tensor_flops_per_cycle (on a machine without a clock each
element a MAC_Z writes adds a multiply: a whole MAC, ``Machine.work_cycles``), other FLOPs /
vector_flops_per_cycle and EXP/LOG elements / sfu_ops_per_cycle (each term only where the
machine gives the rate). FLOPs per step are the tile machine's (``toymachine.tile``):
MAC_Z m·n·(2k−1), MAC 2·m·n·k, one per result element of MAX SUB ADD MUL DIV EXP LOG,
r·(c−1) for ROWMAX/ROWSUM, none for MOV FILL MASK; a word is the 1×1×1 case. SRAM holds
every T register's tile plus one word per R register the program names. So after the last
step the running totals equal the Result's (``tests/test_page.py`` holds them equal).
"""

from __future__ import annotations

__all__ = ["MAX_STEPS", "TILE_VALUES_MAX", "step_model", "cell_text"]

import dataclasses
import re
from typing import Any

from ..isa import ISA
from ..program import Instr, Mem, Program, Reg, Span
from ..result import Result
from .stepview_memory import ArrayView, array_views, cell_text, initial_contents

MAX_STEPS = 5000  # steps the page replays; later steps are summarised in a note
TILE_VALUES_MAX = 64  # tiles with more elements show their shape, not their values
MAX_SOURCE_LINES = 20000  # source lines the listing shows (beyond the last shown step: 3)
_MM, _VEC, _SFU = "mm", "vec", "sfu"


def _parse_instr(text: str, cache: dict) -> Instr:
    got = cache.get(text)
    if got is None:
        from ..asm import parse  # the assembler: the one definition of the syntax

        got = cache[text] = parse(text).instrs[0]
    return got


def _register_value(v, digits: int = 3):
    """A tile as {"s": shape, "v": texts} (values only for small tiles); a word as text."""
    if v is None:
        return None
    if hasattr(v, "shape"):
        r, c = (int(v.shape[0]), int(v.shape[1])) if len(v.shape) == 2 else (1, int(v.size))
        if v.size > TILE_VALUES_MAX:
            return {"s": [r, c]}
        return {"s": [r, c], "v": [[cell_text(float(x), digits) for x in row] for row in v.reshape(r, c).tolist()]}
    return cell_text(v, 6)


def _size(v) -> int:
    return int(v.size) if hasattr(v, "size") else (0 if v is None else 1)


def _oriented_shape(v, transpose: bool) -> tuple[int, int]:
    if hasattr(v, "shape") and len(v.shape) == 2:
        return (int(v.shape[1]), int(v.shape[0])) if transpose else (int(v.shape[0]), int(v.shape[1]))
    return (1, 1)


def _flops(ins: Instr, before: tuple, after_value, index: dict) -> tuple[str, int]:
    """(unit, FLOPs) of one executed instruction, counted as toymachine.tile counts them."""
    spec = ISA[ins.op]
    if spec.cost_class == "memory" or ins.op in ("MOV", "FILL", "MASK"):
        return _VEC, 0
    srcs = [ins.reg(pos) for pos in range(len(ins.args)) if spec.signature[pos] == "src"]
    size = _size(after_value)
    if ins.op in ("MAC_Z", "MAC"):
        _, k = _oriented_shape(before[index[srcs[0].name]], srcs[0].transpose)
        return _MM, size * (2 * k - 1) if ins.op == "MAC_Z" else 2 * size * k
    if ins.op in ("ROWMAX", "ROWSUM"):
        r, c = _oriented_shape(before[index[srcs[0].name]], srcs[0].transpose)
        return _VEC, r * c - r
    return (_SFU if spec.cost_class == "sfu" else _VEC), size


def _explain(ins: Instr, tile: bool, shape) -> str:
    """What the instruction does, in the seed's notation with its operands filled in."""
    spec = ISA[ins.op]
    a = ins.args
    if spec.kind in ("load", "store"):
        reg, mem = (ins.reg(1), ins.mem(0)) if spec.kind == "load" else (ins.reg(0), ins.mem(1))
        where = "HBM" if reg.name[0] == "T" else "DRAM"
        if spec.kind == "store":
            return f"{where}[{mem}] = {reg}"
        return f"{reg} = {where}[{mem}]" + (f" ({shape[0]}×{shape[1]} words)" if shape else "")
    if tile and spec.cost_class == "mac":
        text, tail = spec.tile_operation.split(" (")[0], " (matrix product)"
    elif spec.operation:
        text, tail = spec.operation, (" (elementwise)" if tile and ins.op != "MOV" else "")
    else:
        text, tail = spec.tile_operation.split(" (")[0], ""
    subst: dict[str, str] = {}
    for name, arg in zip((p.strip() for p in spec.syntax.split(None, 1)[1].split(",")), a):
        subst[name] = str(arg) if isinstance(arg, (Reg, Mem)) else cell_text(arg, 6)
        if name[:1] == "R" and len(name) == 2:  # the tile forms write Ta, Td for Ra, Rd
            subst["T" + name[1]] = subst[name]
    pattern = r"\b(" + "|".join(sorted(map(re.escape, subst), key=len, reverse=True)) + r")\b"
    return re.sub(pattern, lambda m: subst[m.group(1)], text) + tail


def _register_texts(result: Result, steps: tuple) -> list[list[str]]:
    """The step table's register cells (numbers, or the seed's symbolic names) per step."""
    from .cells import text_of
    from .report import report_of

    trimmed = dataclasses.replace(result, steps=steps)  # the namer goes with it
    section = report_of(trimmed, steps=True).sections[0]
    return [[text_of(c) for c in row[2:]] for row in section.rows]


def _units(ops: list[str], tile: bool) -> list[dict]:
    """The compute box: the seed's units (MAC; ALU) or the GPU's (tensor core, vector, SFU)."""
    groups: tuple[tuple[str, str, str], ...]
    if tile:
        groups = (("mac", "Tensor core", "A·B (+C)"), ("alu", "Vector unit", "elementwise, row max/sum"),
                  ("sfu", "SFU", "exp, log"))
    else:
        groups = (("mac", "MAC", "a × b + c"), ("alu sfu", "ALU", ""))
    out = []
    for classes, name, label in groups:
        used = [op for op in ops if ISA[op].cost_class in classes.split()]
        if used:
            out.append({"name": name, "label": label, "ops": used, "classes": classes.split()})
    return out


def _source_lines(program: Program | None, shown, instrs) -> list[str] | None:
    """The program's text for the listing, if it is the text these steps ran."""
    if program is None:
        return None
    lines = list(program.source) if program.source is not None else program.to_text().splitlines()
    for step, ins in zip(shown, instrs):
        if not (0 < step.line <= len(lines)) or not lines[step.line - 1].lstrip().upper().startswith(ins.op):
            return None
    last = max((s.line for s in shown), default=len(lines))
    return lines[: min(len(lines), last + 3, MAX_SOURCE_LINES)]


def step_model(result: Result, *, max_steps: int = MAX_STEPS, steps: bool = True,
               program: Program | None = None) -> dict:
    """The page's data, JSON-ready and deterministic: arrays (grid layout, contents
    before step 1), registers, compute units, the listing, and per shown step what it
    reads and writes, the written register's new value, the stored cells' new values and
    the running counters. ``program`` (optional) is the program that ran: its text becomes
    the listing (comments included) and its declarations give symbolic inputs their shape."""
    all_steps = tuple(result.steps or ()) if steps else ()
    shown = all_steps[:max_steps]
    cache: dict[str, Instr] = {}
    instrs = [_parse_instr(s.instruction, cache) for s in all_steps]
    names = list(result.register_names)
    index = {n: i for i, n in enumerate(names)}
    machine = result.machine
    tile = any(n[:1] == "T" for n in names) or result.extra.get("sram_words") is not None
    written = set(result.written_arrays)
    views = array_views(result.memory, instrs, written, program)
    view_of = {v.name: v for v in views}
    aindex = {v.name: i for i, v in enumerate(views)}
    contents = initial_contents(views, result.memory, all_steps, instrs, written, index)
    source = _source_lines(program, shown, instrs)

    reg_texts = _register_texts(result, shown) if shown else []
    rate = {_MM: machine.get("tensor_flops_per_cycle"), _VEC: machine.get("vector_flops_per_cycle"),
            _SFU: machine.get("sfu_ops_per_cycle") or machine.get("vector_flops_per_cycle")}
    hbm_rate = machine.get("hbm_bytes_per_cycle")
    whole = machine.get("clock_hz") is None  # a cycle-level machine (Machine.whole_cycles)
    word_bytes = machine.get("word_bytes", result.word_bytes)
    op_cycles = machine.get("cycles") or {}
    n_scalar = sum(1 for n in names if n[:1] == "R")  # one SRAM word each, for the whole run
    counted = _sram_counted(result, instrs, names)  # the T registers SRAM occupancy counts
    counters: dict[str, list] = {"cycles": [0], "reads": [0], "writes": [0], "flops": [0]}
    if tile:
        counters.update(sram=[n_scalar], sram_peak=[n_scalar])
    cyc = 0.0
    reads = writes = flops = 0
    peak = n_scalar
    before: tuple = (None,) * len(names)
    rows: list[dict] = []
    listing: list[dict] = []
    ops_used: list[str] = []
    for k, (step, ins) in enumerate(zip(shown, instrs)):
        spec = ISA[ins.op]
        if ins.op not in ops_used:
            ops_used.append(ins.op)
        row: dict = {"l": step.line - 1 if source is not None else k}
        words = 0
        if spec.kind == "load":
            mem = ins.mem(0)
            rd = [[aindex[mem.array]] + r for r in view_of[mem.array].rects(mem)]
            words = ArrayView.words([r[1:] for r in rd])
            reads += words
            row.update(m="L", rd=rd, o=[rd, str(mem)])  # the register now holds a copy of this block
        elif spec.kind == "store":
            src, mem = ins.reg(0), ins.mem(1)
            wr = [[aindex[mem.array]] + r for r in view_of[mem.array].rects(mem)]
            words = ArrayView.words([r[1:] for r in wr])
            writes += words
            row.update(m="S", wr=wr)
            if mem.array in contents:
                value = step.registers[index[src.name]]
                vals = (value.T if src.transpose else value).ravel().tolist() if hasattr(value, "shape") else [value]
                row["mv"] = [cell_text(v) for v in vals]
        row["rr"] = [index[ins.reg(pos).name] for pos in range(len(ins.args)) if spec.signature[pos] == "src"]
        dst_value: Any = None
        if spec.dest is not None:
            w = index[ins.reg(spec.dest).name]
            dst_value = step.registers[w]
            row["rw"] = w
            row["v"] = _register_value(dst_value) if hasattr(dst_value, "shape") else reg_texts[k][w]
            if spec.kind != "load":
                row["c"] = spec.cost_class
                if w not in row["rr"]:
                    row["o"] = None  # computed afresh: no longer a copy of memory
        unit, f = _flops(ins, before, dst_value, index)
        flops += f
        cyc += op_cycles.get(ins.op, 1)
        if hbm_rate:
            cyc += words * word_bytes / hbm_rate
        unit_rate = rate[unit]
        if unit_rate and f:
            whole_mac = unit == _MM and ins.op == "MAC_Z" and whole  # each output's first MAC: a multiply, a whole MAC
            cyc += (f + (_size(dst_value) if whole_mac else 0)) / unit_rate
        counters["cycles"].append(_num(cyc))
        counters["reads"].append(reads)
        counters["writes"].append(writes)
        counters["flops"].append(flops)
        if tile:
            occupancy = n_scalar + sum(_size(v) for n, v in zip(names, step.registers) if n in counted)
            peak = max(peak, occupancy)
            counters["sram"].append(occupancy)
            counters["sram_peak"].append(peak)
        shape = dst_value.shape if spec.kind == "load" and hasattr(dst_value, "shape") else None
        listing.append({"line": step.line, "text": step.instruction, "explain": _explain(ins, tile, shape)})
        rows.append(row)
        before = step.registers
    units = _units(ops_used, tile)
    unit_of_class = {c: i for i, u in enumerate(units) for c in u.pop("classes")}
    for row in rows:
        if "c" in row:
            row["u"] = unit_of_class.get(row.pop("c"), -1)
    return {
        "title": result.file,
        "machine": machine.get("name", ""),
        "tile": tile,
        "symbolic": result.symbolic,
        "sram_words": result.extra.get("sram_words"),
        "total_steps": result.instructions,
        "note": _note(result, steps, len(all_steps), len(shown), max_steps),
        "registers": [{"name": n, "tile": n[:1] == "T", "counted": n in counted} for n in names],
        "sram_rule": machine.get("sram_rule") or "exact",
        "initial_registers": [None] * len(names),
        "final_registers": [_register_value(result.registers.get(n)) for n in names],
        "arrays": [{"name": v.name, "shape": list(v.shape), "rows": v.rows, "cols": v.cols, "br": v.br, "bc": v.bc,
                    "written": v.name in written, "cells": contents.get(v.name),
                    "labels": v.labels() if v.elementwise else None} for v in views],
        "units": units,
        "listing": listing,
        "source": source,
        "steps": rows,
        "counters": counters,
        "totals": {"cycles": _num(result.cycles), "reads": result.dram_reads, "writes": result.dram_writes,
                   "sram_peak": result.extra.get("sram_peak")},
    }


def _sram_counted(result: Result, instrs, names) -> set[str]:
    """T registers whose tiles count against SRAM: all of them, or under ``sram_rule: paper``
    (the FlashAttention paper's count) those a 2-D HBM block is loaded into or stored from —
    Q_i, K_j, V_j, O_i — not S, the row statistics or temporaries (``sim/engines/tile.py``)."""
    tiles = {n for n in names if n[:1] == "T"}
    if result.machine.get("sram_rule") != "paper":
        return tiles
    out = set()
    for ins in instrs:
        kind = ISA[ins.op].kind
        if kind in ("load", "store"):
            reg, mem = (ins.args[1], ins.args[0]) if kind == "load" else ins.args
            if sum(isinstance(i, Span) for i in mem.index) == 2:
                out.add(reg.name)
    return out & tiles


def _note(result: Result, steps: bool, recorded: int, shown: int, max_steps: int) -> str:
    if steps and result.steps is None:
        return (f"Steps were not recorded ({result.instructions:,} steps; by default only runs of at most 200 "
                "keep them): run with --steps (simulate(..., steps=True)) to step through the run.")
    if recorded > shown:
        return (f"Showing the first {shown:,} of {recorded:,} steps (the page replays at most {max_steps:,} to stay "
                "responsive); the summary's counters and memory are the whole run's.")
    return ""


def _num(x: float):
    return int(x) if float(x).is_integer() else float(x)
