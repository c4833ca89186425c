"""Tiled attention, backward pass: the instruction streams of FlashAttention's backward on
the tile machine (seed 000's backward-pass draft and its "Dᵢ trick"; seed 004, Algorithm 4)
in the row and column orders, and the split order of the FlashAttention-2 kernels
(``kernels_gpu``: preprocess, dkdv, dq). ``toymachine.gen.tile`` documents the orders and
builds the programs; ``cost.tile.backward`` has these streams' closed forms.

``emit_backward`` emits one head's row- or column-order backward; ``emit_split_phase`` one
head's part of one split launch. ``BACKWARD_REGS`` and ``SPLIT_REGS`` are the register maps
the header prints.
"""

from __future__ import annotations

__all__ = ["BACKWARD_REGS", "SPLIT_REGS", "STANDARD_REGS", "emit_backward", "emit_split_phase",
           "emit_standard_backward"]

from ...cost.tile import Blocks
from ...program import Mem
from .emit import TAU, Dropout, Emitter, drop, scores

BACKWARD_REGS = ("T0 Q_i, T5 dO_i, T9 dQ_i (Br×d) · T1 K_j, T2 V_j, T10 dK_j, T11 dV_j (Bc×d) · T3 S_ij → P_ij, "
                 "T4 dP_ij → dS_ij (Br×Bc) · T6 L_i (fa1: T6 m_i, T7 l_i) · T8 D_i · T12 rowsum(P∘dP) (Br×1)")
SPLIT_REGS = ("preprocess: T5 dO_i, T0 O_i → dO_i∘O_i (Br×d), T8 D_i (Br×1) · dkdv: T1 K_j, T2 V_j, T10 dK_j, "
              "T11 dV_j (Bc×d), T0 Q_i, T5 dO_i (Br×d) · dq: T0 Q_i, T5 dO_i, T10 dQ_i (Br×d), T1 K_j, T2 V_j "
              "(Bc×d) · both: T3 S_ij → P_ij, T4 dP_ij → dS_ij (Br×Bc), T6 L_i (fa1: T6 m_i, T7 l_i), T8 D_i "
              "(Br×1). One SRAM for all three launches: through dq, T11 still holds the last dV_j (a GPU starts "
              "each launch empty)")


def _load_row(e: Emitter, pre: tuple, i0: int, i1: int, *, fa1: bool, with_d: bool) -> None:
    """Q_i, dO_i (Br, d) into T0, T5 and the row statistics L_i (fa1: m_i, l_i) (Br, 1) into T6
    (T7); with ``with_d`` also D_i (Br, 1) into T8 (the split order reads it from HBM)."""
    t = e.t
    e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))
    e.op("LOAD", e.block("dO", pre, i0, i1, True), t(5))
    if fa1:
        e.op("LOAD", e.block("m", pre, i0, i1, False), t(6))
        e.op("LOAD", e.block("l", pre, i0, i1, False), t(7))
    else:
        e.op("LOAD", e.block("L", pre, i0, i1, False), t(6))
    if with_d:
        e.op("LOAD", e.block("D", pre, i0, i1, False), t(8))


