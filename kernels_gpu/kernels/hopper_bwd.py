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

dK is scaled by sm_scale at the end; both are stored through plain stores. dQ stays the `tl`
kernel's, or `_attn_bwd_dq_hopper`'s: the mirror image (a Q / dO / lse / D tile held, K and V
streamed; S = Q K^T, P, dP = dO V^T, dS, dQ += dS K). H_kv = H, N_q = N_k a multiple of the
blocks, d 64 / 128, fp16 / bf16. dK/dV grid (N / BLOCK_N, B * H), dQ grid (N / BLOCK_M, B * H);
num_warps 8: each warp owns 1/8 of the held tile's rows. STAGES: the streamed ring's depth.
OVERLAP: 0 every wgmma waited; 1 the two products of the streamed tile (S^T and
dP^T; S and dP) issued together and dP^T waited only after P^T's exponentials; 2 (dK/dV) also
P^T dO left running while dS^T is formed. Every wgmma of a tile retires before the next tile.
"""
from __future__ import annotations

from .gluon_api import (
    HAVE_GLUON,
    gl,
    gluon,
    mbarrier,
    thread_barrier,
    tma_load,
    warpgroup_mma,
    warpgroup_mma_wait,
)

__all__ = ["HAVE_GLUON", "_attn_bwd_dkdv_hopper", "_attn_bwd_dq_hopper"]

if HAVE_GLUON:
    @gluon.jit
    def _attn_bwd_dkdv_hopper(q_desc, k_desc, v_desc, do_desc, DK, DV, LSE, DELTA, sm_scale,
                              N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                              HEAD_DIM: gl.constexpr, CAUSAL: gl.constexpr,
                              STAGES: gl.constexpr, OVERLAP: gl.constexpr,
                              num_warps: gl.constexpr):
        pid_n = gl.program_id(0)
        bh = gl.program_id(1)
        start_n = pid_n * BLOCK_N
        row0 = bh * N  # the head's first row in the (B*H*N, d) views
        dtype: gl.constexpr = q_desc.dtype
        qk_scale = sm_scale * 1.4426950408889634

        st_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_M, 16])
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, HEAD_DIM, 16])
        op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout,
                                                      k_width=2)
        col_st: gl.constexpr = gl.SliceLayout(0, st_layout)
        row_st: gl.constexpr = gl.SliceLayout(1, st_layout)

        k_smem = gl.allocate_shared_memory(dtype, [BLOCK_N, HEAD_DIM], k_desc.layout)
        v_smem = gl.allocate_shared_memory(dtype, [BLOCK_N, HEAD_DIM], v_desc.layout)
        q_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_M, HEAD_DIM], q_desc.layout)
        do_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_M, HEAD_DIM], do_desc.layout)
        kv_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        mbarrier.init(kv_bar, count=1)
        for s in gl.static_range(STAGES):
            mbarrier.init(bars.index(s), count=1)
        tile_bytes: gl.constexpr = 2 * BLOCK_M * HEAD_DIM * 2

        mbarrier.expect(kv_bar, 2 * BLOCK_N * HEAD_DIM * 2)
        tma_load(k_desc, [row0 + start_n, 0], kv_bar, k_smem)
        tma_load(v_desc, [row0 + start_n, 0], kv_bar, v_smem)
        if CAUSAL:
            first = start_n // BLOCK_M  # the first query tile that sees any of these keys
        else:
            first = 0
        n_tiles = N // BLOCK_M - first
        for s in gl.static_range(STAGES - 1):  # the ring's first STAGES - 1 tiles
            if s < n_tiles:
                mbarrier.expect(bars.index(s), tile_bytes)
                tma_load(q_desc, [row0 + (first + s) * BLOCK_M, 0],
                                                bars.index(s), q_smem.index(s))
                tma_load(do_desc, [row0 + (first + s) * BLOCK_M, 0],
                                                bars.index(s), do_smem.index(s))

        dk = gl.zeros([BLOCK_N, HEAD_DIM], gl.float32, layout=acc_layout)
        dv = gl.zeros([BLOCK_N, HEAD_DIM], gl.float32, layout=acc_layout)
        st_zero = gl.zeros([BLOCK_N, BLOCK_M], gl.float32, layout=st_layout)
        k_pos = start_n + gl.arange(0, BLOCK_N, layout=row_st)
        m_off = gl.arange(0, BLOCK_M, layout=col_st)
        mbarrier.wait(kv_bar, phase=0)
        for i in range(n_tiles):
            stage = i % STAGES
            start_m = (first + i) * BLOCK_M
            thread_barrier()  # every warp is done with the stage the next load overwrites
            if i + STAGES - 1 < n_tiles:
                nxt = (i + STAGES - 1) % STAGES
                nxt_m = start_m + (STAGES - 1) * BLOCK_M
                mbarrier.expect(bars.index(nxt), tile_bytes)
                tma_load(q_desc, [row0 + nxt_m, 0], bars.index(nxt),
                                                q_smem.index(nxt))
                tma_load(do_desc, [row0 + nxt_m, 0], bars.index(nxt),
                                                do_smem.index(nxt))
            lse2 = gl.load(LSE + row0 + start_m + m_off) * 1.4426950408889634
            delta = gl.load(DELTA + row0 + start_m + m_off)
            mbarrier.wait(bars.index(stage), phase=(i // STAGES) & 1)
            q_t = q_smem.index(stage)
            do_t = do_smem.index(stage)
            if OVERLAP:
                # S^T and dP^T issued together, P^T computed while dP^T runs; OVERLAP 2 also
                # dS^T while P^T dO runs; every wgmma of the tile retired before the next one
                st_tok = warpgroup_mma(k_smem, q_t.permute((1, 0)), st_zero, use_acc=False,
                                       is_async=True)
                dpt_tok = warpgroup_mma(v_smem, do_t.permute((1, 0)), st_zero, use_acc=False,
                                        is_async=True)
                st = warpgroup_mma_wait(1, deps=[st_tok])
                pt = gl.exp2(st * qk_scale - gl.expand_dims(lse2, 0))
                if CAUSAL:
                    if start_m < start_n + BLOCK_N:  # the tile crosses the diagonal
                        q_pos = start_m + m_off
                        pt = gl.where(gl.expand_dims(k_pos, 1) <= gl.expand_dims(q_pos, 0),
                                      pt, 0.0)
                if OVERLAP == 2:
                    dv_tok = warpgroup_mma(gl.convert_layout(pt.to(dtype), op_layout), do_t,
                                           dv, is_async=True)
                    dpt = warpgroup_mma_wait(1, deps=[dpt_tok])
                    dst = pt * (dpt - gl.expand_dims(delta, 0))
                    dk_tok = warpgroup_mma(gl.convert_layout(dst.to(dtype), op_layout), q_t,
                                           dk, is_async=True)
                    dv, dk = warpgroup_mma_wait(0, deps=[dv_tok, dk_tok])
                else:  # 1: only dP^T under P^T's exponentials
                    dpt = warpgroup_mma_wait(0, deps=[dpt_tok])
                    dv = warpgroup_mma(gl.convert_layout(pt.to(dtype), op_layout), do_t, dv)
                    dst = pt * (dpt - gl.expand_dims(delta, 0))
                    dk = warpgroup_mma(gl.convert_layout(dst.to(dtype), op_layout), q_t, dk)
            else:
                st = warpgroup_mma(k_smem, q_t.permute((1, 0)), st_zero, use_acc=False)
                pt = gl.exp2(st * qk_scale - gl.expand_dims(lse2, 0))
                if CAUSAL:
                    if start_m < start_n + BLOCK_N:  # the tile crosses the diagonal
                        q_pos = start_m + m_off
                        pt = gl.where(gl.expand_dims(k_pos, 1) <= gl.expand_dims(q_pos, 0),
                                      pt, 0.0)
                dv = warpgroup_mma(gl.convert_layout(pt.to(dtype), op_layout), do_t, dv)
                dpt = warpgroup_mma(v_smem, do_t.permute((1, 0)), st_zero, use_acc=False)
                dst = pt * (dpt - gl.expand_dims(delta, 0))
                dk = warpgroup_mma(gl.convert_layout(dst.to(dtype), op_layout), q_t, dk)

        mbarrier.invalidate(kv_bar)
        for s in gl.static_range(STAGES):
            mbarrier.invalidate(bars.index(s))
        rows = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, acc_layout))
        cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, acc_layout))
        offs = (row0 + start_n + gl.expand_dims(rows, 1)).to(gl.int64) * HEAD_DIM \
            + gl.expand_dims(cols, 0)
        gl.store(DK + offs, (dk * sm_scale).to(dtype))
        gl.store(DV + offs, dv.to(dtype))

    @gluon.jit
    def _attn_bwd_dq_hopper(q_desc, k_desc, v_desc, do_desc, DQ, LSE, DELTA, sm_scale, N,
                            BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                            HEAD_DIM: gl.constexpr, CAUSAL: gl.constexpr,
                            STAGES: gl.constexpr, OVERLAP: gl.constexpr,
                            num_warps: gl.constexpr):
        pid_m = gl.program_id(0)
        if CAUSAL:
            pid_m = gl.num_programs(0) - 1 - pid_m  # the longest programs first
        bh = gl.program_id(1)
        start_m = pid_m * BLOCK_M
        row0 = bh * N
        dtype: gl.constexpr = q_desc.dtype
        qk_scale = sm_scale * 1.4426950408889634

        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 16])
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, HEAD_DIM, 16])
        op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout,
                                                      k_width=2)
        row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
        col_s: gl.constexpr = gl.SliceLayout(0, s_layout)

        q_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, HEAD_DIM], q_desc.layout)
        do_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, HEAD_DIM], do_desc.layout)
        k_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], k_desc.layout)
        v_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], v_desc.layout)
        q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        mbarrier.init(q_bar, count=1)
        for t in gl.static_range(STAGES):
            mbarrier.init(bars.index(t), count=1)
        tile_bytes: gl.constexpr = 2 * BLOCK_N * HEAD_DIM * 2

        mbarrier.expect(q_bar, 2 * BLOCK_M * HEAD_DIM * 2)
        tma_load(q_desc, [row0 + start_m, 0], q_bar, q_smem)
        tma_load(do_desc, [row0 + start_m, 0], q_bar, do_smem)
        if CAUSAL:
            n_tiles = (start_m + BLOCK_M) // BLOCK_N  # keys up to the tile's last row
        else:
            n_tiles = N // BLOCK_N
        for t in gl.static_range(STAGES - 1):  # the ring's first STAGES - 1 tiles
            if t < n_tiles:
                mbarrier.expect(bars.index(t), tile_bytes)
                tma_load(k_desc, [row0 + t * BLOCK_N, 0], bars.index(t),
                                                k_smem.index(t))
                tma_load(v_desc, [row0 + t * BLOCK_N, 0], bars.index(t),
                                                v_smem.index(t))

        m_off = gl.arange(0, BLOCK_M, layout=row_s)
        q_pos = start_m + m_off
        n_off = gl.arange(0, BLOCK_N, layout=col_s)
        lse2 = gl.load(LSE + row0 + q_pos) * 1.4426950408889634
        delta = gl.load(DELTA + row0 + q_pos)
        dq = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=acc_layout)
        s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=s_layout)
        mbarrier.wait(q_bar, phase=0)
        for j in range(n_tiles):
            stage = j % STAGES
            start_n = j * BLOCK_N
            thread_barrier()  # every warp is done with the stage the next load overwrites
            if j + STAGES - 1 < n_tiles:
                nxt = (j + STAGES - 1) % STAGES
                nxt_n = start_n + (STAGES - 1) * BLOCK_N
                mbarrier.expect(bars.index(nxt), tile_bytes)
                tma_load(k_desc, [row0 + nxt_n, 0], bars.index(nxt),
                                                k_smem.index(nxt))
                tma_load(v_desc, [row0 + nxt_n, 0], bars.index(nxt),
                                                v_smem.index(nxt))
            mbarrier.wait(bars.index(stage), phase=(j // STAGES) & 1)
            k_t = k_smem.index(stage)
            if OVERLAP:  # S and dP issued together, P computed while dP runs
                s_tok = warpgroup_mma(q_smem, k_t.permute((1, 0)), s_zero, use_acc=False,
                                      is_async=True)
                dp_tok = warpgroup_mma(do_smem, v_smem.index(stage).permute((1, 0)), s_zero,
                                       use_acc=False, is_async=True)
                s = warpgroup_mma_wait(1, deps=[s_tok])
            else:
                s = warpgroup_mma(q_smem, k_t.permute((1, 0)), s_zero, use_acc=False)
            p = gl.exp2(s * qk_scale - gl.expand_dims(lse2, 1))
            if CAUSAL:
                if start_n + BLOCK_N > start_m:  # the tile crosses the diagonal
                    k_pos = start_n + n_off
                    p = gl.where(gl.expand_dims(k_pos, 0) <= gl.expand_dims(q_pos, 1), p, 0.0)
            if OVERLAP:
                dp = warpgroup_mma_wait(0, deps=[dp_tok])
            else:
                dp = warpgroup_mma(do_smem, v_smem.index(stage).permute((1, 0)), s_zero,
                                   use_acc=False)
            ds = p * (dp - gl.expand_dims(delta, 1))
            dq = warpgroup_mma(gl.convert_layout(ds.to(dtype), op_layout), k_t, dq)

        mbarrier.invalidate(q_bar)
        for t in gl.static_range(STAGES):
            mbarrier.invalidate(bars.index(t))
        rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
        cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, acc_layout))
        offs = (row0 + start_m + gl.expand_dims(rows, 1)).to(gl.int64) * HEAD_DIM \
            + gl.expand_dims(cols, 0)
        gl.store(DQ + offs, (dq * sm_scale).to(dtype))
