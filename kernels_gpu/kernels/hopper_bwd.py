"""A Hopper dK/dV backward in Gluon (Triton 3.6): the backward's heavy launch on TMA + wgmma
(issue 21, item 3, third session; one partition, no warp specialisation yet).

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
kernel's. H_kv = H, N_q = N_k a multiple of the blocks, d 64 / 128, fp16 / bf16.
Grid (N / BLOCK_N, B * H); num_warps 8: each warp owns BLOCK_N / 8 key rows.
"""
from __future__ import annotations

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma
    HAVE_GLUON = True
except ImportError:  # pragma: no cover - a Triton without Gluon
    HAVE_GLUON = False

__all__ = ["HAVE_GLUON", "_attn_bwd_dkdv_hopper"]

if HAVE_GLUON:
    @gluon.jit
    def _attn_bwd_dkdv_hopper(q_desc, k_desc, v_desc, do_desc, DK, DV, LSE, DELTA, sm_scale,
                              N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                              HEAD_DIM: gl.constexpr, CAUSAL: gl.constexpr,
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
        q_smem = gl.allocate_shared_memory(dtype, [2, BLOCK_M, HEAD_DIM], q_desc.layout)
        do_smem = gl.allocate_shared_memory(dtype, [2, BLOCK_M, HEAD_DIM], do_desc.layout)
        kv_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        mbarrier.init(kv_bar, count=1)
        mbarrier.init(bars.index(0), count=1)
        mbarrier.init(bars.index(1), count=1)
        tile_bytes: gl.constexpr = 2 * BLOCK_M * HEAD_DIM * 2

        mbarrier.expect(kv_bar, 2 * BLOCK_N * HEAD_DIM * 2)
        tma.async_copy_global_to_shared(k_desc, [row0 + start_n, 0], kv_bar, k_smem)
        tma.async_copy_global_to_shared(v_desc, [row0 + start_n, 0], kv_bar, v_smem)
        if CAUSAL:
            first = start_n // BLOCK_M  # the first query tile that sees any of these keys
        else:
            first = 0
        n_tiles = N // BLOCK_M - first
        mbarrier.expect(bars.index(0), tile_bytes)
        tma.async_copy_global_to_shared(q_desc, [row0 + first * BLOCK_M, 0], bars.index(0),
                                        q_smem.index(0))
        tma.async_copy_global_to_shared(do_desc, [row0 + first * BLOCK_M, 0], bars.index(0),
                                        do_smem.index(0))

        dk = gl.zeros([BLOCK_N, HEAD_DIM], gl.float32, layout=acc_layout)
        dv = gl.zeros([BLOCK_N, HEAD_DIM], gl.float32, layout=acc_layout)
        st_zero = gl.zeros([BLOCK_N, BLOCK_M], gl.float32, layout=st_layout)
        k_pos = start_n + gl.arange(0, BLOCK_N, layout=row_st)
        m_off = gl.arange(0, BLOCK_M, layout=col_st)
        mbarrier.wait(kv_bar, phase=0)
        for i in range(n_tiles):
            stage = i % 2
            start_m = (first + i) * BLOCK_M
            gl.thread_barrier()  # every warp is done with the stage the next load overwrites
            if i + 1 < n_tiles:
                nxt = (i + 1) % 2
                mbarrier.expect(bars.index(nxt), tile_bytes)
                tma.async_copy_global_to_shared(q_desc, [row0 + start_m + BLOCK_M, 0],
                                                bars.index(nxt), q_smem.index(nxt))
                tma.async_copy_global_to_shared(do_desc, [row0 + start_m + BLOCK_M, 0],
                                                bars.index(nxt), do_smem.index(nxt))
            lse2 = gl.load(LSE + row0 + start_m + m_off) * 1.4426950408889634
            delta = gl.load(DELTA + row0 + start_m + m_off)
            mbarrier.wait(bars.index(stage), phase=(i // 2) & 1)
            q_t = q_smem.index(stage)
            do_t = do_smem.index(stage)
            st = warpgroup_mma(k_smem, q_t.permute((1, 0)), st_zero, use_acc=False)
            pt = gl.exp2(st * qk_scale - gl.expand_dims(lse2, 0))
            if CAUSAL:
                if start_m < start_n + BLOCK_N:  # the tile crosses the diagonal
                    q_pos = start_m + m_off
                    pt = gl.where(gl.expand_dims(k_pos, 1) <= gl.expand_dims(q_pos, 0), pt, 0.0)
            dv = warpgroup_mma(gl.convert_layout(pt.to(dtype), op_layout), do_t, dv)
            dpt = warpgroup_mma(v_smem, do_t.permute((1, 0)), st_zero, use_acc=False)
            dst = pt * (dpt - gl.expand_dims(delta, 0))
            dk = warpgroup_mma(gl.convert_layout(dst.to(dtype), op_layout), q_t, dk)

        mbarrier.invalidate(kv_bar)
        mbarrier.invalidate(bars.index(0))
        mbarrier.invalidate(bars.index(1))
        rows = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, acc_layout))
        cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, acc_layout))
        offs = (row0 + start_n + gl.expand_dims(rows, 1)).to(gl.int64) * HEAD_DIM \
            + gl.expand_dims(cols, 0)
        gl.store(DK + offs, (dk * sm_scale).to(dtype))
        gl.store(DV + offs, dv.to(dtype))
