"""Lines mode's cache (``sim.text``): line → code, one lookup per line, the code carrying its line's
*shape*; a line not in the cache is compiled ahead as the lookup meets it, where that can make no
difference (``scalar.compile_ahead``).

A line's shape is its code without its index (``LOAD a[], R0``: the kind, the opcode, the array, the
register; an arithmetic line whole), as one character (``LineCache.note``): a segment's shapes are
one string (``shapes``), in which the lines not compiled yet stand as ``MISS`` and in which the
compiled path finds the pieces of lines that repeat (``compiler.lines``).

Most new lines of a long trace are word LOAD/STOREs in the canonical form (``LOAD a[3][7], R0``: a
matmul's new rows). Those take a fast path: one regular expression reads the line, and the parts
that do not depend on its index — the array, the register's slot and the line's shape — are
remembered per (LOAD or STORE, array, register) once the general path compiled one such line. The
index is checked against the array's shape line by line, as ``compile_ahead`` checks it; the code
is the one ``compile_ahead`` then ``note`` give, item for item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["LineCache", "MISS", "MISS_CODE", "NO_SHAPE", "shapes", "noted"]

import re
from operator import itemgetter

from .engines import scalar
from .engines.kinds import BINARY, COPY, LOAD, SKIP, STORE, TERNARY, UNARY

if TYPE_CHECKING:
    from .run import Run

_NAME, _IDX, _REG = r"([A-Za-z_][A-Za-z0-9_]*)", r"\[([0-9]{1,7})\]", r"(R(?:0|[1-9][0-9]{0,7}))"
# scalar._memory_parts' canonical forms, in one expression: LOAD name[i]([j]), Rk | STORE Rk, name[i]([j])
_CANONICAL = re.compile(f"LOAD {_NAME}{_IDX}(?:{_IDX})?, {_REG}|STORE {_REG}, {_NAME}{_IDX}(?:{_IDX})?").fullmatch
MAX_SHAPES = 40_000  # distinct shapes (one character each; past this, new lines get none)
NO_SHAPE = "\x01"  # the shape of a line no piece compiles (another engine's, or past MAX_SHAPES)
MISS = "\x00"  # the shape of a line not compiled yet (the cache's answer for a new line)
_MISS_TAG = (None, "", False)
MISS_CODE = (SKIP, 0, 0, _MISS_TAG, MISS, _MISS_TAG)  # never run: sim.text compiles the line first
_SHAPE = itemgetter(-2)
ARITY = (UNARY, COPY, BINARY, TERNARY)  # the register kinds: their shape is their code less its tag


class LineCache(dict):
    """Lines mode's cache: line → code (with its shape, ``note``). Looking up a line not
    in it (``cache[line]``) compiles the line ahead where ``scalar.compile_ahead`` can, and caches
    it, else answers ``MISS_CODE`` (the line compiles in trace order) — so a chunk's lines are looked
    up, and its new lines compiled ahead in the order they first stand, in one pass."""

    __slots__ = ("run", "new", "refused", "parts", "missed", "kinds", "protos")
    run: Run
    new: list[str]  # lines looked up and not found in this chunk, in order
    refused: set[str]  # lines compile_ahead cannot compile (MISS_CODE)
    parts: dict[tuple, tuple]  # (kind, array, register) → (array, slot, op, shape character)
    missed: bool
    kinds: dict[tuple, str]  # shape → its character
    protos: dict[str, tuple]  # character → a code of that shape

    def __init__(self) -> None:
        super().__init__()
        self.parts, self.kinds, self.protos = {}, {}, {}

    def begin(self, run: Run) -> None:
        """Start a chunk: ``new`` lists the lines looked up and not found, in order."""
        self.run, self.new, self.refused, self.missed = run, [], set(), False

    def clear(self) -> None:
        """Forget every line, the fast path's parts and the shapes (an array went dense, or the cache
        was full; the compiled path forgets its pieces with them: ``CompiledPath.forget``)."""
        dict.clear(self)
        self.parts.clear()
        self.kinds.clear()
        self.protos.clear()

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
        code = self[line] = self.note(code)
        if m is not None and (code[0] == LOAD or code[0] == STORE):
            self.parts[key] = (code[2], code[4], code[1], code[-2])
        return code

    def note(self, code: tuple) -> tuple:
        """``code`` with its shape's character and its tag again appended, ``code + (ch, tag)``:
        every item keeps its place and ``code[-1]`` is still the tag (the cache holds this code:
        one lookup per line gives the code and its shape, ``code[-2]``)."""
        kind = code[0]
        shape: tuple | None
        if kind == LOAD or kind == STORE:
            shape = (kind, code[1], id(code[2]), code[4])
        elif kind in ARITY:
            shape = (kind,) + code[1:-1] + (code[-1][2],)
        elif kind == SKIP and not code[2]:
            shape = (SKIP,)
        else:
            shape = None
        ch = NO_SHAPE if shape is None else self.kinds.get(shape)
        if ch is None:
            if len(self.kinds) >= MAX_SHAPES:
                ch = NO_SHAPE
            else:
                assert shape is not None  # a line without a shape has ch NO_SHAPE
                ch = self.kinds[shape] = chr(0x100 + len(self.kinds))
                self.protos[ch] = code + (ch, code[-1])  # (noted: its ch is the one object of its shape)
        return code + (ch, code[-1])

    def signature(self, codes: list, lines: list) -> str:
        """The shapes of ``codes`` (lines ``lines``) as a string, one character per line (``MISS``
        where a code is ``MISS_CODE``). A code the template mode cached without a shape gets one
        (in ``codes`` and in the cache)."""
        try:
            return shapes(codes)
        except TypeError:  # code[-2] of a code not noted is no string
            for j, code in enumerate(codes):
                if not noted(code):
                    codes[j] = self[lines[j]] = self.note(code)
            return shapes(codes)


def shapes(codes) -> str:
    """The shape characters of noted codes (``LineCache.note``), one per code."""
    return "".join(map(_SHAPE, codes))


def noted(code: tuple) -> bool:
    """Whether ``code`` carries its shape (``LineCache.note``)."""
    return len(code) > 4 and code[-1] is code[-3] and type(code[-2]) is str
