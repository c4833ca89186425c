"""The FlashAttention-3 backward's structure in Gluon (Triton 3.6): a warp-specialised dK/dV
.

One program owns 128 key rows of one head (two blocks of WG_ROWS = 64) and runs three
partitions (`gl.warp_specialize`, as `hopper_ws.py`'s forward):

* a **producer** (1 warp, 24 registers): loads the program's two K and two V blocks once, then
  streams the query tiles (BLOCK_M rows of Q and of dO) through a ring of STAGES shared-memory
  buffers with TMA; per stage a `ready` mbarrier (the copy engine completes it with the tile's
  bytes) and an `empty` one (both consumers arrive when they are done with the tile). Each Q/dO
  tile is loaded once for both warpgroups (the one-partition kernel, two programs of 64 key rows
  per SM, loads it twice);
* two **consumer warpgroups** (4 warps each, CONSUMER_REGS registers by setmaxnreg; the default
  partition is the first): each owns 64 key rows, holds its dK, dV accumulators (64 x d fp32)
  and runs, per query tile, transposed so that the key rows stay with the warps:

      S^T  = K Q^T;  P^T = exp2(S^T * scale*log2e - lse2)  (causal: keys past the query 0)
      dV  += P^T dO;  dP^T = V dO^T;  dS^T = P^T * (dP^T - D);  dK += dS^T Q

  on wgmma (P^T and dS^T from registers), lse and D = rowsum(dO * O) read with plain loads.
  OVERLAP as `hopper_bwd.py`'s: 0 every wgmma waited; 1 dP^T issued with S^T and retired after
  P^T's exponentials; 2 also P^T dO left running while dS^T is formed. FUSED_DQ:
  dS^T goes through shared memory instead, feeding dK += dS^T Q and dQ_part = dS K (two column
  halves of 32 registers), added to an fp32 dQ with atomics (FA2 / FA3's fused dQ; FA3 reduces
  with bulk TMA, which Gluon 3.6 does not offer). Causal: the second
  warpgroup's keys start 64 rows later, so it skips the program's first query tiles (it only
  releases their stage).

dK is scaled by sm_scale at the end; dK, dV stored with plain stores. Without FUSED_DQ, dQ is
a separate launch (`hopper_bwd._attn_bwd_dq_hopper` or the `tl` one). H_kv = H, N_q = N_k a multiple of
128, d 64 / 128, fp16 / bf16. Grid (N / 128, B * H); num_warps 4. The ring, its ready / empty
barriers and the tile step are `kernels.pipeline`'s.
"""
from __future__ import annotations

from .gluon_api import (
    HAVE_GLUON,
    fence_async_shared,
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
    mma_layout,
    operand_layout,
    probs_t,
    ring_acquire,
    ring_produce,
    ring_release,
    row_stats,
    store_rows,
    tma_load_tile,
    two_products,
)

__all__ = ["HAVE_GLUON", "WG_ROWS", "_attn_bwd_dkdv_ws"]

WG_ROWS = 64  # key rows per consumer warpgroup; a program has two

