"""A Hopper dK/dV backward in Gluon (Triton 3.6): the backward's heavy launch on TMA + wgmma
(one partition, no warp specialisation yet).

One program holds a (BLOCK_N, d) tile of K and of V in shared memory (TMA, once) and streams
the query tiles (BLOCK_M rows of Q and dO) through a two-stage TMA ring, one mbarrier per stage.
Per query tile, everything transposed so that the key rows stay with the warps:

    S^T  = K Q^T                   (wgmma, A and B from shared memory)
    P^T  = exp2(S^T * scale*log2e - lse2)   (lse from the forward; causal: keys past the query 0)
    dV  += P^T dO                  (wgmma, P^T from registers)
    dP^T = V dO^T                  (wgmma)
    dS^T = P^T * (dP^T - D)        (D = rowsum(dO * O), the `tl` preprocess launch)
    dK  += dS^T Q                  (wgmma, dS^T from registers)

dK is scaled by sm_scale at the end; both are stored through plain stores, or (TMA_OUT, DK and
DV TMA descriptors) through the dead K and V tiles and TMA stores (the dQ likewise). dQ stays the `tl`
kernel's, or `_attn_bwd_dq_hopper`'s: the mirror image (a Q / dO / lse / D tile held, K and V
streamed; S = Q K^T, P, dP = dO V^T, dS, dQ += dS K). H_kv = H, N_q = N_k a multiple of the
blocks, d 64 / 128, fp16 / bf16. dK/dV grid (N / BLOCK_N, B * H), dQ grid (N / BLOCK_M, B * H);
num_warps 8: each warp owns 1/8 of the held tile's rows. STAGES: the streamed ring's depth.
OVERLAP: 0 every wgmma waited; 1 the two products of the streamed tile (S^T and
dP^T; S and dP) issued together and dP^T waited only after P^T's exponentials; 2 (dK/dV) also
P^T dO left running while dS^T is formed. Every wgmma of a tile retires before the next tile.
The ring, its barriers and the tile step are `kernels.pipeline`'s.
"""
from __future__ import annotations

