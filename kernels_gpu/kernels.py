"""The Triton kernels of FlashAttention-2 (forward, and backward in three launches).

The algorithm, shapes and masking rules are described in flash_attn.py, which launches these
kernels; this module holds only the @triton.jit code, in the tutorial's order: tile helpers,
forward (inner loop, then the kernel), backward (preprocess, dK/dV, dQ).

On a machine without CUDA this module sets TRITON_INTERPRET=1 before any kernel is defined
(@triton.jit reads the variable at definition time), so the same kernels run in Triton's
interpreter on torch CPU tensors (used by tests/test_kernels_gpu.py).
"""
from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():  # must precede the @triton.jit definitions below
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

__all__ = ["INTERPRETER", "LOG2E"]

INTERPRETER = os.environ.get("TRITON_INTERPRET", "0") == "1"
LOG2E = 1.4426950408889634  # log2(e): exp(x) = exp2(x * LOG2E)


def _fix_interpreter_for_numpy_2_4() -> None:
    """Triton 3.6's interpreter holds scalars as 1-element numpy arrays and turns them into loop
    bounds with int(array), which NumPy >= 2.4 refuses ("only 0-dimensional arrays can be
    converted"). Re-install its tensor.__index__ with an explicit element read."""
    from triton.runtime import interpreter as interp

    original = getattr(interp, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_kernels_gpu_fixed", False):
        return

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    patch_lang_tensor._kernels_gpu_fixed = True
    interp._patch_lang_tensor = patch_lang_tensor


if INTERPRETER:
    _fix_interpreter_for_numpy_2_4()


# ----------------------------------------------------------------------------------------------
# Tile helpers. `src` is either a TensorDescriptor over the flattened (B*H*N, d) tensor (USE_TMA)
# or a pointer already offset to the start of this (batch, head)'s (N, d) slab. With USE_TMA
# only the tiles streamed by the inner loop come through descriptors; the tile each program
# holds (and its output tile) use pointers: once per program, and each descriptor costs host
# time at every launch (~10 us, measured).
# ----------------------------------------------------------------------------------------------
@triton.jit
def _load_tile(src, head_row, row0, N, BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr,
               USE_TMA: tl.constexpr, EVEN_N: tl.constexpr):
    """(BLOCK, HEAD_DIM) tile of rows [row0, row0 + BLOCK) of one head; rows >= N read as 0."""
    if USE_TMA:
        return src.load([head_row + row0, 0])  # one bulk tensor copy global -> shared memory
    else:
        rows = row0 + tl.arange(0, BLOCK)
        cols = tl.arange(0, HEAD_DIM)
        ptrs = src + rows[:, None] * HEAD_DIM + cols[None, :]
        if EVEN_N:
            return tl.load(ptrs)
        else:
            return tl.load(ptrs, mask=(rows < N)[:, None], other=0.0)


@triton.jit
def _store_tile(dst, head_row, row0, N, tile, BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr,
                USE_TMA: tl.constexpr, EVEN_N: tl.constexpr):
    """Write a (BLOCK, HEAD_DIM) tile to rows [row0, row0 + BLOCK) of one head; rows >= N
    are dropped."""
    if USE_TMA:
        dst.store([head_row + row0, 0], tile)
    else:
        rows = row0 + tl.arange(0, BLOCK)
        cols = tl.arange(0, HEAD_DIM)
        ptrs = dst + rows[:, None] * HEAD_DIM + cols[None, :]
        if EVEN_N:
            tl.store(ptrs, tile)
        else:
            tl.store(ptrs, tile, mask=(rows < N)[:, None])


@triton.jit
def _load_row_stat(src, row0, N, BLOCK: tl.constexpr, EVEN_N: tl.constexpr):
    """(BLOCK,) fp32 slice of a per-row statistic (lse or D) of one head; rows >= N read as 0."""
    rows = row0 + tl.arange(0, BLOCK)
    if EVEN_N:
        return tl.load(src + rows)
    else:
        return tl.load(src + rows, mask=rows < N, other=0.0)


@triton.jit
def _dot(a, b, acc, DOT_F32: tl.constexpr):
    """a @ b (+ acc) with fp32 accumulation. DOT_F32 upcasts the operands first: needed only by
    Triton 3.6's interpreter, whose bf16 dot is wrong."""
    if DOT_F32:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
    else:
        return tl.dot(a, b, acc)


# ----------------------------------------------------------------------------------------------
# Forward
# ----------------------------------------------------------------------------------------------
@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, K, V, head_row, lo, hi, offs_m, N, qk_scale,
                    BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, ON_DIAGONAL: tl.constexpr,
                    EVEN_N: tl.constexpr, USE_TMA: tl.constexpr, DOT_F32: tl.constexpr):
    """Stream the K/V tiles whose first row lies in [lo, hi) past one Q tile (online softmax).

    acc (BLOCK_M, HEAD_DIM) fp32, l_i and m_i (BLOCK_M,) fp32: registers, carried across tiles.
    q (BLOCK_M, HEAD_DIM): loaded once by the caller, stays on chip.
    """
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = _load_tile(K, head_row, start_n, N, BLOCK_N, HEAD_DIM, USE_TMA, EVEN_N)  # (BN, d)
        qk = _dot(q, tl.trans(k), None, DOT_F32)  # (BM, BN) fp32 raw scores q.k
        if ON_DIAGONAL or not EVEN_N:
            offs_n = start_n + offs_n0
            keep = offs_n[None, :] < N
            if ON_DIAGONAL:
                keep = keep & (offs_m[:, None] >= offs_n[None, :])
            qk = tl.where(keep, qk, float("-inf"))
        # running max in log2 units; max(qk) * scale == max(qk * scale) since scale > 0
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)           # (BM,)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])             # (BM, BN) one FMA + EX2
        alpha = tl.math.exp2(m_i - m_new)                            # (BM,) rescale of the past
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        m_i = m_new
        v = _load_tile(V, head_row, start_n, N, BLOCK_N, HEAD_DIM, USE_TMA, EVEN_N)  # (BN, d)
        acc = _dot(p.to(v.dtype), v, acc, DOT_F32)                   # (BM, d) += P V
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(Q, K, V, O, LSE, sm_scale, N,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              CAUSAL: tl.constexpr, EVEN_N: tl.constexpr, USE_TMA: tl.constexpr,
              DOT_F32: tl.constexpr):
    """Grid (cdiv(N, BLOCK_M), B*H): program (i, bh) writes O rows [i*BM, (i+1)*BM) of head bh.

    Axis 0 varies fastest, so programs running together share one head's K/V in L2.
    """
    pid_m = tl.program_id(0)
    if CAUSAL:  # the last Q tiles see the most K/V tiles: launch them first (less tail)
        pid_m = tl.num_programs(0) - 1 - pid_m
    bh = tl.program_id(1)
    start_m = pid_m * BLOCK_M
    head_row = bh * N  # first row of this head in the flattened (B*H*N, d) view
    head_off = head_row.to(tl.int64) * HEAD_DIM
    Q += head_off  # Q and O are pointers always: one tile each per program
    O += head_off
    if not USE_TMA:
        K += head_off
        V += head_off
    offs_m = start_m + tl.arange(0, BLOCK_M)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running row max (log2 units)
    l_i = tl.zeros([BLOCK_M], tl.float32)                # running row sum of exp2
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)      # un-normalised O tile, registers
    qk_scale = sm_scale * 1.4426950408889634             # natural -> base-2 logits
    q = _load_tile(Q, head_row, start_m, N, BLOCK_M, HEAD_DIM, False, EVEN_N)  # stays on chip

    if CAUSAL:
        # K/V tiles that end at or before this Q tile's first row: no mask needed
        diag_lo = (start_m // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K, V, head_row, 0, diag_lo, offs_m, N,
                                        qk_scale, BLOCK_N, HEAD_DIM, False, EVEN_N, USE_TMA,
                                        DOT_F32)
        # tiles crossing the diagonal: mask col > row
        diag_hi = tl.minimum(start_m + BLOCK_M, N)
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K, V, head_row, diag_lo, diag_hi,
                                        offs_m, N, qk_scale, BLOCK_N, HEAD_DIM, True, EVEN_N,
                                        USE_TMA, DOT_F32)
    else:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K, V, head_row, 0, N, offs_m, N,
                                        qk_scale, BLOCK_N, HEAD_DIM, False, EVEN_N, USE_TMA,
                                        DOT_F32)

    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453  # (BM,) natural-log log-sum-exp
    acc = acc / l_i[:, None]
    if EVEN_N:
        tl.store(LSE + bh.to(tl.int64) * N + offs_m, lse)
    else:
        tl.store(LSE + bh.to(tl.int64) * N + offs_m, lse, mask=offs_m < N)
    _store_tile(O, head_row, start_m, N, acc.to(q.dtype), BLOCK_M, HEAD_DIM, False, EVEN_N)