if HAVE_GLUON:
    @gluon.jit
    def _bwd_producer(q_desc, k_desc, v_desc, do_desc, k_smem, v_smem, q_smem, do_smem, kv_bar,
                      ready, empty, row0, start_n, first, n_tiles, STAGES: gl.constexpr):
        """TMA loads: the two K and V blocks once, then Q_i and dO_i into stage i % STAGES as
        soon as both consumers have released that stage (fresh mbarriers pass phase 1)."""
        ROWS: gl.constexpr = k_desc.block_type.shape[0]
        BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
        mbarrier.expect(kv_bar.index(0), 4 * k_desc.block_type.nbytes)
        for w in gl.static_range(2):
            tma_load_tile(k_desc, row0 + start_n + w * ROWS, kv_bar.index(0), k_smem, w, 1)
            tma_load_tile(v_desc, row0 + start_n + w * ROWS, kv_bar.index(0), v_smem, w, 1)
        for i in range(n_tiles):
            ring_produce(q_desc, do_desc, q_smem, do_smem, ready, empty, i,
                         row0 + (first + i) * BLOCK_M, STAGES, 1)

    @gluon.jit
    def _red_add(ptrs, vals, VEC: gl.constexpr):
        """*ptrs += vals in fp32, relaxed, no result: VEC 1 Triton's atomic_add (one red.f32 an
        element); 2 / 4 PTX red.global.add.v2 / .v4.f32 (sm_90) on a thread's consecutive
        elements, which the layout must make contiguous in memory."""
        if VEC == 1:
            gl.atomic_add(ptrs, vals, sem="relaxed")
        elif VEC == 2:
            gl.inline_asm_elementwise(
                "red.relaxed.gpu.global.add.v2.f32 [$2], {$4, $5};\n"
                "mov.b32 $0, 0;\nmov.b32 $1, 0;", "=r,=r,l,l,f,f", [ptrs.to(gl.int64), vals],
                dtype=gl.int32, is_pure=False, pack=2)
        else:
            gl.inline_asm_elementwise(
                "red.relaxed.gpu.global.add.v4.f32 [$4], {$8, $9, $10, $11};\n"
                "mov.b32 $0, 0;\nmov.b32 $1, 0;\nmov.b32 $2, 0;\nmov.b32 $3, 0;",
                "=r,=r,=r,=r,l,l,l,l,f,f,f,f", [ptrs.to(gl.int64), vals], dtype=gl.int32,
                is_pure=False, pack=4)

    @gluon.jit
    def _bwd_tile(dk, dv, i, wg: gl.constexpr, k_smem, v_smem, q_smem, do_smem, ready, empty,
                  LSE, DELTA, qk_scale, row0, first, k_pos, m_off, st_zero,
                  op_layout: gl.constexpr, STAGES: gl.constexpr, MASK: gl.constexpr,
                  OVERLAP: gl.constexpr, ds_smem, ds_bar, DQA, FUSED_DQ: gl.constexpr,
                  DQ_SPLIT: gl.constexpr):
        """One query tile (stage i % STAGES) into warpgroup wg's dK, dV; MASK: the causal mask
        (keys past the query give 0); the stage released when every wgmma reading it has
        retired."""
        BLOCK_M: gl.constexpr = q_smem.type.shape[1]
        dtype: gl.constexpr = q_smem.dtype
        start_m = (first + i) * BLOCK_M
        lse2, delta = row_stats(LSE, DELTA, row0, start_m + m_off)
        s = ring_acquire(ready, i, STAGES)
        if not FUSED_DQ:
            dk, dv = dkdv_step(dk, dv, k_smem, v_smem, wg, q_smem, do_smem, s, lse2, delta,
                               qk_scale, st_zero, k_pos, start_m, m_off, op_layout, MASK, True,
                               OVERLAP)
            ring_release(empty, i, STAGES)
        else:
            # dS^T through shared memory: the A operand of dK += dS^T Q and, transposed, of
            # this warpgroup's part of dQ = dS K, added to the fp32 dQ with atomics
            k_t = k_smem.index(wg)
            q_t = q_smem.index(s)
            do_t = do_smem.index(s)
            if OVERLAP:
                st, dpt_tok = two_products(k_smem, q_smem, v_smem, do_smem, wg, s, st_zero, 1)
            else:
                st = warpgroup_mma(k_t, q_t.permute((1, 0)), st_zero, use_acc=False)
            pt = probs_t(st, lse2, qk_scale, k_pos, start_m, m_off, MASK, True)
            dv_tok = warpgroup_mma(gl.convert_layout(pt.to(dtype), op_layout), do_t, dv,
                                   is_async=True)
            if OVERLAP:
                dpt = warpgroup_mma_wait(1, deps=[dpt_tok])
            else:
                dpt = warpgroup_mma(v_smem.index(wg), do_t.permute((1, 0)), st_zero,
                                    use_acc=False)
            HEAD_DIM: gl.constexpr = q_t.type.shape[1]
            HALF: gl.constexpr = HEAD_DIM // 2  # dQ column halves: 32 registers each
            dq_layout: gl.constexpr = mma_layout(4, HALF)
            dq_zero = gl.zeros([BLOCK_M, HALF], gl.float32, layout=dq_layout)
            if FUSED_DQ == 4:  # 4 contiguous columns a thread: one red.v4 each
                red_layout: gl.constexpr = gl.BlockedLayout([1, 4], [128 // HALF, HALF // 4],
                                                            [4, 1], [1, 0])
            else:
                red_layout: gl.constexpr = dq_layout
            rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, red_layout))
            cols = gl.arange(0, HALF, layout=gl.SliceLayout(0, red_layout))
            offs = gl.expand_dims((row0 + start_m + rows) * HEAD_DIM, 1) + gl.expand_dims(cols, 0)
            if DQ_SPLIT:
                # both warpgroups' dS^T (double-buffered by tile parity), then warpgroup wg
                # takes dQ's column half wg over all 128 keys: half the atomics
                buf = i % 2
                ds_t = ds_smem.index(2 * buf + wg)
                ds_t.store((pt * (dpt - gl.expand_dims(delta, 0))).to(dtype))
                fence_async_shared()
                thread_barrier()  # the warpgroup's dS^T rows all written
                dk_tok = warpgroup_mma(ds_t, q_t, dk, is_async=True)
                mbarrier.arrive(ds_bar.index(buf), count=1)
                mbarrier.wait(ds_bar.index(buf), (i // 2) & 1)  # the other half written
                dq_tok = warpgroup_mma(ds_smem.index(2 * buf).permute((1, 0)),
                                       k_smem.index(0).slice(wg * HALF, HALF, dim=1), dq_zero,
                                       use_acc=False, is_async=True)
                dq_tok = warpgroup_mma(ds_smem.index(2 * buf + 1).permute((1, 0)),
                                       k_smem.index(1).slice(wg * HALF, HALF, dim=1), dq_tok,
                                       is_async=True)
                dv, dk, dq = warpgroup_mma_wait(0, deps=[dv_tok, dk_tok, dq_tok])
                ring_release(empty, i, STAGES)
                _red_add(DQA + offs + wg * HALF, gl.convert_layout(dq, red_layout), FUSED_DQ)
            else:
                # this warpgroup's 64 keys: dQ_part = dS K_wg in two column halves
                ds_t = ds_smem.index(wg)
                ds_t.store((pt * (dpt - gl.expand_dims(delta, 0))).to(dtype))
                fence_async_shared()
                thread_barrier()  # the warpgroup's dS^T rows all written
                dk_tok = warpgroup_mma(ds_t, q_t, dk, is_async=True)
                dq_tok = warpgroup_mma(ds_t.permute((1, 0)), k_t.slice(0, HALF, dim=1),
                                       dq_zero, use_acc=False, is_async=True)
                dv, dk, dq = warpgroup_mma_wait(0, deps=[dv_tok, dk_tok, dq_tok])
                ring_release(empty, i, STAGES)
                _red_add(DQA + offs, gl.convert_layout(dq, red_layout), FUSED_DQ)
                dq = warpgroup_mma(ds_t.permute((1, 0)), k_t.slice(HALF, HALF, dim=1), dq_zero,
                                   use_acc=False)
                _red_add(DQA + offs + HALF, gl.convert_layout(dq, red_layout), FUSED_DQ)
        return dk, dv

    @gluon.jit
    def _bwd_consumer(wg: gl.constexpr, DK, DV, DQA, LSE, DELTA, k_smem, v_smem, q_smem,
                      do_smem, ds_smem, ds_bar, kv_bar, ready, empty, sm_scale, row0, start_n,
                      first, n_tiles, HEAD_DIM: gl.constexpr, STAGES: gl.constexpr,
                      CAUSAL: gl.constexpr, OVERLAP: gl.constexpr, FUSED_DQ: gl.constexpr,
                      DQ_SPLIT: gl.constexpr):
        """One warpgroup's 64 key rows: dK, dV over the program's query tiles, then stored."""
        ROWS: gl.constexpr = k_smem.type.shape[1]
        BLOCK_M: gl.constexpr = q_smem.type.shape[1]
        st_layout: gl.constexpr = mma_layout(4, BLOCK_M)
        acc_layout: gl.constexpr = mma_layout(4, HEAD_DIM)
        op_layout: gl.constexpr = operand_layout(acc_layout)
        col_st: gl.constexpr = gl.SliceLayout(0, st_layout)
        row_st: gl.constexpr = gl.SliceLayout(1, st_layout)
        qk_scale = sm_scale * 1.4426950408889634
        my_n = start_n + wg * ROWS
        dk = gl.zeros([ROWS, HEAD_DIM], gl.float32, layout=acc_layout)
        dv = gl.zeros([ROWS, HEAD_DIM], gl.float32, layout=acc_layout)
        st_zero = gl.zeros([ROWS, BLOCK_M], gl.float32, layout=st_layout)
        k_pos = my_n + gl.arange(0, ROWS, layout=row_st)
        m_off = gl.arange(0, BLOCK_M, layout=col_st)
        skip = 0
        if CAUSAL:
            skip = my_n // BLOCK_M - first  # query tiles wholly before this warpgroup's keys
        n_diag = 0
        if CAUSAL:  # the tiles that cross this warpgroup's diagonal: masked, in their own loop
            n_diag = ROWS // BLOCK_M
        if DQ_SPLIT:  # both warpgroups take every tile (dQ needs both dS^T halves): masked
            n_diag = n_diag + skip
            skip = 0
        for i in range(skip):  # release them (the other warpgroup uses them)
            ring_acquire(ready, i, STAGES)
            ring_release(empty, i, STAGES)
        mbarrier.wait(kv_bar.index(0), 0)
        for i in range(skip, skip + n_diag):
            dk, dv = _bwd_tile(dk, dv, i, wg, k_smem, v_smem, q_smem, do_smem, ready, empty,
                               LSE, DELTA, qk_scale, row0, first, k_pos, m_off, st_zero,
                               op_layout, STAGES, True, OVERLAP, ds_smem, ds_bar, DQA,
                               FUSED_DQ, DQ_SPLIT)
        for i in range(skip + n_diag, n_tiles):
            dk, dv = _bwd_tile(dk, dv, i, wg, k_smem, v_smem, q_smem, do_smem, ready, empty,
                               LSE, DELTA, qk_scale, row0, first, k_pos, m_off, st_zero,
                               op_layout, STAGES, False, OVERLAP, ds_smem, ds_bar, DQA,
                               FUSED_DQ, DQ_SPLIT)

        store_rows(DK, row0 + my_n, dk * sm_scale, HEAD_DIM, 0)
        store_rows(DV, row0 + my_n, dv, HEAD_DIM, 0)

    @gluon.jit
    def _bwd_consumer_wg1(DK, DV, DQA, LSE, DELTA, k_smem, v_smem, q_smem, do_smem, ds_smem,
                          ds_bar, kv_bar, ready, empty, sm_scale, row0, start_n, first, n_tiles,
                          HEAD_DIM: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                          OVERLAP: gl.constexpr, FUSED_DQ: gl.constexpr,
                          DQ_SPLIT: gl.constexpr):
        _bwd_consumer(1, DK, DV, DQA, LSE, DELTA, k_smem, v_smem, q_smem, do_smem, ds_smem,
                      ds_bar, kv_bar, ready, empty, sm_scale, row0, start_n, first, n_tiles,
                      HEAD_DIM, STAGES, CAUSAL, OVERLAP, FUSED_DQ, DQ_SPLIT)

    @gluon.jit
    def _attn_bwd_dkdv_ws(q_desc, k_desc, v_desc, do_desc, DK, DV, DQA, LSE, DELTA, sm_scale,
                          N, HEAD_DIM: gl.constexpr, STAGES: gl.constexpr,
                          CAUSAL: gl.constexpr, OVERLAP: gl.constexpr, FUSED_DQ: gl.constexpr,
                          DQ_SPLIT: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                          num_warps: gl.constexpr):
        """dK, dV of 128 key rows of one head from Q, dO, lse (natural log) and D; FUSED_DQ
        1 / 2 / 4: also this program's part of dQ / sm_scale added to the fp32 DQA (zeroed by
        the caller) with atomics of that many floats (`_red_add`; DQA unused with 0). Grid (N / 128, B * H); num_warps 4 (the first
        consumer warpgroup; the second and the producer are worker partitions). Causal:
        program 0 (the most query tiles) first."""
        ROWS: gl.constexpr = k_desc.block_type.shape[0]
        BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
        pid_n = gl.program_id(0)
        bh = gl.program_id(1)
        start_n = pid_n * (2 * ROWS)
        row0 = bh * N  # the head's first row in the (B*H*N, d) views
        if CAUSAL:
            first = start_n // BLOCK_M  # the first query tile that sees any of these keys
        else:
            first = 0
        n_tiles = N // BLOCK_M - first
        dtype: gl.constexpr = q_desc.dtype
        k_smem = alloc_ring(k_desc, 2)  # the two warpgroups' K and V blocks
        v_smem = alloc_ring(v_desc, 2)
        q_smem = alloc_ring(q_desc, STAGES)  # the streamed Q and dO tiles
        do_smem = alloc_ring(do_desc, STAGES)
        ds_smem = gl.allocate_shared_memory(  # each warpgroup's dS^T (FUSED_DQ)
            dtype, [2 + 2 * DQ_SPLIT, ROWS, BLOCK_M],
            gl.NVMMASharedLayout(swizzle_byte_width=min(128, 2 * BLOCK_M), element_bitwidth=16,
                                 rank=2))
        ds_bar = alloc_barriers(2, 2)  # DQ_SPLIT: both warpgroups' dS^T of a tile written
        kv_bar = alloc_barriers(1, 1)
        ready = alloc_barriers(STAGES, 1)  # the copy engine's: a tile's bytes landed
        empty = alloc_barriers(STAGES, 2)  # the consumers': both done with a stage
        gl.warp_specialize([
            (_bwd_consumer, (0, DK, DV, DQA, LSE, DELTA, k_smem, v_smem, q_smem, do_smem,
                             ds_smem, ds_bar, kv_bar, ready, empty, sm_scale, row0, start_n,
                             first, n_tiles, HEAD_DIM, STAGES, CAUSAL, OVERLAP, FUSED_DQ,
                             DQ_SPLIT)),
            (_bwd_consumer_wg1, (DK, DV, DQA, LSE, DELTA, k_smem, v_smem, q_smem, do_smem,
                                 ds_smem, ds_bar, kv_bar, ready, empty, sm_scale, row0,
                                 start_n, first, n_tiles, HEAD_DIM, STAGES, CAUSAL, OVERLAP,
                                 FUSED_DQ, DQ_SPLIT)),
            (_bwd_producer, (q_desc, k_desc, v_desc, do_desc, k_smem, v_smem, q_smem, do_smem,
                             kv_bar, ready, empty, row0, start_n, first, n_tiles, STAGES)),
        ], [4, 1], [CONSUMER_REGS, 24])
