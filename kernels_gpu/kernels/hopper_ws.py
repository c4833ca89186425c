"""The FlashAttention-3 schedule in Gluon (Triton 3.6) for Hopper: a warp-specialised forward
.

One program owns 128 query rows of one head and runs three partitions (`gl.warp_specialize`):

* a **producer** (1 warp, 24 registers): loads the program's two Q tiles once, then streams
  K and V through a ring of STAGES shared-memory buffers with TMA; per stage a `ready` mbarrier
  (the copy engine completes it with the tile's bytes) and an `empty` one (both consumers arrive
  when they are done with the tile), separately for K and for V;
* two **consumer warpgroups** (4 warps each; the default partition is the first): each owns 64
  query rows, runs S = Q K^T and O += P V on `warpgroup_mma` (wgmma) and its own online softmax.

SCHEDULE selects the consumers' loop:

* 0 ("ws"): per key tile, S = Q K^T (wait), softmax, O += P V (wait) — the one-partition
  kernel's loop, the loads now off the consumers' path;
* 1 ("lag"): FA3's intra-warpgroup overlap: P V of tile j-1 is issued together with Q K^T of
  tile j, and the softmax of S_j runs while that P V is still on the tensor cores (wgmma wait
  with one group outstanding), O rescaled after it lands;
* 2 ("pingpong"): "lag" plus FA3's ping-pong: the two warpgroups take turns issuing their two
  GEMMs (an mbarrier per warpgroup passes the turn), so that one's softmax runs beside the
  other's GEMMs.

Causal (N_q = N_k): the program's key tiles end at its last row; the tiles past its first row
are masked; the heaviest programs start first. N a multiple of 128, d 64 / 128, fp16 / bf16;
grouped heads (H = GROUP x H_kv): query head h reads K/V head h // GROUP. The `tl` kernels stay the reference path (the only one under the interpreter).
"""
from __future__ import annotations

from .gluon_api import (
    HAVE_GLUON,
    fence_async_shared,
    gl,
    gluon,
    mbarrier,
    tma,
    tma_load,
    tma_store,
    warpgroup_mma,
    warpgroup_mma_wait,
)

__all__ = ["HAVE_GLUON", "SCHEDULES", "WG_ROWS", "_attn_fwd_ws"]

SCHEDULES = {"ws": 0, "lag": 1, "pingpong": 2}
WG_ROWS = 64  # query rows per consumer warpgroup; a program has two

