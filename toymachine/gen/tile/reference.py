"""Float64 numpy references for tiled attention (``toymachine.gen.tile``): the forward
O = softmax(τ·Q·Kᵀ)·V with its row statistics, and the backward dQ, dK, dV (seed 004,
Algorithms 0 and 4 computed densely). The tests and ``run_attention``'s callers compare the
simulated programs with them; ``with_data`` backward programs take O and the statistics
from them.

Shapes: Q (…, H, Nq, d); K, V (…, H_kv, Nk, d) with H % H_kv == 0 — query head h reads key/
value head h // (H/H_kv) (grouped-query attention; H_kv = 1 multi-query); 2-D inputs are one
head. The causal mask is aligned bottom-right (query i attends keys j ≤ i + Nk − Nq), as torch
SDPA's ``causal_lower_right`` and flash-attn do; for Nq = Nk it is the lower triangle.
"""

from __future__ import annotations

__all__ = ["attention_reference", "attention_backward_reference", "expand_kv", "causal_keep", "dropout_scale"]

import numpy as np

from ...sim.engines.tile_ops import dropout_keep


def expand_kv(x: np.ndarray, heads: int) -> np.ndarray:
    """K or V of shape (…, H_kv, Nk, d) repeated to ``heads`` query heads (each K/V head serves
    heads / H_kv consecutive query heads); 2-D arrays are returned as they are."""
    if x.ndim < 3 or x.shape[-3] == heads:
        return x
    if heads % x.shape[-3]:
        raise ValueError(f"{heads} query heads are not a multiple of {x.shape[-3]} key/value heads")
    return np.repeat(x, heads // x.shape[-3], axis=-3)


def causal_keep(nq: int, nk: int) -> np.ndarray:
    """(Nq, Nk) booleans: query i keeps key j iff j ≤ i + (Nk − Nq) (bottom-right aligned)."""
    return np.tril(np.ones((nq, nk), dtype=bool), k=nk - nq)


def dropout_scale(shape: tuple, p: float, seed: int) -> np.ndarray:
    """Z/(1 − p) for scores of shape (…, H, Nq, Nk) (or (Nq, Nk): head 0): the tile machine's
    mask (``DROPOUT``, ``sim.engines.tile_ops.dropout_keep``), head b·H + h of batch b."""
    nq, nk = shape[-2:]
    heads = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    z = np.stack([dropout_keep(seed, h, np.arange(nq), np.arange(nk), p) / (1.0 - p) for h in range(heads)])
    return z.reshape(shape)


def attention_reference(q, k, v, *, scale: float | None = None, causal: bool = False, dropout: float = 0.0,
                        dropout_seed: int = 0) -> dict[str, np.ndarray]:
    """O = softmax(τ·Q·Kᵀ)·V and the row statistics L (log-sum-exp), m (row max), l (row sum
    of e^(S − m)), for Q of shape (…, Nq, d) and K, V of shape (…, Nk, d). With ``dropout`` p,
    O = (P∘Z/(1 − p))·V with the tile machine's mask (Algorithm 2; P and the statistics are the
    undropped ones)."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    heads = q.shape[-3] if q.ndim >= 3 else 1
    k, v = expand_kv(k, heads), expand_kv(v, heads)
    tau = q.shape[-1] ** -0.5 if scale is None else scale
    s = tau * (q @ np.swapaxes(k, -1, -2))
    if causal:
        s = np.where(causal_keep(*s.shape[-2:]), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    l_ = p.sum(axis=-1, keepdims=True)
    pn = p / l_
    dropped = pn * dropout_scale(pn.shape, dropout, dropout_seed) if dropout else pn
    return {"O": dropped @ v, "L": (m + np.log(l_))[..., 0], "m": m[..., 0], "l": l_[..., 0], "P": pn}


def attention_backward_reference(q, k, v, do, *, scale: float | None = None, causal: bool = False,
                                 dropout: float = 0.0, dropout_seed: int = 0) -> dict[str, np.ndarray]:
    """dQ, dK, dV (and D = rowsum(dO∘O)) of O = softmax(τ·Q·Kᵀ)·V for upstream gradient dO;
    with grouped K, V the query heads' contributions to a shared dK, dV are summed. With
    ``dropout``: O = (P∘Z)·V, so dV = (P∘Z)ᵀ·dO, dP = (dO·Vᵀ)∘Z, dS = P∘(dP − D)."""
    q, k, v, do = (np.asarray(x, dtype=np.float64) for x in (q, k, v, do))
    heads = q.shape[-3] if q.ndim >= 3 else 1
    kv_shape = k.shape
    k, v = expand_kv(k, heads), expand_kv(v, heads)
    tau = q.shape[-1] ** -0.5 if scale is None else scale
    fwd = attention_reference(q, k, v, scale=tau, causal=causal, dropout=dropout, dropout_seed=dropout_seed)
    p, o = fwd["P"], fwd["O"]
    z = dropout_scale(p.shape, dropout, dropout_seed) if dropout else None
    dv = np.swapaxes(p if z is None else p * z, -1, -2) @ do
    dp = do @ np.swapaxes(v, -1, -2)
    if z is not None:
        dp = dp * z
    dd = (do * o).sum(axis=-1, keepdims=True)
    ds = p * (dp - dd)
    dk = tau * np.swapaxes(ds, -1, -2) @ q

    def fold(x: np.ndarray) -> np.ndarray:  # sum each group of query heads onto its K/V head
        if x.shape == kv_shape:
            return x
        return x.reshape(kv_shape[:-3] + (kv_shape[-3], heads // kv_shape[-3]) + kv_shape[-2:]).sum(axis=-3)

    return {"dQ": tau * ds @ k, "dK": fold(dk), "dV": fold(dv), "D": dd[..., 0]}
