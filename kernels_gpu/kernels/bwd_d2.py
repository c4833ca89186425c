"""The backward kernels for a head dim of two power-of-two chunks, d = D0 + D1 (issue 21 item 4:
d 192 = 128 + 64; also 48, 80, 96, 160), instead of padding d to the next power of two.

Padding d 192 to 256 makes the tensor cores do 256-wide work: a third more FLOPs and a third
more registers for the fp32 accumulators than d needs. Here every (rows, d) tile is two tiles,
columns [0, D0) and [D0, D), each a power of two (tl.arange and tl.dot need one): a product
over d is the sum of two products, QK^T = Q0 K0^T + Q1 K1^T, and each (rows, d) accumulator
is two. The loops, masks, causal ranges, head groups and the dV-apart split (PART) are those of
`bwd.py`; pointer loads only (the tiles are not TMA-shaped: rows of d elements).
"""
from __future__ import annotations

import triton
import triton.language as tl

from .bwd import _lse2
from .common import _causal_key_range, _causal_query_range, _dot, _kv_head, _load_row_stat

__all__ = ["_attn_bwd_dkdv_d2", "_attn_bwd_dq_d2", "head_dim_chunks"]


def head_dim_chunks(d: int) -> tuple[int, int] | None:
    """(D0, D1) with d = D0 + D1, D0 > D1 >= 16 powers of two; None if d is not such a sum."""
    if d < 48:
        return None
    d0 = 1 << (d.bit_length() - 1)
    d1 = d - d0
    if d1 < 16 or d1 & (d1 - 1):
        return None
    return d0, d1


@triton.jit
def _load_cols(src, row0, n_rows, COL0: tl.constexpr, BLOCK: tl.constexpr, WIDTH: tl.constexpr,
               HEAD_DIM: tl.constexpr, EVEN: tl.constexpr):
    """(BLOCK, WIDTH) tile: rows [row0, row0 + BLOCK), columns [COL0, COL0 + WIDTH) of one
    head's (rows, HEAD_DIM) slab; rows >= n_rows read as 0."""
    rows = row0 + tl.arange(0, BLOCK)
    ptrs = src + rows[:, None] * HEAD_DIM + (COL0 + tl.arange(0, WIDTH))[None, :]
    if EVEN:
        return tl.load(ptrs)
    else:
        return tl.load(ptrs, mask=(rows < n_rows)[:, None], other=0.0)


@triton.jit
def _stream_cols(src0, src1, head_row, row0, n_rows, BLOCK: tl.constexpr, D0: tl.constexpr,
                 D1: tl.constexpr, USE_TMA: tl.constexpr, EVEN: tl.constexpr):
    """The two chunks of a streamed tile: TMA descriptors src0 ((BLOCK, D0) boxes) and src1
    ((BLOCK, D1) boxes) over the flat (rows, d) tensor, or a pointer (src0) to the head."""
    if USE_TMA:
        return src0.load([head_row + row0, 0]), src1.load([head_row + row0, D0])
    else:
        return (_load_cols(src0, row0, n_rows, 0, BLOCK, D0, D0 + D1, EVEN),
                _load_cols(src0, row0, n_rows, D0, BLOCK, D1, D0 + D1, EVEN))


@triton.jit
def _store_cols(dst, row0, n_rows, tile, COL0: tl.constexpr, BLOCK: tl.constexpr,
                WIDTH: tl.constexpr, HEAD_DIM: tl.constexpr, EVEN: tl.constexpr):
    rows = row0 + tl.arange(0, BLOCK)
    ptrs = dst + rows[:, None] * HEAD_DIM + (COL0 + tl.arange(0, WIDTH))[None, :]
    if EVEN:
        tl.store(ptrs, tile)
    else:
        tl.store(ptrs, tile, mask=(rows < n_rows)[:, None])