def emit_backward(e: Emitter, g: Blocks, d: int, pres: list, *, algo: str, scaled: bool, precompute_d: bool,
                  order: str, kpre: tuple | None = None, dropout: Dropout | None = None, **_) -> None:
    """FlashAttention backward (Algorithm 4; seed 000's draft): recompute P from the saved
    statistics, dV += Pᵀ·dO, dP = dO·Vᵀ, dS = P∘(dP − D)·τ, dQ += dS·K, dK += dSᵀ·Q.

    ``pres``: the [batch][head] prefixes of the query heads that share the key/value head
    ``kpre`` (one head without grouped-query attention). Row order runs them one after the
    other (dK_j, dV_j are read-modified-written, so the group's contributions add up in HBM);
    column order keeps K_j, V_j, dK_j, dV_j in SRAM while every query head of the group
    streams past, so dK_j, dV_j are written once per key/value head.

    With ``dropout`` (Algorithm 4 with Algorithm 2's mask) the mask Z of each pair is remade:
    dV_j += (P_ij∘Z)ᵀ·dO_i (P∘Z in T13), dP_ij = (dO_i·V_jᵀ)∘Z; D_i = rowsum(dO_i∘O_i) holds
    as it is (O already carries the mask)."""
    t, rows, cols = e.t, g.rows(), g.cols()
    kpre = pres[0] if kpre is None else kpre
    fa1 = algo == "fa1"

    def d_prepass(pre: tuple) -> None:  # D_i = rowsum(dO_i ∘ O_i): the Dᵢ trick, no P needed
        for i0, i1 in rows:
            e.op("LOAD", e.block("dO", pre, i0, i1, True), t(5))
            e.op("LOAD", e.block("O", pre, i0, i1, True), t(9))
            e.op("MUL", t(5), t(9), t(9))
            e.op("ROWSUM", t(9), t(8))
            e.op("STORE", t(8), e.block("D", pre, i0, i1, False))

    def load_kv(j0: int, j1: int) -> None:
        e.op("LOAD", e.block("K", kpre, j0, j1, True), t(1))  # (Bc, d)
        e.op("LOAD", e.block("V", kpre, j0, j1, True), t(2))

    def probabilities(i0: int, j0: int, j1: int) -> None:
        """P_ij recomputed: (Br, Bc) in T3."""
        scores(e, g, 0, 1, 3, i0, j0, j1, scaled)
        e.op("SUB", t(3), t(6), t(3))  # S − L (fa1: S − m)
        e.op("EXP", t(3), t(3))
        if fa1:
            e.op("DIV", t(3), t(7), t(3))  # diag(l)⁻¹·e^(S − m)

    def d_contribution(pre: tuple, i0: int, j0: int) -> None:
        e.op("MAC_Z", t(5), t(2, True), t(4))  # dP = dO_i·V_jᵀ
        drop(e, dropout, 4, 4, pre, i0, j0)  # (dO·Vᵀ)∘Z
        e.op("MUL", t(3), t(4), t(4))  # P∘dP
        e.op("ROWSUM", t(4), t(12))
        e.op("ADD", t(8), t(12), t(8))  # D_i += rowsum(P∘dP)

    def gradients(dv_rmw: Mem | None, dk_rmw: Mem | None, pre: tuple, i0: int, j0: int) -> None:
        if dv_rmw:
            e.op("LOAD", dv_rmw, t(11))
        dropped = 13 if dropout is not None and dropout.p else 3
        drop(e, dropout, 3, dropped, pre, i0, j0)  # P_ij∘Z (T13)
        e.op("MAC", t(dropped, True), t(5), t(11), t(11))  # dV_j += P_ijᵀ·dO_i
        if dv_rmw:
            e.op("STORE", t(11), dv_rmw)
        e.op("MAC_Z", t(5), t(2, True), t(4))  # dP_ij = dO_i·V_jᵀ
        drop(e, dropout, 4, 4, pre, i0, j0)  # (dO·Vᵀ)∘Z
        e.op("SUB", t(4), t(8), t(4))  # dP − D_i (row broadcast)
        e.op("MUL", t(3), t(4), t(4))  # dS = P∘(dP − D)
        if scaled:
            e.op("MUL", t(4), t(TAU), t(4))  # τ·dS
        e.op("MAC", t(4), t(1), t(9), t(9))  # dQ_i += dS·K_j
        if dk_rmw:
            e.op("LOAD", dk_rmw, t(10))
        e.op("MAC", t(4, True), t(0), t(10), t(10))  # dK_j += dSᵀ·Q_i
        if dk_rmw:
            e.op("STORE", t(10), dk_rmw)

    if order == "col":  # K_j outer: dK_j, dV_j in SRAM; dQ_i read-modified-written (Algorithm 4)
        if precompute_d:
            for pre in pres:
                d_prepass(pre)
        for pass_no in ((0, 1) if not precompute_d else (1,)):
            for j0, j1 in cols:
                load_kv(j0, j1)  # once per key block, pass and key/value head
                if pass_no == 1:
                    e.op("FILL", 0, j1 - j0, d, t(10))  # dK_j = 0
                    e.op("FILL", 0, j1 - j0, d, t(11))  # dV_j = 0
                for pre in pres:
                    for i in range(g.met_by(j0), g.tr):
                        i0, i1 = rows[i]
                        _load_row(e, pre, i0, i1, fa1=fa1, with_d=False)
                        e.op("LOAD", e.block("D", pre, i0, i1, False), t(8))
                        if pass_no == 1:
                            e.op("LOAD", e.block("dQ", pre, i0, i1, True), t(9))
                        probabilities(i0, j0, j1)
                        if pass_no == 0:  # without the trick: D_i = rowsum(P∘dP) over every key block first
                            d_contribution(pre, i0, j0)
                            e.op("STORE", t(8), e.block("D", pre, i0, i1, False))
                            continue
                        gradients(None, None, pre, i0, j0)
                        e.op("STORE", t(9), e.block("dQ", pre, i0, i1, True))
                if pass_no == 1:
                    e.op("STORE", t(10), e.block("dK", kpre, j0, j1, True))
                    e.op("STORE", t(11), e.block("dV", kpre, j0, j1, True))
        return
    for pre in pres:
        if precompute_d:
            d_prepass(pre)
        for i0, i1 in rows:  # Q_i outer: dQ_i in SRAM; dK_j, dV_j read-modified-written per pair
            r = i1 - i0
            _load_row(e, pre, i0, i1, fa1=fa1, with_d=False)
            if precompute_d:
                e.op("LOAD", e.block("D", pre, i0, i1, False), t(8))
            else:
                e.op("FILL", 0, r, 1, t(8))  # D_i accumulated from P∘dP
            e.op("FILL", 0, r, d, t(9))  # dQ_i = 0
            jn = g.meets(i1)
            if not precompute_d:
                for j0, j1 in cols[:jn]:  # the first pass over the keys: D_i only
                    load_kv(j0, j1)
                    probabilities(i0, j0, j1)
                    d_contribution(pre, i0, j0)
            for j0, j1 in cols[:jn]:
                load_kv(j0, j1)
                probabilities(i0, j0, j1)
                gradients(e.block("dV", kpre, j0, j1, True), e.block("dK", kpre, j0, j1, True), pre, i0, j0)
            e.op("STORE", t(9), e.block("dQ", pre, i0, i1, True))


