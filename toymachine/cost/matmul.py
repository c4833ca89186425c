"""Matmul C = A·B on an R-register machine: the schedules' plans, their closed-form costs and
the lower bounds (seed 000: Problems 1–3 and the quiz; ``toymachine.gen.scalar.matmul`` emits
a plan as a program).

A schedule works on a *row operand* P (M×K) and a *column operand* Q (K×N): for the ``rows``
orientation P = A, Q = B; for ``cols`` the problem is transposed (Cᵀ = Bᵀ·Aᵀ), so P = Bᵀ and
Q = Aᵀ. ``matmul_plans`` lists every schedule of a family that fits R registers;
``plan_matmul`` picks the cheapest (fewest LOADs, then fewest registers).
"""

from __future__ import annotations

__all__ = ["SCHEDULES", "MIN_REGISTERS", "MatmulPlan", "check_matmul_registers", "matmul_plans", "plan_matmul", "matmul_plan_cost",
           "matmul_cost", "matmul_bound"]

import dataclasses
import math
from dataclasses import dataclass

from ..errors import ConfigError, Opt
from ..params import check_choice, check_int
from .common import Bound, Cost, ops_of

SCHEDULES = ("inner", "outer", "best")


MIN_REGISTERS = 3


@dataclass(frozen=True)
class MatmulPlan:
    """One schedule: family, orientation and how the registers are split."""

    m: int
    n: int
    k: int
    schedule: str  # "inner" | "outer"
    orientation: str  # "rows": P = A, Q = B;  "cols": P = Bᵀ, Q = Aᵀ
    row_slots: int  # inner: α (P registers); outer: s (P registers per group)
    col_slots: int = 1  # inner: β (Q registers); outer: 1
    block_rows: int = 1  # outer: p
    block_cols: int = 1  # outer: q
    mac_accumulator: bool = False  # the first accumulator is ACC, inside the MAC unit (not a register)

    @property
    def rows(self) -> int:
        """M: rows of the row operand P (and of the output, in this orientation)."""
        return self.m if self.orientation == "rows" else self.n

    @property
    def cols(self) -> int:
        """N: columns of the column operand Q."""
        return self.n if self.orientation == "rows" else self.m

    def describe(self) -> str:
        row, col = ("A row", "B") if self.orientation == "rows" else ("B column", "A")
        if self.schedule == "inner":
            order = "row-serpentine" if self.orientation == "rows" else "column-serpentine"
            acc = "the accumulator ACC in the MAC unit" if self.mac_accumulator else "1 accumulator"
            return (f"inner product, one output at a time in {order} order; {self.row_slots} {row} slot(s) (α), "
                    f"{self.col_slots} {col} slot(s) (β), {acc}")
        return (f"outer product, {self.block_rows}×{self.block_cols} output block(s) in accumulators"
                f"{' (the first in ACC, in the MAC unit)' if self.mac_accumulator else ''}"
                f"{'' if self.orientation == 'rows' else ' (of Cᵀ)'}; {self.row_slots} {row} slot(s) (s), "
                f"1 {col} slot")


def _check(n: int, registers: int, schedule: str, m: int | None, k: int | None,
           mac_accumulator: bool = False) -> tuple[int, int, int]:
    n = check_int("n", n, 1)
    m = n if m is None else check_int("m", m, 1)
    k = n if k is None else check_int("k", k, 1)
    check_matmul_registers(registers, mac_accumulator)
    check_choice("schedule", schedule, SCHEDULES)
    return m, n, k


def check_matmul_registers(registers: int, mac_accumulator: bool = False) -> int:
    """``registers`` checked against the fewest a MAC needs: its two operands, and its partial sum
    unless the MAC unit keeps it (``mac_accumulator``) — the cost model's and the search's one rule."""
    registers = check_int("registers", registers, 1)
    least = MIN_REGISTERS - 1 if mac_accumulator else MIN_REGISTERS
    if registers >= least:
        return registers
    if mac_accumulator:
        raise ConfigError(f"matmul needs at least {least} registers besides ACC, got {registers}", key="registers",
                          hint=("a MAC reads its two operands from registers: use ", Opt("registers", least),
                                " or more"))
    raise ConfigError(f"matmul needs at least {MIN_REGISTERS} registers, got {registers}", key="registers",
                      hint=("a MAC reads two operand registers and its partial sum from a third (seed 000, "
                            "'Minimum registers'): use ", Opt("registers", MIN_REGISTERS), " or more, or a machine "
                            "whose MAC unit keeps its own accumulator (", Opt("mac_accumulator"), ": 2 registers)"))


