"""The search space of matmul schedules on the scalar machine (seed 000, Problems 1–3 and the
quiz): the states, the moves between them, and the admissible bound the search uses.

C = A·B with A m×k, B k×n on a machine with R registers and four instructions: LOAD, STORE,
MAC_Z Ra, Rb, Rd (Rd = Ra·Rb) and MAC Ra, Rb, Rc, Rd (Rd = Ra·Rb + Rc).

**What a schedule is.** Each output c_ij is one chain: a MAC_Z of one product a_il·b_lj, then
k − 1 MACs adding the other products in any order, then a STORE. (With only × and + and no
constants, any program that computes C for every input forms each product a_il·b_lj by
multiplying a loaded a_il by a loaded b_lj and adds it into c_ij's chain exactly once — no
cancellation is possible — and two chains of one output could only be joined by ADD, which
this instruction set lacks. So the counts MAC_Z = mn, MAC = mn(k − 1) are fixed and a
schedule differs from another only in its LOADs, and its spills.)

**The state** (canonical): which inputs are resident (a set: registers are interchangeable,
so the register contents are a multiset, and two copies of one value are never useful), and
per output which of its k products are done and whether its partial sum is in a register,
in DRAM (spilled) or stored complete. At most R values are resident.

**The moves** (macro moves; each ends in the closure below). Pick a remaining product
p = (i, j, l); LOAD its operands a_il, b_lj that are not resident (and reload c_ij's partial
sum if it was spilled), evicting as many resident values as the register file needs (any
choice of victims: an input is just overwritten — it is reloaded if needed again; a partial
sum is spilled by a STORE, only when ``spills`` is on); then MAC_Z (a new output: its
destination is a free register, an operand that is dead after p, or one more victim — which
may be p's own operand, overwritten by its product) or MAC (in place). Loading just in time,
right before the product that needs it, loses nothing: a value loaded earlier only holds a
register longer. A MAC whose destination differs from its addend register (MAC Ra, Rb, Rc,
Rd with Rd ≠ Rc) is the in-place MAC followed by freeing Rd's old value — the same state.

**The closure** (moves that are never worse, applied eagerly): every MAC whose operands and
partial sum are all resident (it needs no register; with an accumulator, only where the
partial sum could not change place at it); every STORE of a complete output (it frees one);
every output whose k products all have their operands resident and a register (or ACC) is
free (MAC_Z, MACs, STORE: progress for nothing); dropping every resident input no remaining
product needs.

**The MAC unit's accumulator** (``accumulator``: a machine with ``mac_accumulator: true``,
seed 000's Blackwell remark): one more slot, ACC, outside the register file, that only a
partial sum can occupy — MAC_Z and MAC may write it, MAC may add from it, STORE may read it
(``MAC Ra, Rb, ACC, ACC``; operands always come from registers, LOAD never targets it). A
partial sum enters ACC at one of its products (MAC_Z or MAC with destination ACC, when ACC
is free) and leaves it at one (MAC with addend ACC and a register as destination) or by its
STORE; each product of an output in a register while ACC is free, or of the output in ACC,
is a move with that choice (never applied eagerly). MOV is not in the space.

**Cost** counted by the search (``g``): LOADs × LOAD cycles + spill STOREs × STORE cycles;
the fixed part mn·(MAC_Z + STORE) + mn(k − 1)·MAC is added at the end.

**Bound** (``h``): ``matmul_bound.space_bound`` — admissible: the exact optimum of every row's
and column's sub-problem, never below "every needed input not resident is loaded once".
"""

from __future__ import annotations

__all__ = ["MatmulSpace", "Move"]

from itertools import combinations
from typing import NamedTuple

from .matmul_bound import line_table, space_bound

STAY, TO_ACC, FROM_ACC = 0, 1, 2  # where a product puts its partial sum


class Move(NamedTuple):
    """One macro move: product l of output o, after evicting ``victims`` (value ids); ``dest``:
    STAY (the partial sum's place, a register for a new one), TO_ACC or FROM_ACC."""

    output: int
    l: int
    victims: tuple[int, ...]
    dest: int = STAY


