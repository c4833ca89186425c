"""Attention O = softmax(Q·Kᵀ)·V on the scalar machine (seed 000, "From Softmax to
Attention" and "Inner Product vs. Outer Product in Attention").

Q, K, V are n×d in DRAM (arrays ``q``, ``k``, ``v``; fold 1/√d into Q beforehand, as the
seed does). Each output row is one query row against all keys, fused with V: a running
max m, a running denominator l and a d-vector numerator, updated per key with the seed's
online-softmax steps (Problem 7)::

    x = q_i·k_j;  m' = max(m, x);  c = e^(m − m');  p = e^(x − m')
    l ← l·c + p;  num ← num·c + p·v_j;  finally o_i = num / l

The running state of every row starts in DRAM, as in FlashAttention-1's Algorithm 1
(``row_max`` = −∞, ``row_sum`` = 0, ``acc`` = 0), which is what the seed's table counts as
an O load "to initialise".

order inner — the query loop outside (FlashAttention-2): the q row and the row's state
    stay in registers while every KV row streams past; each output row is stored once.
    Registers: q (d) + numerator (d) + x, m, l, c, one streaming operand = 2d + 5.
order outer — the KV loop outside (FlashAttention-1): the k and v rows stay in registers
    while every query streams past; a query's state is loaded, updated and stored once per
    KV row — unless it is one of the K *output slots* (``output_slots``): rows 0..K−1 keep
    their state (m, l, numerator: d + 2 registers each) resident across the whole KV loop,
    each saving n − 1 loads and n − 1 stores. Registers: k, v (2d) + x, c, one streaming
    operand + the working m, l of streamed rows (when K < n) + K·(d + 2).

variant exact — as above. no-max — no running max (p = e^x, no rescaling: overflows for
    large scores; seed 003, Break 1). no-rescale — the running max is subtracted but old
    state is never rescaled when it grows (stable but wrong; seed 003, Break 2; at the
    scalar granularity the tile-local max of seed 003 would be x itself, p ≡ 1, so the
    running max stands in for it). Register counts and costs:
    ``toymachine.cost.attention_registers`` / ``attention_cost``.
"""

from __future__ import annotations

__all__ = ["ORDERS", "VARIANTS", "attention_program", "resolve_attention"]

from ...cost import attention_bound, attention_cost, attention_registers
from ...cost.tile import VARIANTS
from ...errors import ConfigError, Opt
from ...params import check_choice, check_int
from ...program import ArrayDecl, Program
from ..common import MAX_INSTRUCTIONS, ProgramBuilder, check_size, cli_line, input_values

ORDERS = ("inner", "outer")


class _Registers:
    """Hands out R0, R1, … in order, one per named role."""

    def __init__(self) -> None:
        self.count = 0

    def take(self, n: int = 1) -> list[int]:
        regs = list(range(self.count, self.count + n))
        self.count += n
        return regs

    def one(self) -> int:
        return self.take()[0]


def _update_scalars(b: ProgramBuilder, variant: str, x: int, m: int | None, l_: int, scale: int | None) -> None:
    """Fold the score in x into (m, l); afterwards x holds the weight p (and scale c). The variant
    decides which registers exist: m for all but no-max, scale for exact only."""
    if variant == "exact":  # the seed's online-softmax steps 2–9
        assert m is not None and scale is not None
        b.op("MOV", m, scale)  # save the old max
        b.op("MAX", m, x, m)  # m' = max(m, x)
        b.op("SUB", scale, m, scale)  # m − m'
        b.op("SUB", x, m, x)  # x − m'
        b.op("EXP", scale, scale)  # c = e^(m − m') ≤ 1
        b.op("EXP", x, x)  # p = e^(x − m')
        b.op("MUL", l_, scale, l_)  # l·c
        b.op("ADD", l_, x, l_)  # l' = l·c + p
    elif variant == "no-rescale":
        assert m is not None
        b.op("MAX", m, x, m)
        b.op("SUB", x, m, x)
        b.op("EXP", x, x)  # p = e^(x − m'), old l and numerator left on the old scale
        b.op("ADD", l_, x, l_)
    else:  # no-max
        b.op("EXP", x, x)  # p = e^x
        b.op("ADD", l_, x, l_)


def _update_numerator(b: ProgramBuilder, variant: str, x: int, scale: int | None, value: int, num: int) -> None:
    """num ← num·c + p·v_j[t] (num·c only for exact)."""
    if variant == "exact":
        assert scale is not None  # exact has the rescale register
        b.op("MUL", num, scale, num)
    b.op("MAC", x, value, num, num)


