"""Engines: one module per level of machine, behind one small interface the loop calls.

An engine turns an ``Instr`` into a *code tuple* the interpreter loop (``sim.loop``) runs:

* ``claims(ins) -> bool`` — whether this engine executes the instruction (the scalar engine, last,
  executes every instruction no other engine claims, and has no ``claims``);
* ``compile(run, ins, line, text) -> tuple`` — the code tuple; ``code[0]`` is its kind,
  ``code[1]`` the slot of ``run.counts`` it counts in, ``code[-1]`` its tag
  ``(Instr or None, source text or None, whether a zero result may be an underflow)``;
* ``setup(run)`` — per-run state, called once before anything compiles;
* ``report(run, machine, issue_cycles, flops) -> dict`` — the engine's keys of ``Result.extra``.

Kinds. The scalar engine's five kinds (``LOAD STORE UNARY BINARY TERNARY``) are inlined in the
loop: they are the hot path, millions of instructions per second, and a call per instruction
would cost a third of that. Every other engine compiles to ``EXEC`` tuples
``(EXEC, count_slot, fn, …, tag)`` whose ``fn(run, line)`` does the whole instruction — so a new
machine is a new module here, not a new branch in the loop.

``scalar`` words in registers and DRAM (seed 000's machine); ``tile`` T registers holding tiles in
SRAM, blocks of HBM arrays, the tensor core (seed 000's "Element is Tile"); ``units`` (not an engine:
the tile engine calls it) prices tile instructions on a machine with compute units — MXU, VPU, DMA
(seed 002's TPU).
"""

from __future__ import annotations

__all__ = ["CLAIMING", "ENGINES", "engine_for", "setup", "compile_instr"]

from typing import TYPE_CHECKING

from ...program import Instr
from . import scalar, tile

if TYPE_CHECKING:
    from ..run import Run

CLAIMING = (tile,)  # the engines that claim instructions, asked in order; scalar executes the rest
ENGINES = (*CLAIMING, scalar)  # every engine's setup and report, in this order


def engine_for(ins):
    """The engine that executes ``ins``: the first of ``CLAIMING`` that claims it, else the scalar one."""
    return next((engine for engine in CLAIMING if engine.claims(ins)), scalar)


def setup(run: Run) -> None:
    """Every engine's per-run state, once, before anything compiles."""
    for engine in ENGINES:
        engine.setup(run)


def compile_instr(run: Run, ins: Instr, line: int, text: str | None = None) -> tuple:
    """``ins`` → its code tuple, compiled by the engine that claims it."""
    return engine_for(ins).compile(run, ins, line, text)
