"""Host side of the Gluon Hopper kernels (kernels.hopper, hopper_ws, hopper_bwd): TMA
descriptors and the launches of the one-partition and warp-specialised forwards, the dK/dV and
the dQ. Causal (N_q = N_k) or not, fp16/bf16, d 64/128 (the warp-specialised forward d 192 too),
N a multiple of the blocks, sm_90; the forwards take grouped heads (H a multiple of H_kv), the
backward launches H_kv = H. Where the public functions run them is `host/dispatch.py`'s decision.
"""
from __future__ import annotations

import math

import torch

from ..kernels.hopper import HAVE_GLUON, _attn_fwd_hopper

__all__ = ["descriptors", "hopper_supported", "attention_forward_hopper", "attention_forward_ws", "ws_label",
           "attention_backward_dkdv_hopper", "attention_backward_dq_hopper"]

LOG2E = 1.4426950408889634


def hopper_supported(q: torch.Tensor, k: torch.Tensor, block_m: int = 128,
                     block_n: int = 128, grouped: bool = False,
                     dims: tuple[int, ...] = (64, 128)) -> bool:
    """q (B, H, N, d) and k of the Gluon kernels' shapes: k's the same, or with `grouped`
    (B, H_kv, N, d) with H a multiple of H_kv; d in `dims`, N a multiple of the blocks."""
    same = q.shape == k.shape or (
        grouped and q.dim() == k.dim() == 4 and (q.shape[0], *q.shape[2:]) == (k.shape[0], *k.shape[2:])
        and k.shape[1] > 0 and q.shape[1] % k.shape[1] == 0)
    return (HAVE_GLUON and q.is_cuda and torch.cuda.get_device_capability(q.device)[0] == 9
            and q.dtype in (torch.float16, torch.bfloat16) and same
            and q.shape[-1] in dims and q.shape[2] % block_m == 0
            and q.shape[2] % block_n == 0)


def ws_label(cfg: tuple[int, str, int]) -> str:
    """The bench's name for a dispatched warp-specialised forward: 128 query rows (two
    warpgroups of 64), 12 warps (the producer's padded to a warpgroup)."""
    return "gluon M128N{}w12 ws-{}-s{}".format(*cfg)