def _score(b: ProgramBuilder, streamed: str, row: int, resident: list[int], tmp: int, x: int, d: int) -> None:
    """x = Σ_t resident[t]·streamed[row][t]: one streamed row against one resident row."""
    for t in range(d):
        b.load(streamed, (row, t), tmp)
        if t == 0:
            b.op("MAC_Z", resident[0], tmp, x) if streamed == "k" else b.op("MAC_Z", tmp, resident[0], x)
        elif streamed == "k":
            b.op("MAC", resident[t], tmp, x, x)
        else:
            b.op("MAC", tmp, resident[t], x, x)


def _inner(b: ProgramBuilder, n: int, d: int, variant: str) -> None:
    has_max = variant != "no-max"
    regs = _Registers()
    x = regs.one()
    m = regs.one() if has_max else None
    l_ = regs.one()
    scale = regs.one() if variant == "exact" else None
    tmp = regs.one()
    q, num = regs.take(d), regs.take(d)  # the q row and the numerator, resident
    for i in range(n):
        for t in range(d):
            b.load("q", (i, t), q[t])  # Q row load
        if m is not None:  # O row load: the initial state (no-max keeps no max)
            b.load("row_max", (i,), m)
        b.load("row_sum", (i,), l_)
        for t in range(d):
            b.load("acc", (i, t), num[t])
        for j in range(n):
            _score(b, "k", j, q, tmp, x, d)  # KV row load (k) …
            _update_scalars(b, variant, x, m, l_, scale)
            for t in range(d):
                b.load("v", (j, t), tmp)  # … (v)
                _update_numerator(b, variant, x, scale, tmp, num[t])
        for t in range(d):  # O row store
            b.op("DIV", num[t], l_, num[t])
            b.store(num[t], "o", (i, t))


def _outer(b: ProgramBuilder, n: int, d: int, variant: str, slots: int) -> None:
    has_max = variant != "no-max"
    regs = _Registers()
    x = regs.one()
    m_w = regs.one() if has_max and slots < n else None  # working state of a streamed row
    l_w = regs.one() if slots < n else None
    scale = regs.one() if variant == "exact" else None
    tmp = regs.one()
    k_row, v_row = regs.take(d), regs.take(d)  # the KV row, resident
    # output slots: rows 0..K−1 stay resident
    slot_m: list[int | None] = []
    slot_l: list[int] = []
    slot_num: list[list[int]] = []
    for r in range(slots):
        m_r = regs.one() if has_max else None
        slot_m.append(m_r)
        slot_l.append(regs.one())
        slot_num.append(regs.take(d))
        if m_r is not None:  # O row load, once
            b.load("row_max", (r,), m_r)
        b.load("row_sum", (r,), slot_l[r])
        for t in range(d):
            b.load("acc", (r, t), slot_num[r][t])
    for j in range(n):
        for t in range(d):  # KV row load, once
            b.load("k", (j, t), k_row[t])
        for t in range(d):
            b.load("v", (j, t), v_row[t])
        last = j == n - 1
        for i in range(n):
            _score(b, "q", i, k_row, tmp, x, d)  # Q row load, every KV row
            if i < slots:
                _update_scalars(b, variant, x, slot_m[i], slot_l[i], scale)
                for t in range(d):
                    _update_numerator(b, variant, x, scale, v_row[t], slot_num[i][t])
                continue
            assert l_w is not None  # a row past the slots: there are fewer slots than rows
            if m_w is not None:  # O row load
                b.load("row_max", (i,), m_w)
            b.load("row_sum", (i,), l_w)
            _update_scalars(b, variant, x, m_w, l_w, scale)
            if not last:  # O row store (the state) …
                if m_w is not None:
                    b.store(m_w, "row_max", (i,))
                b.store(l_w, "row_sum", (i,))
            for t in range(d):
                b.load("acc", (i, t), tmp)
                _update_numerator(b, variant, x, scale, v_row[t], tmp)
                if last:  # … or, after the last KV row, the output row
                    b.op("DIV", tmp, l_w, tmp)
                    b.store(tmp, "o", (i, t))
                else:
                    b.store(tmp, "acc", (i, t))
    for r in range(slots):  # O row store, once
        for t in range(d):
            b.op("DIV", slot_num[r][t], slot_l[r], slot_num[r][t])
            b.store(slot_num[r][t], "o", (r, t))


