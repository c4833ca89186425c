"""Program generators: the seed's traces for any size (seed 000).

One module per algorithm family; each builds a ``Program`` directly and its docstring
states the cost formula that ``toymachine.cost`` implements and the tests hold the
simulator to. ``registry`` names them for ``toym sweep``.
"""

from __future__ import annotations

from .attention import attention_program
from .matmul import matmul_program, plan_matmul
from .registry import GeneratorSpec, Param, generator_names, get_generator, register
from .softmax import softmax_program
from .variance import variance_program

__all__ = [
    "matmul_program", "plan_matmul", "softmax_program", "attention_program", "variance_program",
    "GeneratorSpec", "Param", "register", "get_generator", "generator_names",
]