def attention_forward_hopper(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             sm_scale: float | None = None, block_m: int = 128,
                             block_n: int = 128, num_warps: int = 8,
                             out: tuple[torch.Tensor, torch.Tensor] | None = None,
                             causal: bool = False) -> torch.Tensor:
    """O (B, H, N, d) = softmax(sm_scale q k^T) v, on the Gluon kernel; k, v (B, H_kv, N, d)
    with H a multiple of H_kv (grouped heads); `out` = (o, lse) buffers to write (lse (B, H, N)
    fp32, natural log), else o is new and lse dropped."""
    if not hopper_supported(q, k, block_m, block_n, grouped=True) or v.shape != k.shape:
        raise ValueError("the Gluon Hopper forward takes q (B, H, N, d) and k, v (B, H_kv, N, "
                         "d), H a multiple of H_kv, fp16/bf16, d 64 or 128, N a multiple of the "
                         "blocks, on an sm_90 GPU")
    if causal and block_m % block_n:
        raise ValueError("the causal Gluon forward needs block_m a multiple of block_n")
    (b, h, n, d), scale, (q2, k2, v2) = _rows(q, sm_scale, q, k, v)
    o, lse = _forward_out(q2, out, d)
    descs = _descriptors(q.dtype, (q2, block_m), (k2, block_n), (v2, block_n), (o, block_m))
    _attn_fwd_hopper[(n // block_m, b * h)](*descs, lse, scale * LOG2E, n, h // k.shape[1],
                                            block_m, block_n, d, num_warps=num_warps,
                                            CAUSAL=bool(causal))
    return o.view(b, h, n, d)


def _rows(q: torch.Tensor, sm_scale: float | None, *tensors: torch.Tensor
          ) -> tuple[tuple[int, int, int, int], float, tuple[torch.Tensor, ...]]:
    """(q's shape (B, H, N, d), the softmax scale (1/√d unless given), the tensors as contiguous
    (rows, d) row-major views — B·H·N rows, B·H_kv·N for grouped K and V): what every Gluon
    launch reads through TMA."""
    b, h, n, d = q.shape
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(d)
    return (b, h, n, d), scale, tuple(t.contiguous().view(-1, d) for t in tensors)


def _forward_out(q2: torch.Tensor, out, d: int):
    """(o (B·H·N, d), lse (B·H·N) fp32) of a forward: the given buffers, else new ones."""
    if out is None:
        return torch.empty_like(q2), torch.empty(q2.shape[0], device=q2.device, dtype=torch.float32)
    return out[0].view(q2.shape[0], d), out[1]


def descriptors(dtype: torch.dtype, *tensor_rows: tuple[torch.Tensor, int],
                cols: int | None = None) -> list:
    """A TMA descriptor for each (tensor, rows): the (B·H·N, d) tensor read in boxes of `rows`
    rows and `cols` columns (default: all d) into NVMMA-swizzled shared memory of the tensors'
    16-bit type. Every Gluon launch's descriptors are made here."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    gdt = gl.float16 if dtype == torch.float16 else gl.bfloat16
    out = []
    for t, rows in tensor_rows:
        box = [rows, cols or t.shape[1]]
        out.append(TensorDescriptor(t, list(t.shape), [t.shape[1], 1], box,
                                    gl.NVMMASharedLayout.get_default_for(box, gdt)))
    return out


_descriptors = descriptors


def attention_forward_ws(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                         sm_scale: float | None = None, block_n: int = 128,
                         schedule: str = "pingpong", stages: int = 2, consumer_regs: int = 240,
                         out: tuple[torch.Tensor, torch.Tensor] | None = None,
                         causal: bool = False) -> torch.Tensor:
    """O (B, H, N, d) on the warp-specialised Gluon forward (kernels.hopper_ws): a TMA
    producer warp, two consumer warpgroups of 64 rows (d 192: the head dim as three 64-column
    chunks, no padding); `schedule` "ws", "lag" (P V of tile
    j-1 under the softmax of tile j) or "pingpong" (lag + the two warpgroups taking turns);
    "pws", "plag", "ppingpong": the same as a persistent kernel (kernels.hopper_ws_persistent:
    one program an SM walking the (query tile, head) items; d 64 / 128). k, v (B, H_kv, N, d),
    H a multiple of H_kv. `out` = (o, lse) buffers to write, else o is new and lse dropped."""
    from ..kernels.hopper_ws import SCHEDULES, WG_ROWS, _attn_fwd_ws

    persistent = schedule in PERSISTENT
    if (not hopper_supported(q, k, 2 * WG_ROWS, block_n, grouped=True, dims=(64, 128, 192))
            or v.shape != k.shape or (schedule not in SCHEDULES and not persistent)
            or (2 * WG_ROWS) % block_n or (q.shape[-1] == 192 and (block_n != 64 or persistent))):
        raise ValueError("the warp-specialised Gluon forward takes q (B, H, N, d) and k, v "
                         "(B, H_kv, N, d), H a multiple of H_kv, fp16/bf16, d 64, 128 or 192, "
                         "N a multiple of 128, block_n 64 or 128 (d 192: 64), on an sm_90 GPU")
    (b, h, n, d), scale, (q2, k2, v2) = _rows(q, sm_scale, q, k, v)
    o, lse = _forward_out(q2, out, d)
    descs = _descriptors(q.dtype, (q2, WG_ROWS), (k2, block_n), (v2, block_n), (o, WG_ROWS),
                         cols=64 if d == 192 else None)  # d 192: three 64-column boxes a row
    if persistent:
        from ..kernels.hopper_ws_persistent import _attn_fwd_ws_persistent

        items = n // (2 * WG_ROWS) * b * h
        _attn_fwd_ws_persistent[(min(items, _sms(q.device)),)](
            *descs, lse, scale * LOG2E, n, h // k.shape[1], b * h, block_n, d, stages,
            bool(causal), PERSISTENT[schedule], consumer_regs, num_warps=4, maxnreg=WS_MAXNREG)
        return o.view(b, h, n, d)
    _attn_fwd_ws[(n // (2 * WG_ROWS), b * h)](
        *descs, lse, scale * LOG2E, n, h // k.shape[1], block_n, d, stages, bool(causal),
        SCHEDULES[schedule], consumer_regs, num_warps=4, maxnreg=WS_MAXNREG)
    return o.view(b, h, n, d)


# the persistent warp-specialised forward's schedules (the one-launch-a-tile ones' numbers)
PERSISTENT = {"pws": 0, "plag": 1, "ppingpong": 2}
_SMS: dict[int, int] = {}


def _sms(device: torch.device) -> int:
    """The device's SM count (a persistent grid's size), read once."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SMS[index]


