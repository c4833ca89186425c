"""Tiled attention as a function: arrays in, arrays out (``toymachine.gen.tile``) — what a GPU
kernel's outputs are compared with (``kernels_gpu.bench.verify``, ``toym verify-gpu``).

``run_attention`` builds the tile programs for the inputs' shapes (cross-attention when K, V
are longer or shorter than Q, grouped-query attention when they have fewer heads), simulates
them on a machine and returns the outputs as numpy arrays with the inputs' layout.
"""

from __future__ import annotations

from typing import Any

__all__ = ["run_attention"]

import numpy as np

from ...errors import ConfigError
from .attention import array_shapes, attention_program


def _layout(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[int, int, int, int, int, int]:
    """(batch, heads, kv_heads, n, nk, d) of Q (…, H, n, d) and K, V (…, H_kv, nk, d)."""
    if q.ndim not in (2, 3, 4) or k.ndim != q.ndim or v.shape != k.shape or k.shape[-1] != q.shape[-1] \
            or k.shape[:-3] != q.shape[:-3]:
        raise ConfigError(f"q must be (n, d), (heads, n, d) or (batch, heads, n, d) and k, v alike with the same "
                          f"batch and d (their length and heads may differ); got {q.shape}, {k.shape}, {v.shape}")
    lead, klead = q.shape[:-2], k.shape[:-2]
    batch, heads = (1,) * (2 - len(lead)) + tuple(lead)
    kv_heads = klead[-1] if klead else 1
    if heads % kv_heads:
        raise ConfigError(f"q has {heads} heads, k and v {kv_heads}: the query heads must be a multiple of the "
                          f"key/value heads (grouped-query attention)")
    return batch, heads, kv_heads, q.shape[-2], k.shape[-2], q.shape[-1]


def run_attention(q, k, v, do=None, *, algo: str = "fa2", causal: bool = False, block_m: int | None = 64,
                  block_n: int | None = 64, scale: float | None = None, dtype: str | None = None, machine=None,
                  order: str = "col", precompute_d: bool = True, strict_numerics: bool = False,
                  dropout: float = 0.0, dropout_seed: int = 0) -> dict:
    """Simulate the tile program on given inputs and return its outputs as arrays.

    ``q`` (and ``do``): float arrays of shape (n, d), (heads, n, d) or (batch, heads, n, d);
    ``k, v``: the same rank, (…, kv_heads, nk, d) — nk ≠ n is cross-attention (causal aligned
    bottom-right), kv_heads < heads grouped-query attention. Returns ``O`` (q's shape) and the
    statistics ``L`` (fa1: ``m``, ``l``) of shape (…, n); with ``do``, the backward pass too,
    fed the simulated O and statistics (standard: P; Algorithm 3, ``order`` does not apply):
    ``dQ`` (q's shape), ``dK, dV`` (k's shape) and ``D``.
    ``forward``/``backward`` hold the ``Result``s (counts, alarms). ``machine``: a ``Machine``
    or preset name (default: the seed's); ``dtype`` overrides the machine's. ``dropout`` p with
    ``dropout_seed``: the tile machine's mask (``attention_reference`` draws the same one)."""
    from ...machine import Machine, resolve_machine
    from ...sim import simulate

    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    batch, heads, kv_heads, n, nk, d = _layout(q, k, v)
    mach = machine if isinstance(machine, Machine) or machine is None else resolve_machine(machine)
    common: dict[str, Any] = dict(n=n, d=d, algo=algo, batch=batch, heads=heads, causal=causal, block_m=block_m, block_n=block_n,
                  scale=scale)
    if nk != n or kv_heads != heads:  # the default programs stay those of the plain call
        common.update(nk=nk, kv_heads=kv_heads)
    if dropout:
        common.update(dropout=dropout, dropout_seed=dropout_seed)
    shape_kw: dict[str, Any] = {key: common[key] for key in ("n", "d", "algo", "batch", "heads", "nk", "kv_heads") if key in common}
    shape_kw["algo"] = "standard" if algo.startswith("standard") else algo
    shapes = array_shapes(**shape_kw)

    def given(shapes, **arrays):
        return {name: a.reshape(shapes[name]) for name, a in arrays.items()}

    fwd = simulate(attention_program(**common), mach, given(shapes, Q=q, K=k, V=v), dtype=dtype,
                   strict_numerics=strict_numerics, steps=False)
    stats = ("m", "l") if algo == "fa1" else ("L",)
    out = {"O": fwd.array("O").reshape(q.shape), "forward": fwd}
    for name in stats:
        out[name] = fwd.array(name).reshape(q.shape[:-1])
    if do is None:
        return out
    do = np.asarray(do, dtype=np.float64).reshape(q.shape)
    order_kw: dict[str, Any]
    if algo.startswith("standard"):  # Algorithm 3 reads the forward's P; its schedule has no order
        common["algo"] = "standard"
        order_kw = {}
        saved = {"P": fwd.array("P")}
    else:
        order_kw = dict(order=order, precompute_d=precompute_d)
        saved = {"O": out["O"], **{name: out[name] for name in stats}}
    bshapes = array_shapes(**shape_kw, pass_="backward")
    data = given(bshapes, Q=q, K=k, V=v, dO=do, **saved)
    bwd = simulate(attention_program(**common, pass_="backward", **order_kw), mach, data,
                   dtype=dtype, strict_numerics=strict_numerics, steps=False)
    out["dQ"] = bwd.array("dQ").reshape(q.shape)
    out.update({name: bwd.array(name).reshape(k.shape) for name in ("dK", "dV")})
    out["D"] = bwd.array("D").reshape(q.shape[:-1])
    out["backward"] = bwd
    return out
