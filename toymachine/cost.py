"""Closed-form costs of every generated program, and the lower bounds beside them.

Each ``*_cost`` function returns a ``Cost``: how many times each instruction executes, as a
function of the generator's parameters alone (no simulation), plus the registers the
program names. Cycles follow from a machine's per-instruction costs
(``Cost.cycles(machine)``; 1 cycle per instruction on the seed's machine), DRAM reads are
the LOADs and writes the STOREs (one word each on the scalar machine). The tests hold the
simulator to these formulas at random parameter points.

Each ``*_bound`` returns a ``Bound``: what any program for the same computation on the
same machine must move at least.

* Every input word is read once and every output word written once ("compulsory traffic").
* Matmul, in addition: the red-blue pebble game bound of Hong & Kung (1981) with the
  explicit constant of Irony, Toledo & Tiskin (2004, J. Parallel Distrib. Comput. 64(9),
  Thm. 3.1 sequential case): a conventional m×k·k×n product (all mnk products, no
  Strassen) on a machine whose fast memory holds S words performs at least
  ``mnk / (2·√2·√S) − S`` reads + writes. Here S = R registers (every MAC takes its
  operands and its addend from registers). Its leading term is not tight: Smith, Lowery,
  Langou & van de Geijn (2019, arXiv:1702.02017) raise it to 2mnk/√S; we use the ITT form
  because its lower-order term is stated exactly. ``traffic`` is the larger of the two.
"""

from __future__ import annotations

__all__ = [
    "Cost", "Bound", "matmul_plan_cost", "matmul_cost", "matmul_bound",
    "softmax_cost", "softmax_bound", "attention_cost", "attention_registers", "attention_bound",
    "variance_cost", "variance_bound", "SOFTMAX_REGISTERS", "VARIANCE_REGISTERS",
    "TileCost", "attention_tile_cost", "paper_blocks",  # the tile machine's, from cost_tile
]

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

from .isa import MNEMONICS
from .machine import DEFAULT_MACHINE, Machine

if TYPE_CHECKING:  # pragma: no cover
    from .gen.matmul import MatmulPlan


@dataclass(frozen=True)
class Cost:
    """Instruction counts of a program, in closed form."""

    ops: Mapping[str, int]  # mnemonic → instructions executed
    registers: int  # distinct registers the program names
    breakdown: Mapping[str, int] = field(default_factory=dict)  # named parts (e.g. "Q row loads")

    def __post_init__(self):
        ordered = {m: int(self.ops[m]) for m in MNEMONICS if self.ops.get(m)}
        object.__setattr__(self, "ops", MappingProxyType(ordered))
        object.__setattr__(self, "breakdown", MappingProxyType(dict(self.breakdown)))

    @property
    def reads(self) -> int:
        """DRAM words read (= LOADs on the scalar machine)."""
        return self.ops.get("LOAD", 0)

    @property
    def writes(self) -> int:
        """DRAM words written (= STOREs)."""
        return self.ops.get("STORE", 0)

    @property
    def instructions(self) -> int:
        return sum(self.ops.values())

    def cycles(self, machine: Machine | None = None) -> float:
        """Σ count × the machine's cycles for that instruction."""
        machine = machine or DEFAULT_MACHINE
        total = sum(n * machine.op_cycles(op) for op, n in self.ops.items())
        return int(total) if float(total).is_integer() else total


@dataclass(frozen=True)
class Bound:
    """Least DRAM traffic (words) of any program for the computation on this machine."""

    reads: int  # every input word read once
    writes: int  # every output word written once
    traffic: int  # reads + writes, or a stronger bound on their sum
    source: str  # which argument gives ``traffic``


def _ops(**counts: int) -> dict[str, int]:
    return {op.upper(): n for op, n in counts.items() if n}


# -- matmul (seed 000, Problems 1–3 and the quiz) -------------------------------------------

