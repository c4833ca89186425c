"""The d 192 backward in Gluon with the head dim as three 64-column chunks: every Gluon tensor has power-of-two dims, so a (rows, 192) tile is held as
three (rows, 64) tiles. TMA reads the UNPADDED (B*H*N, 192) tensors through one descriptor of
box (BLOCK, 64), loaded at columns 0, 64 and 128; no work is done on padding.

    S^T  = sum_c K_c Q_c^T          (three chained wgmma into one accumulator)
    P^T  = exp2(S^T * scale*log2e - lse2)   (causal: keys past the query 0)
    dV_c += P^T dO_c                (one accumulator per chunk)
    dP^T = sum_c V_c dO_c^T
    dS^T = P^T * (dP^T - D)
    dK_c += dS^T Q_c

dK and dV of 192 columns in one warpgroup are 192 fp32 registers a thread before S^T and dP^T,
so the dK/dV kernel takes PART (as the `tl` d 256 kernels): 1 dV alone (S^T, P^T, dV), 2 dK
alone (S^T, dP^T, dK), 0 both (spills at BLOCK_N 64; kept for the offline compile's record).
The held K (and V) tile: (BLOCK_N, 192); the streamed Q / dO tiles: a TMA ring of STAGES, one
mbarrier per stage. The two products of a streamed tile (S^T and dP^T) are issued together and
dP^T is retired after P^T's exponentials (the d 128 kernel's OVERLAP 1). dQ
(`_attn_bwd_dq_d192`): the mirror image (Q / dO / lse / D held, K / V streamed; S, dP, dQ_c +=
dS K_c). H_kv = H, N_q = N_k a multiple of the blocks, fp16 / bf16; grids as kernels.hopper_bwd.
The rings (a slot = three chunks), their barriers and the chained products are
`kernels.pipeline`'s.
"""
from __future__ import annotations

from .gluon_api import HAVE_GLUON, gl, gluon, mbarrier, warpgroup_mma, warpgroup_mma_wait
from .pipeline import (
    alloc_barriers,
    alloc_ring,
    chain,
    invalidate_barriers,
    key_tile,
    mma_layout,
    operand_layout,
    probs,
    probs_t,
    program_rows,
    query_tile,
    ring_fill,
    row_stats,
    store_rows,
    tma_load_tile,
    two_products,
)

__all__ = ["HAVE_GLUON", "CHUNK", "CHUNKS", "_attn_bwd_dkdv_d192", "_attn_bwd_dq_d192"]

CHUNK = 64  # columns of one chunk (the TMA box's width)
CHUNKS = 3  # 192 = 3 x 64