# ----------------------------------------------------------------------------------------------
# Backward
# ----------------------------------------------------------------------------------------------
@triton.jit
def _attn_bwd_preprocess(O, DO, Delta, N, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                         EVEN_N: tl.constexpr):
    """D_i = sum_j dO_ij * O_ij, fp32, shape (B*H, N). Grid (cdiv(N, BLOCK_M), B*H)."""
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    head_off = bh.to(tl.int64) * N * HEAD_DIM
    o = _load_tile(O + head_off, 0, start_m, N, BLOCK_M, HEAD_DIM, False, EVEN_N)
    do = _load_tile(DO + head_off, 0, start_m, N, BLOCK_M, HEAD_DIM, False, EVEN_N)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), axis=1)  # (BM,)
    rows = start_m + tl.arange(0, BLOCK_M)
    if EVEN_N:
        tl.store(Delta + bh.to(tl.int64) * N + rows, delta)
    else:
        tl.store(Delta + bh.to(tl.int64) * N + rows, delta, mask=rows < N)


@triton.jit
def _attn_bwd_dkdv_inner(dk, dv, k, v, Q, DO, LSE, Delta, head_row, offs_n, lo, hi, N, qk_scale,
                         BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, ON_DIAGONAL: tl.constexpr,
                         EVEN_N: tl.constexpr, USE_TMA: tl.constexpr, DOT_F32: tl.constexpr):
    """Stream the Q/dO tiles with first row in [lo, hi) past one K/V tile.

    k, v (BLOCK_N, d): on chip for the whole loop. dk, dv (BLOCK_N, d) fp32: registers.
    Everything is computed transposed, (BLOCK_N, BLOCK_M), so the sums over Q rows that dK and
    dV need are plain matrix products with the streamed tiles.
    """
    for start_m in tl.range(lo, hi, BLOCK_M):
        start_m = tl.multiple_of(start_m, BLOCK_M)
        q = _load_tile(Q, head_row, start_m, N, BLOCK_M, HEAD_DIM, USE_TMA, EVEN_N)    # (BM, d)
        do = _load_tile(DO, head_row, start_m, N, BLOCK_M, HEAD_DIM, USE_TMA, EVEN_N)  # (BM, d)
        offs_m = start_m + tl.arange(0, BLOCK_M)
        lse2 = _load_row_stat(LSE, start_m, N, BLOCK_M, EVEN_N) * 1.4426950408889634  # (BM,)
        delta = _load_row_stat(Delta, start_m, N, BLOCK_M, EVEN_N)                    # (BM,)
        qkT = _dot(k, tl.trans(q), None, DOT_F32)                    # (BN, BM) raw scores^T
        pT = tl.math.exp2(qkT * qk_scale - lse2[None, :])           # (BN, BM) P^T, recomputed
        if ON_DIAGONAL or not EVEN_N:
            keep = offs_m[None, :] < N
            if ON_DIAGONAL:
                keep = keep & (offs_m[None, :] >= offs_n[:, None])
            pT = tl.where(keep, pT, 0.0)
        dv = _dot(pT.to(do.dtype), do, dv, DOT_F32)                  # (BN, d) += P^T dO
        dpT = _dot(v, tl.trans(do), None, DOT_F32)                   # (BN, BM) (dO V^T)^T
        dsT = pT * (dpT - delta[None, :])                            # (BN, BM) dS^T
        dk = _dot(dsT.to(q.dtype), q, dk, DOT_F32)                   # (BN, d) += dS^T Q
    return dk, dv