def resolve_attention(n: int, d: int, order: str = "inner", registers: int | None = None,
                      output_slots: int | None = None, variant: str = "exact") -> tuple[int, int]:
    """Check the parameters; return (output slots, registers needed).

    Outer order without ``output_slots``: as many slots as ``registers`` allows (0 when
    ``registers`` is not given), so more registers never cost more."""
    n = check_int("n", n, 1)
    d = check_int("d", d, 1)
    check_choice("order", order, ORDERS)
    check_choice("variant", variant, VARIANTS)
    if registers is not None:
        check_int("registers", registers, 1)
    if order == "inner":
        if output_slots is not None:
            raise ConfigError((Opt("output_slots"), " is for ", Opt("order", "outer")), key="output_slots",
                              hint="the inner order keeps its one output row in registers already")
        slots = 0
    elif output_slots is not None:
        slots = check_int("output_slots", output_slots, 0)
        if slots > n:
            raise ConfigError((Opt("output_slots", slots), f" is more than the n = {n} output rows"),
                              key="output_slots", hint=("use ", Opt("output_slots", n), " or fewer"))
    else:
        slots = 0
        if registers is not None:
            while slots < n and attention_registers(n, d, order, slots + 1, variant) <= registers:
                slots += 1
    need = attention_registers(n, d, order, slots, variant)
    if registers is not None and registers < need:
        what = ("q row (d) + numerator (d) + x, l, one operand" + (", m" if variant != "no-max" else "")
                + (", rescale factor" if variant == "exact" else "")) if order == "inner" else \
               (f"k and v rows (2d) + x, one operand{', rescale factor' if variant == 'exact' else ''}"
                f"{', working m and l' if slots < n and variant != 'no-max' else ', working l' if slots < n else ''}"
                f" + {slots} output slot(s) × {d + (1 if variant == 'no-max' else 2)}")
        raise ConfigError(f"attention ({order} order, {variant}, d = {d}) needs {need} registers, got {registers}",
                          key="registers", hint=(f"{what} = {need}; use ", Opt("registers", need))
                          + ((" or fewer ", Opt("output_slots")) if slots else ()))
    return slots, need


def attention_program(n: int = 4, d: int = 2, order: str = "inner", registers: int | None = None,
                      output_slots: int | None = None, variant: str = "exact", *, with_data: bool = True,
                      seed: int = 0, max_instructions: int | None = MAX_INSTRUCTIONS, on_size=None) -> Program:
    """``toym gen attention`` (scalar level): O = softmax(QKᵀ)·V, all n rows."""
    slots, need = resolve_attention(n, d, order, registers, output_slots, variant)
    cost = attention_cost(n, d, order, slots, variant)
    check_size(cost.instructions, f"attention with n = {n:,}, d = {d}", max_instructions, on_size)
    b = ProgramBuilder()
    if order == "inner":
        _inner(b, n, d, variant)
    else:
        _outer(b, n, d, variant, slots)
    bound = attention_bound(n, d)
    rows = cost.breakdown
    header = [
        f"attention O = softmax(Q·Kᵀ)·V on the scalar machine, Q, K, V {n}×{d} "
        f"(seed 000, 'Inner Product vs. Outer Product in Attention'): {order} order, {variant}",
        cli_line("attention", n=n, d=d, order=order, registers=registers if registers is not None else need,
                 output_slots=slots if order == "outer" else None, variant=variant, with_data=with_data, seed=seed),
        ("query loop outside: q row and running state (m, l, numerator) resident, every KV row streams"
         if order == "inner" else
         f"KV loop outside: k and v rows resident, every query streams; {slots} output slot(s) resident"),
        f"registers: {need} (cost.attention_registers); state starts in DRAM: row_max = −inf, row_sum = 0, acc = 0",
        f"rows moved: Q {rows['Q row loads']}, KV {rows['KV row loads']}, O loads {rows['O row loads']}, "
        f"O stores {rows['O row stores']}" + ("   (outer: n², n, n² − K(n−1), n² − K(n−1))" if order == "outer"
                                              else "   (inner: n, n², n, n)"),
        f"cost: {cost.cycles()} cycles at 1 cycle per instruction; DRAM {cost.reads} reads, {cost.writes} writes "
        f"(words); lower bound {bound.traffic} words ({bound.source})",
    ]
    # --no-data: the inputs declared (.array), to take the simulator's random values
    arrays = [ArrayDecl(name, (n, d), values=input_values(seed, name, (n, d)) if with_data else None)
              for name in ("q", "k", "v")]
    if variant != "no-max":
        arrays.append(ArrayDecl("row_max", shape=(n,), fill=float("-inf")))
    arrays += [ArrayDecl("row_sum", shape=(n,), fill=0.0), ArrayDecl("acc", shape=(n, d), fill=0.0)]
    return b.program(header, arrays)