if HAVE_GLUON:
    @gluon.jit
    def _store3(PTR, row, a0, a1, a2):
        """(a0 | a1 | a2) into the (rows, 192) row-major tensor PTR from `row` on."""
        store_rows(PTR, row, a0, 192, 0)
        store_rows(PTR, row, a1, 192, 64)
        store_rows(PTR, row, a2, 192, 128)

    @gluon.jit
    def _attn_bwd_dkdv_d192(q_desc, k_desc, v_desc, do_desc, DK, DV, LSE, DELTA, sm_scale,
                            N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                            CAUSAL: gl.constexpr, STAGES: gl.constexpr, PART: gl.constexpr,
                            num_warps: gl.constexpr):
        start_n, row0 = program_rows(N, BLOCK_N, False)  # row0: the head's first row
        dtype: gl.constexpr = q_desc.dtype
        qk_scale = sm_scale * 1.4426950408889634

        st_layout: gl.constexpr = mma_layout(num_warps, BLOCK_M)
        acc_layout: gl.constexpr = mma_layout(num_warps, 64)
        op_layout: gl.constexpr = operand_layout(acc_layout)
        HELD: gl.constexpr = 1 if PART == 1 else 2  # dV alone needs no V

        k_smem = alloc_ring(k_desc, 3)  # the held K (and V) tile: one slot of three chunks
        if PART == 1:  # dV alone reads no V: no buffer for it
            v_smem = k_smem
        else:
            v_smem = alloc_ring(v_desc, 3)
        q_smem = alloc_ring(q_desc, 3 * STAGES)  # the streamed Q and dO tiles
        do_smem = alloc_ring(do_desc, 3 * STAGES)
        kv_bar = alloc_barriers(1, 1)
        bars = alloc_barriers(STAGES, 1)

        mbarrier.expect(kv_bar.index(0), HELD * 3 * k_desc.block_type.nbytes)
        tma_load_tile(k_desc, row0 + start_n, kv_bar.index(0), k_smem, 0, 3)
        if PART != 1:
            tma_load_tile(v_desc, row0 + start_n, kv_bar.index(0), v_smem, 0, 3)
        if CAUSAL:
            first = start_n // BLOCK_M  # the first query tile that sees any of these keys
        else:
            first = 0
        n_tiles = N // BLOCK_M - first
        ring_fill(q_desc, do_desc, q_smem, do_smem, bars, row0, first, n_tiles, STAGES, 3)

        dk0 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
        dk1 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
        dk2 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
        dv0 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
        dv1 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
        dv2 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
        st_zero = gl.zeros([BLOCK_N, BLOCK_M], gl.float32, layout=st_layout)
        k_pos = start_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, st_layout))
        m_off = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, st_layout))
        mbarrier.wait(kv_bar.index(0), phase=0)
        for i in range(n_tiles):
            start_m, stage, lse2, delta = query_tile(q_desc, do_desc, q_smem, do_smem, bars, LSE,
                                                     DELTA, i, n_tiles, row0, first, m_off,
                                                     STAGES, 3)
            base = 3 * stage
            if PART != 1:  # S^T and dP^T issued together, dP^T retired after P^T
                st, dpt_tok = two_products(k_smem, q_smem, v_smem, do_smem, 0, stage, st_zero,
                                           3)
            else:
                st = warpgroup_mma_wait(0, deps=[chain(k_smem, 0, q_smem, base, st_zero, 3)])
            pt = probs_t(st, lse2, qk_scale, k_pos, start_m, m_off, CAUSAL,
                         start_m < start_n + BLOCK_N)
            if PART != 1:
                dpt = warpgroup_mma_wait(0, deps=[dpt_tok])
            if PART != 2:
                pa = gl.convert_layout(pt.to(dtype), op_layout)
                dv0 = warpgroup_mma(pa, do_smem.index(base), dv0, is_async=True)
                dv1 = warpgroup_mma(pa, do_smem.index(base + 1), dv1, is_async=True)
                dv2 = warpgroup_mma(pa, do_smem.index(base + 2), dv2, is_async=True)
                if PART == 1:
                    dv0, dv1, dv2, pa = warpgroup_mma_wait(0, deps=[dv0, dv1, dv2, pa])
            if PART != 1:
                dst = pt * (dpt - gl.expand_dims(delta, 0))
                da = gl.convert_layout(dst.to(dtype), op_layout)
                dk0 = warpgroup_mma(da, q_smem.index(base), dk0, is_async=True)
                dk1 = warpgroup_mma(da, q_smem.index(base + 1), dk1, is_async=True)
                dk2 = warpgroup_mma(da, q_smem.index(base + 2), dk2, is_async=True)
                if PART == 2:
                    dk0, dk1, dk2, da = warpgroup_mma_wait(0, deps=[dk0, dk1, dk2, da])
                else:
                    dv0, dv1, dv2, dk0, dk1, dk2, pa, da = warpgroup_mma_wait(
                        0, deps=[dv0, dv1, dv2, dk0, dk1, dk2, pa, da])

        invalidate_barriers(kv_bar, 1)
        invalidate_barriers(bars, STAGES)
        if PART != 1:
            _store3(DK, row0 + start_n, dk0 * sm_scale, dk1 * sm_scale, dk2 * sm_scale)
        if PART != 2:
            _store3(DV, row0 + start_n, dv0, dv1, dv2)

    @gluon.jit
    def _attn_bwd_dq_d192(q_desc, k_desc, v_desc, do_desc, DQ, LSE, DELTA, sm_scale, N,
                          BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr,
                          STAGES: gl.constexpr, num_warps: gl.constexpr):
        start_m, row0 = program_rows(N, BLOCK_M, CAUSAL)  # causal: the longest first
        dtype: gl.constexpr = q_desc.dtype
        qk_scale = sm_scale * 1.4426950408889634

        s_layout: gl.constexpr = mma_layout(num_warps, BLOCK_N)
        acc_layout: gl.constexpr = mma_layout(num_warps, 64)
        op_layout: gl.constexpr = operand_layout(acc_layout)

        q_smem = alloc_ring(q_desc, 3)  # the held Q and dO tiles: one slot of three chunks
        do_smem = alloc_ring(do_desc, 3)
        k_smem = alloc_ring(k_desc, 3 * STAGES)  # the streamed K and V tiles
        v_smem = alloc_ring(v_desc, 3 * STAGES)
        q_bar = alloc_barriers(1, 1)
        bars = alloc_barriers(STAGES, 1)

        mbarrier.expect(q_bar.index(0), 2 * 3 * q_desc.block_type.nbytes)
        tma_load_tile(q_desc, row0 + start_m, q_bar.index(0), q_smem, 0, 3)
        tma_load_tile(do_desc, row0 + start_m, q_bar.index(0), do_smem, 0, 3)
        if CAUSAL:
            n_tiles = (start_m + BLOCK_M) // BLOCK_N  # keys up to the tile's last row
        else:
            n_tiles = N // BLOCK_N
        ring_fill(k_desc, v_desc, k_smem, v_smem, bars, row0, 0, n_tiles, STAGES, 3)

        q_pos = start_m + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, s_layout))
        n_off = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        lse2, delta = row_stats(LSE, DELTA, row0, q_pos)
        dq0 = gl.zeros([BLOCK_M, 64], gl.float32, layout=acc_layout)
        dq1 = gl.zeros([BLOCK_M, 64], gl.float32, layout=acc_layout)
        dq2 = gl.zeros([BLOCK_M, 64], gl.float32, layout=acc_layout)
        s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=s_layout)
        mbarrier.wait(q_bar.index(0), phase=0)
        for j in range(n_tiles):
            start_n, stage = key_tile(k_desc, v_desc, k_smem, v_smem, bars, j, n_tiles, row0,
                                      STAGES, 3)
            base = 3 * stage
            s, dp_tok = two_products(q_smem, k_smem, do_smem, v_smem, 0, stage, s_zero, 3)
            p = probs(s, lse2, qk_scale, q_pos, start_n, n_off, CAUSAL,
                      start_n + BLOCK_N > start_m)
            dp = warpgroup_mma_wait(0, deps=[dp_tok])
            ds = p * (dp - gl.expand_dims(delta, 1))
            da = gl.convert_layout(ds.to(dtype), op_layout)
            dq0 = warpgroup_mma(da, k_smem.index(base), dq0, is_async=True)
            dq1 = warpgroup_mma(da, k_smem.index(base + 1), dq1, is_async=True)
            dq2 = warpgroup_mma(da, k_smem.index(base + 2), dq2, is_async=True)
            dq0, dq1, dq2, da = warpgroup_mma_wait(0, deps=[dq0, dq1, dq2, da])

        invalidate_barriers(q_bar, 1)
        invalidate_barriers(bars, STAGES)
        _store3(DQ, row0 + start_m, dq0 * sm_scale, dq1 * sm_scale, dq2 * sm_scale)