def matmul_plan_cost(plan: "MatmulPlan") -> Cost:
    """Closed form of one matmul schedule (see ``toymachine.gen.matmul`` for the schedules).

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
        row_block_sizes = [p] * (M // p) + ([M % p] if M % p else [])
        p_loads = q_loads = 0
        for size in row_block_sizes:
            groups = -(-size // min(s, size))
            p_loads += K * size * col_blocks
            q_loads += K * (groups * N - (groups - 1) * col_blocks)
        registers = p * q + min(s, p) + 1
    a_loads, b_loads = (p_loads, q_loads) if plan.orientation == "rows" else (q_loads, p_loads)
    outputs = M * N
    return Cost(_ops(load=a_loads + b_loads, store=outputs, mac_z=outputs, mac=outputs * (K - 1)),
                registers, {"A loads": a_loads, "B loads": b_loads})


def matmul_cost(n: int, registers: int, schedule: str = "best", m: int | None = None,
                k: int | None = None) -> Cost:
    """Cost of ``toym gen matmul`` (C = A·B, A m×k, B k×n; m, k default to n)."""
    from .gen.matmul import plan_matmul

    return matmul_plan_cost(plan_matmul(n=n, registers=registers, schedule=schedule, m=m, k=k))


def matmul_bound(n: int, registers: int, m: int | None = None, k: int | None = None, **_) -> Bound:
    """Compulsory traffic (mk + kn reads, mn writes) and Hong–Kung/ITT: mnk/(2√2·√R) − R."""
    m = n if m is None else m
    k = n if k is None else k
    reads, writes = m * k + k * n, m * n
    pebble = math.ceil(m * n * k / (2 * math.sqrt(2) * math.sqrt(registers)) - registers)
    if pebble > reads + writes:
        return Bound(reads, writes, pebble, "Hong–Kung (ITT 2004): mnk/(2√2·√R) − R")
    return Bound(reads, writes, reads + writes, "every input read once, every output written once")


# -- softmax (seed 000, "Softmax", Problems 4 and 5) -----------------------------------------

SOFTMAX_REGISTERS = {"naive": 2, "safe": 3, "online": 4}


def softmax_cost(n: int, algo: str = "online") -> Cost:
    """naive (2 passes, no max):  LOAD 2n, EXP 2n, MOV 1, ADD n−1, DIV n, STORE n      = 7n
    safe (3 passes, seed P4):     LOAD 3n, MAX n−1, SUB 2n, EXP 2n, MOV 1, ADD n−1,
                                  DIV n, STORE n                                        = 11n − 1
    online (2 passes, seed P5):   LOAD 2n, MOV n+1, MAX n−1, SUB 3n−1, EXP 3n−1,
                                  MUL n−1, ADD n−1, DIV n, STORE n                      = 14n − 4
    Registers 2, 3, 4 (online with n = 1 never needs its fourth)."""
    if algo == "naive":
        return Cost(_ops(load=2 * n, exp=2 * n, mov=1, add=n - 1, div=n, store=n), 2)
    if algo == "safe":
        return Cost(_ops(load=3 * n, max=n - 1, sub=2 * n, exp=2 * n, mov=1, add=n - 1, div=n, store=n), 3)
    return Cost(_ops(load=2 * n, mov=n + 1, max=n - 1, sub=3 * n - 1, exp=3 * n - 1, mul=n - 1, add=n - 1,
                     div=n, store=n), 4 if n > 1 else 3)


def softmax_bound(n: int, **_) -> Bound:
    return Bound(n, n, 2 * n, "every input read once, every output written once")


# -- attention on the scalar machine (seed 000, "From Softmax to Attention") ------------------

def _has_max(variant: str) -> bool:
    return variant != "no-max"


def attention_registers(n: int, d: int, order: str, output_slots: int = 0, variant: str = "exact") -> int:
    """Registers the scalar attention program names.

    inner: the q row (d), the numerator (d), the score/weight x, the running sum l, one
    streaming operand — plus the running max m and the rescale factor for ``exact``
    (2d + 5), m only for ``no-rescale`` (2d + 4), neither for ``no-max`` (2d + 3).
    outer: the KV row (2d), x, one streaming operand, the rescale factor (exact), the
    working m, l of a streamed row (when some rows are not resident), and K resident rows
    of d + 2 words (m, l, numerator; d + 1 for no-max)."""
    running = 2 if _has_max(variant) else 1  # m and l, or l alone
    state = d + running
    scale = 1 if variant == "exact" else 0
    if order == "inner":
        return 2 * d + 2 + running + scale
    working = running if output_slots < n else 0
    return 2 * d + 2 + scale + working + output_slots * state


def attention_cost(n: int, d: int, order: str = "inner", output_slots: int = 0, variant: str = "exact",
                   **_) -> Cost:
    """Cost of ``toym gen attention`` (scalar): O = softmax(QKᵀ)·V, Q, K, V n×d, scores
    unscaled (fold 1/√d into Q). Counted in *rows*, as the seed's table is: a Q row is d
    words, a KV row is a k row and a v row (2d words), an O load is one row of running
    state (numerator d, sum l, max m: d + 2 words; d + 1 for no-max), an O store is that
    state or, the last time, the d-word output row.

    =========  ===========  ======================  (K = output slots, outer only)
    rows       inner        outer
    =========  ===========  ======================
    Q loads    n            n²
    KV loads   n²           n
    O loads    n            n² − K(n − 1)
    O stores   n            n² − K(n − 1)
    =========  ===========  ======================

    With K = 0 the outer column is the seed's (n², n, n², n²); each slot saves n − 1 loads
    and n − 1 stores; K = n stores every row once, as the inner order does.
    Per (query, key) pair: d MACs for the score (one MAC_Z), d more for the numerator, and
    the update: exact MOV, MAX, 2 SUB, 2 EXP, (1 + d) MUL, ADD; no-rescale MAX, SUB, EXP,
    ADD; no-max EXP, ADD. Per query: d DIVs."""
    has_max = _has_max(variant)
    state = d + (2 if has_max else 1)
    pairs = n * n
    if order == "inner":
        q_rows, kv_rows, o_loads, o_stores = n, pairs, n, n
        state_loads, state_stores = n * state, n * d
    else:
        streamed = n - output_slots
        q_rows, kv_rows = pairs, n
        o_loads = o_stores = output_slots + n * streamed
        state_loads = output_slots * state + n * streamed * state
        state_stores = output_slots * d + streamed * ((n - 1) * state + d)
    loads = q_rows * d + kv_rows * 2 * d + state_loads
    if variant == "exact":
        update = dict(mov=pairs, max=pairs, sub=2 * pairs, exp=2 * pairs, mul=pairs * (1 + d), add=pairs)
    elif variant == "no-rescale":
        update = dict(max=pairs, sub=pairs, exp=pairs, add=pairs)
    else:
        update = dict(exp=pairs, add=pairs)
    ops = _ops(load=loads, store=state_stores, mac_z=pairs, mac=pairs * (2 * d - 1), div=n * d, **update)
    breakdown = {"Q row loads": q_rows, "KV row loads": kv_rows, "O row loads": o_loads, "O row stores": o_stores}
    return Cost(ops, attention_registers(n, d, order, output_slots, variant), breakdown)


def attention_bound(n: int, d: int, **_) -> Bound:
    return Bound(3 * n * d, n * d, 4 * n * d, "every input read once, every output written once")


# -- Welford's online variance (seed 000, quiz "Online variance") ---------------------------

VARIANCE_REGISTERS = 6


def variance_cost(n: int, **_) -> Cost:
    """One pass: init LOAD, 2 MOV, SUB, EXP (the constant 1 = e⁰); per further element
    LOAD, 2 ADD, 2 SUB, DIV, MAC; finally SUB, DIV and 2 STOREs (mean, variance).
    LOAD n, MOV 2, SUB 2n, EXP 1, ADD 2n − 2, DIV n, MAC n − 1, STORE 2 — 7n + 2 cycles."""
    return Cost(_ops(load=n, mov=2, sub=2 * n, exp=1, add=2 * n - 2, div=n, mac=n - 1, store=2),
                VARIANCE_REGISTERS)


def variance_bound(n: int, **_) -> Bound:
    return Bound(n, 2, n + 2, "every input read once, every output written once")


from .cost_tile import TileCost, attention_tile_cost, paper_blocks  # noqa: E402  (the tile machine: cost_tile.py)
