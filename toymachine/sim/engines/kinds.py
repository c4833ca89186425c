"""Code-tuple kinds and counters shared by the interpreter loop and the engines."""

from __future__ import annotations

__all__ = ["LOAD", "STORE", "UNARY", "BINARY", "TERNARY", "EXEC", "MM", "VEC", "SFU", "TILE_BASE", "OPINDEX",
           "code_text"]

from ...isa import MNEMONICS

LOAD, STORE, UNARY, BINARY, TERNARY, EXEC = range(6)  # code kinds (scalar ones first: the loop inlines them)
MM, VEC, SFU = 0, 1, 2  # indices into the run's FLOP accumulator: tensor core, vector unit, special functions
TILE_BASE = len(MNEMONICS)  # tile instructions count in run.counts[TILE_BASE + opcode]
OPINDEX = {m: i for i, m in enumerate(MNEMONICS)}


def code_text(code: tuple) -> str:
    """The text of a compiled instruction (generated programs make it on demand)."""
    tag = code[-1]
    return tag[1] if tag[1] is not None else str(tag[0])
