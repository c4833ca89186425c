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

__all__ = ["HAVE_GLUON", "CHUNK", "CHUNKS", "_attn_bwd_dkdv_d192", "_attn_bwd_dq_d192"]

CHUNK = 64  # columns of one chunk (the TMA box's width)
CHUNKS = 3  # 192 = 3 x 64

if HAVE_GLUON:
    @gluon.jit
    def _load3(desc, row, bar, smem, base):
        """The three 64-column chunks of `desc`'s rows from `row` into smem[base .. base+2]."""
        tma_load(desc, [row, 0], bar, smem.index(base))
        tma_load(desc, [row, 64], bar, smem.index(base + 1))
        tma_load(desc, [row, 128], bar, smem.index(base + 2))

    @gluon.jit
    def _chain3(a, a_base, b, b_base, zero):
        """sum_c a[a_base + c] b[b_base + c]^T: three wgmma chained into one accumulator,
        left running (a token)."""
        acc = warpgroup_mma(a.index(a_base), b.index(b_base).permute((1, 0)), zero,
                            use_acc=False, is_async=True)
        acc = warpgroup_mma(a.index(a_base + 1), b.index(b_base + 1).permute((1, 0)), acc,
                            is_async=True)
        return warpgroup_mma(a.index(a_base + 2), b.index(b_base + 2).permute((1, 0)), acc,
                             is_async=True)

    @gluon.jit
    def _store3(PTR, row, a0, a1, a2, mul, BLOCK: gl.constexpr, layout: gl.constexpr):
        """(a0 | a1 | a2) * mul into the (rows, 192) row-major tensor PTR from `row` on."""
        rows = gl.arange(0, BLOCK, layout=gl.SliceLayout(1, layout))
        cols = gl.arange(0, 64, layout=gl.SliceLayout(0, layout))
        offs = (row + gl.expand_dims(rows, 1)).to(gl.int64) * 192 + gl.expand_dims(cols, 0)
        dtype: gl.constexpr = PTR.dtype.element_ty
        gl.store(PTR + offs, (a0 * mul).to(dtype))
        gl.store(PTR + offs + 64, (a1 * mul).to(dtype))
        gl.store(PTR + offs + 128, (a2 * mul).to(dtype))

    @gluon.jit
    def _attn_bwd_dkdv_d192(q_desc, k_desc, v_desc, do_desc, DK, DV, LSE, DELTA, sm_scale,
                            N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                            CAUSAL: gl.constexpr, STAGES: gl.constexpr, PART: gl.constexpr,
                            num_warps: gl.constexpr):
        pid_n = gl.program_id(0)
        bh = gl.program_id(1)
        start_n = pid_n * BLOCK_N
        row0 = bh * N
        dtype: gl.constexpr = q_desc.dtype
        qk_scale = sm_scale * 1.4426950408889634

        st_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_M, 16])
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, 64, 16])
        op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout,
                                                      k_width=2)
        col_st: gl.constexpr = gl.SliceLayout(0, st_layout)
        row_st: gl.constexpr = gl.SliceLayout(1, st_layout)
        HELD: gl.constexpr = 1 if PART == 1 else 2  # dV alone needs no V

        k_smem = gl.allocate_shared_memory(dtype, [3, BLOCK_N, 64], k_desc.layout)
        if PART == 1:  # dV alone reads no V: no buffer for it
            v_smem = k_smem
        else:
            v_smem = gl.allocate_shared_memory(dtype, [3, BLOCK_N, 64], v_desc.layout)
        q_smem = gl.allocate_shared_memory(dtype, [3 * STAGES, BLOCK_M, 64], q_desc.layout)
        do_smem = gl.allocate_shared_memory(dtype, [3 * STAGES, BLOCK_M, 64], do_desc.layout)
        kv_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        mbarrier.init(kv_bar, count=1)
        for s in gl.static_range(STAGES):
            mbarrier.init(bars.index(s), count=1)
        tile_bytes: gl.constexpr = 2 * BLOCK_M * 192 * 2

        mbarrier.expect(kv_bar, HELD * BLOCK_N * 192 * 2)
        _load3(k_desc, row0 + start_n, kv_bar, k_smem, 0)
        if PART != 1:
            _load3(v_desc, row0 + start_n, kv_bar, v_smem, 0)
        if CAUSAL:
            first = start_n // BLOCK_M  # the first query tile that sees any of these keys
        else:
            first = 0
        n_tiles = N // BLOCK_M - first
        for s in gl.static_range(STAGES - 1):
            if s < n_tiles:
                mbarrier.expect(bars.index(s), tile_bytes)
                _load3(q_desc, row0 + (first + s) * BLOCK_M, bars.index(s), q_smem, 3 * s)
                _load3(do_desc, row0 + (first + s) * BLOCK_M, bars.index(s), do_smem, 3 * s)

        dk0 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
        dk1 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
        dk2 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
        dv0 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
        dv1 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
        dv2 = gl.zeros([BLOCK_N, 64], gl.float32, layout=acc_layout)
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
                _load3(q_desc, row0 + nxt_m, bars.index(nxt), q_smem, 3 * nxt)
                _load3(do_desc, row0 + nxt_m, bars.index(nxt), do_smem, 3 * nxt)
            lse2 = gl.load(LSE + row0 + start_m + m_off) * 1.4426950408889634
            mbarrier.wait(bars.index(stage), phase=(i // STAGES) & 1)
            base = 3 * stage
            st_tok = _chain3(k_smem, 0, q_smem, base, st_zero)
            if PART != 1:
                delta = gl.load(DELTA + row0 + start_m + m_off)
                dpt_tok = _chain3(v_smem, 0, do_smem, base, st_zero)
                st = warpgroup_mma_wait(3, deps=[st_tok])
            else:
                st = warpgroup_mma_wait(0, deps=[st_tok])
            pt = gl.exp2(st * qk_scale - gl.expand_dims(lse2, 0))
            if CAUSAL:
                if start_m < start_n + BLOCK_N:  # the tile crosses the diagonal
                    q_pos = start_m + m_off
                    pt = gl.where(gl.expand_dims(k_pos, 1) <= gl.expand_dims(q_pos, 0),
                                  pt, 0.0)
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

        mbarrier.invalidate(kv_bar)
        for s in gl.static_range(STAGES):
            mbarrier.invalidate(bars.index(s))
        if PART != 1:
            _store3(DK, row0 + start_n, dk0, dk1, dk2, sm_scale, BLOCK_N, acc_layout)
        if PART != 2:
            _store3(DV, row0 + start_n, dv0, dv1, dv2, 1.0, BLOCK_N, acc_layout)

    @gluon.jit
    def _attn_bwd_dq_d192(q_desc, k_desc, v_desc, do_desc, DQ, LSE, DELTA, sm_scale, N,
                          BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr,
                          STAGES: gl.constexpr, num_warps: gl.constexpr):
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
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, 64, 16])
        op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout,
                                                      k_width=2)
        row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
        col_s: gl.constexpr = gl.SliceLayout(0, s_layout)

        q_smem = gl.allocate_shared_memory(dtype, [3, BLOCK_M, 64], q_desc.layout)
        do_smem = gl.allocate_shared_memory(dtype, [3, BLOCK_M, 64], do_desc.layout)
        k_smem = gl.allocate_shared_memory(dtype, [3 * STAGES, BLOCK_N, 64], k_desc.layout)
        v_smem = gl.allocate_shared_memory(dtype, [3 * STAGES, BLOCK_N, 64], v_desc.layout)
        q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        mbarrier.init(q_bar, count=1)
        for t in gl.static_range(STAGES):
            mbarrier.init(bars.index(t), count=1)
        tile_bytes: gl.constexpr = 2 * BLOCK_N * 192 * 2

        mbarrier.expect(q_bar, 2 * BLOCK_M * 192 * 2)
        _load3(q_desc, row0 + start_m, q_bar, q_smem, 0)
        _load3(do_desc, row0 + start_m, q_bar, do_smem, 0)
        if CAUSAL:
            n_tiles = (start_m + BLOCK_M) // BLOCK_N  # keys up to the tile's last row
        else:
            n_tiles = N // BLOCK_N
        for t in gl.static_range(STAGES - 1):
            if t < n_tiles:
                mbarrier.expect(bars.index(t), tile_bytes)
                _load3(k_desc, row0 + t * BLOCK_N, bars.index(t), k_smem, 3 * t)
                _load3(v_desc, row0 + t * BLOCK_N, bars.index(t), v_smem, 3 * t)

        m_off = gl.arange(0, BLOCK_M, layout=row_s)
        q_pos = start_m + m_off
        n_off = gl.arange(0, BLOCK_N, layout=col_s)
        lse2 = gl.load(LSE + row0 + q_pos) * 1.4426950408889634
        delta = gl.load(DELTA + row0 + q_pos)
        dq0 = gl.zeros([BLOCK_M, 64], gl.float32, layout=acc_layout)
        dq1 = gl.zeros([BLOCK_M, 64], gl.float32, layout=acc_layout)
        dq2 = gl.zeros([BLOCK_M, 64], gl.float32, layout=acc_layout)
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
                _load3(k_desc, row0 + nxt_n, bars.index(nxt), k_smem, 3 * nxt)
                _load3(v_desc, row0 + nxt_n, bars.index(nxt), v_smem, 3 * nxt)
            mbarrier.wait(bars.index(stage), phase=(j // STAGES) & 1)
            base = 3 * stage
            s_tok = _chain3(q_smem, 0, k_smem, base, s_zero)
            dp_tok = _chain3(do_smem, 0, v_smem, base, s_zero)
            s = warpgroup_mma_wait(3, deps=[s_tok])
            p = gl.exp2(s * qk_scale - gl.expand_dims(lse2, 1))
            if CAUSAL:
                if start_n + BLOCK_N > start_m:  # the tile crosses the diagonal
                    k_pos = start_n + n_off
                    p = gl.where(gl.expand_dims(k_pos, 0) <= gl.expand_dims(q_pos, 1), p, 0.0)
            dp = warpgroup_mma_wait(0, deps=[dp_tok])
            ds = p * (dp - gl.expand_dims(delta, 1))
            da = gl.convert_layout(ds.to(dtype), op_layout)
            dq0 = warpgroup_mma(da, k_smem.index(base), dq0, is_async=True)
            dq1 = warpgroup_mma(da, k_smem.index(base + 1), dq1, is_async=True)
            dq2 = warpgroup_mma(da, k_smem.index(base + 2), dq2, is_async=True)
            dq0, dq1, dq2, da = warpgroup_mma_wait(0, deps=[dq0, dq1, dq2, da])

        mbarrier.invalidate(q_bar)
        for t in gl.static_range(STAGES):
            mbarrier.invalidate(bars.index(t))
        _store3(DQ, row0 + start_m, dq0, dq1, dq2, sm_scale, BLOCK_M, acc_layout)
