"""Code-tuple kinds and counters shared by the interpreter loop and the engines."""

from __future__ import annotations

__all__ = ["LOAD", "STORE", "UNARY", "BINARY", "TERNARY", "EXEC", "LOAD_T", "STORE_T", "SKIP", "COPY", "TEMPLATES",
           "MM", "VEC", "SFU", "MZO", "TILE_BASE", "SKIP_SLOT", "COUNT_SLOTS", "OPINDEX", "code_text"]

from ...isa import MNEMONICS

LOAD, STORE, UNARY, BINARY, TERNARY, EXEC = range(6)  # code kinds (scalar ones first: the loop inlines them)
LOAD_T, STORE_T, SKIP = 6, 7, 8  # text mode: LOAD/STORE templates (index from the line), blank/comment lines
COPY = 9  # MOV between registers: a copy (never rounds, never raises an alarm)
TEMPLATES = (LOAD_T, STORE_T)
MM, VEC, SFU = 0, 1, 2  # indices into the run's FLOP accumulator: tensor core, vector unit, special functions
MZO = 3  # … and the elements MAC_Z wrote: a MAC unit spends a whole MAC on each one's first multiply
TILE_BASE = len(MNEMONICS)  # tile instructions count in run.counts[TILE_BASE + opcode]
SKIP_SLOT = 2 * len(MNEMONICS)  # run.counts' last slot: lines that are no instruction (not reported)
COUNT_SLOTS = SKIP_SLOT + 1
OPINDEX = {m: i for i, m in enumerate(MNEMONICS)}


def code_text(code: tuple) -> str:
    """The text of a compiled instruction (generated programs make it on demand)."""
    tag = code[-1]
    return tag[1] if tag[1] is not None else str(tag[0])
