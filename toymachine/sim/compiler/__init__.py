"""The block compiler: the parts of a run that repeat, as generated Python functions.

Entered only through ``sim.compiled`` (the door, which decides whether the compiled path takes a
piece of work and falls back to the interpreter loop where it does not). Its public surface is what
the door calls: template chunks and a generated program's chunks block by block (``BlockCache``,
``run_blocks``, ``ProgramKeys``, ``run_program_blocks``: ``compiler.templates``), lines mode's
segments in pieces (``LinePieces``: ``compiler.lines``). The blocks are written by
``compiler.words`` (word instructions) and ``compiler.tiles`` (tile instructions); runs of tile
blocks go by ``compiler.tile_runs``.
"""

from __future__ import annotations

__all__ = ["BlockCache", "LinePieces", "ProgramKeys", "run_blocks", "run_program_blocks"]

from .lines import LinePieces
from .templates import BlockCache, ProgramKeys, run_blocks, run_program_blocks
