"""Tiled attention, forward pass: the instruction streams of standard attention (Algorithm 0, and
the 3-pass variant) and FlashAttention-1 and -2 on the tile machine (seed 004, Algorithms 0, 1 and 2; seed 003's
break-it variants ``no-max`` and ``no-rescale``). ``toymachine.gen.tile`` documents the
algorithms and builds the programs; ``cost.tile.forward`` has these streams' closed forms.

``emit_forward`` emits one head's forward pass; ``FORWARD_REGS`` is the register map each
algorithm's header prints.
"""

from __future__ import annotations

__all__ = ["FORWARD_REGS", "emit_forward"]

import math

from ...cost.tile import Blocks
from .emit import Dropout, Emitter, drop, scores

FORWARD_REGS = {
    "fa2": "T0 Q_i (Br×d) · T1 K_j, T2 V_j (Bc×d) · T3 S_ij → P̃_ij (Br×Bc) · T4 O_i accumulator (Br×d) · "
           "T5 l_i · T6/T7 m_i, old and new, alternating (Br×1) · T8 rowmax, rowsum (Br×1) · T9 α = e^(m−m_new)",
    "fa1": "T0 Q_i (Br×d) · T1 K_j, T2 V_j (Bc×d) · T3 S_ij → P̃_ij (Br×Bc) · T4 O_i (Br×d) · T5 l_i · T6 m_i → α → "
           "α·l_i · T7 m̃_ij → β · T8 l̃_ij → l_new · T9 m_new (Br×1) · T10 P̃_ij·V_j (Br×d)",
    "standard": "T0 Q_i → O_i accumulator (Br×d) · T1 K_j → V_j (Bc×d) · T3 S_ij, P_ij (Br×Bc); the row block "
                "S_i → P_i (Br×nk) in the softmax · T6 row max m · T5 row sum l · T9 L (Br×1)",
    "standard-3pass": "T0 Q_i → O_i accumulator (Br×d) · T1 K_j → V_j (Bc×d) · T3 S_ij → P_ij (Br×Bc) · T6 row max "
                      "m · T5 row sum l · T8 rowmax/rowsum of a block · T9 L (Br×1)",
}


def emit_forward(e: Emitter, g: Blocks, d: int, pre: tuple, *, algo: str, variant: str, scaled: bool,
                 kpre: tuple | None = None, dropout: Dropout | None = None, **_) -> None:
    """One query head's forward pass (``pre``: its [batch][head] index prefix; ``kpre``: its
    key/value head's, default ``pre`` — grouped-query attention reads a shared K, V). With
    ``dropout`` (Algorithm 2) P̃_ij is multiplied by the mask just before P̃_ij·V_j; the row
    sums (and L) are those of the undropped P̃."""
    {"fa2": _fa2_forward, "fa1": _fa1_forward, "standard": _standard_forward,
     "standard-3pass": _standard_3pass_forward}[algo](e, g, d, pre, pre if kpre is None else kpre, variant, scaled,
                                                      dropout)


