"""An independent brute-force oracle for the matmul schedule search (tests only).

Dijkstra over *concrete* machine states — the register file as a tuple of contents (sorted:
renaming registers is the one symmetry used) and each output's DRAM word — with every
instruction of LOAD / STORE / MAC_Z / MAC on every register choice: no macro moves, no
closure, no bound, no dominance. A register holds nothing, an input ('a', i, l) / ('b', l, j),
or a partial sum ('p', i, j, done) of output (i, j) with the products ``done``; any register
may be overwritten at any time; a partial sum may be stored before it is complete (a spill)
only when ``spills`` is on, and a spilled word may be loaded back.
"""

from __future__ import annotations

import heapq
from itertools import count


def brute_force_matmul(m: int, n: int, k: int, registers: int, *, load: float = 1, store: float = 1,
                       mac_z: float = 1, mac: float = 1, spills: bool = False, acc: bool = False,
                       limit: int = 3_000_000) -> float:
    """Least cycles of any schedule of C = A·B (A m×k, B k×n) on ``registers`` registers
    (``acc``: and ACC, a slot of the MAC unit: MAC_Z/MAC may write it, MAC may add from it,
    STORE may read it; LOAD never writes it and operands never come from it).

    A state's register file is the sorted tuple of its contents' numbers (each content is
    numbered when first seen): renaming registers changes nothing, so an instruction that
    overwrites a register is tried once per distinct content it may overwrite — every register
    holding that content gives the same state."""
    inputs = [("a", i, l) for i in range(m) for l in range(k)] + [("b", l, j) for l in range(k) for j in range(n)]
    full = frozenset(range(k))
    outputs = {(i, j): o for o, (i, j) in enumerate((i, j) for i in range(m) for j in range(n))}
    number: dict = {}  # a register's content -> its number
    content: list = []  # its number -> the content

    def num(value) -> int:
        at = number.get(value)
        if at is None:
            at = number[value] = len(content)
            content.append(value)
        return at

    def put(regs: tuple[int, ...], old: int, value) -> tuple[int, ...]:
        """The register file with one register holding ``old`` overwritten by ``value``."""
        at = regs.index(old)
        return tuple(sorted(regs[:at] + regs[at + 1:] + (num(value),)))

    loads = [num(v) for v in inputs]
    start = (tuple([num(None)] * registers), tuple([None] * len(outputs)), None)  # registers, DRAM words, ACC
    best = {start: 0.0}
    tie = count()
    heap = [(0.0, next(tie), start)]

    while heap:
        g, _, state = heapq.heappop(heap)
        if best[state] < g:
            continue
        regs, mem, acc_val = state
        if all(w == "done" for w in mem):
            return g
        if len(best) > limit:
            raise RuntimeError("oracle state limit")
        held = sorted(set(regs))
        values = [content[r] for r in held]
        succ = []  # (cost, registers, DRAM words, ACC)
        for old in held:
            for v in loads:  # LOAD an input into any register
                at = regs.index(old)
                succ.append((load, tuple(sorted(regs[:at] + regs[at + 1:] + (v,))), mem, acc_val))
            for (i, j), o in outputs.items():  # LOAD a spilled partial sum back
                if isinstance(mem[o], frozenset):
                    succ.append((load, put(regs, old, ("p", i, j, mem[o])), mem, acc_val))
        for v in values + ([acc_val] if acc else []):  # STORE a partial sum (from a register or ACC)
            if v is not None and v[0] == "p":
                o = outputs[v[1], v[2]]
                if v[3] == full:
                    succ.append((store, regs, mem[:o] + ("done",) + mem[o + 1:], acc_val))
                elif spills and mem[o] != "done":
                    succ.append((store, regs, mem[:o] + (v[3],) + mem[o + 1:], acc_val))

        def writes(value, cost, succ=succ, regs=regs, mem=mem, acc_val=acc_val, held=held):  # any register, or ACC
            for old in held:
                succ.append((cost, put(regs, old, value), mem, acc_val))
            if acc:
                succ.append((cost, regs, mem, value))

        partials = [z for z in values + ([acc_val] if acc else []) if z is not None and z[0] == "p"]
        for x in values:
            if x is None or x[0] != "a":
                continue
            for y in values:
                if y is None or y[0] != "b" or y[1] != x[2]:
                    continue
                i, l, j = x[1], x[2], y[2]
                writes(("p", i, j, frozenset([l])), mac_z)  # MAC_Z a_il, b_lj
                for z in partials:
                    if (z[1], z[2]) != (i, j) or l in z[3]:
                        continue
                    writes(("p", i, j, z[3] | {l}), mac)  # MAC a_il, b_lj, a partial sum of (i, j) without l
        for cost, regs2, mem2, acc2 in succ:
            nxt = (regs2, mem2, acc2)
            g2 = g + cost
            if g2 < best.get(nxt, float("inf")):
                best[nxt] = g2
                heapq.heappush(heap, (g2, next(tie), nxt))
    raise RuntimeError("no schedule")


def min_loads_fixed_order(uses, registers: int) -> int:
    """Least LOADs of any register allocation serving ``uses`` in order (exhaustive over sets).

    ``uses``: a list of (inputs, output) — inputs a tuple of value names, output a new value
    name or None. A value is resident or not; an input that is not resident costs one LOAD
    (its first use, or any use after it was dropped: a computed value dropped while still
    needed is assumed spilled and reloadable); before each use and after each output any
    values may be dropped; at most ``registers`` values are resident at any time."""
    from itertools import combinations

    layer = {frozenset(): 0}
    for inputs, out in uses:
        need = frozenset(inputs)
        nxt: dict = {}
        for held, cost in layer.items():
            pool = sorted(held - need)
            c = cost + len(need - held)
            for keep in range(0, max(0, registers - len(need)) + 1):
                for kept in combinations(pool, keep):
                    s1 = need | frozenset(kept)
                    if len(s1) > registers:
                        continue
                    if out is None:
                        options = [s1]
                    else:  # the result needs a register: keep any subset of s1 that leaves one
                        options = [frozenset(sub) | {out} for r in range(0, min(len(s1), registers - 1) + 1)
                                   for sub in combinations(sorted(s1), r)]
                    for s2 in options:
                        if c < nxt.get(s2, 1 << 30):
                            nxt[s2] = c
        layer = nxt
    return min(layer.values())