def matmul_plans(m: int, n: int, k: int, registers: int, schedule: str) -> list[MatmulPlan]:
    """Every schedule of the family (``best``: both families) that fits ``registers``."""
    plans: list[MatmulPlan] = []
    for orientation in ("rows", "cols"):
        rows, cols = (m, n) if orientation == "rows" else (n, m)
        if schedule in ("inner", "best"):
            alpha = min(k, registers - 2)
            beta = min(registers - 1 - alpha, cols * k)
            plans.append(MatmulPlan(m, n, k, "inner", orientation, alpha, beta))
    if schedule in ("outer", "best"):
        for orientation in ("rows", "cols"):
            rows, cols = (m, n) if orientation == "rows" else (n, m)
            for p in range(1, min(rows, registers) + 1):  # p·q accumulators + a Q slot + a P slot fit
                for q in range(1, min(cols, (registers - 2) // p) + 1):
                    spare = registers - p * q - 1  # after the accumulators and the Q slot
                    if spare >= 1:
                        plans.append(MatmulPlan(m, n, k, "outer", orientation, min(p, spare), 1, p, q))
    return plans


def plan_matmul(n: int, registers: int, schedule: str = "best", m: int | None = None,
                k: int | None = None, mac_accumulator: bool = False) -> MatmulPlan:
    """The cheapest schedule of ``schedule``'s family for this register budget.

    ``mac_accumulator``: the MAC unit holds one accumulator of its own (``ACC``), so the
    schedules of R + 1 registers fit, with their first accumulator in ACC (seed 000's Blackwell
    remark: 2 registers compute a matmul)."""
    m, n, k = _check(n, registers, schedule, m, k, mac_accumulator)
    plans = matmul_plans(m, n, k, registers + 1 if mac_accumulator else registers, schedule)
    if mac_accumulator:
        plans = [dataclasses.replace(plan, mac_accumulator=True) for plan in plans]

    def price(plan: MatmulPlan) -> tuple[int, int]:
        cost = matmul_plan_cost(plan)
        return cost.reads, cost.registers

    return min(plans, key=price)  # ties: the first enumerated (inner before outer, rows before cols)


def matmul_plan_cost(plan: MatmulPlan) -> Cost:
    """Closed form of one matmul schedule (``toymachine.gen.scalar.matmul`` describes the schedules).

    In the plan's orientation the *row operand* P is M×K and the *column operand* Q is K×N
    (rows: P = A, Q = B; cols: P = Bᵀ, Q = Aᵀ, M and N swapped). MACs = MNK (MAC_Z: MN),
    STOREs = MN, and

    inner (α P-slots, β Q-slots, 1 accumulator; rows serpentine)::

        P loads = M·(K + (N − 1)·(K − α))          the first output of a row loads the row;
                                                   the others find α of its values resident
        Q loads = M·N·K − (M − 1)·min(β, N·K)      at each row turn the last β Q values are reused

    outer (p×q accumulator block, s P-slots, 1 Q-slot; per k, groups of s rows)::

        per block p'×q' and k:  p' + g·q' − (g − 1),   g = ⌈p'/min(s, p')⌉
        (each group loads its P values and sweeps the block's q' Q values; the Q value at a
        group boundary is reused), summed over the blocks and the K values of k.
    """
    M, N, K = plan.rows, plan.cols, plan.k
    if plan.schedule == "inner":
        alpha, beta = plan.row_slots, plan.col_slots
        p_loads = M * (K + (N - 1) * (K - alpha))
        q_loads = M * N * K - (M - 1) * min(beta, N * K)
        registers = alpha + beta + 1
    else:
        p, q, s = plan.block_rows, plan.block_cols, plan.row_slots
        col_blocks = -(-N // q)
        p_loads = q_loads = 0
        for size, count in ((p, M // p), (M % p, 1 if M % p else 0)):  # full row blocks, the short last one
            if count:  # (two sizes, in closed form: no list of M/p blocks)
                groups = -(-size // min(s, size))
                p_loads += count * K * size * col_blocks
                q_loads += count * K * (groups * N - (groups - 1) * col_blocks)
        registers = p * q + min(s, p) + 1
    if plan.mac_accumulator:
        registers -= 1  # the first accumulator is ACC, in the MAC unit
    a_loads, b_loads = (p_loads, q_loads) if plan.orientation == "rows" else (q_loads, p_loads)
    outputs = M * N
    return Cost(ops_of(load=a_loads + b_loads, store=outputs, mac_z=outputs, mac=outputs * (K - 1)),
                registers, {"A loads": a_loads, "B loads": b_loads})


def matmul_cost(n: int, registers: int, schedule: str = "best", m: int | None = None,
                k: int | None = None, mac_accumulator: bool = False) -> Cost:
    """Cost of ``toym gen matmul`` (C = A·B, A m×k, B k×n; m, k default to n); for ``best``, the
    searched schedule's counts where it beats the constructions (``matmul_known``)."""
    from .matmul_known import known_cost

    plan = plan_matmul(n=n, registers=registers, schedule=schedule, m=m, k=k, mac_accumulator=mac_accumulator)
    cost = matmul_plan_cost(plan)
    if schedule == "best":
        cost = known_cost(plan.m, plan.n, plan.k, registers, cost.cycles(), mac_accumulator) or cost
    return cost


def matmul_bound(n: int, registers: int, m: int | None = None, k: int | None = None,
                 mac_accumulator: bool = False, **_) -> Bound:
    """Compulsory traffic (mk + kn reads, mn writes) and Hong–Kung/ITT: mnk/(2√2·√R) − R, with
    R the fast words (registers, plus ACC on a machine whose MAC unit has one)."""
    m = n if m is None else m
    k = n if k is None else k
    registers = registers + 1 if mac_accumulator else registers
    reads, writes = m * k + k * n, m * n
    pebble = math.ceil(m * n * k / (2 * math.sqrt(2) * math.sqrt(registers)) - registers)
    if pebble > reads + writes:
        return Bound(reads, writes, pebble, "Hong–Kung (ITT 2004): mnk/(2√2·√R) − R")
    return Bound(reads, writes, reads + writes, "every input read once, every output written once")
