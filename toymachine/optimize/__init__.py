"""Searches over schedules and block sizes (ARCHITECTURE: ``optimize/`` uses gen, cost and
sim, never the CLI).

* ``optimize_matmul`` — provably optimal LOAD/MAC_Z/MAC/STORE schedules of C = A·B on an
  R-register machine (A* over canonical register states; ``matmul_space`` defines the space).
* ``analyze`` — how many LOADs/STOREs an optimal register allocation of a trace's own order of
  computation needs, and which of the trace's LOADs are redundant.
* ``optimize_blocks`` / ``block_table`` — FlashAttention block sizes and loop order under an
  SRAM of M words, beside the paper's Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d).
* ``reports`` — each result as a ``Report`` for every output format; ``to_dict()`` for JSON.
"""

from __future__ import annotations

from .analyze import RedundantLoad, TraceAnalysis, analyze
from .attention_blocks import BlockChoice, BlockSearch, block_table, optimize_blocks
from .matmul_search import MatmulOptimum, optimize_matmul
from .reports import (
    analysis_report,
    block_table_report,
    blocks_report,
    matmul_report,
    matmul_table_report,
)

__all__ = [
    "MatmulOptimum", "optimize_matmul", "TraceAnalysis", "RedundantLoad", "analyze", "BlockChoice", "BlockSearch",
    "optimize_blocks", "block_table", "matmul_report", "matmul_table_report", "analysis_report", "blocks_report",
    "block_table_report",
]