def _fa2_forward(e: Emitter, g: Blocks, d: int, pre: tuple, kpre: tuple, variant: str, scaled: bool,
                 dr: Dropout | None) -> None:
    """FlashAttention-2, forward (Dao 2023, Algorithm 1): for each Q_i, stream every K_j, V_j
    past a running max m, sum l and unnormalised O_i in SRAM; write O_i = O_i/l and L = m + log l."""
    t, cols = e.t, g.cols()
    for i0, i1 in g.rows():
        r = i1 - i0
        e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))  # (Br, d) tile, stays in SRAM for the row block
        e.op("FILL", 0, r, d, t(4))  # O_i accumulator (Br, d)
        e.op("FILL", 0, r, 1, t(5))  # l_i = 0
        m_old, m_new = 6, 7
        if variant != "no-max":
            e.op("FILL", -math.inf, r, 1, t(m_old))  # m_i = −inf
        for j in range(g.meets(i1)):
            j0, j1 = cols[j]
            e.op("LOAD", e.block("K", kpre, j0, j1, True), t(1))  # (Bc, d)
            e.op("LOAD", e.block("V", kpre, j0, j1, True), t(2))  # (Bc, d)
            scores(e, g, 0, 1, 3, i0, j0, j1, scaled)
            if variant == "exact":
                e.op("ROWMAX", t(3), t(8))  # rowmax(S_ij) (Br, 1)
                e.op("MAX", t(m_old), t(8), t(m_new))  # m_new = max(m, rowmax)
                e.op("SUB", t(3), t(m_new), t(3))  # S − m_new (row broadcast)
                e.op("EXP", t(3), t(3))  # P̃ = e^(S − m_new) (Br, Bc)
                e.op("SUB", t(m_old), t(m_new), t(9))
                e.op("EXP", t(9), t(9))  # α = e^(m − m_new) ≤ 1
                e.op("ROWSUM", t(3), t(8))  # rowsum(P̃)
                e.op("MUL", t(5), t(9), t(5))
                e.op("ADD", t(5), t(8), t(5))  # l = α·l + rowsum(P̃)
                e.op("MUL", t(4), t(9), t(4))  # O_i = α·O_i …
                m_old, m_new = m_new, m_old
            elif variant == "no-rescale":  # seed 003, Break 2: per-tile max, old state never rescaled
                e.op("ROWMAX", t(3), t(m_old))  # m = m̃_ij (the tile's own max)
                e.op("SUB", t(3), t(m_old), t(3))
                e.op("EXP", t(3), t(3))
                e.op("ROWSUM", t(3), t(8))
                e.op("ADD", t(5), t(8), t(5))  # l += rowsum, on an incompatible scale
            else:  # no-max, seed 003, Break 1: P̃ = e^S, overflows for large scores
                e.op("EXP", t(3), t(3))
                e.op("ROWSUM", t(3), t(8))
                e.op("ADD", t(5), t(8), t(5))
            drop(e, dr, 3, 3, pre, i0, j0)  # P̃∘Z/(1 − p), Algorithm 2
            e.op("MAC", t(3), t(2), t(4), t(4))  # … + P̃·V_j (tensor core)
        e.op("DIV", t(4), t(5), t(4))  # O_i / l (row broadcast)
        e.op("STORE", t(4), e.block("O", pre, i0, i1, True))
        e.op("LOG", t(5), t(5))  # log l
        if variant != "no-max":
            e.op("ADD", t(m_old), t(5), t(5))  # L = m + log l, the log-sum-exp
        e.op("STORE", t(5), e.block("L", pre, i0, i1, False))


