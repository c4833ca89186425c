"""The instruction table: the single source of truth for the toy machine's ISA.

The parser reads each entry's operand signature, the simulator its kind and value
semantics, the cost model its cost class, and the docs' instruction reference
(docs/reference/isa.md) is generated from it at build time (``toym isa --format markdown``).

Operand kinds in a signature:

``mem``  a DRAM/HBM address, ``x[3]``, ``a[0][1]``, or a block ``Q[0:64, :]``
``src``  a register that is read (``T1.T``: a tile register read transposed)
``dst``  the register that is written
``imm``  a number written in the instruction (``FILL -inf, 64, 1, T3``)

Seed 000 defines the scalar instructions (matmul: LOAD, STORE, MAC_Z, MAC; softmax: MAX,
SUB, EXP, ADD, MUL, DIV, MOV); every one costs 1 cycle on the default machine.

"Element is Tile" (seed 000): the same instructions work on tiles. ``R<n>`` registers hold
one word; ``T<n>`` registers hold tiles in SRAM. An instruction naming a T register or a
block address is a *tile* instruction: LOAD/STORE move a block between HBM and SRAM,
MAC_Z/MAC are tensor-core matrix products, the ALU/SFU instructions work elementwise with
row broadcast. ROWMAX, ROWSUM, LOG, FILL, MASK and DROPOUT exist only on tiles (``level="tile"``).
The tile semantics live in ``toymachine.tile``; ``tile_operation`` and ``tile_flops`` here
document them.
"""

from __future__ import annotations

