"""A Hopper-only attention forward in Gluon (`triton.experimental.gluon`, Triton 3.6): the first
step toward the FlashAttention-3 schedule.

What it has: Q, K, V tiles through TMA descriptors into NVMMA-swizzled shared memory, a
two-stage K/V ring with one mbarrier per stage (the load of tile j+1 in flight while tile j is
computed), both matmuls on `warpgroup_mma` (wgmma; P from registers as the A operand), the
online softmax in registers, O written through shared memory and a TMA store.
What it does not have yet (FA3): a producer warp (warp specialisation), two consumer
warpgroups in ping-pong, `setmaxnreg`, the overlap of one tile's softmax with the next tile's
QK^T inside a warpgroup. Causal (square) or not, N a multiple of the blocks, d 64 or 128, fp16 /
bf16. Grouped heads (H = GROUP x H_kv, MQA: H_kv 1): the program of query head h reads K/V head
h // GROUP, so the GROUP programs of one K/V head (neighbours in the grid) share its tiles in L2. The `tl` kernels stay the reference path (and the only one under the interpreter).

Grid (N / BLOCK_M, B * H); 8 warps = two warpgroups, each owning BLOCK_M / 2 rows.
"""
from __future__ import annotations

from .gluon_api import (
    HAVE_GLUON,
    fence_async_shared,
    gl,
    gluon,
    mbarrier,
    thread_barrier,
    tma,
    tma_load,
    tma_store,
    warpgroup_mma,
)

__all__ = ["HAVE_GLUON", "_attn_fwd_hopper"]

if HAVE_GLUON:
    @gluon.jit
    def _attn_fwd_hopper(q_desc, k_desc, v_desc, o_desc, LSE, qk_scale, N, GROUP,
                         BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr,
                         num_warps: gl.constexpr, CAUSAL: gl.constexpr = False):
        """O = softmax(Q K^T * scale) V and its lse (natural log, fp32, one per row) for one
        (BLOCK_M rows, head) tile; GROUP = H / H_kv query heads a K/V head. qk_scale is sm_scale * log2(e) (exp2 softmax). CAUSAL (N_q =
        N_k): row i sees keys j <= i; the key tiles past the diagonal are skipped, the ones
        crossing it masked; the heaviest (last) query tiles start first."""
        pid_m = gl.program_id(0)
        if CAUSAL:
            pid_m = gl.num_programs(0) - 1 - pid_m
        bh = gl.program_id(1)
        q_row = bh * N + pid_m * BLOCK_M
        kv_row = (bh // GROUP) * N  # bh = b H + h; its K/V head: b H_kv + h // GROUP
        dtype: gl.constexpr = q_desc.dtype

        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 16])
        o_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, HEAD_DIM, 16])
        p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout,
                                                     k_width=2)
        row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
        row_o: gl.constexpr = gl.SliceLayout(1, o_layout)

        q_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, HEAD_DIM], q_desc.layout)
        k_smem = gl.allocate_shared_memory(dtype, [2, BLOCK_N, HEAD_DIM], k_desc.layout)
        v_smem = gl.allocate_shared_memory(dtype, [2, BLOCK_N, HEAD_DIM], v_desc.layout)
        q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        kv_bar = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        mbarrier.init(q_bar, count=1)
        mbarrier.init(kv_bar.index(0), count=1)
        mbarrier.init(kv_bar.index(1), count=1)
        kv_bytes: gl.constexpr = 2 * BLOCK_N * HEAD_DIM * 2

        mbarrier.expect(q_bar, BLOCK_M * HEAD_DIM * 2)
        tma_load(q_desc, [q_row, 0], q_bar, q_smem)
        mbarrier.expect(kv_bar.index(0), kv_bytes)
        tma_load(k_desc, [kv_row, 0], kv_bar.index(0), k_smem.index(0))
        tma_load(v_desc, [kv_row, 0], kv_bar.index(0), v_smem.index(0))

        m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=row_s)
        l_i = gl.full([BLOCK_M], 0.0, gl.float32, layout=row_s)
        acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=o_layout)
        s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=s_layout)
        mbarrier.wait(q_bar, phase=0)

        if CAUSAL:
            n_tiles = (pid_m + 1) * BLOCK_M // BLOCK_N  # BLOCK_M is a multiple of BLOCK_N
            q_pos = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=row_s)
            k_off = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        else:
            n_tiles = N // BLOCK_N
        for j in range(n_tiles):
            stage = j % 2
            # every warpgroup is done with the buffer the next load overwrites (tile j - 1)
            thread_barrier()
            if j + 1 < n_tiles:
                nxt = (j + 1) % 2
                mbarrier.expect(kv_bar.index(nxt), kv_bytes)
                tma_load(k_desc, [kv_row + (j + 1) * BLOCK_N, 0],
                                                kv_bar.index(nxt), k_smem.index(nxt))
                tma_load(v_desc, [kv_row + (j + 1) * BLOCK_N, 0],
                                                kv_bar.index(nxt), v_smem.index(nxt))
            mbarrier.wait(kv_bar.index(stage), phase=(j // 2) & 1)

            s = warpgroup_mma(q_smem, k_smem.index(stage).permute((1, 0)), s_zero,
                              use_acc=False)
            if CAUSAL:
                if (j + 1) * BLOCK_N > pid_m * BLOCK_M:  # the tile crosses the diagonal
                    k_pos = j * BLOCK_N + k_off
                    s = gl.where(gl.expand_dims(k_pos, 0) <= gl.expand_dims(q_pos, 1), s,
                                 float("-inf"))
            m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
            p = gl.exp2(s * qk_scale - gl.expand_dims(m_new, 1))
            alpha = gl.exp2(m_i - m_new)
            l_i = l_i * alpha + gl.sum(p, axis=1)
            m_i = m_new
            acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
            p_op = gl.convert_layout(p.to(dtype), p_layout)
            acc = warpgroup_mma(p_op, v_smem.index(stage), acc)

        mbarrier.invalidate(q_bar)
        mbarrier.invalidate(kv_bar.index(0))
        mbarrier.invalidate(kv_bar.index(1))
        rows = q_row + gl.arange(0, BLOCK_M, layout=row_s)
        gl.store(LSE + rows, (m_i + gl.log2(l_i)) * 0.6931471805599453)
        acc = acc / gl.expand_dims(gl.convert_layout(l_i, row_o), 1)
        o_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, HEAD_DIM], o_desc.layout)
        o_smem.store(acc.to(dtype))
        fence_async_shared()
        tma_store(o_desc, [q_row, 0], o_smem)
        tma.store_wait(pendings=0)
