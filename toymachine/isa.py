"""The instruction table: the single source of truth for the toy machine's ISA.

The parser reads each entry's operand signature, the simulator its kind and value
semantics, the cost model its cost class, and the README's instruction reference is
generated from it (``toym isa --format markdown``; a test keeps the README in sync).

Operand kinds in a signature:

``mem``  a DRAM address, ``x[3]``, ``a[0][1]`` (read for LOAD, written for STORE)
``src``  a register that is read
``dst``  the register that is written

Seed 000 defines the instructions (matmul: LOAD, STORE, MAC_Z, MAC; softmax: MAX, SUB,
EXP, ADD, MUL, DIV, MOV); every one costs 1 cycle on the default machine.
"""

from __future__ import annotations

__all__ = ["OpSpec", "ISA", "MNEMONICS", "lookup", "fmax"]

import math
import operator
from dataclasses import dataclass
from typing import Callable


def fmax(a: float, b: float) -> float:
    """max(a, b) that propagates NaN from either side (as IEEE maximum does)."""
    return a if (a >= b or a != a) else b


def _mac(a: float, b: float, c: float) -> float:
    return a * b + c


def _mov(a: float) -> float:
    return a


@dataclass(frozen=True)
class OpSpec:
    """One instruction: how it is written, what it does, what it costs."""

    mnemonic: str
    signature: tuple[str, ...]  # operand kinds in written order
    kind: str  # load | store | unary | binary | ternary
    cost_class: str  # memory | mac | alu | sfu (special-function unit: EXP)
    syntax: str  # as the seed writes it
    operation: str  # what it computes, in the seed's notation
    numeric: Callable | None  # value semantics on floats (None for LOAD/STORE)

    @property
    def arity(self) -> int:
        return len(self.signature)

    @property
    def sources(self) -> tuple[int, ...]:
        """Operand positions of the registers read."""
        return tuple(i for i, k in enumerate(self.signature) if k == "src")

    @property
    def dest(self) -> int | None:
        """Operand position of the register written, if any."""
        for i, k in enumerate(self.signature):
            if k == "dst":
                return i
        return None


_TABLE = (
    OpSpec("LOAD", ("mem", "dst"), "load", "memory", "LOAD src, Rd", "Rd = DRAM[src]", None),
    OpSpec("STORE", ("src", "mem"), "store", "memory", "STORE Rs, dst", "DRAM[dst] = Rs", None),
    OpSpec("MAC_Z", ("src", "src", "dst"), "binary", "mac", "MAC_Z Ra, Rb, Rd", "Rd = Ra × Rb", operator.mul),
    OpSpec("MAC", ("src", "src", "src", "dst"), "ternary", "mac", "MAC Ra, Rb, Rc, Rd", "Rd = Ra × Rb + Rc", _mac),
    OpSpec("MAX", ("src", "src", "dst"), "binary", "alu", "MAX Ra, Rb, Rd", "Rd = max(Ra, Rb)", fmax),
    OpSpec("SUB", ("src", "src", "dst"), "binary", "alu", "SUB Ra, Rb, Rd", "Rd = Ra − Rb", operator.sub),
    OpSpec("ADD", ("src", "src", "dst"), "binary", "alu", "ADD Ra, Rb, Rd", "Rd = Ra + Rb", operator.add),
    OpSpec("MUL", ("src", "src", "dst"), "binary", "alu", "MUL Ra, Rb, Rd", "Rd = Ra × Rb", operator.mul),
    OpSpec("DIV", ("src", "src", "dst"), "binary", "alu", "DIV Ra, Rb, Rd", "Rd = Ra / Rb", operator.truediv),
    OpSpec("EXP", ("src", "dst"), "unary", "sfu", "EXP Ra, Rd", "Rd = exp(Ra)", math.exp),
    OpSpec("MOV", ("src", "dst"), "unary", "alu", "MOV Rs, Rd", "Rd = Rs", _mov),
)

ISA: dict[str, OpSpec] = {spec.mnemonic: spec for spec in _TABLE}
MNEMONICS: tuple[str, ...] = tuple(ISA)


def lookup(mnemonic: str) -> OpSpec | None:
    """The spec for a mnemonic, case-insensitively; None if unknown."""
    return ISA.get(mnemonic.upper())
