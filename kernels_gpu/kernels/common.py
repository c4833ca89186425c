"""Tile helpers shared by the forward and backward Triton kernels, and the interpreter switch.

On a machine without CUDA this module sets TRITON_INTERPRET=1 before any kernel is defined
(@triton.jit reads the variable at definition time), so the same kernels run in Triton's
interpreter on torch CPU tensors (used by tests/test_kernels_gpu.py).

Layout every helper assumes: one head of a tensor is a row-major (rows, HEAD_DIM) slab; the
kernels index heads by a row offset into the flattened (B*H*rows, HEAD_DIM) view. Head dims
that are not a power of two are padded on chip to HEAD_DIM_P (the next power of two >= 16:
tl.arange and tl.dot need one); the pad columns load as 0 and are never stored, so they add
nothing to any dot product.
"""
from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():  # must precede the @triton.jit definitions below
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

__all__ = ["INTERPRETER", "LOG2E", "LN2", "padded_head_dim"]

INTERPRETER = os.environ.get("TRITON_INTERPRET", "0") == "1"
LOG2E = 1.4426950408889634  # log2(e): exp(x) = exp2(x * LOG2E)
LN2 = 0.6931471805599453    # ln(2): natural log from log2


def padded_head_dim(d: int) -> int:
    """The on-chip head dim for d: the next power of two, at least 16 (tl.dot's minimum K)."""
    return max(16, 1 << (int(d) - 1).bit_length())


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
# `src` is either a TensorDescriptor over the flattened (B*H*rows, HEAD_DIM) tensor (USE_TMA,
# only when HEAD_DIM is a power of two) or a pointer already offset to the start of this head's
# (rows, HEAD_DIM) slab. With USE_TMA only the tiles streamed by an inner loop come through
# descriptors; the tile a program holds (and its output tile) use pointers: once per program,
# and each descriptor costs host time at every launch (~10 us, measured).
# ----------------------------------------------------------------------------------------------
@triton.jit
def _load_tile(src, head_row, row0, n_rows, BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr,
               HEAD_DIM_P: tl.constexpr, USE_TMA: tl.constexpr, EVEN: tl.constexpr):
    """(BLOCK, HEAD_DIM_P) tile of rows [row0, row0 + BLOCK) of one head; rows >= n_rows and
    columns >= HEAD_DIM read as 0."""
    if USE_TMA:
        return src.load([head_row + row0, 0])  # one bulk tensor copy global -> shared memory
    else:
        rows = row0 + tl.arange(0, BLOCK)
        cols = tl.arange(0, HEAD_DIM_P)
        ptrs = src + rows[:, None] * HEAD_DIM + cols[None, :]
        if HEAD_DIM == HEAD_DIM_P:
            if EVEN:
                return tl.load(ptrs)
            else:
                return tl.load(ptrs, mask=(rows < n_rows)[:, None], other=0.0)
        else:
            if EVEN:
                return tl.load(ptrs, mask=(cols < HEAD_DIM)[None, :], other=0.0)
            else:
                return tl.load(ptrs, mask=(rows < n_rows)[:, None] & (cols < HEAD_DIM)[None, :],
                               other=0.0)


@triton.jit
def _load_tile_t(src, head_col, col0, n_cols, BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr,
                 HEAD_DIM_P: tl.constexpr, USE_TMA: tl.constexpr, EVEN: tl.constexpr):
    """(HEAD_DIM_P, BLOCK) tile of a head stored transposed, (HEAD_DIM, n_cols) row-major:
    columns [col0, col0 + BLOCK). The FP8 forward keeps V so (Hopper's fp8 wgmma wants both
    operands K-major; seed 004's tutorial does the same). head_col: the head's first row in
    the flattened (B*H*HEAD_DIM, n_cols) view (TMA only)."""
    if USE_TMA:
        return src.load([head_col, col0])
    else:
        rows = tl.arange(0, HEAD_DIM_P)
        cols = col0 + tl.arange(0, BLOCK)
        ptrs = src + rows[:, None] * n_cols + cols[None, :]
        if HEAD_DIM == HEAD_DIM_P:
            if EVEN:
                return tl.load(ptrs)
            else:
                return tl.load(ptrs, mask=(cols < n_cols)[None, :], other=0.0)
        else:
            return tl.load(ptrs, mask=(rows < HEAD_DIM)[:, None] & (cols < n_cols)[None, :],
                           other=0.0)