@triton.jit
def _attn_bwd_dkdv(Q, K, V, DO, DK, DV, LSE, Delta, sm_scale, N,
                   HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   CAUSAL: tl.constexpr, EVEN_N: tl.constexpr, USE_TMA: tl.constexpr,
                   DOT_F32: tl.constexpr):
    """Grid (cdiv(N, BLOCK_N), B*H): program (j, bh) writes dK, dV rows [j*BN, (j+1)*BN)."""
    pid_n = tl.program_id(0)  # causal: the first K/V tiles have the most work, and launch first
    bh = tl.program_id(1)
    start_n = pid_n * BLOCK_N
    head_row = bh * N
    head_off = head_row.to(tl.int64) * HEAD_DIM
    K += head_off  # K, V, dK, dV are pointers always: one tile each per program
    V += head_off
    DK += head_off
    DV += head_off
    if not USE_TMA:
        Q += head_off
        DO += head_off
    LSE += bh.to(tl.int64) * N
    Delta += bh.to(tl.int64) * N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    qk_scale = sm_scale * 1.4426950408889634

    k = _load_tile(K, head_row, start_n, N, BLOCK_N, HEAD_DIM, False, EVEN_N)  # (BN, d) on chip
    v = _load_tile(V, head_row, start_n, N, BLOCK_N, HEAD_DIM, False, EVEN_N)  # (BN, d) on chip
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)

    if CAUSAL:
        # Q rows before start_n see none of these keys. Q tiles overlapping rows
        # [start_n, start_n + BN) cross the diagonal (mask); later ones see all BN keys.
        diag_lo = (start_n // BLOCK_M) * BLOCK_M
        diag_hi = tl.minimum(tl.cdiv(start_n + BLOCK_N, BLOCK_M) * BLOCK_M, N)
        dk, dv = _attn_bwd_dkdv_inner(dk, dv, k, v, Q, DO, LSE, Delta, head_row, offs_n, diag_lo,
                                      diag_hi, N, qk_scale, BLOCK_M, HEAD_DIM, True, EVEN_N,
                                      USE_TMA, DOT_F32)
        dk, dv = _attn_bwd_dkdv_inner(dk, dv, k, v, Q, DO, LSE, Delta, head_row, offs_n, diag_hi,
                                      N, N, qk_scale, BLOCK_M, HEAD_DIM, False, EVEN_N, USE_TMA,
                                      DOT_F32)
    else:
        dk, dv = _attn_bwd_dkdv_inner(dk, dv, k, v, Q, DO, LSE, Delta, head_row, offs_n, 0, N, N,
                                      qk_scale, BLOCK_M, HEAD_DIM, False, EVEN_N, USE_TMA, DOT_F32)

    dk = dk * sm_scale  # dK = sm_scale * dS^T Q
    _store_tile(DK, head_row, start_n, N, dk.to(k.dtype), BLOCK_N, HEAD_DIM, False, EVEN_N)
    _store_tile(DV, head_row, start_n, N, dv.to(v.dtype), BLOCK_N, HEAD_DIM, False, EVEN_N)


@triton.jit
def _attn_bwd_dq_inner(dq, q, do, lse2, delta, K, V, head_row, offs_m, lo, hi, N, qk_scale,
                       BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, ON_DIAGONAL: tl.constexpr,
                       EVEN_N: tl.constexpr, USE_TMA: tl.constexpr, DOT_F32: tl.constexpr):
    """Stream the K/V tiles with first row in [lo, hi) past one Q/dO tile.

    q, do (BLOCK_M, d), lse2, delta (BLOCK_M,): on chip for the whole loop. dq fp32: registers.
    """
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = _load_tile(K, head_row, start_n, N, BLOCK_N, HEAD_DIM, USE_TMA, EVEN_N)  # (BN, d)
        v = _load_tile(V, head_row, start_n, N, BLOCK_N, HEAD_DIM, USE_TMA, EVEN_N)  # (BN, d)
        qk = _dot(q, tl.trans(k), None, DOT_F32)                     # (BM, BN)
        p = tl.math.exp2(qk * qk_scale - lse2[:, None])              # (BM, BN) P, recomputed
        if ON_DIAGONAL or not EVEN_N:
            offs_n = start_n + offs_n0
            keep = offs_n[None, :] < N
            if ON_DIAGONAL:
                keep = keep & (offs_m[:, None] >= offs_n[None, :])
            p = tl.where(keep, p, 0.0)
        dp = _dot(do, tl.trans(v), None, DOT_F32)                    # (BM, BN) dO V^T
        ds = p * (dp - delta[:, None])                               # (BM, BN) dS
        dq = _dot(ds.to(k.dtype), k, dq, DOT_F32)                    # (BM, d) += dS K
    return dq


@triton.jit
def _attn_bwd_dq(Q, K, V, DO, DQ, LSE, Delta, sm_scale, N,
                 HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 CAUSAL: tl.constexpr, EVEN_N: tl.constexpr, USE_TMA: tl.constexpr,
                 DOT_F32: tl.constexpr):
    """Grid (cdiv(N, BLOCK_M), B*H): program (i, bh) writes dQ rows [i*BM, (i+1)*BM)."""
    pid_m = tl.program_id(0)
    if CAUSAL:  # heaviest (last) Q tiles first
        pid_m = tl.num_programs(0) - 1 - pid_m
    bh = tl.program_id(1)
    start_m = pid_m * BLOCK_M
    head_row = bh * N
    head_off = head_row.to(tl.int64) * HEAD_DIM
    Q += head_off  # Q, dO, dQ are pointers always: one tile each per program
    DO += head_off
    DQ += head_off
    if not USE_TMA:
        K += head_off
        V += head_off
    LSE += bh.to(tl.int64) * N
    Delta += bh.to(tl.int64) * N
    offs_m = start_m + tl.arange(0, BLOCK_M)
    qk_scale = sm_scale * 1.4426950408889634

    q = _load_tile(Q, head_row, start_m, N, BLOCK_M, HEAD_DIM, False, EVEN_N)    # (BM, d)
    do = _load_tile(DO, head_row, start_m, N, BLOCK_M, HEAD_DIM, False, EVEN_N)  # (BM, d)
    lse2 = _load_row_stat(LSE, start_m, N, BLOCK_M, EVEN_N) * 1.4426950408889634   # (BM,)
    delta = _load_row_stat(Delta, start_m, N, BLOCK_M, EVEN_N)                     # (BM,)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    if CAUSAL:
        diag_lo = (start_m // BLOCK_N) * BLOCK_N
        dq = _attn_bwd_dq_inner(dq, q, do, lse2, delta, K, V, head_row, offs_m, 0, diag_lo, N,
                                qk_scale, BLOCK_N, HEAD_DIM, False, EVEN_N, USE_TMA, DOT_F32)
        diag_hi = tl.minimum(start_m + BLOCK_M, N)
        dq = _attn_bwd_dq_inner(dq, q, do, lse2, delta, K, V, head_row, offs_m, diag_lo, diag_hi,
                                N, qk_scale, BLOCK_N, HEAD_DIM, True, EVEN_N, USE_TMA, DOT_F32)
    else:
        dq = _attn_bwd_dq_inner(dq, q, do, lse2, delta, K, V, head_row, offs_m, 0, N, N,
                                qk_scale, BLOCK_N, HEAD_DIM, False, EVEN_N, USE_TMA, DOT_F32)

    dq = dq * sm_scale  # dQ = sm_scale * dS K
    _store_tile(DQ, head_row, start_m, N, dq.to(q.dtype), BLOCK_M, HEAD_DIM, False, EVEN_N)
