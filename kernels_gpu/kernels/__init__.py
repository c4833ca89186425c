"""The Triton kernels of FlashAttention-2, gathered in one namespace.

The @triton.jit code lives in three modules, in the tutorial's order: ``kernels_common`` (tile
helpers, the interpreter switch), ``kernels_fwd`` (forward), ``kernels_bwd`` (backward:
preprocess, dK/dV, dQ). ``flash_attn`` checks inputs and launches them; the kernel names are
the ones ncu reports (``traffic.KERNEL_NAMES``).
"""
from __future__ import annotations

from .bwd import _attn_bwd_dkdv, _attn_bwd_dq, _attn_bwd_preprocess
from .common import INTERPRETER, LN2, LOG2E, padded_head_dim
from .fwd import _attn_fwd

__all__ = ["INTERPRETER", "LOG2E", "LN2", "padded_head_dim", "_attn_fwd", "_attn_bwd_preprocess",
           "_attn_bwd_dkdv", "_attn_bwd_dq"]
