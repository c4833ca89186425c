"""The instruction emitter the tiled attention generators share (``toymachine.gen.tile``;
seed 000, "Element is Tile": T registers hold blocks in SRAM, LOAD/STORE move them from/to HBM).

``Emitter`` builds the instruction list with one shared ``Instr`` per repeated instruction
and one ``Mem`` per block it names; ``TAU`` is the register of the 1×1 softmax-scale tile
every scaled program FILLs first; ``scores`` emits S_ij = τ·Q_i·K_jᵀ (causal-masked), the
step the forward and backward passes share; ``drop`` the DROPOUT of a block (``Dropout``: the
probability, seed and how a head's [batch][head] prefix numbers the mask).
"""

from __future__ import annotations

__all__ = ["Emitter", "TAU", "Dropout", "scores", "drop"]

from dataclasses import dataclass

from ...cost.tile import Blocks
from ...program import Instr, Mem, Reg, Span

TAU = 15  # the 1×1 scale tile, in every program
_ALL = Span(None, None)


class Emitter:
    """Builds the instruction list; an instruction repeated with the same operands is one
    shared ``Instr`` object (a FlashAttention program repeats a few dozen of them)."""

    def __init__(self) -> None:
        self.instrs: list[Instr] = []
        self._regs: dict[tuple[int, bool], Reg] = {}
        self._mems: dict[tuple, Mem] = {}
        self._memo: dict[tuple, Instr] = {}

    def t(self, n: int, transpose: bool = False) -> Reg:
        r = self._regs.get((n, transpose))
        if r is None:
            r = self._regs[(n, transpose)] = Reg(f"T{n}", transpose)
        return r

    def block(self, array: str, prefix: tuple[int, ...], r0: int, r1: int, matrix: bool) -> Mem:
        """``X[prefix…, r0:r1, :]`` (a block of rows), or ``x[prefix…, r0:r1]`` for a statistic."""
        key = (array, prefix, r0, r1, matrix)
        m = self._mems.get(key)
        if m is None:
            index = prefix + ((Span(r0, r1), _ALL) if matrix else (Span(r0, r1),))
            m = self._mems[key] = Mem(array, index)
        return m

    def score_block(self, array: str, pre: tuple, i0: int, i1: int, j0: int, j1: int) -> Mem:
        """``X[prefix…, i0:i1, j0:j1]``: a (Br, Bc) block of an n × n array (standard attention's S, P)."""
        key = (array, pre, i0, i1, j0, j1)
        m = self._mems.get(key)
        if m is None:
            m = self._mems[key] = Mem(array, pre + (Span(i0, i1), Span(j0, j1)))
        return m

    def op(self, mnemonic: str, *args) -> None:
        key = (mnemonic,) + tuple(id(a) if isinstance(a, (Reg, Mem)) else (type(a), a) for a in args)
        ins = self._memo.get(key)
        if ins is None:
            ins = self._memo[key] = Instr(mnemonic, tuple(args))
        self.instrs.append(ins)


def scores(e: Emitter, g: Blocks, q: int, k: int, s: int, i0: int, j0: int, j1: int, scaled: bool) -> None:
    """S_ij = τ·Q_i·K_jᵀ, causal-masked where a key follows a query: (Br, Bc) tile in T<s>. The
    MASK's row offset is the block's first query shifted by δ = Nk − Nq (the bottom-right-aligned
    mask is the top-left one of rows i + δ)."""
    t = e.t
    e.op("MAC_Z", t(q), t(k, True), t(s))  # tensor core: Q_i·K_jᵀ
    if scaled:
        e.op("MUL", t(s), t(TAU), t(s))  # × τ, the softmax scale
    if g.masked(i0, j1):  # −inf where key j0+c > query i0+r + δ (bottom-right aligned: δ = Nk − Nq)
        e.op("MASK", t(s), i0 + g.shift, j0, t(s))


@dataclass(frozen=True)
class Dropout:
    """Dropout with probability ``p`` (0: none) and mask seed ``seed``; query head (b, h) of
    ``heads`` per batch draws the mask of head number b·heads + h (one head: 0)."""

    p: float = 0.0
    seed: int = 0
    heads: int = 1

    def head(self, pre: tuple) -> int:
        return pre[0] * self.heads + pre[1] if pre else 0


def drop(e: Emitter, dr: Dropout | None, src: int, dst: int, pre: tuple, row0: int, col0: int) -> None:
    """T<dst> = T<src>∘Z/(1 − p): the mask of the block whose first element is (row0, col0)."""
    if dr is not None and dr.p:
        e.op("DROPOUT", e.t(src), dr.p, dr.seed, dr.head(pre), row0, col0, e.t(dst))
