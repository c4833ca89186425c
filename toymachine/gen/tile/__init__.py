"""The tile machine's generators: tiled attention (standard, FlashAttention-1/2, forward and
backward) — ``attention`` holds the API, ``forward``/``backward`` the instruction streams,
``emit`` the shared emitter, ``header`` the arrays and header text, ``reference`` the float64
references the tests and ``verify-gpu`` compare with."""

from __future__ import annotations

__all__ = ["ALGOS", "PASSES", "ORDERS", "SPLIT_PHASES", "VARIANTS", "attention_program", "run_attention",
           "resolve_blocks", "attention_reference", "attention_backward_reference", "array_shapes"]

from .attention import (
           ALGOS,
           ORDERS,
           PASSES,
           SPLIT_PHASES,
           VARIANTS,
           array_shapes,
           attention_backward_reference,
           attention_program,
           attention_reference,
           resolve_blocks,
)
from .run import run_attention