# 12 warps a program (two consumer warpgroups + the producer's, padded to a warpgroup):
# 65536 registers / 384 threads, rounded down to a multiple of 8
WS_MAXNREG = 168


def attention_backward_dkdv_hopper(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                   do: torch.Tensor, lse: torch.Tensor, delta: torch.Tensor,
                                   sm_scale: float | None = None, causal: bool = False,
                                   block_m: int = 64, block_n: int = 128,
                                   num_warps: int = 8, stages: int = 2, overlap: int = 0,
                                   out: tuple[torch.Tensor, torch.Tensor] | None = None,
                                   tma_out: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """dK, dV (B, H, N, d) on the Gluon dK/dV kernel (kernels.hopper_bwd) from the forward's
    lse (natural log, fp32) and D = rowsum(dO * O) (fp32), both (B, H, N); `out` = (dk, dv)
    contiguous buffers to write, else new ones. `stages`: the Q/dO ring's depth; `overlap`:
    0 every wgmma waited, 1 dP^T issued with S^T and run under P^T's exponentials, 2 also
    P^T dO under dS^T (the asynchronous wgmma schedules); `tma_out`: dK, dV leave through the
    dead K, V tiles in shared memory and TMA stores instead of plain stores."""
    from ..kernels.hopper_bwd import _attn_bwd_dkdv_hopper

    if (not hopper_supported(q, k, block_m, block_n) or v.shape != k.shape
            or do.shape != q.shape or (causal and block_n % block_m)):
        raise ValueError("the Gluon dK/dV takes q, k, v, do of one shape (B, H, N, d), "
                         "fp16/bf16, d 64 or 128, N a multiple of the blocks, on an sm_90 GPU")
    (b, h, n, d), scale, (q2, k2, v2, do2) = _rows(q, sm_scale, q, k, v, do)
    dk, dv = (torch.empty_like(k2), torch.empty_like(v2)) if out is None else out
    descs = _descriptors(q.dtype, (q2, block_m), (k2, block_n), (v2, block_n), (do2, block_m))
    outs = _descriptors(q.dtype, (dk.view(-1, d), block_n), (dv.view(-1, d), block_n)) \
        if tma_out else [dk, dv]  # tma_out: dK, dV through shared memory and TMA stores
    _attn_bwd_dkdv_hopper[(n // block_n, b * h)](
        *descs, *outs, lse.contiguous(), delta.contiguous(), scale, n, block_m, block_n, d,
        bool(causal), int(stages), int(overlap), num_warps=num_warps, TMA_OUT=bool(tma_out))
    return dk.view(b, h, n, d), dv.view(b, h, n, d)


def attention_backward_dq_hopper(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 do: torch.Tensor, lse: torch.Tensor, delta: torch.Tensor,
                                 sm_scale: float | None = None, causal: bool = False,
                                 block_m: int = 128, block_n: int = 64, num_warps: int = 8,
                                 stages: int = 2, overlap: int = 0,
                                 out: torch.Tensor | None = None,
                                 tma_out: bool = False) -> torch.Tensor:
    """dQ (B, H, N, d) on the Gluon dQ kernel (kernels.hopper_bwd), from the forward's lse and
    D as attention_backward_dkdv_hopper takes them; `out` a contiguous buffer to write;
    `stages`, `overlap` as there (the K/V ring; 1: dP under P's exponentials); `tma_out`: dQ
    through the dead Q tile and a TMA store."""
    from ..kernels.hopper_bwd import _attn_bwd_dq_hopper

    if (not hopper_supported(q, k, block_m, block_n) or v.shape != k.shape
            or do.shape != q.shape or (causal and block_m % block_n)):
        raise ValueError("the Gluon dQ takes q, k, v, do of one shape (B, H, N, d), "
                         "fp16/bf16, d 64 or 128, N a multiple of the blocks, on an sm_90 GPU")
    (b, h, n, d), scale, (q2, k2, v2, do2) = _rows(q, sm_scale, q, k, v, do)
    dq = torch.empty_like(q2) if out is None else out
    descs = _descriptors(q.dtype, (q2, block_m), (k2, block_n), (v2, block_n), (do2, block_m))
    dq_out = _descriptors(q.dtype, (dq.view(-1, d), block_m))[0] if tma_out else dq
    _attn_bwd_dq_hopper[(n // block_m, b * h)](
        *descs, dq_out, lse.contiguous(), delta.contiguous(), scale, n, block_m, block_n, d,
        bool(causal), int(stages), int(overlap), num_warps=num_warps, TMA_OUT=bool(tma_out))
    return dq.view(b, h, n, d)
