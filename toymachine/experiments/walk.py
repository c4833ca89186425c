"""A tiled run as seed 001's slides (``toym walk``): the FlashAttention walk-through of seed 001
("Flash Attention动画": load K_j, V_j; load Q_i, O_i, ℓ_i, m_i; compute on chip; write back) told
step group by step group, with the on-chip occupancy drawn against the SRAM size M, and the
watched array (O) after every (i, j) visit — seed 001's second example prints O_BLOCKS after each
``Attn : Q{i}xK{j}``.

``walk_slides(result)``: consecutive steps of one kind form a slide — LOADs of K/V blocks, LOADs of
the other arrays (Q_i, O_i, ℓ_i, m_i), arithmetic, STOREs. Each slide names its blocks, its steps,
the pair (i, j) it belongs to (i, j: the query and key block last loaded, numbered in order of first
appearance), the cycles when it ends and the words on chip then — counted as the machine counts
them (``sram_rule: paper``: only the blocks of HBM matrices, Q_i, K_j, V_j, O_i), from the step
viewer's own counters (``render.stepview.step_model``).

``store_visits(result, array)``: the array after every STORE to it that ends a visit — replayed
from the step rows (each STORE writes its register's tile into a copy of the array's contents
before step 1).
"""

from __future__ import annotations

__all__ = ["Slide", "Visit", "walk_slides", "store_visits", "walk_report", "walk_frames", "WALK_MAX_STEPS"]

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..isa import ISA
from ..program import Mem, Span
from ..render.report import Report, Section
from ..render.stepview import step_model
from ..result import Result

WALK_MAX_STEPS = 5000  # step rows kept (and replayed) at most
_GREEK = {"l": "ℓ"}


@dataclass(frozen=True)
class Slide:
    number: int
    pair: tuple[int | None, int | None]  # (i, j): query block, key block (None before the first load)
    kind: str  # "load K_j, V_j" … "compute on chip" … "write back"
    what: str  # the slide's caption
    blocks: tuple[str, ...]  # the HBM blocks it moves
    first: int  # first and last step (1-based)
    last: int
    cycles: float  # cumulative, at the slide's end
    onchip: int  # words on chip at the slide's end (as the machine counts them)


@dataclass(frozen=True)
class Visit:
    pair: tuple[int | None, int | None]
    step: int
    value: np.ndarray  # the array after the visit's STORE


def _parse(text: str):
    from ..asm import parse

    return parse(text).instrs[0]


def _span_key(mem: Mem) -> tuple:
    return tuple((i.start, i.stop) if isinstance(i, Span) else i for i in mem.index)


def _pairs(instrs) -> list[tuple[int | None, int | None]]:
    """(i, j) after each step: the last Q block and the last K block loaded, numbered in order."""
    seen: dict[str, dict] = {"Q": {}, "K": {}}
    i = j = None
    out = []
    for ins in instrs:
        if ins.op == "LOAD" and ins.args[0].array in seen:
            mem = ins.args[0]
            book = seen[mem.array]
            n = book.setdefault(_span_key(mem), len(book))
            if mem.array == "Q":
                i = n
            else:
                j = n
        out.append((i, j))
    return out


def _kind(ins) -> str:
    kind = ISA[ins.op].kind
    if kind == "load":
        return "load K_j, V_j" if ins.args[0].array in ("K", "V") else "load"
    return "write back" if kind == "store" else "compute on chip"


def _steps(result: Result):
    if result.steps is None:
        raise ConfigError(f"the walk replays the run's steps; this run has {result.instructions:,} (at most "
                          f"{WALK_MAX_STEPS:,} are kept)", hint="walk a smaller program (fewer blocks, smaller n)")
    cache: dict = {}
    instrs = []
    for s in result.steps:
        ins = cache.get(s.instruction)
        if ins is None:
            ins = cache[s.instruction] = _parse(s.instruction)
        instrs.append(ins)
    return result.steps, instrs


