"""The door between the interpreter loop and the compiled path.

Every run can be done by the plain interpreter loop alone (``sim.loop.execute``: one dispatch per
instruction). The compiled path (``sim.compiler``: the parts of a run that repeat, as generated
Python functions) only makes the same run faster, and ``CompiledPath`` is the one way into it: text
mode (``sim.text``) and a generated program (``sim.simulate``) hand it each piece of work, and each
of its methods decides whether the compiled path takes that work — it does not where ``ENABLED`` is
False, while step rows are recorded or in symbolic mode, or where the work is shorter than
``MIN_LINES`` lines — and falls back to the loop where it does not. The block compiler is imported
on the first piece of work it takes: a short run never loads it. ``ENABLED = False`` is the
loop-only simulator the agreement tests hold the compiled path equal to
(``docs/explanation/speed-layer.md``).
"""

from __future__ import annotations

__all__ = ["ENABLED", "MIN_LINES", "CompiledPath", "PathStats", "Record", "recording"]

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .loop import execute
from .path_stats import PathStats, Tally

if TYPE_CHECKING:
    from ..program import Instr
    from .lines import LineCache
    from .run import Run

# False: every instruction runs in the interpreter loop. True: the compiled path may run a piece of
# work (it still declines what it cannot run exactly, and the loop runs that).
ENABLED = True
MIN_LINES = 256  # shorter work runs in the loop: compiling it would cost more than it saves


class Record:
    """The compiled paths of the runs made inside ``recording()``."""

    def __init__(self) -> None:
        self.paths: list[CompiledPath] = []

    @property
    def stats(self) -> PathStats:
        """Every recorded run's ``PathStats``, added up."""
        return sum((p.stats for p in self.paths), PathStats())


_recording: list[Record] = []  # the open ``recording()`` blocks, innermost last


@contextmanager
def recording() -> Iterator[Record]:
    """Record the compiled path of every run simulated inside the block: ``with recording() as rec:
    simulate(…)``, then ``rec.stats``."""
    rec = Record()
    _recording.append(rec)
    try:
        yield rec
    finally:
        _recording.remove(rec)


class CompiledPath:
    """The compiled path of one run: its compiled blocks and pieces, made on first use, and the
    record of what it ran (``stats``)."""

    def __init__(self, run: Run):
        self.run = run
        self.tally = Tally()
        for rec in _recording:
            rec.paths.append(self)
        self.blocks: Any = None  # text mode's template blocks (compiler.BlockCache)
        self.program: Any = None  # a generated program's keys and blocks (compiler.ProgramKeys)
        self.pieces: Any = None  # lines mode's pieces (compiler.LinePieces)

    def takes(self, lines: int) -> bool:
        """Does the compiled path take work of ``lines`` lines now?"""
        return ENABLED and lines >= MIN_LINES and not (self.run.record or self.run.symbolic)

    @property
    def stats(self) -> PathStats:
        """What the compiled path ran so far, by route."""
        return self.tally.stats()

    def run_chunk(self, ktext: str, first: int, templates: dict, count: int) -> bool:
        """Run a template chunk (``ktext``: its template text without the final newline, ``count``
        lines from line ``first``; its indices in ``run.next_index``) block by block. False —
        nothing ran — where the compiled path does not take it: the caller runs it in the loop."""
        if not self.takes(count):
            self.tally.refused += 1
            return False
        from .compiler import BlockCache, run_blocks
        if self.blocks is None:
            self.blocks = BlockCache(self.run, self.tally)
        if run_blocks(self.run, ktext, first, self.blocks, templates, count):
            return True
        self.tally.refused += 1
        return False

    def run_program_chunk(self, chunk: Sequence[Instr], first: int) -> bool:
        """Run a chunk of a generated program's instructions (lines ``first`` …) block by block, as a
        template chunk of text. False — nothing ran — where it does not take it."""
        if not self.takes(len(chunk)):
            self.tally.refused += 1
            return False
        from .compiler import ProgramKeys, run_program_blocks
        if self.program is None:
            self.program = ProgramKeys(self.run, self.tally)
        if run_program_blocks(self.run, self.program, chunk, first):
            return True
        self.tally.refused += 1
        return False

    def run_periodic(self, codes: list, first: int, cache: LineCache) -> bool:
        """Run a whole lines-mode chunk (every code compiled; line ``first + i`` is ``codes[i]``)
        in pieces of the period its shapes repeat with. False — nothing ran — where it does not
        take it or the chunk has no such period."""
        if not self.takes(len(codes)):
            return False
        return self._pieces(cache).periodic(self.run, codes, first)

    def run_segment(self, codes: list, sig: str, pos: int, end: int, first: int, cache: LineCache) -> None:
        """Run the lines-mode segment ``codes[pos:end]`` (every code compiled; ``sig``: their
        shapes, ``LineCache.signature``): in compiled pieces where they repeat, else in the loop."""
        if not self.takes(end - pos):
            self.tally.refused += 1
            execute(self.run, codes[pos:end], first + pos)
            return
        self._pieces(cache).execute(self.run, codes, sig, pos, end, first)

    def forget(self) -> None:
        """Forget text mode's compiled blocks and pieces: the codes they were made of are stale
        (an array switched to tile storage or went dense) or the caches were full."""
        if self.blocks is not None:
            self.blocks.clear()
        if self.pieces is not None:
            self.pieces.clear()

    def _pieces(self, cache: LineCache):
        if self.pieces is None:
            from .compiler import LinePieces
            self.pieces = LinePieces(self.run, cache.protos, self.tally)
        return self.pieces
