"""`scaled_dot_product_attention`: torch's signature on this kernel, for swapping into a model.

    from kernels_gpu import scaled_dot_product_attention
    y = scaled_dot_product_attention(q, k, v, is_causal=True)   # as F.scaled_dot_product_attention

Runs `flash_attention` (the custom operator: torch.compile and torch.export keep it whole)
where the arguments are ones the kernel computes: 4-d (batch, heads, L, E) query and (batch,
kv_heads, S, E) key and value of one dtype (fp16, bf16, fp32), no attn_mask, dropout_p 0,
E_v = E, kv_heads = heads (or a divisor with enable_gqa=True, as torch's). is_causal is
torch's top-left alignment (query i sees keys j <= i).

Elsewhere it raises `SDPAUnsupported` (a ValueError naming the argument, the reason and a
suggestion) before any kernel runs, or, with fallback=True or KERNELS_GPU_SDPA_FALLBACK=1 in
the environment, calls torch.nn.functional.scaled_dot_product_attention instead. The checks
read only shapes, dtypes and Python values, so torch.compile traces them.
"""
from __future__ import annotations

import os

import torch
import torch.nn.functional as F

from .flash_attn import flash_attention
from .launch import FP8_DTYPES, INPUT_DTYPES, MAX_HEAD_DIM

__all__ = ["SDPAUnsupported", "scaled_dot_product_attention", "sdpa_unsupported",
           "FALLBACK_ENV"]

FALLBACK_ENV = "KERNELS_GPU_SDPA_FALLBACK"
_DTYPES = tuple(t for t in INPUT_DTYPES if t not in FP8_DTYPES)


class SDPAUnsupported(ValueError):
    """An argument this kernel does not compute: `argument`, `reason`, `suggestion`."""

    def __init__(self, argument: str, reason: str, suggestion: str) -> None:
        super().__init__(f"{argument}: {reason}; {suggestion}")
        self.argument, self.reason, self.suggestion = argument, reason, suggestion


_FALLBACK_HINT = (f"pass fallback=True (or set {FALLBACK_ENV}=1) to run torch's "
                  "scaled_dot_product_attention there")


def sdpa_unsupported(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                     enable_gqa: bool = False) -> SDPAUnsupported | None:
    """Why this kernel cannot compute the call (the first reason), or None if it can."""
    def no(argument: str, reason: str, suggestion: str = _FALLBACK_HINT) -> SDPAUnsupported:
        return SDPAUnsupported(argument, reason, suggestion)

    if attn_mask is not None:
        return no("attn_mask", "an explicit mask is not supported (is_causal is)")
    if dropout_p != 0.0:
        return no("dropout_p", f"attention dropout is not supported (got {dropout_p})")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        return no("query", "query, key and value must be 4-d (batch, heads, length, head dim); "
                  f"got {query.dim()}-d, {key.dim()}-d, {value.dim()}-d")
    if value.shape[-1] != query.shape[-1] or key.shape[-1] != query.shape[-1]:
        return no("value", f"query, key and value must share the head dim; got "
                  f"{query.shape[-1]}, {key.shape[-1]}, {value.shape[-1]}")
    if key.shape != value.shape or key.shape[0] != query.shape[0]:
        return no("key", f"key and value must have one shape and query's batch; got "
                  f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
    h, h_kv = query.shape[1], key.shape[1]
    if h != h_kv and not (enable_gqa and h_kv >= 1 and h % h_kv == 0):
        return no("enable_gqa", f"query heads ({h}) differ from key/value heads ({h_kv})",
                  "pass enable_gqa=True with key/value heads dividing the query heads")
    if not (query.dtype == key.dtype == value.dtype) or query.dtype not in _DTYPES:
        return no("query", f"query, key and value must share one dtype of fp16, bf16, fp32; "
                  f"got {query.dtype}, {key.dtype}, {value.dtype}")
    if not 1 <= query.shape[-1] <= MAX_HEAD_DIM:
        return no("query", f"head dim {query.shape[-1]} is outside 1 .. {MAX_HEAD_DIM}")
    return None


def scaled_dot_product_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                 attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False, *,
                                 fallback: bool | None = None) -> torch.Tensor:
    """torch.nn.functional.scaled_dot_product_attention's arguments and result, on this kernel
    (differentiable in query, key and value). fallback (default: KERNELS_GPU_SDPA_FALLBACK=1
    in the environment): call torch's where the kernel does not compute the arguments, instead
    of raising SDPAUnsupported."""
    why = sdpa_unsupported(query, key, value, attn_mask, dropout_p, enable_gqa)
    if why is not None:
        if fallback is None:
            fallback = os.environ.get(FALLBACK_ENV, "0") == "1"
        if not fallback:
            raise why
        return F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p,
                                              is_causal, scale=scale, enable_gqa=enable_gqa)
    return flash_attention(query, key, value, "top_left" if is_causal else False, scale)