@triton.jit
def _store_tile(dst, row0, n_rows, tile, BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr,
                HEAD_DIM_P: tl.constexpr, EVEN: tl.constexpr):
    """Write a (BLOCK, HEAD_DIM_P) tile to rows [row0, row0 + BLOCK) of one head's slab (dst
    already offset to it); rows >= n_rows and pad columns are dropped."""
    rows = row0 + tl.arange(0, BLOCK)
    cols = tl.arange(0, HEAD_DIM_P)
    ptrs = dst + rows[:, None] * HEAD_DIM + cols[None, :]
    if HEAD_DIM == HEAD_DIM_P:
        if EVEN:
            tl.store(ptrs, tile)
        else:
            tl.store(ptrs, tile, mask=(rows < n_rows)[:, None])
    else:
        if EVEN:
            tl.store(ptrs, tile, mask=(cols < HEAD_DIM)[None, :])
        else:
            tl.store(ptrs, tile, mask=(rows < n_rows)[:, None] & (cols < HEAD_DIM)[None, :])


@triton.jit
def _load_row_stat(src, row0, n_rows, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """(BLOCK,) fp32 slice of a per-row statistic (lse or D) of one head; rows >= n_rows read
    as 0."""
    rows = row0 + tl.arange(0, BLOCK)
    if EVEN:
        return tl.load(src + rows)
    else:
        return tl.load(src + rows, mask=rows < n_rows, other=0.0)


@triton.jit
def _store_row_stat(dst, row0, n_rows, vals, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    rows = row0 + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(dst + rows, vals)
    else:
        tl.store(dst + rows, vals, mask=rows < n_rows)


@triton.jit
def _dot(a, b, acc, DOT_F32: tl.constexpr):
    """a @ b (+ acc) with fp32 accumulation. DOT_F32 upcasts the operands first: needed only by
    Triton 3.6's interpreter, whose bf16 dot is wrong."""
    if DOT_F32:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
    else:
        return tl.dot(a, b, acc)


@triton.jit
def _kv_head(bh, H, GROUP):
    """Grouped-query attention: the K/V head (flattened b * H_kv + h_kv) that query head
    bh = b * H + h reads. GROUP = H // H_kv query heads share one K/V head."""
    return (bh // H) * (H // GROUP) + (bh % H) // GROUP


@triton.jit
def _causal_key_range(start_m, NK, CAUSAL_OFF, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Key tiles a causal Q tile [start_m, start_m + BLOCK_M) meets, query row i seeing keys
    j <= i + CAUSAL_OFF: [0, full_hi) are fully visible to every row (no mask) and
    [full_hi, hi) cross the diagonal (masked). CAUSAL_OFF = NK - NQ aligns the diagonal
    bottom-right (flash-attn), 0 top-left (SDPA's is_causal)."""
    full_hi = tl.minimum(tl.maximum(start_m + CAUSAL_OFF, 0) // BLOCK_N, NK // BLOCK_N) * BLOCK_N
    hi = tl.minimum(tl.maximum(start_m + BLOCK_M + CAUSAL_OFF, 0), NK)  # >= full_hi
    return tl.multiple_of(full_hi, BLOCK_N), hi


@triton.jit
def _causal_query_range(start_n, NQ, CAUSAL_OFF, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        OFF_POS: tl.constexpr):
    """Query tiles a causal K tile [start_n, start_n + BLOCK_N) is seen by: [diag_lo, diag_hi)
    cross the diagonal (masked), [diag_hi, NQ) see every key of the tile (no mask); rows before
    diag_lo see none of it (diag_lo > diag_hi: no row sees it, both loops are empty).
    OFF_POS (CAUSAL_OFF > 0, i.e. N_k > N_q bottom-right): start_n - CAUSAL_OFF can be
    negative and is clamped at row 0. Without the clamp the kernel takes fewer registers
    (sm_90, d 64, M32N64: 119 against 146), so the common case compiles without it."""
    first = start_n - CAUSAL_OFF  # the first query row that sees key start_n
    if OFF_POS:
        first = tl.maximum(first, 0)
    diag_lo = (first // BLOCK_M) * BLOCK_M
    diag_hi = tl.cdiv(first + BLOCK_N, BLOCK_M) * BLOCK_M
    if OFF_POS:
        diag_hi = tl.cdiv(tl.maximum(start_n + BLOCK_N - CAUSAL_OFF, 0), BLOCK_M) * BLOCK_M
    return diag_lo, tl.minimum(diag_hi, NQ)
