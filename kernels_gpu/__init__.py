"""kernels_gpu: a Triton FlashAttention-2 (forward and backward; head dims to 256, cross-attention,
grouped-query attention, an fp8 forward) with its schedule description.

Importing this package on a machine without CUDA sets TRITON_INTERPRET=1 before triton is
imported, so the kernels run on torch CPU tensors in Triton's interpreter (slow; small sizes).
"""
import os

import torch

if not torch.cuda.is_available():  # before anything imports triton: triton.language's own
    os.environ.setdefault("TRITON_INTERPRET", "1")  # @jit helpers read it when triton is imported

from .host.configs import KernelConfig  # noqa: E402
from .host.flash_attn import (
    FP8_DTYPES,
    INTERPRETER,
    MAX_HEAD_DIM,
    SUPPORTED_HEAD_DIMS,
    attention_reference,
    flash_attention,
    flash_attention_backward,
    flash_attention_forward,
    resolve_config,
)
from .host.sdpa import SDPAUnsupported, scaled_dot_product_attention  # noqa: E402
from .model.schedule import Schedule, Traffic, predict_traffic, schedule

__all__ = ["FP8_DTYPES", "INTERPRETER", "MAX_HEAD_DIM", "SUPPORTED_HEAD_DIMS",
           "KernelConfig",
           "Schedule", "Traffic", "attention_reference", "flash_attention",
           "flash_attention_backward", "flash_attention_forward", "predict_traffic",
           "resolve_config", "schedule", "scaled_dot_product_attention", "SDPAUnsupported"]