@triton.jit
def _dkdv_d2_inner(dk0, dk1, dv0, dv1, k0, k1, v0, v1, Q, Q1, DO, DO1, LSE, Delta, q_row, offs_n,
                   lo, hi, NQ, CAUSAL_OFF, qk_scale, BLOCK_M: tl.constexpr, D0: tl.constexpr,
                   D1: tl.constexpr, MASKED: tl.constexpr, EVEN_M: tl.constexpr,
                   EMPTY_ROWS: tl.constexpr, USE_TMA: tl.constexpr, DOT_F32: tl.constexpr,
                   PART: tl.constexpr):
    """bwd._attn_bwd_dkdv_inner with every d-wide tile in two chunks."""
    for start_m in tl.range(lo, hi, BLOCK_M):
        start_m = tl.multiple_of(start_m, BLOCK_M)
        q0, q1 = _stream_cols(Q, Q1, q_row, start_m, NQ, BLOCK_M, D0, D1, USE_TMA, EVEN_M)
        do0, do1 = _stream_cols(DO, DO1, q_row, start_m, NQ, BLOCK_M, D0, D1, USE_TMA, EVEN_M)
        offs_m = start_m + tl.arange(0, BLOCK_M)
        lse2 = _lse2(LSE, start_m, NQ, BLOCK_M, EVEN_M, EMPTY_ROWS)
        qkT = _dot(k1, tl.trans(q1), _dot(k0, tl.trans(q0), None, DOT_F32), DOT_F32)
        pT = tl.math.exp2(qkT * qk_scale - lse2[None, :])            # (BN, BM) P^T
        if MASKED or not EVEN_M:
            keep = offs_m[None, :] < NQ
            if MASKED:
                keep = keep & (offs_m[None, :] + CAUSAL_OFF >= offs_n[:, None])
            pT = tl.where(keep, pT, 0.0)
        if PART != 2:
            dv0 = _dot(pT.to(do0.dtype), do0, dv0, DOT_F32)
            dv1 = _dot(pT.to(do1.dtype), do1, dv1, DOT_F32)
        if PART != 1:
            delta = _load_row_stat(Delta, start_m, NQ, BLOCK_M, EVEN_M)
            dpT = _dot(v1, tl.trans(do1), _dot(v0, tl.trans(do0), None, DOT_F32), DOT_F32)
            dsT = (pT * (dpT - delta[None, :])).to(q0.dtype)             # dS^T
            dk0 = _dot(dsT, q0, dk0, DOT_F32)
            dk1 = _dot(dsT, q1, dk1, DOT_F32)
    return dk0, dk1, dv0, dv1


@triton.jit
def _dkdv_d2_one_head(dk0, dk1, dv0, dv1, k0, k1, v0, v1, Q, Q1, DO, DO1, LSE, Delta, bh,
                      offs_n, start_n, NQ, CAUSAL_OFF, qk_scale, D0: tl.constexpr,
                      D1: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      CAUSAL: tl.constexpr, EVEN_M: tl.constexpr, EMPTY_ROWS: tl.constexpr,
                      OFF_POS: tl.constexpr, USE_TMA: tl.constexpr, DOT_F32: tl.constexpr,
                      PART: tl.constexpr):
    q_row = bh * NQ
    if not USE_TMA:
        q_off = q_row.to(tl.int64) * (D0 + D1)
        Q += q_off
        DO += q_off
    LSE += (bh * NQ).to(tl.int64)
    Delta += (bh * NQ).to(tl.int64)
    if CAUSAL:
        lo, hi = _causal_query_range(start_n, NQ, CAUSAL_OFF, BLOCK_M, BLOCK_N, OFF_POS)
        dk0, dk1, dv0, dv1 = _dkdv_d2_inner(dk0, dk1, dv0, dv1, k0, k1, v0, v1, Q, Q1, DO,
                                            DO1, LSE, Delta, q_row, offs_n, lo, hi, NQ, CAUSAL_OFF, qk_scale,
                                            BLOCK_M, D0, D1, True, EVEN_M, EMPTY_ROWS,
                                            USE_TMA, DOT_F32, PART)
        dk0, dk1, dv0, dv1 = _dkdv_d2_inner(dk0, dk1, dv0, dv1, k0, k1, v0, v1, Q, Q1, DO,
                                            DO1, LSE, Delta, q_row, offs_n, hi, NQ, NQ, CAUSAL_OFF, qk_scale,
                                            BLOCK_M, D0, D1, False, EVEN_M, EMPTY_ROWS,
                                            USE_TMA, DOT_F32, PART)
    else:
        dk0, dk1, dv0, dv1 = _dkdv_d2_inner(dk0, dk1, dv0, dv1, k0, k1, v0, v1, Q, Q1, DO,
                                            DO1, LSE, Delta, q_row, offs_n, 0, NQ, NQ, CAUSAL_OFF, qk_scale,
                                            BLOCK_M, D0, D1, False, EVEN_M, EMPTY_ROWS,
                                            USE_TMA, DOT_F32, PART)
    return dk0, dk1, dv0, dv1


