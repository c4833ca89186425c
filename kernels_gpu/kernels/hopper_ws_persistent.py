"""The warp-specialised forward (kernels.hopper_ws) as a persistent kernel: one program per SM
walks the (query tile, head) work items, so that a tile's prologue and epilogue run under its
neighbours' matrix work instead of alone.

Per work item the partitions are those of `_attn_fwd_ws` (a TMA producer warp; two consumer
warpgroups of 64 query rows, schedules "ws", "lag" and "pingpong"), with three changes:

* the K/V ring and the ping-pong turns run on one counter over all the program's items (a
  stage's phase continues from item to item);
* Q has a `ready` and an `empty` mbarrier per warpgroup: the producer loads item t + 1's Q as
  soon as each warpgroup's last Q K^T of item t has retired (its last P V and its epilogue
  still running), and its first K/V tiles behind it;
* O leaves through shared memory of its own and a TMA store that is waited only before the
  buffer is written again (the next item's epilogue).

Work order: non-causal, item t is query tile t % (N / 128) of head t // (N / 128) (the tiles
of one head, and so of one K/V head, run side by side); causal, the heaviest tiles first
across all heads (item t: tile N/128 - 1 - t // BH of head t % BH), so that the static
round-robin split (program p takes items p, p + P, ...) stays balanced. Causal (N_q = N_k)
or not, grouped heads (query head h reads K/V head h // GROUP), d 64 / 128, N a multiple of
128, fp16 / bf16.
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
from .hopper_ws import _softmax_step
from .pipeline import (
    alloc_barriers,
    mma_layout,
    operand_layout,
    ring_acquire,
    ring_produce_one,
    ring_release,
)

__all__ = ["HAVE_GLUON", "_attn_fwd_ws_persistent"]

if HAVE_GLUON:
    @gluon.jit
    def _item(t, m_tiles, BH, N, GROUP, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
        """Work item t: (its first query row in the head, Q's row in the (B·H·N, d) view, the
        K/V head's first row, its key tiles)."""
        if CAUSAL:
            m = m_tiles - 1 - t // BH
            bh = t % BH
            n_tiles = (m + 1) * 128 // BLOCK_N
        else:
            m = t % m_tiles
            bh = t // m_tiles
            n_tiles = N // BLOCK_N
        first_row = m * 128
        return first_row, bh * N + first_row, (bh // GROUP) * N, n_tiles

    @gluon.jit
    def _producer_p(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_ready, q_empty, k_ready,
                    v_ready, k_empty, v_empty, N, GROUP, BH, BLOCK_N: gl.constexpr,
                    STAGES: gl.constexpr, CAUSAL: gl.constexpr):
        """Per item: each warpgroup's Q once its previous Q is released, then K_j and V_j
        through the ring (its counter running over the items)."""
        ROWS: gl.constexpr = q_desc.block_type.shape[0]
        m_tiles = N // 128
        it = 0
        tc = 0
        for t in range(gl.program_id(0), m_tiles * BH, gl.num_programs(0)):
            first_row, q_row, kv_row, n_tiles = _item(t, m_tiles, BH, N, GROUP, BLOCK_N, CAUSAL)
            for w in gl.static_range(2):
                mbarrier.wait(q_empty.index(w), (tc & 1) ^ 1)
                mbarrier.expect(q_ready.index(w), q_desc.block_type.nbytes)
                tma_load(q_desc, [q_row + w * ROWS, 0], q_ready.index(w), q_smem.index(w))
            for j in range(n_tiles):
                ring_produce_one(k_desc, k_smem, k_ready, k_empty, it + j, kv_row + j * BLOCK_N,
                                 STAGES)
                ring_produce_one(v_desc, v_smem, v_ready, v_empty, it + j, kv_row + j * BLOCK_N,
                                 STAGES)
            it += n_tiles
            tc += 1

    @gluon.jit
    def _consumer_p(wg: gl.constexpr, o_desc, LSE, q_smem, o_smem, k_smem, v_smem, q_ready,
                    q_empty, k_ready, v_ready, k_empty, v_empty, turn, qk_scale, N, GROUP, BH,
                    BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr, STAGES: gl.constexpr,
                    CAUSAL: gl.constexpr, SCHEDULE: gl.constexpr):
        """One warpgroup's 64 rows of every item of the program (`_consumer`'s loop)."""
        ROWS: gl.constexpr = q_smem.type.shape[1]
        dtype: gl.constexpr = o_desc.dtype
        s_layout: gl.constexpr = mma_layout(4, BLOCK_N)
        o_layout: gl.constexpr = mma_layout(4, HEAD_DIM)
        p_layout: gl.constexpr = operand_layout(o_layout)
        row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
        row_o: gl.constexpr = gl.SliceLayout(1, o_layout)
        k_off = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        q = q_smem.index(wg)
        o_buf = o_smem.index(wg)
        s_zero = gl.zeros([ROWS, BLOCK_N], gl.float32, layout=s_layout)
        m_tiles = N // 128
        it = 0
        tc = 0
        for t in range(gl.program_id(0), m_tiles * BH, gl.num_programs(0)):
            first_row, q_row, kv_row, n_tiles = _item(t, m_tiles, BH, N, GROUP, BLOCK_N, CAUSAL)
            q_pos = first_row + wg * ROWS + gl.arange(0, ROWS, layout=row_s)
            m_i = gl.full([ROWS], float("-inf"), gl.float32, layout=row_s)
            l_i = gl.full([ROWS], 0.0, gl.float32, layout=row_s)
            acc = gl.zeros([ROWS, HEAD_DIM], gl.float32, layout=o_layout)
            mbarrier.wait(q_ready.index(wg), tc & 1)
            if SCHEDULE == 0:
                for j in range(n_tiles):
                    st = ring_acquire(k_ready, it + j, STAGES)
                    s = warpgroup_mma(q, k_smem.index(st).permute((1, 0)), s_zero,
                                      use_acc=False)
                    ring_release(k_empty, it + j, STAGES)
                    p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, j, first_row,
                                                       q_pos, k_off, BLOCK_N, CAUSAL)
                    acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
                    p_op = gl.convert_layout(p.to(dtype), p_layout)
                    ring_acquire(v_ready, it + j, STAGES)
                    acc = warpgroup_mma(p_op, v_smem.index(st), acc)
                    ring_release(v_empty, it + j, STAGES)
                mbarrier.arrive(q_empty.index(wg), count=1)
            else:
                if SCHEDULE == 2:
                    mbarrier.wait(turn.index(wg), (it & 1) ^ wg ^ 1)
                st = ring_acquire(k_ready, it, STAGES)
                s = warpgroup_mma(q, k_smem.index(st).permute((1, 0)), s_zero, use_acc=False)
                if SCHEDULE == 2:
                    mbarrier.arrive(turn.index(1 - wg), count=1)
                ring_release(k_empty, it, STAGES)
                p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, 0, first_row, q_pos,
                                                   k_off, BLOCK_N, CAUSAL)
                p_op = gl.convert_layout(p.to(dtype), p_layout)
                for j in range(1, n_tiles):
                    g = it + j
                    if SCHEDULE == 2:
                        mbarrier.wait(turn.index(wg), (g & 1) ^ wg ^ 1)
                    st = ring_acquire(k_ready, g, STAGES)
                    s_tok = warpgroup_mma(q, k_smem.index(st).permute((1, 0)), s_zero,
                                          use_acc=False, is_async=True)
                    pst = ring_acquire(v_ready, g - 1, STAGES)
                    o_tok = warpgroup_mma(p_op, v_smem.index(pst), acc, is_async=True)
                    if SCHEDULE == 2:
                        mbarrier.arrive(turn.index(1 - wg), count=1)
                    s = warpgroup_mma_wait(1, deps=[s_tok])  # S_j done; P_{j-1} V running
                    ring_release(k_empty, g, STAGES)
                    p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, j, first_row,
                                                       q_pos, k_off, BLOCK_N, CAUSAL)
                    p_op_next = gl.convert_layout(p.to(dtype), p_layout)
                    acc = warpgroup_mma_wait(0, deps=[o_tok])
                    ring_release(v_empty, g - 1, STAGES)
                    acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
                    p_op = p_op_next
                mbarrier.arrive(q_empty.index(wg), count=1)  # every Q K^T of the item retired
                last = it + n_tiles - 1
                lst = ring_acquire(v_ready, last, STAGES)
                acc = warpgroup_mma(p_op, v_smem.index(lst), acc)
                ring_release(v_empty, last, STAGES)
            rows = q_row + wg * ROWS + gl.arange(0, ROWS, layout=row_s)
            gl.store(LSE + rows, (m_i + gl.log2(l_i)) * 0.6931471805599453)
            acc = acc / gl.expand_dims(gl.convert_layout(l_i, row_o), 1)
            tma.store_wait(pendings=0)  # the previous item's O has left the buffer
            o_buf.store(acc.to(dtype))
            fence_async_shared()
            tma_store(o_desc, [q_row + wg * ROWS, 0], o_buf)
            it += n_tiles
            tc += 1
        tma.store_wait(pendings=0)

    @gluon.jit
    def _consumer_p_wg1(o_desc, LSE, q_smem, o_smem, k_smem, v_smem, q_ready, q_empty, k_ready,
                        v_ready, k_empty, v_empty, turn, qk_scale, N, GROUP, BH,
                        BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr, STAGES: gl.constexpr,
                        CAUSAL: gl.constexpr, SCHEDULE: gl.constexpr):
        _consumer_p(1, o_desc, LSE, q_smem, o_smem, k_smem, v_smem, q_ready, q_empty, k_ready,
                    v_ready, k_empty, v_empty, turn, qk_scale, N, GROUP, BH, BLOCK_N, HEAD_DIM,
                    STAGES, CAUSAL, SCHEDULE)

    @gluon.jit
    def _attn_fwd_ws_persistent(q_desc, k_desc, v_desc, o_desc, LSE, qk_scale, N, GROUP, BH,
                                BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr,
                                STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                                SCHEDULE: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                                num_warps: gl.constexpr):
        """O = softmax(Q K^T * scale) V and lse (natural log) for every 128-row query tile of
        the BH = B * H heads; qk_scale = sm_scale * log2(e), GROUP = H / H_kv. Grid (P,), P at
        most the SMs; num_warps 4 (the first consumer warpgroup)."""
        ROWS: gl.constexpr = q_desc.block_type.shape[0]
        dtype: gl.constexpr = q_desc.dtype
        q_smem = gl.allocate_shared_memory(dtype, [2, ROWS, HEAD_DIM], q_desc.layout)
        o_smem = gl.allocate_shared_memory(dtype, [2, ROWS, HEAD_DIM], o_desc.layout)
        k_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], k_desc.layout)
        v_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], v_desc.layout)
        q_ready = alloc_barriers(2, 1)
        q_empty = alloc_barriers(2, 1)
        turn = alloc_barriers(2, 1)
        k_ready = alloc_barriers(STAGES, 1)
        v_ready = alloc_barriers(STAGES, 1)
        k_empty = alloc_barriers(STAGES, 2)
        v_empty = alloc_barriers(STAGES, 2)
        gl.warp_specialize([
            (_consumer_p, (0, o_desc, LSE, q_smem, o_smem, k_smem, v_smem, q_ready, q_empty,
                           k_ready, v_ready, k_empty, v_empty, turn, qk_scale, N, GROUP, BH,
                           BLOCK_N, HEAD_DIM, STAGES, CAUSAL, SCHEDULE)),
            (_consumer_p_wg1, (o_desc, LSE, q_smem, o_smem, k_smem, v_smem, q_ready, q_empty,
                               k_ready, v_ready, k_empty, v_empty, turn, qk_scale, N, GROUP,
                               BH, BLOCK_N, HEAD_DIM, STAGES, CAUSAL, SCHEDULE)),
            (_producer_p, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_ready, q_empty,
                           k_ready, v_ready, k_empty, v_empty, N, GROUP, BH, BLOCK_N, STAGES,
                           CAUSAL)),
        ], [4, 1], [CONSUMER_REGS, 24])
