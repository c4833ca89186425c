"""The scalar machine's generators (seed 000): matmul (inner/outer/best schedules), softmax
(naive/safe/online), attention (inner/outer loop order, output slots, break-it variants) and
Welford's variance. Each builds a ``Program`` directly; ``toymachine.cost`` has its closed form."""

from __future__ import annotations

__all__ = ["matmul_program", "softmax_program", "attention_program", "variance_program"]

from .attention import attention_program
from .matmul import matmul_program
from .softmax import softmax_program
from .variance import variance_program