def emit_split_phase(e: Emitter, g: Blocks, d: int, pres: list, phase: str, *, algo: str,
                     scaled: bool, kpre: tuple | None = None, dropout: Dropout | None = None) -> None:
    """One launch of FlashAttention-2's split backward (``kernels_gpu.kernels``: _attn_bwd_preprocess,
    _attn_bwd_dkdv, _attn_bwd_dq) for the query heads ``pres`` sharing the key/value head
    ``kpre`` (one head without grouped-query attention; preprocess and dq take one query head at
    a time). The kernel's loops exactly: the same blocks, the same causal ranges (dkdv: Q blocks
    from the one holding key j0 on; dq: K blocks up to the query block's last row); τ multiplies
    S per pair and the dK, dQ accumulators once. dkdv with a group: K_j, V_j, dK_j, dV_j stay in
    SRAM while every query head of the group streams past (dK_j, dV_j summed over the group)."""
    t, rows, cols = e.t, g.rows(), g.cols()
    kpre = pres[0] if kpre is None else kpre
    fa1 = algo == "fa1"
    if phase == "preprocess":  # D_i = rowsum(dO_i∘O_i): (Br, d) tiles in T5, T0; (Br, 1) in T8
        for pre, i0, i1 in ((p, i0, i1) for p in pres for i0, i1 in rows):
            e.op("LOAD", e.block("dO", pre, i0, i1, True), t(5))
            e.op("LOAD", e.block("O", pre, i0, i1, True), t(0))
            e.op("MUL", t(5), t(0), t(0))
            e.op("ROWSUM", t(0), t(8))
            e.op("STORE", t(8), e.block("D", pre, i0, i1, False))
        return

    def probabilities_and_ds(pre: tuple, i0: int, j0: int, j1: int) -> None:
        """P_ij = e^(τ·Q_i·K_jᵀ − L_i) in T3 (fa1: e^(S − m)/l); dS_ij/τ = P∘(dO_i·V_jᵀ − D_i) in T4
        (dropout: P∘Z for dV in T13, (dO_i·V_jᵀ)∘Z for dP)."""
        scores(e, g, 0, 1, 3, i0, j0, j1, scaled)
        e.op("SUB", t(3), t(6), t(3))
        e.op("EXP", t(3), t(3))
        if fa1:
            e.op("DIV", t(3), t(7), t(3))
        if phase in ("dkdv", "dv"):
            dropped = 13 if dropout is not None and dropout.p else 3
            drop(e, dropout, 3, dropped, pre, i0, j0)
            e.op("MAC", t(dropped, True), t(5), t(11), t(11))  # dV_j += P_ijᵀ·dO_i (Bc, d)
        if phase == "dv":
            return
        e.op("MAC_Z", t(5), t(2, True), t(4))  # dP_ij = dO_i·V_jᵀ (Br, Bc)
        drop(e, dropout, 4, 4, pre, i0, j0)
        e.op("SUB", t(4), t(8), t(4))
        e.op("MUL", t(3), t(4), t(4))  # dS_ij without τ

    if phase in ("dkdv", "dv", "dk"):  # K_j outer: K_j, V_j, dK_j (T10), dV_j (T11) stay in SRAM
        for j0, j1 in cols:  # (dv: dV_j only, no V_j, no D_i; dk: dK_j only — two launches, one accumulator each)
            e.op("LOAD", e.block("K", kpre, j0, j1, True), t(1))  # (Bc, d), once per launch
            if phase != "dv":
                e.op("LOAD", e.block("V", kpre, j0, j1, True), t(2))
                e.op("FILL", 0, j1 - j0, d, t(10))
            if phase != "dk":
                e.op("FILL", 0, j1 - j0, d, t(11))
            for pre in pres:
                for i0, i1 in rows[g.met_by(j0):]:
                    _load_row(e, pre, i0, i1, fa1=fa1, with_d=phase != "dv")  # streamed: once per pair
                    probabilities_and_ds(pre, i0, j0, j1)
                    if phase != "dv":
                        e.op("MAC", t(4, True), t(0), t(10), t(10))  # dK_j += dS_ijᵀ·Q_i
            if phase != "dv":
                if scaled:
                    e.op("MUL", t(10), t(TAU), t(10))  # dK_j = τ·Σ dSᵀQ
                e.op("STORE", t(10), e.block("dK", kpre, j0, j1, True))
            if phase != "dk":
                e.op("STORE", t(11), e.block("dV", kpre, j0, j1, True))
        return
    for pre, i0, i1 in ((p, i0, i1) for p in pres for i0, i1 in rows):  # dq, Q_i outer: Q_i, dO_i, L_i, D_i
        _load_row(e, pre, i0, i1, fa1=fa1, with_d=True)  # and dQ_i (T10) stay in SRAM
        e.op("FILL", 0, i1 - i0, d, t(10))
        for j0, j1 in cols[:g.meets(i1)]:
            e.op("LOAD", e.block("K", kpre, j0, j1, True), t(1))  # streamed: once per pair
            e.op("LOAD", e.block("V", kpre, j0, j1, True), t(2))
            probabilities_and_ds(pre, i0, j0, j1)
            e.op("MAC", t(4), t(1), t(10), t(10))  # dQ_i += dS_ij·K_j
        if scaled:
            e.op("MUL", t(10), t(TAU), t(10))  # dQ_i = τ·Σ dS·K
        e.op("STORE", t(10), e.block("dQ", pre, i0, i1, True))


