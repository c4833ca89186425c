"""The pieces every Gluon Hopper kernel builds its pipeline from: one place for each.

A tile moves through a **ring**: STAGES shared-memory slots per tensor (a slot holds CHUNKS
column boxes of one tile; CHUNKS 1 but for the chunked d 192 kernels), one mbarrier per slot
that the copy engine completes with the tile's bytes. Tile i sits in stage i % STAGES and its
barrier's phase is (i // STAGES) & 1 (`stage_phase`).

* one partition (`ring_fill`, `ring_refill`, `ring_wait`; `query_tile` the two with the
  tile's lse and D for a program holding keys, `key_tile` for one holding queries): the first STAGES - 1 tiles loaded up front;
  per tile a CTA barrier (every warp is done with the stage the next load overwrites), the
  load of tile i + STAGES - 1 issued into it, then the wait for tile i;
* warp-specialised (`ring_produce`, or `ring_produce_one` where each tensor has its own
  barriers; `ring_acquire`, `ring_release`): a producer warp waits on
  the stage's `empty` barrier (the consumers' arrivals; a fresh mbarrier passes phase 1) before
  loading into it and completing its `ready` one; each consumer waits on `ready` and arrives
  on `empty` when every wgmma reading the stage has retired.

A program's rows: `program_rows` (its block and its head's first row). The wgmma side:
`mma_layout` (the accumulator layout of a wgmma of N columns over the
program's warps), `operand_layout` (a register A operand of it), `chain` (a product summed
over the column chunks, left running), `probs_t` / `probs` (the backward's P^T and P from the
forward's lse, causal mask on the tiles that cross the diagonal), `dkdv_step` (one streamed
query tile into dK, dV: S^T, P^T, dV += P^T dO, dP^T, dS^T, dK += dS^T Q in the OVERLAP
schedules), `store_rows` (an fp32 accumulator cast and stored by plain stores) and
`tma_store_tile` (through shared memory and a TMA store); the forward's `mask_scores` and
`online_softmax` (the running max, P, the rescale factor, the running sum). Every helper
is a `@gluon.jit` function: the compiler inlines it, so a kernel built from them compiles to
the code it had written out.
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
    warpgroup_mma_wait,
)

__all__ = ["HAVE_GLUON", "LOG2E", "mma_layout", "operand_layout", "program_rows", "alloc_ring",
           "alloc_barriers", "invalidate_barriers", "stage_phase", "tma_load_tile",
           "tma_load_pair", "tma_store_tile", "ring_fill", "ring_refill", "ring_wait", "query_tile", "key_tile",
           "ring_produce", "ring_produce_one", "ring_acquire", "ring_release", "chain", "two_products", "row_stats", "probs_t", "probs",
           "dkdv_step", "store_rows", "mask_scores", "online_softmax"]

LOG2E = 1.4426950408889634  # exp(x) = exp2(x * LOG2E): the kernels' softmax runs on exp2

if HAVE_GLUON:
    @gluon.constexpr_function
    def mma_layout(num_warps, n):
        """The register layout of a wgmma accumulator of `n` columns, the program's
        `num_warps` warps stacked over its rows."""
        return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                         instr_shape=[16, n, 16])

    @gluon.constexpr_function
    def operand_layout(acc_layout):
        """The layout of a 16-bit A operand held in registers for a wgmma into `acc_layout`."""
        return gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)

    @gluon.jit
    def program_rows(N, BLOCK: gl.constexpr, LONGEST_FIRST: gl.constexpr):
        """The program's block of BLOCK rows in its head and the head's first row in the
        (B*H*N, d) views, on a grid (N / BLOCK, B * H); LONGEST_FIRST (causal, the queries'
        blocks): the blocks in reverse, the programs with the most keys first."""
        pid = gl.program_id(0)
        if LONGEST_FIRST:
            pid = gl.num_programs(0) - 1 - pid
        return pid * BLOCK, gl.program_id(1) * N

    @gluon.jit
    def alloc_ring(desc, SLOTS: gl.constexpr):
        """SLOTS tiles of `desc`'s box in shared memory, in its dtype and swizzled layout."""
        return gl.allocate_shared_memory(desc.dtype, [SLOTS] + desc.block_type.shape,
                                         desc.layout)

    @gluon.jit
    def alloc_barriers(N: gl.constexpr, COUNT: gl.constexpr):
        """N mbarriers, each initialised to expect COUNT arrivals a phase."""
        bars = gl.allocate_shared_memory(gl.int64, [N, 1], mbarrier.MBarrierLayout())
        for s in gl.static_range(N):
            mbarrier.init(bars.index(s), count=COUNT)
        return bars

    @gluon.jit
    def invalidate_barriers(bars, N: gl.constexpr):
        for s in gl.static_range(N):
            mbarrier.invalidate(bars.index(s))

    @gluon.jit
    def stage_phase(i, STAGES: gl.constexpr):
        """Tile i's stage of the ring and the phase its barriers are in."""
        return i % STAGES, (i // STAGES) & 1

    @gluon.jit
    def tma_load_tile(desc, row, bar, smem, slot, CHUNKS: gl.constexpr):
        """`desc`'s box at `row` into slot `slot` of `smem` (its CHUNKS column boxes side by
        side: smem[slot * CHUNKS + c] from column c * the box's width), completing `bar`."""
        W: gl.constexpr = desc.block_type.shape[1]
        if CHUNKS == 1:
            tma_load(desc, [row, 0], bar, smem.index(slot))
        else:
            base = CHUNKS * slot
            for c in gl.static_range(CHUNKS):
                tma_load(desc, [row, c * W], bar, smem.index(base + c))

    @gluon.jit
    def tma_load_pair(a_desc, b_desc, row, bar, a_smem, b_smem, slot, CHUNKS: gl.constexpr):
        """The tiles of two tensors at the same rows (Q and dO, K and V) into slot `slot` of
        their rings; `bar` (one arrival) completes with both's bytes."""
        mbarrier.expect(bar, CHUNKS * (a_desc.block_type.nbytes + b_desc.block_type.nbytes))
        tma_load_tile(a_desc, row, bar, a_smem, slot, CHUNKS)
        tma_load_tile(b_desc, row, bar, b_smem, slot, CHUNKS)

    @gluon.jit
    def tma_store_tile(desc, row, acc, smem):
        """acc cast to `desc`'s type, through `smem` (a dead tile of the box's shape) and a TMA
        store at `row`, waited."""
        smem.store(acc.to(desc.dtype))
        fence_async_shared()
        tma_store(desc, [row, 0], smem)
        tma.store_wait(pendings=0)

    @gluon.jit
    def ring_fill(a_desc, b_desc, a_ring, b_ring, bars, row0, first, n_tiles,
                  STAGES: gl.constexpr, CHUNKS: gl.constexpr):
        """One partition: the ring's first STAGES - 1 tiles (tile t at row0 + (first + t) *
        the box's rows), those of them that exist."""
        BLOCK: gl.constexpr = a_desc.block_type.shape[0]
        for s in gl.static_range(STAGES - 1):
            if s < n_tiles:
                tma_load_pair(a_desc, b_desc, row0 + (first + s) * BLOCK, bars.index(s),
                              a_ring, b_ring, s, CHUNKS)

    @gluon.jit
    def ring_refill(a_desc, b_desc, a_ring, b_ring, bars, i, n_tiles, row0, start,
                    STAGES: gl.constexpr, CHUNKS: gl.constexpr):
        """One partition, at tile i (rows `start` of the head): every warp past tile i - 1 (a
        CTA barrier), then tile i + STAGES - 1 loaded into the stage tile i - 1 freed."""
        BLOCK: gl.constexpr = a_desc.block_type.shape[0]
        thread_barrier()  # every warp is done with the stage the next load overwrites
        if i + STAGES - 1 < n_tiles:
            nxt = (i + STAGES - 1) % STAGES
            tma_load_pair(a_desc, b_desc, row0 + (start + (STAGES - 1) * BLOCK),
                          bars.index(nxt), a_ring, b_ring, nxt, CHUNKS)

    @gluon.jit
    def ring_wait(bars, i, STAGES: gl.constexpr):
        """One partition: wait for tile i's bytes; its stage."""
        stage = i % STAGES
        mbarrier.wait(bars.index(stage), phase=(i // STAGES) & 1)
        return stage

    @gluon.jit
    def query_tile(q_desc, do_desc, q_ring, do_ring, bars, LSE, DELTA, i, n_tiles, row0, first,
                   m_off, STAGES: gl.constexpr, CHUNKS: gl.constexpr):
        """One partition, a program holding key rows at its query tile i (the head's rows
        (first + i) * BLOCK_M on): the ring refilled, the tile's lse (log2 units) and D loaded
        while its bytes land, then waited: (start_m, its stage, lse2, delta)."""
        BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
        start_m = (first + i) * BLOCK_M
        ring_refill(q_desc, do_desc, q_ring, do_ring, bars, i, n_tiles, row0, start_m, STAGES,
                    CHUNKS)
        lse2, delta = row_stats(LSE, DELTA, row0, start_m + m_off)
        stage = ring_wait(bars, i, STAGES)
        return start_m, stage, lse2, delta

    @gluon.jit
    def key_tile(k_desc, v_desc, k_ring, v_ring, bars, j, n_tiles, row0, STAGES: gl.constexpr,
                 CHUNKS: gl.constexpr):
        """One partition, a program holding query rows at its key tile j (the head's rows
        j * BLOCK_N on): the ring refilled, then waited: (start_n, its stage)."""
        BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
        start_n = j * BLOCK_N
        ring_refill(k_desc, v_desc, k_ring, v_ring, bars, j, n_tiles, row0, start_n, STAGES,
                    CHUNKS)
        return start_n, ring_wait(bars, j, STAGES)

    @gluon.jit
    def ring_produce(a_desc, b_desc, a_ring, b_ring, ready, empty, i, row,
                     STAGES: gl.constexpr, CHUNKS: gl.constexpr):
        """Warp-specialised producer: tile i (at `row`) into its stage once every consumer has
        released the stage (a fresh `empty` barrier passes the wait on phase 1)."""
        s, ph = stage_phase(i, STAGES)
        mbarrier.wait(empty.index(s), ph ^ 1)
        tma_load_pair(a_desc, b_desc, row, ready.index(s), a_ring, b_ring, s, CHUNKS)

    @gluon.jit
    def ring_produce_one(desc, ring, ready, empty, i, row, STAGES: gl.constexpr):
        """Warp-specialised producer, one tensor with its own barriers (K apart from V): tile
        i (at `row`) into its stage once every consumer has released the stage."""
        s, ph = stage_phase(i, STAGES)
        mbarrier.wait(empty.index(s), ph ^ 1)
        mbarrier.expect(ready.index(s), desc.block_type.nbytes)
        tma_load(desc, [row, 0], ready.index(s), ring.index(s))

    @gluon.jit
    def ring_acquire(ready, i, STAGES: gl.constexpr):
        """Warp-specialised consumer: wait for tile i's bytes; its stage."""
        s, ph = stage_phase(i, STAGES)
        mbarrier.wait(ready.index(s), ph)
        return s

    @gluon.jit
    def ring_release(empty, i, STAGES: gl.constexpr):
        """Warp-specialised consumer: done with tile i's stage (one arrival on its `empty`)."""
        mbarrier.arrive(empty.index(i % STAGES), count=1)

    @gluon.jit
    def chain(a, a_base, b, b_base, zero, CHUNKS: gl.constexpr):
        """sum_c a[a_base + c] b[b_base + c]^T over the CHUNKS column chunks: wgmma chained into
        one accumulator from `zero`, left running (a token for warpgroup_mma_wait)."""
        acc = warpgroup_mma(a.index(a_base), b.index(b_base).permute((1, 0)), zero,
                            use_acc=False, is_async=True)
        for c in gl.static_range(1, CHUNKS):
            acc = warpgroup_mma(a.index(a_base + c), b.index(b_base + c).permute((1, 0)), acc,
                                is_async=True)
        return acc

    @gluon.jit
    def two_products(a, b, a2, b2, a_slot, b_slot, zero, CHUNKS: gl.constexpr):
        """a b^T and a2 b2^T (S and dP, or S^T and dP^T) issued together from the slots'
        CHUNKS column chunks; the first waited, the second left running: (first, token)."""
        s_tok = chain(a, CHUNKS * a_slot, b, CHUNKS * b_slot, zero, CHUNKS)
        t_tok = chain(a2, CHUNKS * a_slot, b2, CHUNKS * b_slot, zero, CHUNKS)
        s = warpgroup_mma_wait(CHUNKS, deps=[s_tok])
        return s, t_tok

    @gluon.jit
    def row_stats(LSE, DELTA, row0, pos):
        """The forward's lse in log2 units and D = rowsum(dO * O) of the head's rows `pos`
        (the head's first row row0)."""
        lse2 = gl.load(LSE + row0 + pos) * 1.4426950408889634
        delta = gl.load(DELTA + row0 + pos)
        return lse2, delta

    @gluon.jit
    def probs_t(st, lse2, qk_scale, k_pos, start_m, m_off, MASK: gl.constexpr, diag):
        """P^T = exp2(S^T * scale*log2e - lse2) of a (keys, queries) tile; MASK and `diag`
        (the tile crosses the diagonal): the keys past each query 0."""
        pt = gl.exp2(st * qk_scale - gl.expand_dims(lse2, 0))
        if MASK:
            if diag:
                q_pos = start_m + m_off
                pt = gl.where(gl.expand_dims(k_pos, 1) <= gl.expand_dims(q_pos, 0), pt, 0.0)
        return pt

    @gluon.jit
    def probs(s, lse2, qk_scale, q_pos, start_n, n_off, MASK: gl.constexpr, diag):
        """P = exp2(S * scale*log2e - lse2) of a (queries, keys) tile; MASK and `diag`: the
        keys past each query 0."""
        p = gl.exp2(s * qk_scale - gl.expand_dims(lse2, 1))
        if MASK:
            if diag:
                k_pos = start_n + n_off
                p = gl.where(gl.expand_dims(k_pos, 0) <= gl.expand_dims(q_pos, 1), p, 0.0)
        return p

    @gluon.jit
    def dkdv_step(dk, dv, k_ring, v_ring, kv_slot, q_ring, do_ring, slot, lse2, delta, qk_scale,
                  st_zero, k_pos, start_m, m_off, op_layout: gl.constexpr, MASK: gl.constexpr,
                  diag, OVERLAP: gl.constexpr):
        """One streamed query tile (slot `slot` of the Q and dO rings) into dK, dV of the held
        key rows (slot `kv_slot` of K's and V's), everything transposed so that the key rows
        stay with the warps: S^T = K Q^T, P^T, dV += P^T dO, dP^T = V dO^T,
        dS^T = P^T (dP^T - D), dK += dS^T Q (P^T and dS^T as register A operands). OVERLAP 0:
        every wgmma waited; 1: S^T and dP^T issued together, dP^T waited after P^T's
        exponentials; 2: also P^T dO left running while dS^T is formed. Every wgmma retired on
        return."""
        dtype: gl.constexpr = q_ring.dtype
        q_t = q_ring.index(slot)
        do_t = do_ring.index(slot)
        if OVERLAP:
            st, dpt_tok = two_products(k_ring, q_ring, v_ring, do_ring, kv_slot, slot, st_zero, 1)
        else:
            st = warpgroup_mma(k_ring.index(kv_slot), q_t.permute((1, 0)), st_zero,
                               use_acc=False)
        pt = probs_t(st, lse2, qk_scale, k_pos, start_m, m_off, MASK, diag)
        if OVERLAP == 2:
            dv_tok = warpgroup_mma(gl.convert_layout(pt.to(dtype), op_layout), do_t, dv,
                                   is_async=True)
            dpt = warpgroup_mma_wait(1, deps=[dpt_tok])
            dst = pt * (dpt - gl.expand_dims(delta, 0))
            dk_tok = warpgroup_mma(gl.convert_layout(dst.to(dtype), op_layout), q_t, dk,
                                   is_async=True)
            dv, dk = warpgroup_mma_wait(0, deps=[dv_tok, dk_tok])
        elif OVERLAP == 1:
            dpt = warpgroup_mma_wait(0, deps=[dpt_tok])
            dv = warpgroup_mma(gl.convert_layout(pt.to(dtype), op_layout), do_t, dv)
            dst = pt * (dpt - gl.expand_dims(delta, 0))
            dk = warpgroup_mma(gl.convert_layout(dst.to(dtype), op_layout), q_t, dk)
        else:
            dv = warpgroup_mma(gl.convert_layout(pt.to(dtype), op_layout), do_t, dv)
            dpt = warpgroup_mma(v_ring.index(kv_slot), do_t.permute((1, 0)), st_zero,
                                use_acc=False)
            dst = pt * (dpt - gl.expand_dims(delta, 0))
            dk = warpgroup_mma(gl.convert_layout(dst.to(dtype), op_layout), q_t, dk)
        return dk, dv

    @gluon.jit
    def store_rows(PTR, row, acc, STRIDE: gl.constexpr, col0: gl.constexpr):
        """acc (rows, cols; fp32) cast to PTR's type into the row-major (.., STRIDE) tensor
        PTR: rows from `row` on, columns from col0 on; plain stores."""
        layout: gl.constexpr = acc.type.layout
        ROWS: gl.constexpr = acc.type.shape[0]
        COLS: gl.constexpr = acc.type.shape[1]
        rows = gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout))
        cols = gl.arange(0, COLS, layout=gl.SliceLayout(0, layout))
        offs = (row + gl.expand_dims(rows, 1)).to(gl.int64) * STRIDE + gl.expand_dims(cols, 0)
        if col0 == 0:
            gl.store(PTR + offs, acc.to(PTR.dtype.element_ty))
        else:
            gl.store(PTR + offs + col0, acc.to(PTR.dtype.element_ty))

    @gluon.jit
    def mask_scores(s, q_pos, k_pos):
        """S with the keys past each query at -inf (the forward's causal mask)."""
        return gl.where(gl.expand_dims(k_pos, 0) <= gl.expand_dims(q_pos, 1), s, float("-inf"))

    @gluon.jit
    def online_softmax(s, m_i, l_i, qk_scale):
        """One key tile of the online softmax (log2 units, qk_scale = sm_scale * log2 e): the
        new running max, P = exp2(S * qk_scale - max), the factor alpha the accumulator is
        rescaled by and the running sum: (p, alpha, m_new, l_new)."""
        m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
        p = gl.exp2(s * qk_scale - gl.expand_dims(m_new, 1))
        alpha = gl.exp2(m_i - m_new)
        l_i = l_i * alpha + gl.sum(p, axis=1)
        return p, alpha, m_new, l_i