def walk_slides(result: Result) -> list[Slide]:
    """The run's steps grouped into seed 001's slides (module docstring)."""
    steps, instrs = _steps(result)
    model = step_model(result, max_steps=len(steps))
    counters = model["counters"]
    pairs = _pairs(instrs)
    slides: list[Slide] = []
    start = 0
    for k in range(1, len(instrs) + 1):
        if k < len(instrs) and _kind(instrs[k]) == _kind(instrs[start]):
            continue
        group = instrs[start:k]
        kind = _kind(group[0])
        blocks = tuple(dict.fromkeys(str(ins.args[0] if ins.op == "LOAD" else ins.args[1]) for ins in group
                                     if ISA[ins.op].kind in ("load", "store")))
        arrays = tuple(dict.fromkeys((ins.args[0] if ins.op == "LOAD" else ins.args[1]).array for ins in group
                                     if ISA[ins.op].kind in ("load", "store")))
        sub = lambda a: f"{_GREEK.get(a, a)}_{'j' if a in ('K', 'V') else 'i'}"  # noqa: E731
        if kind == "compute on chip":
            ops = set(ins.op for ins in group)
            if {"MAC_Z", "ROWMAX", "EXP", "ROWSUM", "DIV"} <= ops:  # an FA1/FA2 block pair: seed 001's three slides
                what = f"compute S_ij, m̃_ij, P̃_ij, ℓ̃_ij, m_new, ℓ_new, O_i ({len(group)} instr.)"
            else:
                what = f"compute on chip ({len(group)} instr.: {', '.join(sorted(ops))})"
        else:
            verb = "load" if kind.startswith("load") else "write back"
            what = f"{verb} {', '.join(sub(a) for a in arrays)}" + (" from HBM" if verb == "load" else " to HBM")
        cyc = counters["cycles"][k]
        onchip = counters["sram"][k] if "sram" in counters else 0
        slides.append(Slide(len(slides) + 1, pairs[k - 1], kind, what, blocks, start + 1, k, cyc, onchip))
        start = k
    return slides


def store_visits(result: Result, array: str = "O") -> list[Visit]:
    """``array`` after each STORE to it (module docstring); its contents before step 1 are the
    program's declaration (or the final contents where never stored: the inputs)."""
    steps, instrs = _steps(result)
    if array not in result.memory:
        raise ConfigError(f"the run has no array {array!r} to watch",
                          hint=f"arrays: {', '.join(sorted(result.memory.keys()))}")
    final = np.asarray(result.memory[array], dtype=float)
    index = {n: i for i, n in enumerate(result.register_names)}
    cur = _initial(final, steps, instrs, array, index)
    pairs = _pairs(instrs)
    out = []
    for k, (step, ins) in enumerate(zip(steps, instrs)):
        if ins.op == "STORE" and ins.args[1].array == array:
            src, mem = ins.args
            value = np.asarray(step.registers[index[src.name]], dtype=float)
            if src.transpose:
                value = value.T
            sl = tuple(slice(i.start, i.stop) if isinstance(i, Span) else i for i in mem.index)
            cur[sl] = value.reshape(cur[sl].shape)
            out.append(Visit(pairs[k], step.step, cur.copy()))
    return out


def _initial(final: np.ndarray, steps, instrs, array: str, index: dict) -> np.ndarray:
    """The array before step 1: what each block's first LOAD saw before any STORE, else the final."""
    cur = final.copy()
    stored = np.zeros(final.shape, dtype=bool)
    for step, ins in zip(steps, instrs):
        if ISA[ins.op].kind not in ("load", "store"):
            continue
        mem = ins.args[0] if ins.op == "LOAD" else ins.args[1]
        if mem.array != array:
            continue
        sl = tuple(slice(i.start, i.stop) if isinstance(i, Span) else i for i in mem.index)
        if ins.op == "LOAD":
            seen = np.asarray(step.registers[index[ins.args[1].name]], dtype=float)
            fresh = ~stored[sl]
            cur[sl] = np.where(fresh, seen.reshape(cur[sl].shape), cur[sl])
            stored[sl] = True
        else:
            stored[sl] = True
    return cur


def _vec(row: np.ndarray) -> str:
    """A row as torch prints it in seed 001: 4 decimals."""
    return "[" + ", ".join("nan" if math.isnan(v) else f"{v:.4f}" for v in np.atleast_1d(row)) + "]"


