"""What every kernel launch shares, one helper each: the grid, the rows a kernel reads (contiguous
(B·H·N, d) views, a given output buffer checked), the TMA descriptors (the `tl` kernels' and the
Gluon kernels'), the Gluon kernels' support check and the launch itself.

Host time matters at small shapes (ARCHITECTURE.md, host time): these are plain functions with
no checks beyond what a launch needs, and a descriptor is made only for a streamed tile.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ..kernels.gluon_api import HAVE_GLUON

try:  # host-side TMA descriptors of the `tl` kernels (triton >= 3.4)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover
    TensorDescriptor = None

__all__ = ["TensorDescriptor", "WS_MAXNREG", "grid", "launch", "rows_of", "out_rows",
           "flat_desc", "flat_desc_t", "gluon_supported", "gluon_descriptors",
           "gluon_operands"]

# the warp-specialised Gluon kernels' register cap: 12 warps a program (two consumer warpgroups
# + the producer's, padded to a warpgroup), 65536 registers / 384 threads, rounded down to 8
WS_MAXNREG = 168


def grid(rows: int, block: int, programs: int) -> tuple[int, int]:
    """(blocks of `block` rows over `rows`, `programs` along the second axis: one per head)."""
    return -(-rows // block), programs


def launch(kernel, grid_: tuple[int, ...], *args, **consts) -> None:
    """kernel[grid](*args, **consts): one JIT launch, ~25 us of host time on the H200 machine
    (hostprobe). Calling the compiled kernel directly with a Python-built specialization key
    was measured slower (ARCHITECTURE.md, host time), so every launch goes through Triton's JIT."""
    kernel[grid_](*args, **consts)


def rows_of(t: torch.Tensor) -> torch.Tensor:
    """t (.., d) as the contiguous (rows, d) view a TMA descriptor reads (copied if strided)."""
    return t.contiguous().view(-1, t.shape[-1])


def out_rows(out: torch.Tensor | None, like: torch.Tensor,
             dtype: torch.dtype | None = None) -> torch.Tensor:
    """The buffer a kernel writes, shaped as `like`: `out` viewed so (it must be contiguous,
    with like's number of elements), else a new contiguous one."""
    if out is None:
        return torch.empty(like.shape, device=like.device, dtype=dtype or like.dtype)
    if not out.is_contiguous() or out.numel() != like.numel():
        raise ValueError(f"an output buffer must be contiguous with {like.numel()} elements; "
                         f"got shape {tuple(out.shape)}, strides {out.stride()}")
    return out.view(like.shape)


def flat_desc(t: torch.Tensor, block_rows: int):
    """A `tl` TensorDescriptor over t viewed as (B*H*N, d), loading (block_rows, d) tiles."""
    d = t.shape[-1]
    return TensorDescriptor(t, shape=[t.numel() // d, d], strides=[d, 1],
                            block_shape=[block_rows, d])


def flat_desc_t(vt: torch.Tensor, block_cols: int):
    """A `tl` TensorDescriptor over V^T, (B, H_kv, d, N_k) contiguous, viewed as
    (B*H_kv*d, N_k): (d, block_cols) tiles; columns past N_k read as 0."""
    n = vt.shape[-1]
    d = vt.shape[-2]
    return TensorDescriptor(vt, shape=[vt.numel() // n, n], strides=[n, 1],
                            block_shape=[d, block_cols])


def gluon_supported(q: torch.Tensor, k: torch.Tensor, head_dims: Sequence[int],
                    *blocks: int, grouped: bool = False) -> bool:
    """q and k can run on a Gluon Hopper kernel: this Triton has Gluon, an sm_90 GPU, fp16 /
    bf16, one shape (H_kv = H, N_q = N_k; `grouped`: k (B, H_kv, N, d) with H a multiple of
    H_kv), a head dim of `head_dims`, N a multiple of every block."""
    same = q.shape == k.shape or (
        grouped and q.dim() == k.dim() == 4 and q.shape[0] == k.shape[0]
        and q.shape[2:] == k.shape[2:] and k.shape[1] > 0 and q.shape[1] % k.shape[1] == 0)
    return (HAVE_GLUON and q.is_cuda and torch.cuda.get_device_capability(q.device)[0] == 9
            and q.dtype in (torch.float16, torch.bfloat16) and same
            and q.shape[-1] in head_dims and all(q.shape[2] % b == 0 for b in blocks))


def gluon_descriptors(dtype: torch.dtype, *tensor_rows: tuple[torch.Tensor, int],
                      cols: int | None = None) -> list:
    """A Gluon TMA descriptor for each (tensor, rows): the (B·H·N, d) tensor read in boxes of
    `rows` rows and `cols` columns (default: all d) into NVMMA-swizzled shared memory of the
    tensors' 16-bit type. Every Gluon launch's descriptors are made here."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonDescriptor

    gdt = gl.float16 if dtype == torch.float16 else gl.bfloat16
    out = []
    for t, rows in tensor_rows:
        box = [rows, cols or t.shape[1]]
        out.append(GluonDescriptor(t, list(t.shape), [t.shape[1], 1], box,
                                   gl.NVMMASharedLayout.get_default_for(box, gdt)))
    return out


def gluon_operands(sm_scale: float | None, *tensor_rows: tuple[torch.Tensor, int],
                   cols: int | None = None
                   ) -> tuple[tuple[int, int, int, int], float, list[torch.Tensor], list]:
    """What a Gluon launch reads, from (tensor (B, H, N, d), box rows) pairs, the first q:
    (q's shape, the softmax scale (1/√d unless given), the tensors as contiguous (rows, d)
    views — B·H_kv·N rows for grouped K and V —, their TMA descriptors; `cols`: boxes of that
    many columns)."""
    b, h, n, d = tensor_rows[0][0].shape
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(d)
    flats = [rows_of(t) for t, _ in tensor_rows]
    descs = gluon_descriptors(tensor_rows[0][0].dtype,
                              *((f, r) for f, (_, r) in zip(flats, tensor_rows)), cols=cols)
    return (b, h, n, d), scale, flats, descs
