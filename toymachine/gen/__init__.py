"""Program generators: the seed's traces for any size (seed 000) and the tile machine's tiled
attention.

``scalar/`` (matmul, softmax, attention, variance) and ``tile/`` (attention on the SRAM/HBM
machine) build ``Program`` values directly; each module's docstring states the cost formula that
``toymachine.cost`` implements and the tests hold the simulator to. ``registry`` is how a
generator is named for ``toym sweep``; ``catalog`` registers the built-in ones; ``common`` is
what every generator shares (the instruction builder, input data, header text).
"""

from __future__ import annotations

from ..cost import plan_matmul
from . import catalog  # noqa: F401  (registers the built-in generators)
from .registry import GeneratorSpec, Param, generator_names, get_generator, register
from .scalar import attention_program, matmul_program, softmax_program, variance_program

__all__ = [
    "matmul_program", "plan_matmul", "softmax_program", "attention_program", "variance_program",
    "GeneratorSpec", "Param", "register", "get_generator", "generator_names",
]
