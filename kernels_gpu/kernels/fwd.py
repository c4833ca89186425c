"""The FlashAttention-2 forward kernel in Triton (Dao 2023, Algorithm 1; seed 004's tutorial).

Per program: one BLOCK_M tile of Q stays on chip; the K/V tiles of its (grouped-query) K/V head
stream past in BLOCK_N tiles; a running row max m and row sum l rescale the (BLOCK_M, d) fp32
accumulator (online softmax). Base 2 throughout: logits are scaled by sm_scale * log2(e).
Cost per (BLOCK_M, BLOCK_N) tile pair: 4 * BM * BN * d FLOPs on the tensor cores (QK^T, PV),
BM * BN exp2 on the special-function unit, ~5 FP32 ops per score.
flash_attn.py documents the shapes and masking rules and launches this kernel.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .common import (
    _causal_key_range,
    _dot,
    _kv_head,
    _load_tile,
    _load_tile_t,
    _store_row_stat,
    _store_tile,
)

__all__ = ["_attn_fwd"]


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, K, V, k_row, v_col, lo, hi, offs_m, NK, CAUSAL_OFF,
                    qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                    HEAD_DIM_P: tl.constexpr, MASKED: tl.constexpr, EVEN_N: tl.constexpr,
                    EMPTY_ROWS: tl.constexpr, USE_TMA: tl.constexpr, V_TRANS: tl.constexpr,
                    DOT_F32: tl.constexpr):
    """Stream the K/V tiles whose first row lies in [lo, hi) past one Q tile (online softmax).

    acc (BLOCK_M, HEAD_DIM_P) fp32, l_i and m_i (BLOCK_M,) fp32: registers, carried across tiles.
    q (BLOCK_M, HEAD_DIM_P): loaded once by the caller, stays on chip. MASKED: the tiles cross
    the causal diagonal (key j visible to row i iff j <= i + CAUSAL_OFF).
    """
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = _load_tile(K, k_row, start_n, NK, BLOCK_N, HEAD_DIM, HEAD_DIM_P, USE_TMA, EVEN_N)
        qk = _dot(q, tl.trans(k), None, DOT_F32)  # (BM, BN) fp32 raw scores q.k
        if MASKED or not EVEN_N:
            offs_n = start_n + offs_n0
            keep = offs_n[None, :] < NK
            if MASKED:
                keep = keep & (offs_m[:, None] + CAUSAL_OFF >= offs_n[None, :])
            qk = tl.where(keep, qk, float("-inf"))
        # running max in log2 units; max(qk) * scale == max(qk * scale) since scale > 0
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)           # (BM,)
        if EMPTY_ROWS and MASKED:  # a row that has seen no key yet: keep exp2 away from -inf-(-inf)
            m_new = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])             # (BM, BN) one FMA + EX2
        alpha = tl.math.exp2(m_i - m_new)                            # (BM,) rescale of the past
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        m_i = m_new
        if V_TRANS:  # fp8: V^T tile (d, BN) -> PV with a K-major B operand
            vt = _load_tile_t(V, v_col, start_n, NK, BLOCK_N, HEAD_DIM, HEAD_DIM_P, USE_TMA,
                              EVEN_N)
            acc = _dot(p.to(vt.dtype), tl.trans(vt), acc, DOT_F32)  # (BM, d) += P V
        else:
            v = _load_tile(V, k_row, start_n, NK, BLOCK_N, HEAD_DIM, HEAD_DIM_P, USE_TMA, EVEN_N)
            acc = _dot(p.to(v.dtype), v, acc, DOT_F32)               # (BM, d) += P V
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(Q, K, V, O, LSE, sm_scale, out_scale, NQ, NK, H, CAUSAL_OFF,
              GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, HEAD_DIM_P: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
              EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EMPTY_ROWS: tl.constexpr,
              USE_TMA: tl.constexpr, V_TRANS: tl.constexpr, DOT_F32: tl.constexpr):
    """Grid (cdiv(NQ, BLOCK_M), B*H): program (i, bh) writes O rows [i*BM, (i+1)*BM) of query
    head bh (and their lse). Q, O: (B*H, NQ, d); K, V: (B*H_kv, NK, d), V (B*H_kv, d, NK) when
    V_TRANS; H_kv = H / GROUP. Axis 0 varies fastest, so programs running together share one
    head's K/V in L2. EMPTY_ROWS: some query rows see no key (causal, NQ > NK, bottom-right):
    their O is 0 and their lse -inf, as flash-attn returns them.
    """
    pid_m = tl.program_id(0)
    if CAUSAL:  # the last Q tiles see the most K/V tiles: launch them first (less tail)
        pid_m = tl.num_programs(0) - 1 - pid_m
    bh = tl.program_id(1)
    kv_bh = _kv_head(bh, H, GROUP)
    start_m = pid_m * BLOCK_M
    q_off = (bh * NQ).to(tl.int64) * HEAD_DIM
    Q += q_off  # Q and O are pointers always: one tile each per program
    O += q_off
    k_row = kv_bh * NK  # first row of this K/V head in the flattened (B*H_kv*NK, d) view
    v_col = kv_bh * HEAD_DIM  # ... and in the transposed (B*H_kv*d, NK) view of V (fp8)
    if not USE_TMA:
        K += (kv_bh * NK).to(tl.int64) * HEAD_DIM
        V += (kv_bh * NK).to(tl.int64) * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running row max (log2 units)
    l_i = tl.zeros([BLOCK_M], tl.float32)                # running row sum of exp2
    acc = tl.zeros([BLOCK_M, HEAD_DIM_P], tl.float32)    # un-normalised O tile, registers
    qk_scale = sm_scale * 1.4426950408889634             # natural -> base-2 logits
    q = _load_tile(Q, 0, start_m, NQ, BLOCK_M, HEAD_DIM, HEAD_DIM_P, False, EVEN_M)  # on chip

    if CAUSAL:
        full_hi, hi = _causal_key_range(start_m, NK, CAUSAL_OFF, BLOCK_M, BLOCK_N)
        # K/V tiles that every row of this Q tile sees whole: no mask needed
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K, V, k_row, v_col, 0, full_hi,
                                        offs_m, NK, CAUSAL_OFF, qk_scale, BLOCK_N, HEAD_DIM,
                                        HEAD_DIM_P, False, EVEN_N, EMPTY_ROWS, USE_TMA, V_TRANS,
                                        DOT_F32)
        # tiles crossing the diagonal: mask key > row + offset
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K, V, k_row, v_col, full_hi, hi,
                                        offs_m, NK, CAUSAL_OFF, qk_scale, BLOCK_N, HEAD_DIM,
                                        HEAD_DIM_P, True, EVEN_N, EMPTY_ROWS, USE_TMA, V_TRANS,
                                        DOT_F32)
    else:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K, V, k_row, v_col, 0, NK, offs_m,
                                        NK, CAUSAL_OFF, qk_scale, BLOCK_N, HEAD_DIM, HEAD_DIM_P,
                                        False, EVEN_N, EMPTY_ROWS, USE_TMA, V_TRANS, DOT_F32)

    if EMPTY_ROWS:
        empty = l_i == 0.0
        l_i = tl.where(empty, 1.0, l_i)
        lse = tl.where(empty, float("-inf"), (m_i + tl.math.log2(l_i)) * 0.6931471805599453)
    else:
        lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453  # (BM,) natural-log log-sum-exp
    acc = acc * (out_scale / l_i)[:, None]  # out_scale: the fp8 V descale (1 otherwise)
    _store_row_stat(LSE + (bh * NQ).to(tl.int64), start_m, NQ, lse, BLOCK_M, EVEN_M)
    _store_tile(O, start_m, NQ, acc.to(O.dtype.element_ty), BLOCK_M, HEAD_DIM, HEAD_DIM_P, EVEN_M)
