"""Host side of the warp-specialised Gluon dK/dV (kernels.hopper_bwd_ws): its launches.

`flash_attention_backward` (and autograd) run it instead of the one-partition Gluon dK/dV
where host/dispatch.py's `DISPATCH_DKDV_WS` names a config for the point; dQ stays the launch
the dispatch picks. H_kv = H, N_q = N_k a multiple of 128, fp16/bf16, d 64/128, sm_90.
"""
from __future__ import annotations

import torch

from .hopper import DIMS
from .launch_common import WS_MAXNREG, gluon_operands, gluon_supported, grid, launch, out_rows

__all__ = ["attention_backward_dkdv_ws",
           "attention_backward_ws_fused", "ws_bwd_label"]


def ws_bwd_label(cfg: tuple[int, ...]) -> str:
    """The bench's name for a warp-specialised dK/dV config (BLOCK_M, stages, overlap[, fused
    dQ[, split]]): 128 key rows (two warpgroups of 64), BLOCK_M query rows a tile, 12 warps
    (the producer's padded to a warpgroup); "+dq" where dQ is fused in by atomics."""
    bm, st, ov, fused, split = (*cfg, 0, 0)[:5]
    return (f"gluon {'dkdv+dq' if fused else 'dkdv'} ws M{bm}N128w12 s{st}"
            + (f" ov{ov}" if ov else "") + (f" red{fused}" if fused else "")
            + (" split" if split else ""))


def attention_backward_dkdv_ws(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                               do: torch.Tensor, lse: torch.Tensor, delta: torch.Tensor,
                               sm_scale: float | None = None, causal: bool = False,
                               block_m: int = 64, stages: int = 2, overlap: int = 1,
                               fused_dq: int = 0, dq_split: int = 0, consumer_regs: int = 240,
                               out: tuple[torch.Tensor, torch.Tensor] | None = None,
                               dq_acc: torch.Tensor | None = None
                               ) -> tuple[torch.Tensor, torch.Tensor]:
    """dK, dV (B, H, N, d) on the warp-specialised Gluon dK/dV (a TMA producer warp, two
    consumer warpgroups of 64 key rows) from the forward's lse (natural log, fp32) and
    D = rowsum(dO * O) (fp32), both (B, H, N); `out` = (dk, dv) contiguous buffers to write,
    else new ones. `stages`: the Q/dO ring's depth; `overlap` as kernels.hopper_bwd's;
    `fused_dq` 1 / 2 / 4: also dQ / sm_scale added into `dq_acc` ((B·H·N, d) fp32, zeroed) by
    atomics of that many floats (red.f32, red.v2.f32, red.v4.f32); `dq_split` 1: the two
    warpgroups share dS^T and each adds one half of dQ's columns (half the atomics)."""
    from ..kernels.hopper_bwd_ws import WG_ROWS, _attn_bwd_dkdv_ws

    if (not gluon_supported(q, k, DIMS, 2 * WG_ROWS) or v.shape != k.shape
            or do.shape != q.shape or block_m not in (32, 64) or stages < 2
            or overlap not in (0, 1, 2) or fused_dq not in (0, 1, 2, 4)
            or (fused_dq and (dq_acc is None or q.numel() >= 2**31))):
        raise ValueError("the warp-specialised Gluon dK/dV takes q, k, v, do of one shape "
                         "(B, H, N, d), fp16/bf16, d 64 or 128, N a multiple of 128, block_m "
                         "32 or 64, stages >= 2, overlap 0-2, on an sm_90 GPU (fused dQ: an fp32 "
                         "dq_acc, fewer than 2**31 elements)")
    (b, h, n, d), scale, (_, k2, v2, _), descs = gluon_operands(
        sm_scale, (q, block_m), (k, WG_ROWS), (v, WG_ROWS), (do, block_m))
    dk, dv = (out_rows(o, t) for o, t in zip(out or (None, None), (k2, v2)))
    launch(_attn_bwd_dkdv_ws, grid(n, 2 * WG_ROWS, b * h), *descs, dk, dv,
           dq_acc if fused_dq else delta, lse.contiguous(), delta.contiguous(), scale, n, d,
           int(stages), bool(causal), int(overlap), int(fused_dq), int(dq_split),
           int(consumer_regs), num_warps=4, maxnreg=WS_MAXNREG)
    return dk.view(b, h, n, d), dv.view(b, h, n, d)


def attention_backward_ws_fused(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                do: torch.Tensor, lse: torch.Tensor, delta: torch.Tensor,
                                sm_scale: float | None = None, causal: bool = False,
                                block_m: int = 64, stages: int = 2, overlap: int = 1,
                                vec: int = 1, split: int = 0,
                                out: tuple[torch.Tensor, ...] | None = None
                                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV (B, H, N, d) in one warp-specialised launch (dQ by fp32 atomics into a
    zeroed accumulator, then scaled and cast: FA2 / FA3's way, no second pass over K and V);
    `vec`: floats an atomic adds (1, 2, 4); `split` 1: the warpgroups split dQ's columns;
    `out` = (dq, dk, dv) contiguous buffers to write,
    else new ones."""
    b, h, n, d = q.shape
    acc = torch.zeros(b * h * n, d, device=q.device, dtype=torch.float32)
    dk, dv = attention_backward_dkdv_ws(q, k, v, do, lse, delta, sm_scale, causal, block_m,
                                        stages, overlap, vec, split,
                                        out=None if out is None else (out[1], out[2]), dq_acc=acc)
    scale = sm_scale if sm_scale is not None else d ** -0.5
    if out is None:
        return acc.mul_(scale).to(q.dtype).view(b, h, n, d), dk, dv
    torch.mul(acc, scale, out=acc)
    out_rows(out[0], acc).copy_(acc)
    return out[0].view(b, h, n, d), dk, dv
