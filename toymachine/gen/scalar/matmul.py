"""Matmul C = A·B on an R-register toy machine (seed 000: Problems 1–3 and the quiz).

A is m×k, B is k×n, C is m×n. Every schedule does the mnk multiply-adds (MAC_Z for the
first term of each output, MAC after) and stores each output once; schedules differ in how
many operands they LOAD, which is where the registers go.

A schedule works on a *row operand* P (M×K) and a *column operand* Q (K×N): for the
``rows`` orientation P = A, Q = B; for ``cols`` the problem is transposed (Cᵀ = Bᵀ·Aᵀ), so
P = Bᵀ and Q = Aᵀ. The generator tries both and keeps the cheaper.

inner — the seed's inner product: one output at a time in a single accumulator, outputs
    in row-serpentine order (row 0 left→right, row 1 right→left… the seed's c00, c01,
    c11, c10). Registers: α P-slots (α − 1 hold P[i][0..α−2] for the whole row, one
    streams the rest), β Q-slots, one accumulator; α = min(K, R − 2) first (each P-slot
    saves M(N − 1) loads), the rest β (each saves M − 1). An output starts with the P value
    the last one left in the stream slot, then the Q values still resident; Q-slots evict
    the least recently used value already used in the current row. R = 3 gives the
    seed's 13 LOADs / 25 cycles for n = 2; R = 6 gives 9 LOADs / 21 cycles (the quiz).

outer — the seed's outer product: a block of p×q outputs stays in p·q accumulators while
    k runs; per k, the block's rows go in groups of s (the group's P values in s P-slots)
    and each group sweeps the block's Q values through one Q-slot, serpentine, so the
    value at a group boundary is reused. Blocks that do not fit are done one after the
    other (no operand reuse across blocks). R = 6 and n = 2 give the seed's 10 LOADs / 22
    cycles (p = q = 2, s = 1).

best — the cheapest of all of these that fit R (fewest LOADs, then fewest registers,
    inner first), or — where it is cheaper — the schedule ``toymachine.optimize`` found by
    exhaustive search (``toymachine.cost.matmul_known``: every shape with m, n, k ≤ 3, each
    proven optimal; 25/22/21/20 cycles for n = 2 at R = 3/4/5/6). ``inner``, ``outer`` and
    ``best`` each take the cheapest member of their family that fits, so more registers never
    cost more. The plans and their cost formulas: ``toymachine.cost.matmul`` (``plan_matmul``,
    ``matmul_plan_cost``; the table's counts: ``matmul_known.known_cost``); this module emits them.
"""

from __future__ import annotations

__all__ = ["SCHEDULES", "matmul_program"]

from collections.abc import Callable

from ...cost.matmul import SCHEDULES, MatmulPlan, matmul_bound, matmul_plan_cost, plan_matmul
from ...cost.matmul_known import known_program
from ...params import command_line
from ...program import ArrayDecl, Program
from ..common import MAX_INSTRUCTIONS, ProgramBuilder, check_size, cli_line, input_values

# -- emission ----------------------------------------------------------------------------

Address = Callable[[int, int], tuple[str, tuple[int, int]]]  # (row, column) → (array, index)


def _addressing(plan: MatmulPlan) -> tuple[Address, Address, Address]:
    """P(i, k), Q(k, j), C(i, j) of the plan's orientation as (array, index)."""
    if plan.orientation == "rows":
        return (lambda i, k: ("a", (i, k)), lambda k, j: ("b", (k, j)), lambda i, j: ("c", (i, j)))
    return (lambda i, k: ("b", (k, i)), lambda k, j: ("a", (j, k)), lambda i, j: ("c", (j, i)))


