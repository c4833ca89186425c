"""Lines mode's cache (``sim.text``): line → code, one lookup per line; a line not in it is compiled
ahead as the lookup meets it, where that can make no difference (``scalar.compile_ahead``).

Most new lines of a long trace are word LOAD/STOREs in the canonical form (``LOAD a[3][7], R0``: a
matmul's new rows). Those take a fast path: one regular expression reads the line, and the parts
that do not depend on its index — the array, the register's slot and the line's shape
(``LineBlocks.note``) — are remembered per (LOAD or STORE, array, register) once the general path
compiled one such line. The index is checked against the array's shape line by line, as
``compile_ahead`` checks it; the code is the one ``compile_ahead`` then ``note`` give, item for item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["LineCache"]

import re

from .engines import scalar
from .engines.kinds import LOAD, STORE
from .line_blocks import MISS_CODE, LineBlocks

if TYPE_CHECKING:
    from .run import Run

_NAME, _IDX, _REG = r"([A-Za-z_][A-Za-z0-9_]*)", r"\[([0-9]{1,7})\]", r"(R(?:0|[1-9][0-9]{0,7}))"
# scalar._memory_parts' canonical forms, in one expression: LOAD name[i]([j]), Rk | STORE Rk, name[i]([j])
_CANONICAL = re.compile(f"LOAD {_NAME}{_IDX}(?:{_IDX})?, {_REG}|STORE {_REG}, {_NAME}{_IDX}(?:{_IDX})?").fullmatch


class LineCache(dict):
    """Lines mode's cache: line → code (with its shape, ``LineBlocks.note``). Looking up a line not
    in it (``cache[line]``) compiles the line ahead where ``scalar.compile_ahead`` can, and caches
    it, else answers ``MISS_CODE`` (the line compiles in trace order) — so a chunk's lines are looked
    up, and its new lines compiled ahead in the order they first stand, in one pass."""

    __slots__ = ("run", "pieces", "new", "refused", "parts", "missed")
    run: Run
    pieces: LineBlocks
    new: list[str]  # lines looked up and not found in this chunk, in order
    refused: set[str]  # lines compile_ahead cannot compile (MISS_CODE)
    parts: dict[tuple, tuple]  # (kind, array, register) → (array, slot, op, shape character)
    missed: bool

    def begin(self, run: Run, pieces: LineBlocks) -> None:
        """Start a chunk: ``new`` lists the lines looked up and not found, in order."""
        self.run, self.pieces, self.new, self.refused, self.missed = run, pieces, [], set(), False
        if not hasattr(self, "parts") or self.parts is None:
            self.parts = {}  # (kind, array, register) → (array, slot, shape): canonical lines' fast path

    def clear(self) -> None:
        """Forget every line (and the fast path's parts: an array went dense, or the cache was full)."""
        dict.clear(self)
        self.parts = {}

    def __missing__(self, line: str) -> tuple:
        if line in self.refused:
            self.missed = True  # (answered MISS_CODE in this chunk)
            return MISS_CODE
        self.new.append(line)
        m = _CANONICAL(line)
        if m is not None:
            name, i, j, reg, sreg, sname, si, sj = m.groups()
            if name is None:
                key, name, reg, i, j = (STORE, sname, sreg), sname, sreg, si, sj
            else:
                key = (LOAD, name, reg)
            known = self.parts.get(key)
            if known is not None:
                arr, slot, op, ch = known
                idx = (int(i),) if j is None else (int(i), int(j))
                if arr.check_index(idx) is None:  # (grows an implied shape, as compile_ahead does)
                    tag = (None, line, False)
                    code = self[line] = (key[0], op, arr, idx, slot, tag, ch, tag)
                    return code
                self.refused.add(line)
                self.missed = True
                return MISS_CODE
        code = scalar.compile_ahead(self.run, line)
        if code is None:
            self.refused.add(line)
            self.missed = True
            return MISS_CODE
        code = self[line] = self.pieces.note(code)
        if m is not None and (code[0] == LOAD or code[0] == STORE):
            self.parts[key] = (code[2], code[4], code[1], code[-2])
        return code
