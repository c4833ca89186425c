"""Host side of the Gluon Hopper kernels (kernels.hopper, hopper_ws, hopper_bwd): the launches
of the one-partition and warp-specialised forwards, the dK/dV and the dQ (their operands,
descriptors, grids and checks: `launch_common`). Causal (N_q = N_k) or not, fp16/bf16, d 64/128
(the warp-specialised forward d 192 too), N a multiple of the blocks, sm_90; the forwards take
grouped heads (H a multiple of H_kv), the backward launches H_kv = H. Where the public functions
run them is `host/dispatch.py`'s decision.
"""
from __future__ import annotations

import torch

from ..kernels.hopper import _attn_fwd_hopper
from .launch_common import (
    WS_MAXNREG,
    gluon_descriptors,
    gluon_operands,
    gluon_supported,
    grid,
    launch,
    out_rows,
)

__all__ = ["attention_forward_hopper", "attention_forward_ws", "ws_label", "PERSISTENT",
           "attention_backward_dkdv_hopper", "attention_backward_dq_hopper"]

LOG2E = 1.4426950408889634
DIMS = (64, 128)  # the head dims these kernels take (the warp-specialised forward: WS_DIMS)
WS_DIMS = (64, 128, 192)  # d 192: three 64-column chunks
# the persistent warp-specialised forward's schedules (the one-launch-a-tile ones' numbers)
PERSISTENT = {"pws": 0, "plag": 1, "ppingpong": 2}
_SMS: dict[int, int] = {}