STANDARD_REGS = ("T3 P_ij, dP_ij, dS_ij (Br×Bc); a row block P_i, then P_i∘D_i (Br×nk) in step 3 · T4 dP_i → "
                 "P_i∘dP_i → dS_i (Br×nk) · T0 dO_i, dQ_i, Q_i (Br×d) · T1 dV_j, V_j, K_j, dK_j (Bc×d) · T8 D_i "
                 "(Br×1)")


def emit_standard_backward(e: Emitter, g: Blocks, d: int, pres: list, *, scaled: bool,
                           kpre: tuple | None = None, dropout: Dropout | None = None, **_) -> None:
    """Standard attention's backward, the FlashAttention paper's Algorithm 3, by blocks, for the
    query heads ``pres`` sharing the K/V head ``kpre``: 1. dV = Pᵀ·dO; 2. dP = dO·Vᵀ, written;
    3. each row block of P and dP read once: D_i = rowsum(P_i∘dP_i), dS_i = P_i∘dP_i − P_i∘D_i
    (= P∘(dP − D)), ×τ, written; 4. dQ = dS·K; 5. dK = dSᵀ·Q. P, dP and dS are n × nk arrays
    in HBM: Θ(n·d + n²) words. dV_j and dK_j sum over the group's query heads. With
    ``dropout`` the mask is remade, not stored: P_ij∘Z in step 1, the row block dP_i∘Z in step 3."""
    t, rows, cols = e.t, g.rows(), g.cols()
    kpre = pres[0] if kpre is None else kpre
    for j0, j1 in cols:  # 1. dV_j = Σ_i P_ijᵀ·dO_i (Bc, d) in T1
        for k, (pre, i0, i1) in enumerate((p, i0, i1) for p in pres for i0, i1 in rows):
            e.op("LOAD", e.score_block("P", pre, i0, i1, j0, j1), t(3))
            drop(e, dropout, 3, 3, pre, i0, j0)  # P∘Z
            e.op("LOAD", e.block("dO", pre, i0, i1, True), t(0))
            if k == 0:
                e.op("MAC_Z", t(3, True), t(0), t(1))
            else:
                e.op("MAC", t(3, True), t(0), t(1), t(1))
        e.op("STORE", t(1), e.block("dV", kpre, j0, j1, True))
    for pre in pres:  # 2. dP_ij = dO_i·V_jᵀ (Br, Bc), written
        for i0, i1 in rows:
            e.op("LOAD", e.block("dO", pre, i0, i1, True), t(0))
            for j0, j1 in cols:
                e.op("LOAD", e.block("V", kpre, j0, j1, True), t(1))
                e.op("MAC_Z", t(0), t(1, True), t(3))
                e.op("STORE", t(3), e.score_block("dP", pre, i0, i1, j0, j1))
    for pre in pres:  # 3. dS_i = P_i∘(dP_i − D_i): row blocks (Br, nk) of P and dP, each read once
        for i0, i1 in rows:
            e.op("LOAD", e.block("P", pre, i0, i1, True), t(3))
            e.op("LOAD", e.block("dP", pre, i0, i1, True), t(4))
            drop(e, dropout, 4, 4, pre, i0, 0)  # dP = (dO·Vᵀ)∘Z, the row block's mask
            e.op("MUL", t(3), t(4), t(4))  # P∘dP
            e.op("ROWSUM", t(4), t(8))  # D_i = Σ_l P_il·dP_il
            e.op("STORE", t(8), e.block("D", pre, i0, i1, False))
            e.op("MUL", t(3), t(8), t(3))  # P∘D (row broadcast)
            e.op("SUB", t(4), t(3), t(4))  # dS = P∘dP − P∘D
            if scaled:
                e.op("MUL", t(4), t(TAU), t(4))  # τ·dS
            e.op("STORE", t(4), e.block("dS", pre, i0, i1, True))
    for pre in pres:  # 4. dQ_i = Σ_j dS_ij·K_j (Br, d) in T0
        for i0, i1 in rows:
            for k, (j0, j1) in enumerate(cols):
                e.op("LOAD", e.score_block("dS", pre, i0, i1, j0, j1), t(3))
                e.op("LOAD", e.block("K", kpre, j0, j1, True), t(1))
                if k == 0:
                    e.op("MAC_Z", t(3), t(1), t(0))
                else:
                    e.op("MAC", t(3), t(1), t(0), t(0))
            e.op("STORE", t(0), e.block("dQ", pre, i0, i1, True))
    for j0, j1 in cols:  # 5. dK_j = Σ_i dS_ijᵀ·Q_i (Bc, d) in T1
        for k, (pre, i0, i1) in enumerate((p, i0, i1) for p in pres for i0, i1 in rows):
            e.op("LOAD", e.score_block("dS", pre, i0, i1, j0, j1), t(3))
            e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))
            if k == 0:
                e.op("MAC_Z", t(3, True), t(0), t(1))
            else:
                e.op("MAC", t(3, True), t(0), t(1), t(1))
        e.op("STORE", t(1), e.block("dK", kpre, j0, j1, True))