if HAVE_GLUON:
    @gluon.jit
    def _producer(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready,
                  k_empty, v_empty, q_row, kv_row, n_tiles, BLOCK_N: gl.constexpr,
                  STAGES: gl.constexpr, CHUNKS: gl.constexpr):
        """TMA loads: the two Q tiles once, then K_j and V_j into stage j % STAGES as soon as
        both consumers have released that stage (fresh mbarriers pass a wait on phase 1). A
        tile is CHUNKS boxes of the descriptor's columns side by side (d 192: three of 64),
        buffer w * CHUNKS + c (stage s * CHUNKS + c) holding chunk c."""
        ROWS: gl.constexpr = q_desc.block_type.shape[0]
        COLS: gl.constexpr = q_desc.block_type.shape[1]
        for w in gl.static_range(2):
            mbarrier.expect(q_bar.index(w), CHUNKS * q_desc.block_type.nbytes)
            for c in gl.static_range(CHUNKS):
                tma_load(q_desc, [q_row + w * ROWS, c * COLS], q_bar.index(w),
                         q_smem.index(w * CHUNKS + c))
        for j in range(n_tiles):
            s = j % STAGES
            ph = (j // STAGES) & 1
            mbarrier.wait(k_empty.index(s), ph ^ 1)
            mbarrier.expect(k_ready.index(s), CHUNKS * k_desc.block_type.nbytes)
            for c in gl.static_range(CHUNKS):
                tma_load(k_desc, [kv_row + j * BLOCK_N, c * COLS], k_ready.index(s),
                         k_smem.index(s * CHUNKS + c))
            mbarrier.wait(v_empty.index(s), ph ^ 1)
            mbarrier.expect(v_ready.index(s), CHUNKS * v_desc.block_type.nbytes)
            for c in gl.static_range(CHUNKS):
                tma_load(v_desc, [kv_row + j * BLOCK_N, c * COLS], v_ready.index(s),
                         v_smem.index(s * CHUNKS + c))

    @gluon.jit
    def _softmax_step(s, m_i, l_i, qk_scale, j, first_row, q_pos, k_off,
                      BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
        """Mask (causal, tiles past the program's first row), the new row max, P (exp2) and
        the rescale factor alpha; l updated."""
        if CAUSAL:
            if (j + 1) * BLOCK_N > first_row:
                k_pos = j * BLOCK_N + k_off
                s = gl.where(gl.expand_dims(k_pos, 0) <= gl.expand_dims(q_pos, 1), s,
                             float("-inf"))
        m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
        p = gl.exp2(s * qk_scale - gl.expand_dims(m_new, 1))
        alpha = gl.exp2(m_i - m_new)
        l_i = l_i * alpha + gl.sum(p, axis=1)
        return p, alpha, m_new, l_i

    @gluon.jit
    def _consumer(wg: gl.constexpr, o_desc, LSE, q_smem, k_smem, v_smem, q_bar, k_ready,
                  v_ready, k_empty, v_empty, turn, qk_scale, q_row, first_row, n_tiles,
                  BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr, STAGES: gl.constexpr,
                  CAUSAL: gl.constexpr, SCHEDULE: gl.constexpr):
        """One warpgroup's 64 rows: the online-softmax loop over the key tiles, then O / l
        through shared memory (its own Q buffer) and a TMA store, lse with plain stores."""
        ROWS: gl.constexpr = q_smem.type.shape[1]
        dtype: gl.constexpr = o_desc.dtype
        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
        o_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_DIM, 16])
        p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout,
                                                     k_width=2)
        row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
        row_o: gl.constexpr = gl.SliceLayout(1, o_layout)
        my_row = first_row + wg * ROWS
        q_pos = my_row + gl.arange(0, ROWS, layout=row_s)
        k_off = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        q = q_smem.index(wg)
        m_i = gl.full([ROWS], float("-inf"), gl.float32, layout=row_s)
        l_i = gl.full([ROWS], 0.0, gl.float32, layout=row_s)
        acc = gl.zeros([ROWS, HEAD_DIM], gl.float32, layout=o_layout)
        s_zero = gl.zeros([ROWS, BLOCK_N], gl.float32, layout=s_layout)
        mbarrier.wait(q_bar.index(wg), 0)

        if SCHEDULE == 0:
            for j in range(n_tiles):
                st = j % STAGES
                ph = (j // STAGES) & 1
                mbarrier.wait(k_ready.index(st), ph)
                s = warpgroup_mma(q, k_smem.index(st).permute((1, 0)), s_zero, use_acc=False)
                mbarrier.arrive(k_empty.index(st), count=1)
                p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, j, first_row, q_pos,
                                                   k_off, BLOCK_N, CAUSAL)
                acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
                p_op = gl.convert_layout(p.to(dtype), p_layout)
                mbarrier.wait(v_ready.index(st), ph)
                acc = warpgroup_mma(p_op, v_smem.index(st), acc)
                mbarrier.arrive(v_empty.index(st), count=1)
        else:
            # tile 0: S_0 alone (nothing to multiply with V yet)
            if SCHEDULE == 2:
                mbarrier.wait(turn.index(wg), wg ^ 1)
            mbarrier.wait(k_ready.index(0), 0)
            s = warpgroup_mma(q, k_smem.index(0).permute((1, 0)), s_zero, use_acc=False)
            if SCHEDULE == 2:
                mbarrier.arrive(turn.index(1 - wg), count=1)
            mbarrier.arrive(k_empty.index(0), count=1)
            p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, 0, first_row, q_pos,
                                               k_off, BLOCK_N, CAUSAL)
            p_op = gl.convert_layout(p.to(dtype), p_layout)
            for j in range(1, n_tiles):
                st = j % STAGES
                ph = (j // STAGES) & 1
                pst = (j - 1) % STAGES
                pph = ((j - 1) // STAGES) & 1
                if SCHEDULE == 2:
                    mbarrier.wait(turn.index(wg), (j & 1) ^ wg ^ 1)
                mbarrier.wait(k_ready.index(st), ph)
                s_tok = warpgroup_mma(q, k_smem.index(st).permute((1, 0)), s_zero,
                                      use_acc=False, is_async=True)
                mbarrier.wait(v_ready.index(pst), pph)
                o_tok = warpgroup_mma(p_op, v_smem.index(pst), acc, is_async=True)
                if SCHEDULE == 2:
                    mbarrier.arrive(turn.index(1 - wg), count=1)
                s = warpgroup_mma_wait(1, deps=[s_tok])  # S_j done; P_{j-1} V still running
                mbarrier.arrive(k_empty.index(st), count=1)
                p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, j, first_row, q_pos,
                                                   k_off, BLOCK_N, CAUSAL)
                p_op_next = gl.convert_layout(p.to(dtype), p_layout)
                acc = warpgroup_mma_wait(0, deps=[o_tok])
                mbarrier.arrive(v_empty.index(pst), count=1)
                acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
                p_op = p_op_next
            lst = (n_tiles - 1) % STAGES
            mbarrier.wait(v_ready.index(lst), ((n_tiles - 1) // STAGES) & 1)
            acc = warpgroup_mma(p_op, v_smem.index(lst), acc)
            mbarrier.arrive(v_empty.index(lst), count=1)

        rows = q_row + wg * ROWS + gl.arange(0, ROWS, layout=row_s)
        gl.store(LSE + rows, (m_i + gl.log2(l_i)) * 0.6931471805599453)
        acc = acc / gl.expand_dims(gl.convert_layout(l_i, row_o), 1)
        q.store(acc.to(dtype))  # the Q tile is dead: every wgmma reading it has completed
        fence_async_shared()
        tma_store(o_desc, [q_row + wg * ROWS, 0], q)
        tma.store_wait(pendings=0)

    @gluon.jit
    def _consumer_wg1(o_desc, LSE, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty,
                      v_empty, turn, qk_scale, q_row, first_row, n_tiles,
                      BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr, STAGES: gl.constexpr,
                      CAUSAL: gl.constexpr, SCHEDULE: gl.constexpr):
        _consumer(1, o_desc, LSE, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty,
                  v_empty, turn, qk_scale, q_row, first_row, n_tiles, BLOCK_N, HEAD_DIM,
                  STAGES, CAUSAL, SCHEDULE)

    @gluon.jit
    def _chunks_qk(q_smem, qb, k_smem, kb, zero):
        """S = sum_c Q_c K_c^T over the three 64-column chunks: three wgmma chained into one
        accumulator, left running (a token; three wgmma groups)."""
        acc = warpgroup_mma(q_smem.index(qb), k_smem.index(kb).permute((1, 0)), zero,
                            use_acc=False, is_async=True)
        acc = warpgroup_mma(q_smem.index(qb + 1), k_smem.index(kb + 1).permute((1, 0)), acc,
                            is_async=True)
        return warpgroup_mma(q_smem.index(qb + 2), k_smem.index(kb + 2).permute((1, 0)), acc,
                             is_async=True)

    @gluon.jit
    def _consumer3(wg: gl.constexpr, o_desc, LSE, q_smem, k_smem, v_smem, q_bar, k_ready,
                   v_ready, k_empty, v_empty, turn, qk_scale, q_row, first_row, n_tiles,
                   BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                   SCHEDULE: gl.constexpr):
        """`_consumer` at d 192 with the head dim as three 64-column chunks (every Gluon tensor
        has power-of-two dims): S from three chained wgmma, O as three (64, 64) fp32
        accumulators, O_c += P V_c; the same schedules; O stored chunk by chunk through the
        warpgroup's three Q buffers."""
        ROWS: gl.constexpr = q_smem.type.shape[1]
        dtype: gl.constexpr = o_desc.dtype
        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
        o_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
        p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout,
                                                     k_width=2)
        row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
        row_o: gl.constexpr = gl.SliceLayout(1, o_layout)
        qb: gl.constexpr = 3 * wg
        my_row = first_row + wg * ROWS
        q_pos = my_row + gl.arange(0, ROWS, layout=row_s)
        k_off = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        m_i = gl.full([ROWS], float("-inf"), gl.float32, layout=row_s)
        l_i = gl.full([ROWS], 0.0, gl.float32, layout=row_s)
        o0 = gl.zeros([ROWS, 64], gl.float32, layout=o_layout)
        o1 = gl.zeros([ROWS, 64], gl.float32, layout=o_layout)
        o2 = gl.zeros([ROWS, 64], gl.float32, layout=o_layout)
        s_zero = gl.zeros([ROWS, BLOCK_N], gl.float32, layout=s_layout)
        mbarrier.wait(q_bar.index(wg), 0)

        if SCHEDULE == 0:
            for j in range(n_tiles):
                st = j % STAGES
                ph = (j // STAGES) & 1
                mbarrier.wait(k_ready.index(st), ph)
                s = warpgroup_mma_wait(0, deps=[_chunks_qk(q_smem, qb, k_smem, 3 * st, s_zero)])
                mbarrier.arrive(k_empty.index(st), count=1)
                p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, j, first_row, q_pos,
                                                   k_off, BLOCK_N, CAUSAL)
                a = gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
                p_op = gl.convert_layout(p.to(dtype), p_layout)
                mbarrier.wait(v_ready.index(st), ph)
                o0 = warpgroup_mma(p_op, v_smem.index(3 * st), o0 * a, is_async=True)
                o1 = warpgroup_mma(p_op, v_smem.index(3 * st + 1), o1 * a, is_async=True)
                o2 = warpgroup_mma(p_op, v_smem.index(3 * st + 2), o2 * a, is_async=True)
                o0, o1, o2, p_op = warpgroup_mma_wait(0, deps=[o0, o1, o2, p_op])
                mbarrier.arrive(v_empty.index(st), count=1)
        else:
            if SCHEDULE == 2:
                mbarrier.wait(turn.index(wg), wg ^ 1)
            mbarrier.wait(k_ready.index(0), 0)
            s_tok = _chunks_qk(q_smem, qb, k_smem, 0, s_zero)
            if SCHEDULE == 2:
                mbarrier.arrive(turn.index(1 - wg), count=1)
            s = warpgroup_mma_wait(0, deps=[s_tok])
            mbarrier.arrive(k_empty.index(0), count=1)
            p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, 0, first_row, q_pos,
                                               k_off, BLOCK_N, CAUSAL)
            p_op = gl.convert_layout(p.to(dtype), p_layout)
            for j in range(1, n_tiles):
                st = j % STAGES
                ph = (j // STAGES) & 1
                pst = (j - 1) % STAGES
                pph = ((j - 1) // STAGES) & 1
                if SCHEDULE == 2:
                    mbarrier.wait(turn.index(wg), (j & 1) ^ wg ^ 1)
                mbarrier.wait(k_ready.index(st), ph)
                s_tok = _chunks_qk(q_smem, qb, k_smem, 3 * st, s_zero)
                mbarrier.wait(v_ready.index(pst), pph)
                o0 = warpgroup_mma(p_op, v_smem.index(3 * pst), o0, is_async=True)
                o1 = warpgroup_mma(p_op, v_smem.index(3 * pst + 1), o1, is_async=True)
                o2 = warpgroup_mma(p_op, v_smem.index(3 * pst + 2), o2, is_async=True)
                if SCHEDULE == 2:
                    mbarrier.arrive(turn.index(1 - wg), count=1)
                s = warpgroup_mma_wait(3, deps=[s_tok])  # S_j done; P_{j-1} V still running
                mbarrier.arrive(k_empty.index(st), count=1)
                p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, j, first_row, q_pos,
                                                   k_off, BLOCK_N, CAUSAL)
                p_op_next = gl.convert_layout(p.to(dtype), p_layout)
                o0, o1, o2, p_op = warpgroup_mma_wait(0, deps=[o0, o1, o2, p_op])
                mbarrier.arrive(v_empty.index(pst), count=1)
                a = gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
                o0 = o0 * a
                o1 = o1 * a
                o2 = o2 * a
                p_op = p_op_next
            lst = (n_tiles - 1) % STAGES
            mbarrier.wait(v_ready.index(lst), ((n_tiles - 1) // STAGES) & 1)
            o0 = warpgroup_mma(p_op, v_smem.index(3 * lst), o0, is_async=True)
            o1 = warpgroup_mma(p_op, v_smem.index(3 * lst + 1), o1, is_async=True)
            o2 = warpgroup_mma(p_op, v_smem.index(3 * lst + 2), o2, is_async=True)
            o0, o1, o2, p_op = warpgroup_mma_wait(0, deps=[o0, o1, o2, p_op])
            mbarrier.arrive(v_empty.index(lst), count=1)

        rows = q_row + wg * ROWS + gl.arange(0, ROWS, layout=row_s)
        gl.store(LSE + rows, (m_i + gl.log2(l_i)) * 0.6931471805599453)
        inv = gl.expand_dims(gl.convert_layout(1.0 / l_i, row_o), 1)
        # the Q buffers are dead: every wgmma reading them has completed
        q_smem.index(qb).store((o0 * inv).to(dtype))
        q_smem.index(qb + 1).store((o1 * inv).to(dtype))
        q_smem.index(qb + 2).store((o2 * inv).to(dtype))
        fence_async_shared()
        for c in gl.static_range(3):
            tma_store(o_desc, [q_row + wg * ROWS, c * 64], q_smem.index(qb + c))
        tma.store_wait(pendings=0)

    @gluon.jit
    def _consumer3_wg1(o_desc, LSE, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty,
                       v_empty, turn, qk_scale, q_row, first_row, n_tiles,
                       BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                       SCHEDULE: gl.constexpr):
        _consumer3(1, o_desc, LSE, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty,
                   v_empty, turn, qk_scale, q_row, first_row, n_tiles, BLOCK_N, STAGES, CAUSAL,
                   SCHEDULE)

    @gluon.jit
    def _attn_fwd_ws(q_desc, k_desc, v_desc, o_desc, LSE, qk_scale, N, GROUP,
                     BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr, STAGES: gl.constexpr,
                     CAUSAL: gl.constexpr, SCHEDULE: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                     num_warps: gl.constexpr):
        """O = softmax(Q K^T * scale) V and lse (natural log) for 128 query rows of one head.
        qk_scale = sm_scale * log2(e); GROUP = H / H_kv. Grid (N / 128, B * H); num_warps 4 (the first consumer
        warpgroup; the second and the producer are worker partitions)."""
        ROWS: gl.constexpr = q_desc.block_type.shape[0]
        pid_m = gl.program_id(0)
        if CAUSAL:
            pid_m = gl.num_programs(0) - 1 - pid_m
        bh = gl.program_id(1)
        first_row = pid_m * (2 * ROWS)
        q_row = bh * N + first_row
        kv_row = (bh // GROUP) * N  # bh = b H + h; its K/V head: b H_kv + h // GROUP
        if CAUSAL:
            n_tiles = (first_row + 2 * ROWS) // BLOCK_N
        else:
            n_tiles = N // BLOCK_N
        dtype: gl.constexpr = q_desc.dtype
        CHUNKS: gl.constexpr = 3 if HEAD_DIM == 192 else 1  # d 192: three 64-column boxes
        COLS: gl.constexpr = HEAD_DIM // CHUNKS
        q_smem = gl.allocate_shared_memory(dtype, [2 * CHUNKS, ROWS, COLS], q_desc.layout)
        k_smem = gl.allocate_shared_memory(dtype, [STAGES * CHUNKS, BLOCK_N, COLS],
                                           k_desc.layout)
        v_smem = gl.allocate_shared_memory(dtype, [STAGES * CHUNKS, BLOCK_N, COLS],
                                           v_desc.layout)
        q_bar = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for w in gl.static_range(2):
            mbarrier.init(q_bar.index(w), count=1)
            mbarrier.init(turn.index(w), count=1)
        for i in gl.static_range(STAGES):
            mbarrier.init(k_ready.index(i), count=1)
            mbarrier.init(v_ready.index(i), count=1)
            mbarrier.init(k_empty.index(i), count=2)
            mbarrier.init(v_empty.index(i), count=2)
        # ping-pong (SCHEDULE 2): warpgroup w waits on turn[w] before issuing its GEMMs and
        # arrives on the other's after; turn[0] starts free (a fresh mbarrier passes phase 1)
        if CHUNKS == 1:
            gl.warp_specialize([
                (_consumer, (0, o_desc, LSE, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready,
                             k_empty, v_empty, turn, qk_scale, q_row, first_row, n_tiles,
                             BLOCK_N, HEAD_DIM, STAGES, CAUSAL, SCHEDULE)),
                (_consumer_wg1, (o_desc, LSE, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready,
                                 k_empty, v_empty, turn, qk_scale, q_row, first_row, n_tiles,
                                 BLOCK_N, HEAD_DIM, STAGES, CAUSAL, SCHEDULE)),
                (_producer, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, k_ready,
                             v_ready, k_empty, v_empty, q_row, kv_row, n_tiles, BLOCK_N, STAGES,
                             CHUNKS)),
            ], [4, 1], [CONSUMER_REGS, 24])
        else:
            gl.warp_specialize([
                (_consumer3, (0, o_desc, LSE, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready,
                              k_empty, v_empty, turn, qk_scale, q_row, first_row, n_tiles,
                              BLOCK_N, STAGES, CAUSAL, SCHEDULE)),
                (_consumer3_wg1, (o_desc, LSE, q_smem, k_smem, v_smem, q_bar, k_ready,
                                  v_ready, k_empty, v_empty, turn, qk_scale, q_row, first_row,
                                  n_tiles, BLOCK_N, STAGES, CAUSAL, SCHEDULE)),
                (_producer, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, k_ready,
                             v_ready, k_empty, v_empty, q_row, kv_row, n_tiles, BLOCK_N, STAGES,
                             CHUNKS)),
            ], [4, 1], [CONSUMER_REGS, 24])