def _sms(device: torch.device) -> int:
    """The device's SM count (a persistent grid's size), read once."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SMS[index]


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
    if not gluon_supported(q, k, DIMS, block_m, block_n, grouped=True) or v.shape != k.shape:
        raise ValueError("the Gluon Hopper forward takes q (B, H, N, d) and k, v (B, H_kv, N, "
                         "d), H a multiple of H_kv, fp16/bf16, d 64 or 128, N a multiple of the "
                         "blocks, on an sm_90 GPU")
    if causal and block_m % block_n:
        raise ValueError("the causal Gluon forward needs block_m a multiple of block_n")
    o, lse = _forward_out(q, out)
    (b, h, n, d), scale, _, descs = gluon_operands(sm_scale, (q, block_m), (k, block_n),
                                                   (v, block_n), (o, block_m))
    launch(_attn_fwd_hopper, grid(n, block_m, b * h), *descs, lse, scale * LOG2E, n,
           h // k.shape[1], block_m, block_n, d, num_warps=num_warps, CAUSAL=bool(causal))
    return o.view(b, h, n, d)


def _forward_out(q: torch.Tensor, out: tuple[torch.Tensor, torch.Tensor] | None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """(o, lse (B·H·N) fp32) of a forward, o shaped as q: the given buffers, else new ones."""
    if out is None:
        return out_rows(None, q), torch.empty(q.numel() // q.shape[-1], device=q.device,
                                              dtype=torch.float32)
    return out_rows(out[0], q), out[1]


def attention_forward_ws(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                         sm_scale: float | None = None, block_n: int = 128,
                         schedule: str = "pingpong", stages: int = 2, consumer_regs: int = 240,
                         out: tuple[torch.Tensor, torch.Tensor] | None = None,
                         causal: bool = False) -> torch.Tensor:
    """O (B, H, N, d) on the warp-specialised Gluon forward (kernels.hopper_ws): a TMA
    producer warp, two consumer warpgroups of 64 rows (d 192: the head dim as three 64-column
    chunks, no padding); `schedule` "ws", "lag" (P V of tile j-1 under the softmax of tile j)
    or "pingpong" (lag + the two warpgroups taking turns); "pws", "plag", "ppingpong": the same
    as a persistent kernel (kernels.hopper_ws_persistent: one program an SM walking the (query
    tile, head) items; d 64 / 128). k, v (B, H_kv, N, d), H a multiple of H_kv. `out` = (o,
    lse) buffers to write, else o is new and lse dropped."""
    from ..kernels.hopper_ws import SCHEDULES, WG_ROWS, _attn_fwd_ws

    persistent = schedule in PERSISTENT
    if (not gluon_supported(q, k, WS_DIMS, 2 * WG_ROWS, block_n, grouped=True)
            or v.shape != k.shape or (schedule not in SCHEDULES and not persistent)
            or (2 * WG_ROWS) % block_n or (q.shape[-1] == 192 and (block_n != 64 or persistent))):
        raise ValueError("the warp-specialised Gluon forward takes q (B, H, N, d) and k, v "
                         "(B, H_kv, N, d), H a multiple of H_kv, fp16/bf16, d 64, 128 or 192, "
                         "N a multiple of 128, block_n 64 or 128 (d 192: 64), on an sm_90 GPU")
    o, lse = _forward_out(q, out)
    (b, h, n, d), scale, _, descs = gluon_operands(
        sm_scale, (q, WG_ROWS), (k, block_n), (v, block_n), (o, WG_ROWS),
        cols=64 if q.shape[-1] == 192 else None)  # d 192: three 64-column boxes a row
    if persistent:
        from ..kernels.hopper_ws_persistent import _attn_fwd_ws_persistent

        items = n // (2 * WG_ROWS) * b * h
        launch(_attn_fwd_ws_persistent, (min(items, _sms(q.device)),), *descs, lse,
               scale * LOG2E, n, h // k.shape[1], b * h, block_n, d, stages, bool(causal),
               PERSISTENT[schedule], consumer_regs, num_warps=4, maxnreg=WS_MAXNREG)
        return o.view(b, h, n, d)
    launch(_attn_fwd_ws, grid(n, 2 * WG_ROWS, b * h), *descs, lse, scale * LOG2E, n,
           h // k.shape[1], block_n, d, stages, bool(causal), SCHEDULES[schedule],
           consumer_regs, num_warps=4, maxnreg=WS_MAXNREG)
    return o.view(b, h, n, d)


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

    if (not gluon_supported(q, k, DIMS, block_m, block_n) or v.shape != k.shape
            or do.shape != q.shape or (causal and block_n % block_m)):
        raise ValueError("the Gluon dK/dV takes q, k, v, do of one shape (B, H, N, d), "
                         "fp16/bf16, d 64 or 128, N a multiple of the blocks, on an sm_90 GPU")
    (b, h, n, d), scale, (_, k2, v2, _), descs = gluon_operands(
        sm_scale, (q, block_m), (k, block_n), (v, block_n), (do, block_m))
    dk, dv = (out_rows(o, t) for o, t in zip(out or (None, None), (k2, v2)))
    outs = gluon_descriptors(q.dtype, (dk, block_n), (dv, block_n)) if tma_out else [dk, dv]
    launch(_attn_bwd_dkdv_hopper, grid(n, block_n, b * h), *descs, *outs, lse.contiguous(),
           delta.contiguous(), scale, n, block_m, block_n, d, bool(causal), int(stages),
           int(overlap), num_warps=num_warps, TMA_OUT=bool(tma_out))
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

    if (not gluon_supported(q, k, DIMS, block_m, block_n) or v.shape != k.shape
            or do.shape != q.shape or (causal and block_m % block_n)):
        raise ValueError("the Gluon dQ takes q, k, v, do of one shape (B, H, N, d), "
                         "fp16/bf16, d 64 or 128, N a multiple of the blocks, on an sm_90 GPU")
    (b, h, n, d), scale, (q2, *_), descs = gluon_operands(
        sm_scale, (q, block_m), (k, block_n), (v, block_n), (do, block_m))
    dq = out_rows(out, q2)
    dq_out = gluon_descriptors(q.dtype, (dq, block_m))[0] if tma_out else dq
    launch(_attn_bwd_dq_hopper, grid(n, block_m, b * h), *descs, dq_out, lse.contiguous(),
           delta.contiguous(), scale, n, block_m, block_n, d, bool(causal), int(stages),
           int(overlap), num_warps=num_warps, TMA_OUT=bool(tma_out))
    return dq.view(b, h, n, d)
