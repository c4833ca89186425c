"""Attention on the scalar machine (seed 000, "From Softmax to Attention", inner vs outer
product): closed-form costs of ``toymachine.gen.scalar.attention`` and the lower bound."""

from __future__ import annotations

__all__ = ["attention_registers", "attention_cost", "attention_bound"]

from .common import Bound, Cost, compulsory, ops_of


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
    ops = ops_of(load=loads, store=state_stores, mac_z=pairs, mac=pairs * (2 * d - 1), div=n * d, **update)
    breakdown = {"Q row loads": q_rows, "KV row loads": kv_rows, "O row loads": o_loads, "O row stores": o_stores}
    return Cost(ops, attention_registers(n, d, order, output_slots, variant), breakdown)


def attention_bound(n: int, d: int, **_) -> Bound:
    return compulsory(3 * n * d, n * d)