def _emit_inner(b: ProgramBuilder, plan: MatmulPlan) -> None:
    M, N, K = plan.rows, plan.cols, plan.k
    alpha, beta = plan.row_slots, plan.col_slots
    P, Q, C = _addressing(plan)
    stream_from = alpha - 1  # P[i][k] for k ≥ this goes through R0; k < this has its own slot
    acc = 2

    def p_reg(kk: int) -> int:
        return 0 if kk >= stream_from else 3 + kk

    q_regs = [1] + [alpha + 2 + t for t in range(beta - 1)]
    p_held: dict[int, tuple[int, int]] = {}  # register → (i, k) of the P value it holds
    q_held: dict[int, tuple[int, int]] = {}  # register → (k, j) of the Q value it holds
    q_where: dict[tuple[int, int], int] = {}
    q_used: dict[int, tuple[int, int]] = {}  # register → (row of last use, time of last use)
    clock = 0
    for i in range(M):
        for j in (range(N) if i % 2 == 0 else range(N - 1, -1, -1)):
            order: list[int] = []
            held = p_held.get(0)
            if alpha < K and held is not None and held[0] == i:
                order.append(held[1])  # the P value the previous output left in R0
            order += [kk for kk in range(K) if (kk, j) in q_where and kk not in order]
            streamed = [kk for kk in range(stream_from, K) if kk not in order]
            last = next((kk for kk in reversed(order) if kk >= stream_from), None)
            if last is not None and streamed and last > streamed[-1]:
                streamed.reverse()  # serpentine: walk away from where the last output stopped
            order += streamed + [kk for kk in range(stream_from) if kk not in order]
            for step, kk in enumerate(order):
                ra = p_reg(kk)
                if p_held.get(ra) != (i, kk):
                    b.load(*P(i, kk), ra)
                    p_held[ra] = (i, kk)
                rb = q_where.get((kk, j))
                if rb is None:
                    rb = _q_victim(q_regs, q_held, q_used, i)
                    old = q_held.get(rb)
                    if old is not None:
                        del q_where[old]
                    b.load(*Q(kk, j), rb)
                    q_held[rb] = (kk, j)
                    q_where[(kk, j)] = rb
                clock += 1
                q_used[rb] = (i, clock)
                if step == 0:
                    b.op("MAC_Z", ra, rb, acc)
                else:
                    b.op("MAC", ra, rb, acc, acc)
            b.store(acc, *C(i, j))


def _q_victim(q_regs: list[int], q_held: dict, q_used: dict, row: int) -> int:
    """An empty Q slot, else the least recently used one already used in this row
    (its next use is a row away), else the least recently used."""
    for r in q_regs:
        if r not in q_held:
            return r
    this_row = [r for r in q_regs if q_used[r][0] == row]
    return min(this_row or q_regs, key=lambda r: q_used[r][1])


def _emit_outer(b: ProgramBuilder, plan: MatmulPlan) -> None:
    M, N, K = plan.rows, plan.cols, plan.k
    p, q, s = plan.block_rows, plan.block_cols, plan.row_slots
    P, Q, C = _addressing(plan)
    q_reg = 1

    def acc(r: int, c: int) -> int:  # accumulators R2 … R(p·q + 1), row-major in the block
        return 2 + r * q + c

    def p_reg(slot: int) -> int:  # R0, then the registers after the accumulators
        return 0 if slot == 0 else 1 + p * q + slot

    for i0 in range(0, M, p):
        rows = min(p, M - i0)
        group = min(s, rows)
        for j0 in range(0, N, q):
            cols = min(q, N - j0)
            for kk in range(K):
                p_held: dict[int, int] = {}  # register → block row it holds (this k only)
                q_held = None  # block column whose Q value R1 holds
                for g, g0 in enumerate(range(0, rows, group)):
                    members = range(g0, min(g0 + group, rows))
                    for c in (range(cols) if g % 2 == 0 else range(cols - 1, -1, -1)):
                        for slot, r in enumerate(members):
                            ra = p_reg(slot)
                            if p_held.get(ra) != r:
                                b.load(*P(i0 + r, kk), ra)
                                p_held[ra] = r
                            if q_held != c:
                                b.load(*Q(kk, j0 + c), q_reg)
                                q_held = c
                            if kk == 0:
                                b.op("MAC_Z", ra, q_reg, acc(r, c))
                            else:
                                b.op("MAC", ra, q_reg, acc(r, c), acc(r, c))
            for r in range(rows):
                for c in range(cols):
                    b.store(acc(r, c), *C(i0 + r, j0 + c))


