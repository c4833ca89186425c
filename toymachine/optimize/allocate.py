"""Register allocation of a fixed order of computation (``analyze``): serve a ``Flow``'s uses in
order on R registers, count the LOADs and STOREs, and write the program that does it.

A use whose value is not resident costs a LOAD — from its word (a word's initial content), or
from where it was put when evicted. A computed value is *dirty* until it is stored: evicting
one that is used again costs a STORE to a scratch word (a spill, array ``spill``) besides the
reload; an output is written to its words when it is evicted or at the end (the one STORE it
owes), except that a write that would clobber a word whose initial content is still to be
read goes to a scratch word and is copied to its word at the end. A destination may overwrite
one of its instruction's sources.

Victims: Belady's MIN evicts the value whose next use is furthest (a value never used again
first) — optimal for the number of LOADs (misses). ``clean_first`` evicts clean values before
dirty ones that are used again (fewer spills, maybe more LOADs).
"""

from __future__ import annotations

__all__ = ["Allocation", "allocate", "NEVER"]

import heapq
from typing import NamedTuple

from ..program import Instr, Mem, Reg
from .trace_flow import Flow

NEVER = float("inf")


class Allocation(NamedTuple):
    loads: int
    stores: int
    hits: set  # (use index, value id) served from a register
    instrs: tuple[Instr, ...]  # the program that does it


def _scratch_name(flow: Flow) -> str:
    taken = {m.array for m in flow.home.values()} | {m.array for ws in flow.outputs.values() for m in ws}
    name = "spill"
    while name in taken:
        name += "_"
    return name


def allocate(flow: Flow, registers: int, clean_first: bool = False) -> Allocation:
    positions: list[list[int]] = [[] for _ in flow.names]
    for t, (_, vals, _, _) in enumerate(flow.uses):
        for v in dict.fromkeys(vals):
            positions[v].append(t)
    ptr = [0] * len(flow.names)

    def next_use(v) -> float:
        if v is None:
            return NEVER
        p = positions[v]
        return p[ptr[v]] if ptr[v] < len(p) else NEVER

    regs = [Reg(f"R{r}") for r in range(registers)]
    resident: dict[int, int] = {}  # value id → register
    free = list(range(registers))  # a heap: the lowest free register first
    is_dirty = [False] * len(flow.names)
    saved_at: dict[int, Mem] = {}  # computed value → where it can be loaded back from
    written: set = set()  # outputs stored to their words
    scratch = _scratch_name(flow)
    slots: dict[int, Mem] = {}
    heaps: tuple[list, list] = ([], [])  # (−next use, value): clean or dead values / dirty values still used
    instrs: list[Instr] = []
    count = {"LOAD": 0, "STORE": 0}
    hits: set = set()

    def emit(op: str, *args) -> None:
        instrs.append(Instr(op, args))
        if op in count:
            count[op] += 1

    def push(v: int) -> None:
        nu = next_use(v)
        heapq.heappush(heaps[1 if (clean_first and is_dirty[v] and nu != NEVER) else 0], (-nu, v))

    def to_scratch(v: int, r: int) -> None:
        m = slots.setdefault(v, Mem(scratch, (len(slots),)))
        emit("STORE", regs[r], m)
        saved_at[v] = m

    def write_back(v: int, r: int) -> bool:
        """Store output v to its words, unless that clobbers an initial content still to be read."""
        words = flow.outputs[v]
        if any(next_use(flow.initial_of.get((w.array, w.index))) != NEVER for w in words):
            return False
        for w in words:
            emit("STORE", regs[r], w)
        written.add(v)
        saved_at[v] = words[0]
        return True

    def evict(protect) -> None:
        held, victim = [], None
        for heap in heaps:
            while heap:
                neg, v = heapq.heappop(heap)
                if v not in resident or -neg != next_use(v):
                    continue  # stale entry
                if v in protect:
                    held.append(v)
                    continue
                victim = v
                break
            if victim is not None:
                break
        for v in held:
            push(v)
        if victim is None:  # pragma: no cover - callers check the register count first
            raise AssertionError("no register to evict")
        r = resident.pop(victim)
        if is_dirty[victim]:
            if victim in flow.outputs and victim not in written:
                if not write_back(victim, r):
                    to_scratch(victim, r)
            elif next_use(victim) != NEVER:
                to_scratch(victim, r)  # a spill
            is_dirty[victim] = False
        heapq.heappush(free, r)

    for t, (_, vals, out, ins) in enumerate(flow.uses):
        need = set(vals)
        for v in dict.fromkeys(vals):
            if v in resident:
                hits.add((t, v))
                continue
            if not free:
                evict(need)
            r = resident[v] = heapq.heappop(free)
            emit("LOAD", saved_at[v] if flow.dirty[v] else flow.home[v], regs[r])
            push(v)
        for v in need:
            ptr[v] += 1
            push(v)
        if out is None:  # a STORE of an unmodified input (a copy)
            v = vals[0]
            if v in flow.outputs and v not in written:
                for w in flow.outputs[v]:
                    emit("STORE", regs[resident[v]], w)
                written.add(v)
            continue
        srcs = [regs[resident[v]] for v in vals]
        if not free:
            evict({out})
        r = resident[out] = heapq.heappop(free)
        is_dirty[out] = True
        push(out)
        emit(ins.op, *srcs, regs[r])
    for v in sorted(resident, key=resident.__getitem__):  # outputs still in a register
        if is_dirty[v] and v in flow.outputs and v not in written:
            for w in flow.outputs[v]:
                emit("STORE", regs[resident[v]], w)
            written.add(v)
    for v in flow.outputs:  # outputs parked in scratch words: to their words now
        if v not in written:
            emit("LOAD", saved_at[v], regs[0])
            for w in flow.outputs[v]:
                emit("STORE", regs[0], w)
            written.add(v)
    return Allocation(count["LOAD"], count["STORE"], hits, tuple(instrs))