class MatmulSpace:
    """States and moves for C = A·B (A m×k, B k×n) with R registers.

    Value ids: a_il → i·k + l; b_lj → m·k + j·k + l (the inputs, 0 … NI − 1); the partial sum
    of output o = i·n + j → NI + o. A state is one int: bit v (v < NI) set if input v is
    resident; above them, per output, k bits of done products, one bit "resident" (in a
    register or in ACC) and, with an accumulator, one bit "in ACC". An output whose done bits
    are all set is stored; done bits set but not resident means spilled."""

    def __init__(self, m: int, n: int, k: int, registers: int, *, load_cycles: float = 1,
                 store_cycles: float = 1, spills: bool = False, accumulator: bool = False):
        self.m, self.n, self.k, self.registers = m, n, k, registers
        self.spills, self.accumulator = spills, accumulator
        self.cl, self.cs = load_cycles, store_cycles
        self.na, self.nb = m * k, k * n
        self.ni = self.na + self.nb
        self.outputs = m * n
        self.full = (1 << k) - 1
        self.width = k + 1 + accumulator  # bits per output: k done bits, resident, in ACC
        self.inreg = 1 << k
        self.inacc = (1 << (k + 1)) if accumulator else 0
        self.res_mask = (1 << self.ni) - 1
        # opbits[o][l]: the two operand bits of product l of output o; need[o][done]: inputs o still needs
        self.opnds = [[(i * k + l, self.na + j * k + l) for l in range(k)] for i in range(m) for j in range(n)]
        self.opbits = [[(1 << a) | (1 << b) for a, b in ops] for ops in self.opnds]
        # the line problems relax ACC to one more general slot (any partial may use it at any time)
        self.col_table = line_table(m, k, registers + accumulator, spills)  # column j: m outputs, costed b_·j
        self.row_table = line_table(n, k, registers + accumulator, spills)  # row i: n outputs, costed a_i·
        self.need = []
        for o in range(self.outputs):
            row = []
            for done in range(self.full + 1):
                bits = 0
                for l in range(k):
                    if not done >> l & 1:
                        bits |= self.opbits[o][l]
                row.append(bits)
            self.need.append(row)

    # -- names --------------------------------------------------------------------------
    def value_name(self, v: int) -> tuple[str, tuple[int, int]]:
        """(array, index) of a value id: ('a', (i, l)), ('b', (l, j)) or ('c', (i, j))."""
        if v < self.na:
            return "a", divmod(v, self.k)
        if v < self.ni:
            j, l = divmod(v - self.na, self.k)
            return "b", (l, j)
        return "c", divmod(v - self.ni, self.n)

    # -- packing ------------------------------------------------------------------------
    def root(self) -> int:
        return self.closure(0, [0] * self.outputs, [])[0]

    def unpack(self, key: int) -> tuple[int, list[int]]:
        res = key & self.res_mask
        st = key >> self.ni
        w, mask = self.width, (1 << self.width) - 1
        return res, [(st >> (o * w)) & mask for o in range(self.outputs)]

    def pack(self, res: int, codes: list[int]) -> int:
        st = 0
        w = self.width
        for o in range(self.outputs - 1, -1, -1):
            st = (st << w) | codes[o]
        return res | (st << self.ni)

    def needed(self, codes: list[int]) -> int:
        bits = 0
        full, need = self.full, self.need
        for o, code in enumerate(codes):
            done = code & full
            if done != full:
                bits |= need[o][done]
        return bits

    def is_goal(self, key: int) -> bool:
        _, codes = self.unpack(key)
        return all(code == self.full for code in codes)

    def bound(self, key: int) -> float:
        return space_bound(self, key)

    # -- moves --------------------------------------------------------------------------
    def used(self, res: int, codes: list[int]) -> int:
        """Registers in use: resident inputs and partial sums outside ACC."""
        inreg, inacc = self.inreg, self.inacc
        return res.bit_count() + sum(1 for c in codes if c & inreg and not c & inacc)

    def acc_free(self, codes: list[int]) -> bool:
        return self.accumulator and not any(c & self.inacc for c in codes)

    def moves(self, key: int):
        """Every macro move from ``key``: yields (move, child key, cost of the move)."""
        res, codes = self.unpack(key)
        full, inreg, inacc, R = self.full, self.inreg, self.inacc, self.registers
        partials = [o for o, c in enumerate(codes) if c & inreg]
        used = self.used(res, codes)
        acc_free = self.acc_free(codes)
        inputs = [v for v in range(self.ni) if res >> v & 1]
        for o, code in enumerate(codes):
            done = code & full
            if done == full:
                continue
            in_acc = code & inacc
            reload = 1 if (not code & inreg and done) else 0
            if done == 0:  # a new output: its MAC_Z writes a register, or ACC
                dests = [STAY] + ([TO_ACC] if acc_free else [])
            elif in_acc:
                dests = [STAY, FROM_ACC]
            else:
                dests = [STAY] + ([TO_ACC] if acc_free else [])
            spill_cands = [self.ni + p for p in partials if p != o] if self.spills else []
            for l in range(self.k):
                if done >> l & 1:
                    continue
                x, y = self.opnds[o][l]
                loads = (not res >> x & 1) + (not res >> y & 1) + reload
                free = R - used
                e_load = max(0, loads - free)
                free_after = free + e_load - loads
                cands = [v for v in inputs if v != x and v != y] + spill_cands
                if e_load > len(cands):
                    continue
                for dest in dests:
                    e_dest = 0
                    needs_register = (done == 0 and dest == STAY) or dest == FROM_ACC
                    if needs_register and free_after == 0:
                        after = codes[:]
                        after[o] = code | (1 << l)
                        alive = self.needed(after)
                        if (alive >> x & 1) and (alive >> y & 1):
                            e_dest = 1  # no free register and both operands live on: one more victim
                    victim_sets = list(combinations(cands, e_load + e_dest))
                    if e_dest:  # the product overwrites its own operand
                        victim_sets += [c + (v,) for c in combinations(cands, e_load) for v in (x, y)]
                    for victims in victim_sets:
                        move = Move(o, l, victims, dest)
                        child, cost = self.apply(res, codes, move, None)
                        yield move, child, cost

    def apply(self, res: int, codes: list[int], move: Move, events: list | None) -> tuple[int, float]:
        """The child of (res, codes) under ``move`` and the move's cost (LOADs and spill
        STOREs). ``events`` (a list, or None) receives what happens, for the program:
        ('spill', o), ('drop', v), ('load', v), ('reload', o), ('mac_z', o, l, overwrite, to_acc),
        ('mac', o, l, dest, overwrite), ('store', o)."""
        codes = codes[:]
        full, inreg, inacc = self.full, self.inreg, self.inacc
        o, l, victims, dest = move
        x, y = self.opnds[o][l]
        cost = 0.0
        dest_victim = None
        for v in victims:
            if v >= self.ni:
                p = v - self.ni
                codes[p] &= ~(inreg | inacc)
                cost += self.cs
                if events is not None:
                    events.append(("spill", p))
            elif v in (x, y):
                dest_victim = v  # the product is written over this operand
            else:
                res &= ~(1 << v)
                if events is not None:
                    events.append(("drop", v))
        code = codes[o]
        done = code & full
        if not code & inreg and done:
            cost += self.cl
            if events is not None:
                events.append(("reload", o))
        for v in (x, y):
            if not res >> v & 1:
                res |= 1 << v
                cost += self.cl
                if events is not None:
                    events.append(("load", v))
        in_acc = dest == TO_ACC or (dest == STAY and code & inacc)
        codes[o] = done | (1 << l) | inreg | (inacc if in_acc else 0)
        if events is not None:
            overwrite = dest_victim
            if overwrite is None and ((done == 0 and dest == STAY) or dest == FROM_ACC) \
                    and self.used(res, codes) > self.registers:
                alive = self.needed(codes)
                overwrite = x if not alive >> x & 1 else y  # one of them is dead (moves() checked)
            if done == 0:
                events.append(("mac_z", o, l, overwrite, dest == TO_ACC))
            else:
                events.append(("mac", o, l, dest, overwrite))
        if dest_victim is not None:
            res &= ~(1 << dest_victim)
        if codes[o] & full == full:
            codes[o] = full
            if events is not None:
                events.append(("store", o))
        return self.closure(res, codes, events)[0], cost

    def closure(self, res: int, codes: list[int], events: list | None) -> tuple[int, list[int]]:
        """Apply the moves that are never worse until none applies; returns (key, codes)."""
        full, inreg, inacc, k = self.full, self.inreg, self.inacc, self.k
        while True:
            progress = False
            acc_free = self.acc_free(codes)
            for o, code in enumerate(codes):  # MACs into resident partial sums, STOREs of complete outputs
                if not code & inreg or (code & inacc) or (acc_free and self.accumulator):
                    continue  # with an accumulator these MACs may move the partial sum: they are moves
                done = code & full
                for l in range(k):
                    if not done >> l & 1 and not self.opbits[o][l] & ~res:
                        done |= 1 << l
                        if events is not None:
                            events.append(("mac", o, l, STAY, None))
                if done == full:
                    codes[o] = full
                    if events is not None:
                        events.append(("store", o))
                else:
                    codes[o] = done | inreg
            alive = self.needed(codes)
            dead = res & ~alive
            if dead:
                res &= alive
                if events is not None:
                    events.extend(("drop", v) for v in range(self.ni) if dead >> v & 1)
            register = self.used(res, codes) < self.registers
            if register or self.acc_free(codes):  # whole outputs whose operands are all resident
                for o, code in enumerate(codes):
                    if code == 0 and not self.need[o][0] & ~res:
                        if events is not None:
                            events.append(("mac_z", o, 0, None, not register))
                            events.extend(("mac", o, l, STAY, None) for l in range(1, k))
                            events.append(("store", o))
                        codes[o] = full
                        progress = True
                        break
            if not progress:
                return self.pack(res, codes), codes