@triton.jit
def _attn_bwd_dkdv_d2(Q, Q1, K, V, DO, DO1, DK, DV, LSE, Delta, sm_scale, NQ, NK, H,
                      CAUSAL_OFF, GROUP: tl.constexpr, D0: tl.constexpr, D1: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                      EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EMPTY_ROWS: tl.constexpr,
                      OFF_POS: tl.constexpr, USE_TMA: tl.constexpr, DOT_F32: tl.constexpr,
                      SPLIT: tl.constexpr = 1, PART: tl.constexpr = 0):
    """bwd._attn_bwd_dkdv (grid, head groups, SPLIT partials, PART) for d = D0 + D1. USE_TMA:
    Q, DO are descriptors of (BLOCK_M, D0) boxes and Q1, DO1 of (BLOCK_M, D1) boxes; else Q,
    DO are pointers (Q1, DO1 unused)."""
    pid_n = tl.program_id(0)
    out_bh = tl.program_id(1)
    kv_bh = out_bh // SPLIT
    start_n = pid_n * BLOCK_N
    kv_off = (kv_bh * NK).to(tl.int64) * (D0 + D1)
    out_off = (out_bh * NK).to(tl.int64) * (D0 + D1)
    K += kv_off
    V += kv_off
    DK += out_off
    DV += out_off
    offs_n = start_n + tl.arange(0, BLOCK_N)
    qk_scale = sm_scale * 1.4426950408889634
    k0 = _load_cols(K, start_n, NK, 0, BLOCK_N, D0, D0 + D1, EVEN_N)
    k1 = _load_cols(K, start_n, NK, D0, BLOCK_N, D1, D0 + D1, EVEN_N)
    if PART == 1:  # dV only: V is not needed
        v0 = k0
        v1 = k1
    else:
        v0 = _load_cols(V, start_n, NK, 0, BLOCK_N, D0, D0 + D1, EVEN_N)
        v1 = _load_cols(V, start_n, NK, D0, BLOCK_N, D1, D0 + D1, EVEN_N)
    dk0 = tl.zeros([BLOCK_N, D0], tl.float32)
    dk1 = tl.zeros([BLOCK_N, D1], tl.float32)
    dv0 = tl.zeros([BLOCK_N, D0], tl.float32)
    dv1 = tl.zeros([BLOCK_N, D1], tl.float32)
    if GROUP == 1 or GROUP == SPLIT:  # one query head: out_bh (GROUP 1: SPLIT 1, the K/V head)
        dk0, dk1, dv0, dv1 = _dkdv_d2_one_head(dk0, dk1, dv0, dv1, k0, k1, v0, v1, Q, Q1, DO,
                                               DO1, LSE, Delta, out_bh, offs_n, start_n, NQ,
                                               CAUSAL_OFF, qk_scale, D0, D1, BLOCK_M, BLOCK_N,
                                               CAUSAL, EVEN_M, EMPTY_ROWS, OFF_POS, USE_TMA,
                                               DOT_F32, PART)
    else:
        hkv = H // GROUP
        first = (kv_bh // hkv) * H + (kv_bh % hkv) * GROUP + (out_bh % SPLIT) * (GROUP // SPLIT)
        for g in range(0, GROUP // SPLIT):
            dk0, dk1, dv0, dv1 = _dkdv_d2_one_head(dk0, dk1, dv0, dv1, k0, k1, v0, v1, Q, Q1, DO,
                                                   DO1, LSE, Delta, first + g, offs_n, start_n,
                                                   NQ, CAUSAL_OFF, qk_scale, D0, D1, BLOCK_M,
                                                   BLOCK_N, CAUSAL, EVEN_M, EMPTY_ROWS, OFF_POS,
                                                   USE_TMA, DOT_F32, PART)
    if PART != 1:
        ty = DK.dtype.element_ty
        _store_cols(DK, start_n, NK, (dk0 * sm_scale).to(ty), 0, BLOCK_N, D0, D0 + D1, EVEN_N)
        _store_cols(DK, start_n, NK, (dk1 * sm_scale).to(ty), D0, BLOCK_N, D1, D0 + D1, EVEN_N)
    if PART != 2:
        ty = DV.dtype.element_ty
        _store_cols(DV, start_n, NK, dv0.to(ty), 0, BLOCK_N, D0, D0 + D1, EVEN_N)
        _store_cols(DV, start_n, NK, dv1.to(ty), D0, BLOCK_N, D1, D0 + D1, EVEN_N)


@triton.jit
def _dq_d2_inner(dq0, dq1, q0, q1, do0, do1, lse2, delta, K, K1, V, V1, k_row, offs_m, lo, hi,
                 NK, CAUSAL_OFF, qk_scale, BLOCK_N: tl.constexpr, D0: tl.constexpr,
                 D1: tl.constexpr, MASKED: tl.constexpr, EVEN_N: tl.constexpr,
                 USE_TMA: tl.constexpr, DOT_F32: tl.constexpr):
    """bwd._attn_bwd_dq_inner with every d-wide tile in two chunks."""
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k0, k1 = _stream_cols(K, K1, k_row, start_n, NK, BLOCK_N, D0, D1, USE_TMA, EVEN_N)
        v0, v1 = _stream_cols(V, V1, k_row, start_n, NK, BLOCK_N, D0, D1, USE_TMA, EVEN_N)
        qk = _dot(q1, tl.trans(k1), _dot(q0, tl.trans(k0), None, DOT_F32), DOT_F32)
        p = tl.math.exp2(qk * qk_scale - lse2[:, None])
        if MASKED or not EVEN_N:
            offs_n = start_n + offs_n0
            keep = offs_n[None, :] < NK
            if MASKED:
                keep = keep & (offs_m[:, None] + CAUSAL_OFF >= offs_n[None, :])
            p = tl.where(keep, p, 0.0)
        dp = _dot(do1, tl.trans(v1), _dot(do0, tl.trans(v0), None, DOT_F32), DOT_F32)
        ds = (p * (dp - delta[:, None])).to(k0.dtype)
        dq0 = _dot(ds, k0, dq0, DOT_F32)
        dq1 = _dot(ds, k1, dq1, DOT_F32)
    return dq0, dq1


@triton.jit
def _attn_bwd_dq_d2(Q, K, K1, V, V1, DO, DQ, LSE, Delta, sm_scale, NQ, NK, H, CAUSAL_OFF,
                    GROUP: tl.constexpr, D0: tl.constexpr, D1: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                    EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EMPTY_ROWS: tl.constexpr,
                    USE_TMA: tl.constexpr, DOT_F32: tl.constexpr):
    """bwd._attn_bwd_dq for d = D0 + D1 (USE_TMA: K, K1, V, V1 descriptors as Q, Q1 of the
    dK/dV kernel)."""
    pid_m = tl.program_id(0)
    if CAUSAL:  # heaviest (last) Q tiles first
        pid_m = tl.num_programs(0) - 1 - pid_m
    bh = tl.program_id(1)
    kv_bh = _kv_head(bh, H, GROUP)
    start_m = pid_m * BLOCK_M
    q_off = (bh * NQ).to(tl.int64) * (D0 + D1)
    Q += q_off
    DO += q_off
    DQ += q_off
    k_row = kv_bh * NK
    if not USE_TMA:
        K += k_row.to(tl.int64) * (D0 + D1)
        V += k_row.to(tl.int64) * (D0 + D1)
    LSE += (bh * NQ).to(tl.int64)
    Delta += (bh * NQ).to(tl.int64)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    qk_scale = sm_scale * 1.4426950408889634
    q0 = _load_cols(Q, start_m, NQ, 0, BLOCK_M, D0, D0 + D1, EVEN_M)
    q1 = _load_cols(Q, start_m, NQ, D0, BLOCK_M, D1, D0 + D1, EVEN_M)
    do0 = _load_cols(DO, start_m, NQ, 0, BLOCK_M, D0, D0 + D1, EVEN_M)
    do1 = _load_cols(DO, start_m, NQ, D0, BLOCK_M, D1, D0 + D1, EVEN_M)
    lse2 = _lse2(LSE, start_m, NQ, BLOCK_M, EVEN_M, EMPTY_ROWS)
    delta = _load_row_stat(Delta, start_m, NQ, BLOCK_M, EVEN_M)
    dq0 = tl.zeros([BLOCK_M, D0], tl.float32)
    dq1 = tl.zeros([BLOCK_M, D1], tl.float32)
    if CAUSAL:
        full_hi, hi = _causal_key_range(start_m, NK, CAUSAL_OFF, BLOCK_M, BLOCK_N)
        dq0, dq1 = _dq_d2_inner(dq0, dq1, q0, q1, do0, do1, lse2, delta, K, K1, V, V1,
                                k_row, offs_m, 0,
                                full_hi, NK, CAUSAL_OFF, qk_scale, BLOCK_N, D0, D1, False,
                                EVEN_N, USE_TMA, DOT_F32)
        dq0, dq1 = _dq_d2_inner(dq0, dq1, q0, q1, do0, do1, lse2, delta, K, K1, V, V1,
                                k_row, offs_m, full_hi,
                                hi, NK, CAUSAL_OFF, qk_scale, BLOCK_N, D0, D1, True, EVEN_N,
                                USE_TMA, DOT_F32)
    else:
        dq0, dq1 = _dq_d2_inner(dq0, dq1, q0, q1, do0, do1, lse2, delta, K, K1, V, V1,
                                k_row, offs_m, 0, NK,
                                NK, CAUSAL_OFF, qk_scale, BLOCK_N, D0, D1, False, EVEN_N,
                                USE_TMA, DOT_F32)
    ty = DQ.dtype.element_ty
    _store_cols(DQ, start_m, NQ, (dq0 * sm_scale).to(ty), 0, BLOCK_M, D0, D0 + D1, EVEN_M)
    _store_cols(DQ, start_m, NQ, (dq1 * sm_scale).to(ty), D0, BLOCK_M, D1, D0 + D1, EVEN_M)
