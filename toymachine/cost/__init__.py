"""Closed-form costs of every generated program, and the lower bounds beside them.

Each ``*_cost`` function returns a ``Cost``: how many times each instruction executes, as a
function of the generator's parameters alone (no simulation), plus the registers the
program names. Cycles follow from a machine's per-instruction costs
(``Cost.cycles(machine)``; 1 cycle per instruction on the seed's machine), DRAM reads are
the LOADs and writes the STOREs (one word each on the scalar machine). The tests hold the
simulator to these formulas at random parameter points.

Each ``*_bound`` returns a ``Bound``: what any program for the same computation on the
same machine must move at least.

* Every input word is read once and every output word written once ("compulsory traffic").
* Matmul, in addition: the red-blue pebble game bound of Hong & Kung (1981) with the
  explicit constant of Irony, Toledo & Tiskin (2004, J. Parallel Distrib. Comput. 64(9),
  Thm. 3.1 sequential case): a conventional m×k·k×n product (all mnk products, no
  Strassen) on a machine whose fast memory holds S words performs at least
  ``mnk / (2·√2·√S) − S`` reads + writes. Here S = R registers (every MAC takes its
  operands and its addend from registers). Its leading term is not tight: Smith, Lowery,
  Langou & van de Geijn (2019, arXiv:1702.02017) raise it to 2mnk/√S; we use the ITT form
  because its lower-order term is stated exactly. ``traffic`` is the larger of the two.

Layout: ``common`` (``Cost``, ``Bound``), one module per scalar generator (``matmul`` — with the
schedules' planning, which the generator emits —, ``softmax``, ``attention``, ``variance``) and
``tile/`` for the tile machine's attention programs.
"""

from __future__ import annotations

__all__ = [
    "Cost", "Bound", "MatmulPlan", "plan_matmul", "matmul_plans", "matmul_plan_cost", "matmul_cost", "matmul_bound",
    "softmax_cost", "softmax_bound", "attention_cost", "attention_registers", "attention_bound",
    "variance_cost", "variance_bound", "SOFTMAX_REGISTERS", "VARIANCE_REGISTERS",
    "Blocks", "TileCost", "attention_tile_cost", "paper_blocks",
]

from .attention import attention_bound, attention_cost, attention_registers
from .common import Bound, Cost
from .matmul import (
    MatmulPlan,
    matmul_bound,
    matmul_cost,
    matmul_plan_cost,
    matmul_plans,
    plan_matmul,
)
from .softmax import SOFTMAX_REGISTERS, softmax_bound, softmax_cost
from .tile import Blocks, TileCost, attention_tile_cost, paper_blocks
from .variance import VARIANCE_REGISTERS, variance_bound, variance_cost
