"""What the compiled path of a run did, by route (``PathStats``), and the counters the block
compiler adds to while the run goes (``Tally``). The door (``sim.compiled``) and the block compiler
(``sim.compiler``) both read these; they sit below both, so neither imports the other for them."""

from __future__ import annotations

__all__ = ["PathStats", "Tally"]

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class PathStats:
    """What the compiled path of a run did, by route: lines of the work it was handed (a chunk's
    lines count once, under the route that ran it, the lines it cut off and ran in the loop
    included) and the calls that went back to the loop. Counted per chunk, block run or bail,
    never per instruction."""

    refused: int = 0  # pieces of work handed back to the loop whole (declined by the door or the compiler)
    blocks: int = 0  # lines of template chunks run block by block (``compiler.templates``)
    runs: int = 0  # lines of template chunks run as runs of one block, one call per run
    apart: int = 0  # lines of template chunks run as word runs with their tile blocks apart (``compiler.tile_runs``)
    tiles_counted: int = 0  # runs of tile blocks counted, not run (they cannot differ from the first)
    batched: int = 0  # runs of a template tile block done at once, stacked as arrays (``tile_runs.compile_batch``)
    pieces: int = 0  # lines of lines-mode segments run in compiled pieces (``compiler.lines``)
    periodic: int = 0  # lines of lines-mode chunks run by a period's verifying piece
    bails: int = 0  # calls of a block or piece that bailed: the loop ran them again

    def __add__(self, other: PathStats) -> PathStats:
        return PathStats(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


@dataclass(slots=True)
class Tally:
    """The door's counters, mutable while a run goes (``PathStats``, field for field, is their frozen
    view); the block compiler adds to them per chunk, per run of blocks and per bail."""

    refused: int = 0
    blocks: int = 0
    runs: int = 0
    apart: int = 0
    tiles_counted: int = 0
    batched: int = 0
    pieces: int = 0
    periodic: int = 0
    bails: int = 0

    def stats(self) -> PathStats:
        return PathStats(**{f.name: getattr(self, f.name) for f in fields(PathStats)})
