"""The FlashAttention-2 backward kernels in Triton (Dao 2023, Algorithm 2), in three launches.

    D = rowsum(dO * O)                     _attn_bwd_preprocess
    dK, dV  (a K/V tile held, Q streamed)  _attn_bwd_dkdv     dV = P^T dO, dK = s dS^T Q
    dQ      (a Q tile held, K/V streamed)  _attn_bwd_dq       dQ = s dS K

with P = exp(s Q K^T - lse) recomputed from the forward's lse and dS = P * (dO V^T - D).
Grouped-query attention: a dK/dV program loops over the GROUP query heads that share its K/V
head and sums their contributions in registers (no atomics); or, with SPLIT > 1, over a share
GROUP / SPLIT of them, writing fp32 partial sums that the host adds (SPLIT == GROUP runs the
MHA code per query head: no group loop in registers). Cost per tile pair: dkdv 8*BM*BN*d
FLOPs (QK^T, P^T dO, dO V^T, dS^T Q), dq 6*BM*BN*d (QK^T, dO V^T, dS K) on the tensor cores.
flash_attn.py documents shapes and masking and launches these kernels.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .common import (
    _causal_key_range,
    _causal_query_range,
    _dot,
    _kv_head,
    _load_row_stat,
    _load_tile,
    _store_row_stat,
    _store_tile,
)

__all__ = ["_attn_bwd_preprocess", "_attn_bwd_dkdv", "_attn_bwd_dq"]


@triton.jit
def _attn_bwd_preprocess(O, DO, Delta, NQ, HEAD_DIM: tl.constexpr, HEAD_DIM_P: tl.constexpr,
                         BLOCK_M: tl.constexpr, EVEN_M: tl.constexpr):
    """D_i = sum_j dO_ij * O_ij, fp32, shape (B*H, NQ). Grid (cdiv(NQ, BLOCK_M), B*H)."""
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    head_off = (bh * NQ).to(tl.int64) * HEAD_DIM
    o = _load_tile(O + head_off, 0, start_m, NQ, BLOCK_M, HEAD_DIM, HEAD_DIM_P, False, EVEN_M)
    do = _load_tile(DO + head_off, 0, start_m, NQ, BLOCK_M, HEAD_DIM, HEAD_DIM_P, False, EVEN_M)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), axis=1)  # (BM,)
    _store_row_stat(Delta + (bh * NQ).to(tl.int64), start_m, NQ, delta, BLOCK_M, EVEN_M)


@triton.jit
def _lse2(LSE, start_m, NQ, BLOCK_M: tl.constexpr, EVEN_M: tl.constexpr,
          EMPTY_ROWS: tl.constexpr):
    """(BLOCK_M,) lse in log2 units; a row that saw no key (lse -inf) gets +inf, so that its
    recomputed P = exp2(s - lse2) is 0 everywhere."""
    lse2 = _load_row_stat(LSE, start_m, NQ, BLOCK_M, EVEN_M) * 1.4426950408889634
    if EMPTY_ROWS:
        lse2 = tl.where(lse2 == float("-inf"), float("inf"), lse2)
    return lse2


@triton.jit
def _attn_bwd_dkdv_inner(dk, dv, k, v, Q, DO, DQ, LSE, Delta, q_row, offs_n, lo, hi, NQ,
                         CAUSAL_OFF, qk_scale, rot, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr,
                         HEAD_DIM_P: tl.constexpr, MASKED: tl.constexpr, EVEN_M: tl.constexpr,
                         EMPTY_ROWS: tl.constexpr, USE_TMA: tl.constexpr, DOT_F32: tl.constexpr,
                         FUSED_DQ: tl.constexpr, PART: tl.constexpr):
    """Stream the Q/dO tiles with first row in [lo, hi) past one K/V tile.

    k, v (BLOCK_N, d): on chip for the whole loop. dk, dv (BLOCK_N, d) fp32: registers.
    Everything is computed transposed, (BLOCK_N, BLOCK_M), so the sums over Q rows that dK and
    dV need are plain matrix products with the streamed tiles. FUSED_DQ (FA2's way): also
    dQ_tile += dS K, added to the fp32 rows DQ with atomics (no dQ launch: 5 matmuls per tile
    pair instead of 7); the loop then starts `rot` tiles in and wraps, so that the programs of
    a head do not add to the same dQ rows at the same time. PART 1: dV only (QK^T, P^T dO),
    PART 2: dK only (QK^T, dO V^T, dS^T Q), 0: both.
    """
    for start_m in tl.range(lo, hi, BLOCK_M):
        if FUSED_DQ:
            start_m = start_m + rot
            start_m = tl.where(start_m >= hi, start_m - (hi - lo), start_m)
        start_m = tl.multiple_of(start_m, BLOCK_M)
        q = _load_tile(Q, q_row, start_m, NQ, BLOCK_M, HEAD_DIM, HEAD_DIM_P, USE_TMA, EVEN_M)
        do = _load_tile(DO, q_row, start_m, NQ, BLOCK_M, HEAD_DIM, HEAD_DIM_P, USE_TMA, EVEN_M)
        offs_m = start_m + tl.arange(0, BLOCK_M)
        lse2 = _lse2(LSE, start_m, NQ, BLOCK_M, EVEN_M, EMPTY_ROWS)           # (BM,)
        delta = _load_row_stat(Delta, start_m, NQ, BLOCK_M, EVEN_M)          # (BM,)
        qkT = _dot(k, tl.trans(q), None, DOT_F32)                    # (BN, BM) raw scores^T
        pT = tl.math.exp2(qkT * qk_scale - lse2[None, :])           # (BN, BM) P^T, recomputed
        if MASKED or not EVEN_M:
            keep = offs_m[None, :] < NQ
            if MASKED:
                keep = keep & (offs_m[None, :] + CAUSAL_OFF >= offs_n[:, None])
            pT = tl.where(keep, pT, 0.0)
        if PART != 2:
            dv = _dot(pT.to(do.dtype), do, dv, DOT_F32)              # (BN, d) += P^T dO
        if PART != 1:
            dpT = _dot(v, tl.trans(do), None, DOT_F32)               # (BN, BM) (dO V^T)^T
            dsT = pT * (dpT - delta[None, :])                        # (BN, BM) dS^T
            dk = _dot(dsT.to(q.dtype), q, dk, DOT_F32)               # (BN, d) += dS^T Q
        if FUSED_DQ:
            dq = _dot(tl.trans(dsT.to(k.dtype)), k, None, DOT_F32)   # (BM, d) dS K
            cols = tl.arange(0, HEAD_DIM_P)
            ptrs = DQ + offs_m[:, None] * HEAD_DIM + cols[None, :]
            if EVEN_M and HEAD_DIM == HEAD_DIM_P:
                tl.atomic_add(ptrs, dq, sem="relaxed")
            else:
                tl.atomic_add(ptrs, dq, mask=(offs_m[:, None] < NQ) & (cols[None, :] < HEAD_DIM),
                              sem="relaxed")
    return dk, dv


@triton.jit
def _dkdv_one_head(dk, dv, k, v, Q, DO, DQ, LSE, Delta, bh, offs_n, start_n, NQ, CAUSAL_OFF,
                   qk_scale, HEAD_DIM: tl.constexpr, HEAD_DIM_P: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                   EVEN_M: tl.constexpr, EMPTY_ROWS: tl.constexpr, OFF_POS: tl.constexpr,
                   USE_TMA: tl.constexpr, DOT_F32: tl.constexpr, FUSED_DQ: tl.constexpr,
                   PART: tl.constexpr):
    """Add query head bh's contribution to one K/V tile's dK, dV (all its Q tiles)."""
    q_row = bh * NQ
    q_off = q_row.to(tl.int64) * HEAD_DIM
    if not USE_TMA:
        Q += q_off
        DO += q_off
    if FUSED_DQ:
        DQ += q_off
    LSE += q_row.to(tl.int64)
    Delta += q_row.to(tl.int64)
    if CAUSAL:
        # Q rows before diag_lo see none of these keys; Q tiles in [diag_lo, diag_hi) cross
        # the diagonal (mask); later ones see all BN keys.
        diag_lo, diag_hi = _causal_query_range(start_n, NQ, CAUSAL_OFF, BLOCK_M, BLOCK_N,
                                                OFF_POS)
        dk, dv = _attn_bwd_dkdv_inner(dk, dv, k, v, Q, DO, DQ, LSE, Delta, q_row, offs_n,
                                      diag_lo, diag_hi, NQ, CAUSAL_OFF, qk_scale, 0, BLOCK_M,
                                      HEAD_DIM, HEAD_DIM_P, True, EVEN_M, EMPTY_ROWS, USE_TMA,
                                      DOT_F32, FUSED_DQ, PART)
        dk, dv = _attn_bwd_dkdv_inner(dk, dv, k, v, Q, DO, DQ, LSE, Delta, q_row, offs_n,
                                      diag_hi, NQ, NQ, CAUSAL_OFF, qk_scale, 0, BLOCK_M,
                                      HEAD_DIM, HEAD_DIM_P, False, EVEN_M, EMPTY_ROWS, USE_TMA,
                                      DOT_F32, FUSED_DQ, PART)
    else:  # fused dQ: program j starts at Q tile j (mod the tiles) and wraps
        n_m = tl.cdiv(NQ, BLOCK_M) * BLOCK_M
        rot = (start_n // BLOCK_N * BLOCK_M) % n_m
        dk, dv = _attn_bwd_dkdv_inner(dk, dv, k, v, Q, DO, DQ, LSE, Delta, q_row, offs_n, 0,
                                      n_m, NQ, CAUSAL_OFF, qk_scale, rot, BLOCK_M, HEAD_DIM,
                                      HEAD_DIM_P, False, EVEN_M, EMPTY_ROWS, USE_TMA, DOT_F32,
                                      FUSED_DQ, PART)
    return dk, dv


@triton.jit
def _attn_bwd_dkdv(Q, K, V, DO, DK, DV, DQ, LSE, Delta, sm_scale, NQ, NK, H, CAUSAL_OFF,
                   GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, HEAD_DIM_P: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                   EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EMPTY_ROWS: tl.constexpr,
                   OFF_POS: tl.constexpr, USE_TMA: tl.constexpr, DOT_F32: tl.constexpr,
                   SPLIT: tl.constexpr = 1, FUSED_DQ: tl.constexpr = False,
                   PART: tl.constexpr = 0):
    """Grid (cdiv(NK, BLOCK_N), B*H_kv*SPLIT): program (j, kvh*SPLIT + s) writes dK, dV rows
    [j*BN, (j+1)*BN) of K/V head kvh, summing over GROUP // SPLIT query heads of its group
    (the s-th share). SPLIT == 1: DK, DV are dK, dV (B, H_kv, NK, d); SPLIT > 1: they are fp32
    partial sums (B, H_kv, SPLIT, NK, d) that the host adds up over SPLIT. FUSED_DQ: DQ is
    fp32 (B, H, NQ, d), zeroed; the programs add dS K to it (the host scales it by sm_scale).
    PART 1 / 2: this launch writes dV / dK only (two launches, one fp32 accumulator each:
    5 matmuls per tile pair instead of 4, but half the registers a program holds)."""
    pid_n = tl.program_id(0)  # causal: the first K/V tiles have the most work, and launch first
    out_bh = tl.program_id(1)
    kv_bh = out_bh // SPLIT
    start_n = pid_n * BLOCK_N
    kv_off = (kv_bh * NK).to(tl.int64) * HEAD_DIM
    out_off = (out_bh * NK).to(tl.int64) * HEAD_DIM
    K += kv_off  # K, V, dK, dV are pointers always: one tile each per program
    V += kv_off
    DK += out_off
    DV += out_off
    offs_n = start_n + tl.arange(0, BLOCK_N)
    qk_scale = sm_scale * 1.4426950408889634

    k = _load_tile(K, 0, start_n, NK, BLOCK_N, HEAD_DIM, HEAD_DIM_P, False, EVEN_N)  # on chip
    if PART == 1:  # dV only: V is not needed
        v = k
    else:
        v = _load_tile(V, 0, start_n, NK, BLOCK_N, HEAD_DIM, HEAD_DIM_P, False, EVEN_N)
    dk = tl.zeros([BLOCK_N, HEAD_DIM_P], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM_P], tl.float32)
    if GROUP == 1:
        dk, dv = _dkdv_one_head(dk, dv, k, v, Q, DO, DQ, LSE, Delta, kv_bh, offs_n, start_n, NQ,
                                CAUSAL_OFF, qk_scale, HEAD_DIM, HEAD_DIM_P, BLOCK_M, BLOCK_N,
                                CAUSAL, EVEN_M, EMPTY_ROWS, OFF_POS, USE_TMA, DOT_F32, FUSED_DQ,
                                PART)
    elif GROUP == SPLIT:  # one query head per program: the GROUP == 1 code, head out_bh
        dk, dv = _dkdv_one_head(dk, dv, k, v, Q, DO, DQ, LSE, Delta, out_bh, offs_n, start_n, NQ,
                                CAUSAL_OFF, qk_scale, HEAD_DIM, HEAD_DIM_P, BLOCK_M, BLOCK_N,
                                CAUSAL, EVEN_M, EMPTY_ROWS, OFF_POS, USE_TMA, DOT_F32, FUSED_DQ,
                                PART)
    else:
        hkv = H // GROUP
        first = (kv_bh // hkv) * H + (kv_bh % hkv) * GROUP + (out_bh % SPLIT) * (GROUP // SPLIT)
        for g in range(0, GROUP // SPLIT):  # this program's share of the group's query heads
            bh = first + g
            dk, dv = _dkdv_one_head(dk, dv, k, v, Q, DO, DQ, LSE, Delta, bh, offs_n, start_n, NQ,
                                    CAUSAL_OFF, qk_scale, HEAD_DIM, HEAD_DIM_P, BLOCK_M,
                                    BLOCK_N, CAUSAL, EVEN_M, EMPTY_ROWS, OFF_POS, USE_TMA,
                                    DOT_F32, FUSED_DQ, PART)

    if PART != 1:
        dk = dk * sm_scale  # dK = sm_scale * dS^T Q
        _store_tile(DK, start_n, NK, dk.to(DK.dtype.element_ty), BLOCK_N, HEAD_DIM, HEAD_DIM_P,
                    EVEN_N)
    if PART != 2:
        _store_tile(DV, start_n, NK, dv.to(DV.dtype.element_ty), BLOCK_N, HEAD_DIM, HEAD_DIM_P,
                    EVEN_N)


@triton.jit
def _attn_bwd_dq_inner(dq, q, do, lse2, delta, K, V, k_row, offs_m, lo, hi, NK, CAUSAL_OFF,
                       qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                       HEAD_DIM_P: tl.constexpr, MASKED: tl.constexpr, EVEN_N: tl.constexpr,
                       USE_TMA: tl.constexpr, DOT_F32: tl.constexpr):
    """Stream the K/V tiles with first row in [lo, hi) past one Q/dO tile.

    q, do (BLOCK_M, d), lse2, delta (BLOCK_M,): on chip for the whole loop. dq fp32: registers.
    """
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = _load_tile(K, k_row, start_n, NK, BLOCK_N, HEAD_DIM, HEAD_DIM_P, USE_TMA, EVEN_N)
        v = _load_tile(V, k_row, start_n, NK, BLOCK_N, HEAD_DIM, HEAD_DIM_P, USE_TMA, EVEN_N)
        qk = _dot(q, tl.trans(k), None, DOT_F32)                     # (BM, BN)
        p = tl.math.exp2(qk * qk_scale - lse2[:, None])              # (BM, BN) P, recomputed
        if MASKED or not EVEN_N:
            offs_n = start_n + offs_n0
            keep = offs_n[None, :] < NK
            if MASKED:
                keep = keep & (offs_m[:, None] + CAUSAL_OFF >= offs_n[None, :])
            p = tl.where(keep, p, 0.0)
        dp = _dot(do, tl.trans(v), None, DOT_F32)                    # (BM, BN) dO V^T
        ds = p * (dp - delta[:, None])                               # (BM, BN) dS
        dq = _dot(ds.to(k.dtype), k, dq, DOT_F32)                    # (BM, d) += dS K
    return dq


@triton.jit
def _attn_bwd_dq(Q, K, V, DO, DQ, LSE, Delta, sm_scale, NQ, NK, H, CAUSAL_OFF,
                 GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, HEAD_DIM_P: tl.constexpr,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                 EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EMPTY_ROWS: tl.constexpr,
                 USE_TMA: tl.constexpr, DOT_F32: tl.constexpr):
    """Grid (cdiv(NQ, BLOCK_M), B*H): program (i, bh) writes dQ rows [i*BM, (i+1)*BM)."""
    pid_m = tl.program_id(0)
    if CAUSAL:  # heaviest (last) Q tiles first
        pid_m = tl.num_programs(0) - 1 - pid_m
    bh = tl.program_id(1)
    kv_bh = _kv_head(bh, H, GROUP)
    start_m = pid_m * BLOCK_M
    q_off = (bh * NQ).to(tl.int64) * HEAD_DIM
    Q += q_off  # Q, dO, dQ are pointers always: one tile each per program
    DO += q_off
    DQ += q_off
    k_row = kv_bh * NK
    if not USE_TMA:
        K += k_row.to(tl.int64) * HEAD_DIM
        V += k_row.to(tl.int64) * HEAD_DIM
    LSE += (bh * NQ).to(tl.int64)
    Delta += (bh * NQ).to(tl.int64)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    qk_scale = sm_scale * 1.4426950408889634

    q = _load_tile(Q, 0, start_m, NQ, BLOCK_M, HEAD_DIM, HEAD_DIM_P, False, EVEN_M)    # (BM, d)
    do = _load_tile(DO, 0, start_m, NQ, BLOCK_M, HEAD_DIM, HEAD_DIM_P, False, EVEN_M)  # (BM, d)
    lse2 = _lse2(LSE, start_m, NQ, BLOCK_M, EVEN_M, EMPTY_ROWS)                      # (BM,)
    delta = _load_row_stat(Delta, start_m, NQ, BLOCK_M, EVEN_M)                       # (BM,)
    dq = tl.zeros([BLOCK_M, HEAD_DIM_P], tl.float32)

    if CAUSAL:
        full_hi, hi = _causal_key_range(start_m, NK, CAUSAL_OFF, BLOCK_M, BLOCK_N)
        dq = _attn_bwd_dq_inner(dq, q, do, lse2, delta, K, V, k_row, offs_m, 0, full_hi, NK,
                                CAUSAL_OFF, qk_scale, BLOCK_N, HEAD_DIM, HEAD_DIM_P, False,
                                EVEN_N, USE_TMA, DOT_F32)
        dq = _attn_bwd_dq_inner(dq, q, do, lse2, delta, K, V, k_row, offs_m, full_hi, hi, NK,
                                CAUSAL_OFF, qk_scale, BLOCK_N, HEAD_DIM, HEAD_DIM_P, True,
                                EVEN_N, USE_TMA, DOT_F32)
    else:
        dq = _attn_bwd_dq_inner(dq, q, do, lse2, delta, K, V, k_row, offs_m, 0, NK, NK,
                                CAUSAL_OFF, qk_scale, BLOCK_N, HEAD_DIM, HEAD_DIM_P, False,
                                EVEN_N, USE_TMA, DOT_F32)

    dq = dq * sm_scale  # dQ = sm_scale * dS K
    _store_tile(DQ, start_m, NQ, dq.to(DQ.dtype.element_ty), BLOCK_M, HEAD_DIM, HEAD_DIM_P,
                EVEN_M)