def _bar(words: int, cap: int | None, width: int = 20) -> str:
    if not cap:
        return str(words)
    fill = min(width, round(width * words / cap))
    return "█" * fill + "·" * (width - fill) + f" {words}/{cap}"


def walk_report(result: Result, *, array: str = "O", max_rows: int = 8) -> Report:
    """Two tables: the slides, and ``array`` after every visit (rows of up to ``max_rows``)."""
    slides = walk_slides(result)
    cap = result.extra.get("sram_words")
    rule = result.machine.get("sram_rule") or "exact"
    def pair(s: Slide) -> str:
        i, j = s.pair
        i = None if s.kind == "load K_j, V_j" else i  # K_j, V_j arrive before any Q_i of their pass
        return f"({'·' if i is None else i}, {'·' if j is None else j})"

    rows = tuple((str(s.number), pair(s), s.what, " ".join(s.blocks), f"{s.first}–{s.last}"
                  if s.last > s.first else str(s.first), _cycles(s.cycles), _bar(s.onchip, cap)) for s in slides)
    half = any(not float(s.cycles).is_integer() for s in slides)
    note = (f"(i, j): the query block i and key block j in play; on chip: words held at the slide's end, counted "
            f"as the machine counts them (sram_rule {rule}" + (": only Q_i, K_j, V_j, O_i, the blocks the paper's "
                                                             "Bc = ⌈M/4d⌉ sizes" if rule == "paper" else "")
            + (f"), against M = {cap}" if cap else ")"))
    if half:
        note += "; cycles: averages of the machine's rates (a bandwidth model), not whole cycles"
    sections = [Section("Walk", ("slide", "(i, j)", "what", "blocks", "steps", "cycles", "on chip"), rows,
                        align=("r", "l", "l", "l", "r", "r", "l"))]
    notes = [note]
    visits = store_visits(result, array)
    if visits:
        n = visits[0].value.shape[0] if visits[0].value.ndim else 1
        show = min(n, max_rows)
        heads = ("visit", "Attn") + tuple(f"{array}[{r}]" for r in range(show))
        vrows = tuple((str(k + 1), f"Q{v.pair[0]}xK{v.pair[1]}",
                       *(_vec(v.value[r]) for r in range(show))) for k, v in enumerate(visits))
        sections.append(Section(f"{array} after each visit", heads, vrows))
        notes.append(f"{array} after each visit: {array} in HBM after each STORE to it, as seed 001's second example "
                     f"prints O_BLOCKS after each 'Attn : Q{{i}}xK{{j}}' (4 decimals)"
                     + (f"; rows {show}… of {n} not shown" if show < n else ""))
    return Report(f"Walk of {result.file}", tuple(sections), tuple(notes))


def _cycles(c: float) -> str:
    return f"{c:g}" if not float(c).is_integer() else str(int(c))


def walk_frames(result: Result, *, array: str = "O", max_rows: int = 16, max_cols: int = 8) -> dict:
    """The slides as the page (``render.walk_page``) draws them: caption, blocks, steps, cycles,
    words on chip, and ``array`` in HBM after each slide (4 decimals; rows/columns past the limits
    left off)."""
    slides = walk_slides(result)
    visits = store_visits(result, array)
    final = np.asarray(result.memory[array], dtype=float)
    steps, instrs = _steps(result)
    cur = _initial(final, steps, instrs, array, {n: i for i, n in enumerate(result.register_names)})
    frames, v = [], 0
    for s in slides:
        while v < len(visits) and visits[v].step <= s.last:
            cur = visits[v].value
            v += 1
        shown = np.atleast_2d(cur)[:max_rows, :max_cols]
        i, j = s.pair
        i = None if s.kind == "load K_j, V_j" else i
        frames.append({"pair": f"({'·' if i is None else i}, {'·' if j is None else j})", "what": s.what,
                       "blocks": list(s.blocks), "steps": f"{s.first}–{s.last}" if s.last > s.first else str(s.first),
                       "cycles": _cycles(s.cycles), "onchip": s.onchip,
                       "array": [["nan" if math.isnan(x) else f"{x:.4f}" for x in row] for row in shown.tolist()]})
    return {"name": array, "cap": result.extra.get("sram_words"), "rule": result.machine.get("sram_rule") or "exact",
            "slides": frames}