def matmul_program(n: int = 2, registers: int = 3, schedule: str = "best", m: int | None = None,
                   k: int | None = None, *, mac_accumulator: bool = False, with_data: bool = True,
                   seed: int = 0, max_instructions: int | None = MAX_INSTRUCTIONS, on_size=None) -> Program:
    """``toym gen matmul``: C = A·B (A m×k, B k×n) on an R-register machine.

    ``mac_accumulator``: for a machine whose MAC unit keeps its own accumulator (``ACC``; seed
    000's Blackwell remark): the plan for R + 1 registers, its first accumulator (R2) named ACC
    and the registers above it renumbered down — R registers plus ACC, 2 at the least."""
    plan = plan_matmul(n=n, registers=registers, schedule=schedule, m=m, k=k, mac_accumulator=mac_accumulator)
    m, n, k = plan.m, plan.n, plan.k
    cost = matmul_plan_cost(plan)
    check_size(cost.instructions, f"matmul {m}×{k}·{k}×{n}", max_instructions, on_size)
    bound = matmul_bound(n=n, registers=registers, m=m, k=k, mac_accumulator=mac_accumulator)
    arrays = [ArrayDecl("a", (m, k)), ArrayDecl("b", (k, n))]  # --no-data: declared, the simulator's random values
    if with_data:
        arrays = [ArrayDecl("a", (m, k), values=input_values(seed, "a", (m, k), integers=True)),
                  ArrayDecl("b", (k, n), values=input_values(seed, "b", (k, n), integers=True))]
    if schedule == "best":  # a searched schedule, where it beats the constructions
        known = known_program(m, n, k, registers, cost.cycles(), lambda e: _known_header(
            e, registers, bound, with_data, seed), tuple(arrays), mac_accumulator=mac_accumulator)
        if known is not None:
            return known
    b = ProgramBuilder(accumulator=2 if mac_accumulator else None)
    (_emit_inner if plan.schedule == "inner" else _emit_outer)(b, plan)
    return b.program(_header(plan, schedule, registers, cost, bound, with_data, seed), arrays)


def _known_header(e, registers: int, bound, with_data: bool, seed: int) -> list[str]:
    ops = e.ops
    how = (f"proven optimal by exhaustive search ({e.seconds:g} s)" if e.proven
           else f"best found by a {e.seconds:g} s search, not proven optimal (no schedule costs under "
                f"{e.lower_bound} cycles)")
    acc = " with an accumulator in the MAC unit (ACC)" if e.mac_accumulator else ""
    return [
        f"C = A·B on a {registers}-register toy machine{acc} (seed 000: matmul, Problems 1–3): "
        f"A {e.m}×{e.k}, B {e.k}×{e.n}, C {e.m}×{e.n}",
        cli_line("matmul", m=e.m, n=e.n, k=e.k, registers=registers, schedule="best",
                 mac_accumulator=e.mac_accumulator or None, with_data=with_data, seed=seed),
        f"schedule: {how}: " + command_line("optimize matmul", m=e.m, n=e.n, k=e.k, registers=e.registers,
                                            mac_accumulator=e.mac_accumulator or None) + " (A* over register states)",
        f"cost: {ops.get('LOAD', 0)} LOAD + {ops.get('MAC_Z', 0)} MAC_Z + {ops.get('MAC', 0)} MAC + "
        f"{ops.get('STORE', 0)} STORE = {e.cycles} cycles at 1 cycle per instruction; {e.registers_used} registers",
        f"DRAM: {ops.get('LOAD', 0)} reads, {ops.get('STORE', 0)} writes; lower bound {bound.traffic} words "
        f"({bound.source})",
    ]


def _header(plan: MatmulPlan, schedule: str, registers: int, cost, bound, with_data: bool, seed: int) -> list[str]:
    m, n, k = plan.m, plan.n, plan.k
    M, N, K = plan.rows, plan.cols, plan.k
    row, col = ("A", "B") if plan.orientation == "rows" else ("B", "A")
    if plan.schedule == "inner":
        a_, b_ = plan.row_slots, plan.col_slots
        loads = (f"{row} {M}·({K} + ({N}−1)·({K}−α)) + {col} {M}·{N}·{K} − ({M}−1)·min(β, {N}·{K})"
                 f"  with α = {a_}, β = {b_}")
    else:
        loads = (f"k · Σ over {plan.block_rows}×{plan.block_cols} blocks p'×q' of (p' + g·q' − (g−1)), "
                 f"g = ⌈p'/min(s, p')⌉, s = {plan.row_slots}")
    row_loads, col_loads = cost.breakdown[f"{row} loads"], cost.breakdown[f"{col} loads"]
    return [
        f"C = A·B on a {registers}-register toy machine{' with an accumulator in the MAC unit (ACC)' if plan.mac_accumulator else ''} "
        f"(seed 000: matmul, Problems 1–3): A {m}×{k}, B {k}×{n}, C {m}×{n}",
        cli_line("matmul", m=m, n=n, k=k, registers=registers, schedule=schedule,
                 mac_accumulator=plan.mac_accumulator or None, with_data=with_data, seed=seed),
        f"schedule: {plan.describe()}",
        f"LOADs = {loads} = {row_loads} + {col_loads} = {cost.reads}",
        f"cost: {cost.reads} LOAD + {m * n} MAC_Z + {m * n * (k - 1)} MAC + {cost.writes} STORE "
        f"= {cost.cycles()} cycles at 1 cycle per instruction; {cost.registers} registers",
        f"DRAM: {cost.reads} reads, {cost.writes} writes; lower bound {bound.traffic} words ({bound.source})",
    ]