def _fa1_forward(e: Emitter, g: Blocks, d: int, pre: tuple, kpre: tuple, variant: str, scaled: bool,
                 dr: Dropout | None) -> None:
    """FlashAttention-1, forward (Dao et al. 2022, Algorithm 1; Algorithm 2 with the mask):
    for each K_j, V_j, update every Q_i's O_i, l_i, m_i in HBM."""
    t, rows = e.t, g.rows()
    for j0, j1 in g.cols():
        e.op("LOAD", e.block("K", kpre, j0, j1, True), t(1))  # (Bc, d), stays for the whole inner loop
        e.op("LOAD", e.block("V", kpre, j0, j1, True), t(2))
        for i in range(g.met_by(j0), g.tr):
            i0, i1 = rows[i]
            e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))  # (Br, d)
            e.op("LOAD", e.block("O", pre, i0, i1, True), t(4))  # (Br, d), read and written per pair
            e.op("LOAD", e.block("l", pre, i0, i1, False), t(5))  # (Br, 1)
            if variant == "exact":
                e.op("LOAD", e.block("m", pre, i0, i1, False), t(6))
            scores(e, g, 0, 1, 3, i0, j0, j1, scaled)
            if variant == "exact":
                e.op("ROWMAX", t(3), t(7))  # m̃_ij = rowmax(S_ij)
                if g.causal:  # safe shift: a row the mask empties has rowmax −inf; P̃ = e^(−inf − m) = 0
                    e.op("MAX", t(7), t(6), t(7))
                e.op("SUB", t(3), t(7), t(3))
                e.op("EXP", t(3), t(3))  # P̃_ij = e^(S − m̃)
                e.op("ROWSUM", t(3), t(8))  # l̃_ij
                e.op("MAX", t(6), t(7), t(9))  # m_new = max(m_i, m̃_ij)
                e.op("SUB", t(6), t(9), t(6))
                e.op("EXP", t(6), t(6))  # α = e^(m_i − m_new)
                e.op("SUB", t(7), t(9), t(7))
                e.op("EXP", t(7), t(7))  # β = e^(m̃ − m_new)
                e.op("MUL", t(5), t(6), t(6))  # α·l_i
                e.op("MUL", t(8), t(7), t(8))  # β·l̃
                e.op("ADD", t(6), t(8), t(8))  # l_new = α·l_i + β·l̃
                e.op("MUL", t(4), t(6), t(4))  # diag(l_i)·α·O_i
                drop(e, dr, 3, 3, pre, i0, j0)  # P̃∘Z/(1 − p), Algorithm 2
                e.op("MAC_Z", t(3), t(2), t(10))  # P̃_ij·V_j (Br, d)
                e.op("MUL", t(10), t(7), t(10))  # β·P̃V
                e.op("ADD", t(4), t(10), t(4))
                e.op("DIV", t(4), t(8), t(4))  # O_i = diag(l_new)⁻¹(…)
                e.op("STORE", t(4), e.block("O", pre, i0, i1, True))
                e.op("STORE", t(8), e.block("l", pre, i0, i1, False))
                e.op("STORE", t(9), e.block("m", pre, i0, i1, False))
                continue
            if variant == "no-rescale":
                e.op("ROWMAX", t(3), t(7))  # m̃_ij; m_i := m̃_ij, l and O never rescaled
                e.op("SUB", t(3), t(7), t(3))
            e.op("EXP", t(3), t(3))
            e.op("ROWSUM", t(3), t(8))
            e.op("ADD", t(5), t(8), t(8))  # l_new = l_i + l̃ (no rescaling)
            e.op("MUL", t(4), t(5), t(4))  # diag(l_i)·O_i
            drop(e, dr, 3, 3, pre, i0, j0)
            e.op("MAC", t(3), t(2), t(4), t(4))
            e.op("DIV", t(4), t(8), t(4))
            e.op("STORE", t(4), e.block("O", pre, i0, i1, True))
            e.op("STORE", t(8), e.block("l", pre, i0, i1, False))
            if variant == "no-rescale":
                e.op("STORE", t(7), e.block("m", pre, i0, i1, False))


def _standard_forward(e: Emitter, g: Blocks, d: int, pre: tuple, kpre: tuple, variant: str, scaled: bool,
                      dr: Dropout | None) -> None:
    """Standard attention as the FlashAttention paper's Algorithm 0 counts it: 1. S = τQKᵀ
    by blocks, written to HBM; 2. S read once — a row block S_i (Br × nk) at a time, as a
    row-wise softmax kernel holds its rows — P_i = softmax(S_i) written to HBM (and the
    log-sum-exp L); 3. P and V by blocks, O = PV. S and P are each written once and read once."""
    t, rows, cols = e.t, g.rows(), g.cols()
    for i0, i1 in rows:  # 1. S = τ·Q·Kᵀ
        e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))
        for j0, j1 in cols:
            e.op("LOAD", e.block("K", kpre, j0, j1, True), t(1))
            scores(e, g, 0, 1, 3, i0, j0, j1, scaled)
            e.op("STORE", t(3), e.score_block("S", pre, i0, i1, j0, j1))
    for i0, i1 in rows:  # 2. P = softmax(S): the row block read once, (Br, nk) in SRAM
        e.op("LOAD", e.block("S", pre, i0, i1, True), t(3))
        if variant == "exact":
            e.op("ROWMAX", t(3), t(6))  # m (Br, 1)
            e.op("SUB", t(3), t(6), t(3))
        e.op("EXP", t(3), t(3))
        e.op("ROWSUM", t(3), t(5))  # l (Br, 1)
        e.op("DIV", t(3), t(5), t(3))  # P = e^(S − m) / l
        e.op("STORE", t(3), e.block("P", pre, i0, i1, True))
        e.op("LOG", t(5), t(9))
        if variant == "exact":
            e.op("ADD", t(6), t(9), t(9))  # L = m + log l
        e.op("STORE", t(9), e.block("L", pre, i0, i1, False))
    _standard_pv(e, g, pre, kpre, dr)


