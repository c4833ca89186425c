"""A generated ``Program`` through ``sim.blocks`` without text: its instructions become text mode's
template keys and an index stream (``ProgramKeys``), made from the ``Instr`` objects themselves
(generators share one object per register instruction), and the chunk runs block by block as a
template chunk of text does (``run_program_blocks``)."""

from __future__ import annotations

__all__ = ["ProgramKeys", "run_program_blocks"]

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..program import Instr, Reg
from . import compiled
from .blocks import BlockCache, run_blocks
from .engines import scalar
from .engines.kinds import BINARY, COPY, LOAD, LOAD_T, STORE, STORE_T, TERNARY, UNARY

if TYPE_CHECKING:
    from .run import Run


class ProgramKeys:
    """A generated ``Program``'s chunks as text mode's template keys and index stream, made from
    its ``Instr`` objects without writing the text (``run_program_blocks``)."""

    def __init__(self, run: Run):
        self.run = run
        self.by_id: dict[int, str] = {}  # id of a shared register Instr → its key (generators share them)
        self.memory: dict[tuple, str] = {}  # (op, array, register) → template key
        self.templates: dict[str, tuple] = {}  # key → code
        self.cache = BlockCache(run)
        self.off = False  # a tile program, ACC, a computed index: this program runs in the loop

    def keys(self, chunk: Sequence[Instr], first: int):
        """(template text, indices) of ``chunk`` (lines ``first`` …), or None where an instruction
        is not a word instruction on R registers."""
        by_id, memory, templates, run = self.by_id, self.memory, self.templates, self.run
        keys = list(map(by_id.get, map(id, chunk)))
        indices: list[int] = []
        k = -1
        try:
            while True:
                k = keys.index(None, k + 1)
                ins = chunk[k]
                op = ins.op
                a: tuple[Any, ...] = ins.args  # operand kinds checked against the ISA when parsed
                if op == "LOAD" or op == "STORE":
                    mem, reg = (a[0], a[1]) if op == "LOAD" else (a[1], a[0])
                    key = memory.get((op, mem.array, reg.name))
                    idx = mem.index
                    if key is None:
                        if not (mem.is_scalar and reg.name[:1] == "R" and not reg.transpose):
                            return None
                        code = scalar.compile(run, ins, first + k)
                        if code[0] != LOAD and code[0] != STORE:  # an array held dense (tile engine)
                            return None
                        n = len(idx)
                        key = (f"LOAD {mem.array}{'[]' * n}, {reg.name}" if op == "LOAD"
                               else f"STORE {reg.name}, {mem.array}{'[]' * n}")
                        templates[key] = (LOAD_T if op == "LOAD" else STORE_T, code[1], code[2], n, code[4],
                                          (None, key, False))
                        memory[(op, mem.array, reg.name)] = key
                    if len(idx) == 1:
                        i = idx[0]
                        if type(i) is not int:
                            return None
                        indices.append(i)
                    else:
                        if not all(type(i) is int for i in idx):
                            return None
                        indices.extend(idx)
                else:
                    key = by_id.get(id(ins))  # seen earlier in this chunk
                    if key is not None:
                        keys[k] = key
                        continue
                    if not all(type(x) is Reg and x.name[:1] == "R" and not x.transpose for x in a):
                        return None
                    key = str(ins)
                    if key not in templates:
                        templates[key] = scalar.compile(run, ins, first + k)
                    if templates[key][0] not in (UNARY, BINARY, TERNARY, COPY):
                        return None
                    by_id[id(ins)] = key
                keys[k] = key
        except ValueError:  # no key left to find
            pass
        return "\n".join(cast("list[str]", keys)), indices  # every None is filled in above


def run_program_blocks(run: Run, state: ProgramKeys, chunk: Sequence[Instr], first: int) -> bool:
    """Run a chunk of a generated program (lines ``first`` …) block by block, as text mode runs
    a template chunk; False — nothing ran — where it cannot (the caller runs the loop)."""
    if state.off or run.record or run.symbolic or not compiled.ENABLED:
        return False
    made = state.keys(chunk, first)
    if made is None:
        state.off = True
        return False
    ktext, indices = made
    run.next_index = iter(indices).__next__
    return run_blocks(run, ktext, first, state.cache, state.templates)