__all__ = ["OpSpec", "ISA", "MNEMONICS", "SCALAR_MNEMONICS", "TILE_ONLY", "UNITS", "lookup", "fmax"]

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass


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
    kind: str  # load | store | unary | binary | ternary | fill | mask | dropout
    cost_class: str  # memory | mac | alu | sfu (special-function unit: EXP, LOG)
    syntax: str  # as the seed writes it
    operation: str  # what it computes, in the seed's notation
    numeric: Callable | None  # value semantics on floats (None for LOAD/STORE and tile-only ops)
    tile_operation: str = ""  # what it computes when its registers hold tiles
    tile_flops: str = ""  # FLOPs of the tile form, counted by toymachine.tile (m×k · k×n, r×c tiles)
    level: str = "scalar"  # scalar: the seed's (R or T registers) | tile: T registers only
    symbolic: bool = True  # has symbolic semantics (symbolic.SYMBOLIC_OPS); False: explicitly not

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
    OpSpec("LOAD", ("mem", "dst"), "load", "memory", "LOAD src, Rd", "Rd = DRAM[src]", None,
           "Td = HBM[block] (a span on one axis loads as an r×1 column)", "0 (moves r·c words)"),
    OpSpec("STORE", ("src", "mem"), "store", "memory", "STORE Rs, dst", "DRAM[dst] = Rs", None,
           "HBM[block] = Ts (shapes must match)", "0 (moves r·c words)"),
    OpSpec("MAC_Z", ("src", "src", "dst"), "binary", "mac", "MAC_Z Ra, Rb, Rd", "Rd = Ra × Rb", operator.mul,
           "Td = Ta·Tb (matrix product on the tensor core; Tb.T transposes)", "m·n·(2k−1) matmul"),
    OpSpec("MAC", ("src", "src", "src", "dst"), "ternary", "mac", "MAC Ra, Rb, Rc, Rd", "Rd = Ra × Rb + Rc", _mac,
           "Td = Ta·Tb + Tc (matrix multiply-accumulate)", "2·m·n·k matmul"),
    OpSpec("MAX", ("src", "src", "dst"), "binary", "alu", "MAX Ra, Rb, Rd", "Rd = max(Ra, Rb)", fmax,
           "elementwise max, row broadcast", "r·c"),
    OpSpec("SUB", ("src", "src", "dst"), "binary", "alu", "SUB Ra, Rb, Rd", "Rd = Ra − Rb", operator.sub,
           "elementwise Ta − Tb, row broadcast ((r,c) − (r,1))", "r·c"),
    OpSpec("ADD", ("src", "src", "dst"), "binary", "alu", "ADD Ra, Rb, Rd", "Rd = Ra + Rb", operator.add,
           "elementwise sum, row broadcast", "r·c"),
    OpSpec("MUL", ("src", "src", "dst"), "binary", "alu", "MUL Ra, Rb, Rd", "Rd = Ra × Rb", operator.mul,
           "elementwise product, row broadcast", "r·c"),
    OpSpec("DIV", ("src", "src", "dst"), "binary", "alu", "DIV Ra, Rb, Rd", "Rd = Ra / Rb", operator.truediv,
           "elementwise quotient, row broadcast", "r·c"),
    OpSpec("EXP", ("src", "dst"), "unary", "sfu", "EXP Ra, Rd", "Rd = exp(Ra)", math.exp,
           "elementwise exp", "r·c (special-function unit)"),
    OpSpec("MOV", ("src", "dst"), "unary", "alu", "MOV Rs, Rd", "Rd = Rs", _mov,
           "Td = Ts (a copy; Ts.T copies the transpose)", "0"),
    OpSpec("ROWMAX", ("src", "dst"), "unary", "alu", "ROWMAX Ta, Td", "", None,
           "Td = max of each row of Ta, an r×1 column", "r·(c−1)", level="tile", symbolic=False),
    OpSpec("ROWSUM", ("src", "dst"), "unary", "alu", "ROWSUM Ta, Td", "", None,
           "Td = sum of each row of Ta, an r×1 column", "r·(c−1)", level="tile", symbolic=False),
    OpSpec("LOG", ("src", "dst"), "unary", "sfu", "LOG Ta, Td", "", None,
           "elementwise natural log (the log-sum-exp L = m + log l)", "r·c (special-function unit)",
           level="tile", symbolic=False),
    OpSpec("FILL", ("imm", "imm", "imm", "dst"), "fill", "alu", "FILL value, rows, cols, Td", "", None,
           "Td = a rows×cols tile of value (0, -inf, a scale…)", "0", level="tile", symbolic=False),
    OpSpec("MASK", ("src", "imm", "imm", "dst"), "mask", "alu", "MASK Ta, row0, col0, Td", "", None,
           "causal mask: Td[r,c] = Ta[r,c] if col0+c ≤ row0+r else −inf", "0", level="tile", symbolic=False),
    OpSpec("DROPOUT", ("src", "imm", "imm", "imm", "imm", "imm", "dst"), "dropout", "alu",
           "DROPOUT Ta, p, seed, head, row0, col0, Td", "", None,
           "dropout (Algorithm 2): Td = Ta∘Z, Z[r,c] = 1/(1−p) if hash(seed, head, row0+r, col0+c) ≥ p else 0 — a "
           "counter-based hash (splitmix64), so the mask is made on chip and never stored",
           "r·c", level="tile", symbolic=False),
)

ISA: dict[str, OpSpec] = {spec.mnemonic: spec for spec in _TABLE}
MNEMONICS: tuple[str, ...] = tuple(ISA)
SCALAR_MNEMONICS: tuple[str, ...] = tuple(m for m, spec in ISA.items() if spec.level == "scalar")
TILE_ONLY: frozenset[str] = frozenset(m for m, spec in ISA.items() if spec.level == "tile")
# cost class → the unit that runs the tile form (machine throughputs are per unit)
UNITS: dict[str, str] = {"memory": "hbm", "mac": "tensor", "alu": "vector", "sfu": "sfu"}


def lookup(mnemonic: str) -> OpSpec | None:
    """The spec for a mnemonic, case-insensitively; None if unknown."""
    return ISA.get(mnemonic.upper())