def _standard_pv(e: Emitter, g: Blocks, pre: tuple, kpre: tuple, dr: Dropout | None) -> None:
    """Standard attention's last step: O = P·V by blocks (P_ij, V_j in; O_i accumulated in SRAM;
    with dropout P_ij∘Z, the mask remade from its coordinates, never stored)."""
    t = e.t
    for i0, i1 in g.rows():
        for k, (j0, j1) in enumerate(g.cols()):
            e.op("LOAD", e.score_block("P", pre, i0, i1, j0, j1), t(3))
            drop(e, dr, 3, 3, pre, i0, j0)
            e.op("LOAD", e.block("V", kpre, j0, j1, True), t(1))
            if k == 0:
                e.op("MAC_Z", t(3), t(1), t(0))
            else:
                e.op("MAC", t(3), t(1), t(0), t(0))
        e.op("STORE", t(0), e.block("O", pre, i0, i1, True))


def _standard_3pass_forward(e: Emitter, g: Blocks, d: int, pre: tuple, kpre: tuple, variant: str,
                            scaled: bool, dr: Dropout | None) -> None:
    """Standard attention with S read three times (``standard-3pass``): S = τQKᵀ to HBM; P =
    softmax(S) to HBM by the seed's 3-pass safe softmax over S blocks (a pass for the row max,
    one for the row sum, one to normalise — SRAM holds one (Br, Bc) block, never a row of S),
    then O = PV. Algorithm 0 reads S once (``standard``); this reads it 3× (no-max 2×)."""
    t, rows, cols = e.t, g.rows(), g.cols()
    for i0, i1 in rows:  # 1. S = τ·Q·Kᵀ
        e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))
        for j0, j1 in cols:
            e.op("LOAD", e.block("K", kpre, j0, j1, True), t(1))
            scores(e, g, 0, 1, 3, i0, j0, j1, scaled)
            e.op("STORE", t(3), e.score_block("S", pre, i0, i1, j0, j1))
    for i0, i1 in rows:  # 2. P = softmax(S), row block by row block
        if variant == "exact":
            for k, (j0, j1) in enumerate(cols):  # pass 1: m = row max
                e.op("LOAD", e.score_block("S", pre, i0, i1, j0, j1), t(3))
                if k == 0:
                    e.op("ROWMAX", t(3), t(6))
                else:
                    e.op("ROWMAX", t(3), t(8))
                    e.op("MAX", t(6), t(8), t(6))
        for k, (j0, j1) in enumerate(cols):  # pass 2: l = Σ e^(S − m)
            e.op("LOAD", e.score_block("S", pre, i0, i1, j0, j1), t(3))
            if variant == "exact":
                e.op("SUB", t(3), t(6), t(3))
            e.op("EXP", t(3), t(3))
            if k == 0:
                e.op("ROWSUM", t(3), t(5))
            else:
                e.op("ROWSUM", t(3), t(8))
                e.op("ADD", t(5), t(8), t(5))
        e.op("LOG", t(5), t(9))
        if variant == "exact":
            e.op("ADD", t(6), t(9), t(9))  # L = m + log l
        e.op("STORE", t(9), e.block("L", pre, i0, i1, False))
        for j0, j1 in cols:  # pass 3: P = e^(S − m) / l
            e.op("LOAD", e.score_block("S", pre, i0, i1, j0, j1), t(3))
            if variant == "exact":
                e.op("SUB", t(3), t(6), t(3))
            e.op("EXP", t(3), t(3))
            e.op("DIV", t(3), t(5), t(3))
            e.op("STORE", t(3), e.score_block("P", pre, i0, i1, j0, j1))
    _standard_pv(e, g, pre, kpre, dr)
