"""The oracle: attention in plain float64 torch, with the kernels' conventions.

q (B, H, N_q, d); k, v (B, H_kv, N_k, d) with H % H_kv == 0 (query head h reads K/V head
h // (H / H_kv)); causal as in launch.causal_offset (True = bottom-right: query i sees keys
j <= i + N_k - N_q). A query row that sees no key (causal, N_q > N_k) gets O = 0 and
lse = -inf, as flash-attn returns it. Differentiable (for the gradients' reference).
"""
from __future__ import annotations

import math

import torch

from .launch import causal_offset

__all__ = ["attention_reference", "softmax_scale"]


def softmax_scale(sm_scale: float | None, d: int) -> float:
    """1/sqrt(d) unless given."""
    return 1.0 / math.sqrt(d) if sm_scale is None else float(sm_scale)


def attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal=False,
                        sm_scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(sm_scale * q k^T [mask]) v and the log-sum-exp of the scaled scores, float64."""
    q, k, v = q.double(), k.double(), v.double()
    nq, nk, group = q.shape[2], k.shape[2], q.shape[1] // k.shape[1]
    if group > 1:  # grouped-query attention: each K/V head serves `group` query heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = (q @ k.transpose(-1, -2)) * softmax_scale(sm_scale, q.shape[-1])  # (B, H, Nq, Nk)
    is_causal, off = causal_offset(causal, nq, nk)
    if not is_causal:
        lse = torch.logsumexp(scores, dim=-1)
        return torch.softmax(scores, dim=-1) @ v, lse
    rows = torch.arange(nq, device=q.device)[:, None]
    cols = torch.arange(nk, device=q.device)[None, :]
    visible = cols <= rows + off                                       # (Nq, Nk)
    scores = scores.masked_fill(~visible, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)                              # -inf for empty rows
    finite = torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)
    p = torch.where(visible, torch.exp(scores - finite[..., None]), torch.zeros_like(scores))
    return p @ v, lse
