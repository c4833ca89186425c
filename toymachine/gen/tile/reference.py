"""Float64 numpy references for tiled attention (``toymachine.gen.tile``): the forward
O = softmax(τ·Q·Kᵀ)·V with its row statistics, and the backward dQ, dK, dV (seed 004,
Algorithms 0 and 4 computed densely). The tests and ``run_attention``'s callers compare the
simulated programs with them; ``with_data`` backward programs take O and the statistics
from them.
"""

from __future__ import annotations

__all__ = ["attention_reference", "attention_backward_reference"]

import numpy as np


def attention_reference(q, k, v, *, scale: float | None = None, causal: bool = False) -> dict[str, np.ndarray]:
    """O = softmax(τ·Q·Kᵀ)·V and the row statistics L (log-sum-exp), m (row max), l (row sum
    of e^(S − m)), for arrays of shape (…, n, d)."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    tau = q.shape[-1] ** -0.5 if scale is None else scale
    s = tau * (q @ np.swapaxes(k, -1, -2))
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    l_ = p.sum(axis=-1, keepdims=True)
    return {"O": (p / l_) @ v, "L": (m + np.log(l_))[..., 0], "m": m[..., 0], "l": l_[..., 0], "P": p / l_}


def attention_backward_reference(q, k, v, do, *, scale: float | None = None,
                                 causal: bool = False) -> dict[str, np.ndarray]:
    """dQ, dK, dV (and D = rowsum(dO∘O)) of O = softmax(τ·Q·Kᵀ)·V for upstream gradient dO."""
    q, k, v, do = (np.asarray(x, dtype=np.float64) for x in (q, k, v, do))
    tau = q.shape[-1] ** -0.5 if scale is None else scale
    fwd = attention_reference(q, k, v, scale=tau, causal=causal)
    p, o = fwd["P"], fwd["O"]
    dv = np.swapaxes(p, -1, -2) @ do
    dp = do @ np.swapaxes(v, -1, -2)
    dd = (do * o).sum(axis=-1, keepdims=True)
    ds = p * (dp - dd)
    return {"dQ": tau * ds @ k, "dK": tau * np.swapaxes(ds, -1, -2) @ q, "dV": dv, "D": dd[..., 0]}