from .gluon_api import (
    HAVE_GLUON,
    gl,
    gluon,
    mbarrier,
    thread_barrier,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from .pipeline import (
    alloc_barriers,
    alloc_ring,
    dkdv_step,
    invalidate_barriers,
    key_tile,
    mma_layout,
    operand_layout,
    probs,
    program_rows,
    query_tile,
    ring_fill,
    row_stats,
    store_rows,
    tma_load_pair,
    tma_store_tile,
    two_products,
)

__all__ = ["HAVE_GLUON", "_attn_bwd_dkdv_hopper", "_attn_bwd_dq_hopper"]

if HAVE_GLUON:
    @gluon.jit
    def _attn_bwd_dkdv_hopper(q_desc, k_desc, v_desc, do_desc, DK, DV, LSE, DELTA, sm_scale,
                              N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                              HEAD_DIM: gl.constexpr, CAUSAL: gl.constexpr,
                              STAGES: gl.constexpr, OVERLAP: gl.constexpr,
                              num_warps: gl.constexpr, TMA_OUT: gl.constexpr = False):
        start_n, row0 = program_rows(N, BLOCK_N, False)  # row0: the head's first row
        qk_scale = sm_scale * 1.4426950408889634

        st_layout: gl.constexpr = mma_layout(num_warps, BLOCK_M)
        acc_layout: gl.constexpr = mma_layout(num_warps, HEAD_DIM)
        op_layout: gl.constexpr = operand_layout(acc_layout)

        k_smem = alloc_ring(k_desc, 1)  # the held K and V tiles
        v_smem = alloc_ring(v_desc, 1)
        q_smem = alloc_ring(q_desc, STAGES)  # the streamed Q and dO tiles
        do_smem = alloc_ring(do_desc, STAGES)
        kv_bar = alloc_barriers(1, 1)
        bars = alloc_barriers(STAGES, 1)

        tma_load_pair(k_desc, v_desc, row0 + start_n, kv_bar.index(0), k_smem, v_smem, 0, 1)
        if CAUSAL:
            first = start_n // BLOCK_M  # the first query tile that sees any of these keys
        else:
            first = 0
        n_tiles = N // BLOCK_M - first
        ring_fill(q_desc, do_desc, q_smem, do_smem, bars, row0, first, n_tiles, STAGES, 1)

        dk = gl.zeros([BLOCK_N, HEAD_DIM], gl.float32, layout=acc_layout)
        dv = gl.zeros([BLOCK_N, HEAD_DIM], gl.float32, layout=acc_layout)
        st_zero = gl.zeros([BLOCK_N, BLOCK_M], gl.float32, layout=st_layout)
        k_pos = start_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, st_layout))
        m_off = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, st_layout))
        mbarrier.wait(kv_bar.index(0), phase=0)
        for i in range(n_tiles):
            start_m, stage, lse2, delta = query_tile(q_desc, do_desc, q_smem, do_smem, bars, LSE,
                                                     DELTA, i, n_tiles, row0, first, m_off,
                                                     STAGES, 1)
            # causal: the keys past the query masked where the tile crosses the diagonal
            dk, dv = dkdv_step(dk, dv, k_smem, v_smem, 0, q_smem, do_smem, stage, lse2, delta,
                               qk_scale, st_zero, k_pos, start_m, m_off, op_layout, CAUSAL,
                               start_m < start_n + BLOCK_N, OVERLAP)

        invalidate_barriers(kv_bar, 1)
        invalidate_barriers(bars, STAGES)
        if TMA_OUT:  # DK, DV descriptors: through the dead K, V tiles and TMA stores
            thread_barrier()
            tma_store_tile(DK, row0 + start_n, dk * sm_scale, k_smem.index(0))
            tma_store_tile(DV, row0 + start_n, dv, v_smem.index(0))
        else:
            store_rows(DK, row0 + start_n, dk * sm_scale, HEAD_DIM, 0)
            store_rows(DV, row0 + start_n, dv, HEAD_DIM, 0)

    @gluon.jit
    def _attn_bwd_dq_hopper(q_desc, k_desc, v_desc, do_desc, DQ, LSE, DELTA, sm_scale, N,
                            BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                            HEAD_DIM: gl.constexpr, CAUSAL: gl.constexpr,
                            STAGES: gl.constexpr, OVERLAP: gl.constexpr,
                            num_warps: gl.constexpr, TMA_OUT: gl.constexpr = False):
        start_m, row0 = program_rows(N, BLOCK_M, CAUSAL)  # causal: the longest first
        dtype: gl.constexpr = q_desc.dtype
        qk_scale = sm_scale * 1.4426950408889634

        s_layout: gl.constexpr = mma_layout(num_warps, BLOCK_N)
        acc_layout: gl.constexpr = mma_layout(num_warps, HEAD_DIM)
        op_layout: gl.constexpr = operand_layout(acc_layout)

        q_smem = alloc_ring(q_desc, 1)  # the held Q and dO tiles
        do_smem = alloc_ring(do_desc, 1)
        k_smem = alloc_ring(k_desc, STAGES)  # the streamed K and V tiles
        v_smem = alloc_ring(v_desc, STAGES)
        q_bar = alloc_barriers(1, 1)
        bars = alloc_barriers(STAGES, 1)

        tma_load_pair(q_desc, do_desc, row0 + start_m, q_bar.index(0), q_smem, do_smem, 0, 1)
        if CAUSAL:
            n_tiles = (start_m + BLOCK_M) // BLOCK_N  # keys up to the tile's last row
        else:
            n_tiles = N // BLOCK_N
        ring_fill(k_desc, v_desc, k_smem, v_smem, bars, row0, 0, n_tiles, STAGES, 1)

        q_pos = start_m + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, s_layout))
        n_off = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        lse2, delta = row_stats(LSE, DELTA, row0, q_pos)
        dq = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=acc_layout)
        s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=s_layout)
        q_t = q_smem.index(0)
        do_t = do_smem.index(0)
        mbarrier.wait(q_bar.index(0), phase=0)
        for j in range(n_tiles):
            start_n, stage = key_tile(k_desc, v_desc, k_smem, v_smem, bars, j, n_tiles, row0,
                                      STAGES, 1)
            k_t = k_smem.index(stage)
            if OVERLAP:  # S and dP issued together, P computed while dP runs
                s, dp_tok = two_products(q_smem, k_smem, do_smem, v_smem, 0, stage, s_zero, 1)
            else:
                s = warpgroup_mma(q_t, k_t.permute((1, 0)), s_zero, use_acc=False)
            # causal: the keys past the query masked where the tile crosses the diagonal
            p = probs(s, lse2, qk_scale, q_pos, start_n, n_off, CAUSAL,
                      start_n + BLOCK_N > start_m)
            if OVERLAP:
                dp = warpgroup_mma_wait(0, deps=[dp_tok])
            else:
                dp = warpgroup_mma(do_t, v_smem.index(stage).permute((1, 0)), s_zero,
                                   use_acc=False)
            ds = p * (dp - gl.expand_dims(delta, 1))
            dq = warpgroup_mma(gl.convert_layout(ds.to(dtype), op_layout), k_t, dq)

        invalidate_barriers(q_bar, 1)
        invalidate_barriers(bars, STAGES)
        if TMA_OUT:  # DQ a descriptor: through the dead Q tile and a TMA store
            thread_barrier()
            tma_store_tile(DQ, row0 + start_m, dq * sm_scale, q_t)
        else:
            store_rows(DQ, row0 + start_m, dq * sm_scale, HEAD_DIM, 0)
