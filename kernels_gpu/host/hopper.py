"""Host side of the Gluon Hopper forward (kernels.hopper): descriptors and the launch.

Issue 21, item 3: `flash_attention_forward` dispatches to it where it measured faster
(`DISPATCH`, `dispatch_config`); `bench.hopper` times it beside the `tl` kernel, SDPA-flash and
cuDNN. Causal (N_q = N_k) or not, H_kv = H, fp16/bf16, d 64/128,
N a multiple of the blocks, sm_90.
"""
from __future__ import annotations

import math
import os

import torch

from ..kernels.hopper import HAVE_GLUON, _attn_fwd_hopper
from . import support
from .launch import _capability

__all__ = ["DISPATCH", "DISPATCH_CAUSAL", "DISPATCH_WS", "dispatch_config", "dispatch_ws",
           "hopper_supported", "attention_forward_hopper", "attention_forward_ws", "ws_label",
           "attention_backward_dkdv_hopper", "attention_backward_dq_hopper", "DISPATCH_DKDV",
           "dispatch_dkdv", "DISPATCH_DQ", "dispatch_dq"]

LOG2E = 1.4426950408889634


def hopper_supported(q: torch.Tensor, k: torch.Tensor, block_m: int = 128,
                     block_n: int = 128) -> bool:
    return (HAVE_GLUON and q.is_cuda and torch.cuda.get_device_capability(q.device)[0] == 9
            and q.dtype in (torch.float16, torch.bfloat16) and q.shape == k.shape
            and q.shape[-1] in (64, 128) and q.shape[2] % block_m == 0
            and q.shape[2] % block_n == 0)


# Where flash_attention_forward runs the Gluon kernel instead of the `tl` one: head dim ->
# (BLOCK_M, BLOCK_N, warps). Measured on the lent H100, 2026-11-25 (`python -m
# kernels_gpu.bench.hopper`, results/hopper_h100.json): non-causal MHA fp16, N 1k / 4k / 16k,
# the Gluon kernel 1.05 - 1.15 x the `tl` forward at d 64 and 1.06 - 1.24 x at d 128.
DISPATCH = {64: (128, 128, 8), 128: (128, 64, 8)}
# Causal (N_q = N_k), head dim -> config: where the Gluon kernel's causal loop measured faster
# than the `tl` forward (`python -m kernels_gpu.bench.hopper --causal`, lent H100, 2026-11-25,
# results/hopper_causal_h100.json: N 1k / 4k / 16k, 1.04 - 1.13 x the `tl` forward at d 64,
# 1.09 - 1.21 x at d 128).
DISPATCH_CAUSAL: dict[int, tuple[int, int, int]] = {64: (128, 128, 8), 128: (128, 64, 8)}


def dispatch_config(p, interpreter: bool) -> tuple[int, int, int] | None:
    """The Gluon config for a launch.Problem where the Gluon forward measured faster (non-causal,
    H_kv = H, N_q = N_k a multiple of the blocks, d 64/128, fp16/bf16, sm_90, a Triton the
    Gluon kernels are verified on: support.gluon_usable), else None. KERNELS_GPU_HOPPER=0
    turns it off."""
    cfg = (DISPATCH_CAUSAL if p.causal else DISPATCH).get(p.d)
    if (cfg is None or interpreter or not HAVE_GLUON or p.group != 1
            or p.nq != p.nk or p.nq % max(cfg[0], cfg[1])
            or p.dtype not in (torch.float16, torch.bfloat16)
            or os.environ.get("KERNELS_GPU_HOPPER", "1") == "0"
            or _capability(torch.cuda.current_device())[0] != 9
            or not support.gluon_usable()):  # this Triton's Gluon verified (host/support.py)
        return None
    return cfg


# Where flash_attention_forward runs the warp-specialised kernel (kernels.hopper_ws) before
# either of the above: (head dim, causal) -> (smallest N, block_n, schedule, stages). Measured
# on the lent H100 (`python -m kernels_gpu.bench.hopper --ws [--causal]`, RESULTS.md "The
# warp-specialised forward"); d 64 is absent: there it lost to the one-partition kernel.
DISPATCH_WS: dict[tuple[int, bool], list[tuple[int, tuple[int, str, int] | None]]] = {
    (128, False): [(512, None), (4096, (128, "lag", 3)), (1 << 62, (128, "lag", 2))],
    (128, True): [(2048, None), (4096, (128, "pingpong", 3)), (1 << 62, (128, "pingpong", 2))]}
# Where the backward's dK/dV runs on the Gluon kernel (kernels.hopper_bwd) instead of the `tl`
# one: head dim -> (BLOCK_M, BLOCK_N, warps). `python -m kernels_gpu.bench.hopper_bwd` (lent
# H100): at d 128 the dK/dV launch 1.09 - 1.34 x faster than the `tl` one, causal or not, N 1k -
# 16k; at d 64 within +-7 % either way, so not there.
# Entries (BLOCK_M, BLOCK_N, warps, ring stages, overlap schedule: kernels.hopper_bwd OVERLAP).
# Fourth session (results/hopper_bwd_overlap_h100*.json, two calls): OVERLAP 1 (dP^T issued
# with S^T, under P^T's exponentials) 0.91 - 1.06 x the waited schedule as a launch, the whole
# backward 0.97 - 1.09 x (median 1.01: within the spread; kept, the GPU tests and the public-path
# table are of it); a 3-stage ring 0.67 - 0.79 x (131 KB of shared memory: one program per SM
# instead of two); OVERLAP 2 spills and loses.
DISPATCH_DKDV = {128: (64, 64, 4, 2, 1)}
# Where the backward's dQ runs on the Gluon kernel too (only beside the Gluon dK/dV): (head dim,
# causal) -> (BLOCK_M, BLOCK_N, warps, stages, overlap). Causal d 128: the OVERLAP 1 dQ 0.98 -
# 1.24 x the `tl` dQ launch (N >= 4k: 1.13 - 1.24 x in both calls), the backward 1.02 - 1.06 x;
# non-causal the backward within +-3 %, so not there (results/hopper_bwd_overlap_h100*.json).
DISPATCH_DQ: dict[tuple[int, bool], tuple[int, int, int, int, int]] = {
    (128, True): (64, 64, 4, 2, 1)}


def dispatch_ws(p, interpreter: bool) -> tuple[int, str, int] | None:
    """(block_n, schedule, stages) of the warp-specialised forward for a launch.Problem where it
    measured fastest (DISPATCH_WS: the first row whose largest N covers N_q; H_kv = H, N_q =
    N_k a multiple of 128, fp16/bf16, sm_90), else None. KERNELS_GPU_HOPPER=0 turns it off
    with the other Gluon kernels, KERNELS_GPU_WS=0 alone."""
    rows = DISPATCH_WS.get((p.d, bool(p.causal)))
    if (rows is None or os.environ.get("KERNELS_GPU_WS", "1") == "0"
            or dispatch_config(p, interpreter) is None or p.nq % 128):
        return None
    return next(cfg for largest, cfg in rows if p.nq <= largest)


def dispatch_dkdv(p, interpreter: bool) -> tuple[int, int, int, int, int] | None:
    """(BLOCK_M, BLOCK_N, warps, stages, overlap) of the Gluon dK/dV for a launch.Problem where it measured
    faster (DISPATCH_DKDV; the Gluon forward's conditions, N a multiple of both blocks), else
    None."""
    cfg = DISPATCH_DKDV.get(p.d)
    if cfg is None or dispatch_config(p, interpreter) is None or p.nq % max(cfg[:2]):
        return None
    return cfg


def dispatch_dq(p, interpreter: bool) -> tuple[int, int, int, int, int] | None:
    """The Gluon dQ's config (DISPATCH_DQ) where the Gluon dK/dV is dispatched too, else None."""
    cfg = DISPATCH_DQ.get((p.d, bool(p.causal)))
    if cfg is None or dispatch_dkdv(p, interpreter) is None or p.nq % max(cfg[:2]):
        return None
    return cfg


def ws_label(cfg: tuple[int, str, int]) -> str:
    """The bench's name for a dispatched warp-specialised forward: 128 query rows (two
    warpgroups of 64), 12 warps (the producer's padded to a warpgroup)."""
    return "gluon M128N{}w12 ws-{}-s{}".format(*cfg)


def attention_forward_hopper(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             sm_scale: float | None = None, block_m: int = 128,
                             block_n: int = 128, num_warps: int = 8,
                             out: tuple[torch.Tensor, torch.Tensor] | None = None,
                             causal: bool = False) -> torch.Tensor:
    """O (B, H, N, d) = softmax(sm_scale q k^T) v, on the Gluon kernel; `out` = (o, lse)
    buffers to write (lse (B, H, N) fp32, natural log), else o is new and lse dropped."""
    if not hopper_supported(q, k, block_m, block_n) or v.shape != k.shape:
        raise ValueError("the Gluon Hopper forward takes q, k, v of one shape (B, H, N, d), "
                         "fp16/bf16, d 64 or 128, N a multiple of the blocks, on an sm_90 GPU")
    if causal and block_m % block_n:
        raise ValueError("the causal Gluon forward needs block_m a multiple of block_n")
    (b, h, n, d), scale, (q2, k2, v2) = _rows(q, sm_scale, q, k, v)
    o, lse = _forward_out(q2, out, d)
    descs = _descriptors(q.dtype, (q2, block_m), (k2, block_n), (v2, block_n), (o, block_m))
    _attn_fwd_hopper[(n // block_m, b * h)](*descs, lse, scale * LOG2E, n, block_m, block_n, d,
                                            num_warps=num_warps, CAUSAL=bool(causal))
    return o.view(b, h, n, d)


def _rows(q: torch.Tensor, sm_scale: float | None, *tensors: torch.Tensor):
    """(q's shape (B, H, N, d), the softmax scale (1/√d unless given), the tensors as contiguous
    (B·H·N, d) row-major views): what every Gluon launch reads through TMA."""
    b, h, n, d = q.shape
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(d)
    return (b, h, n, d), scale, tuple(t.contiguous().view(b * h * n, d) for t in tensors)


def _forward_out(q2: torch.Tensor, out, d: int):
    """(o (B·H·N, d), lse (B·H·N) fp32) of a forward: the given buffers, else new ones."""
    if out is None:
        return torch.empty_like(q2), torch.empty(q2.shape[0], device=q2.device, dtype=torch.float32)
    return out[0].view(q2.shape[0], d), out[1]


def _descriptors(dtype: torch.dtype, *tensor_rows: tuple[torch.Tensor, int]) -> list:
    """A TMA descriptor for each (tensor, rows): the (B·H·N, d) tensor read `rows` rows at a time
    into NVMMA-swizzled shared memory of the tensors' 16-bit type."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    gdt = gl.float16 if dtype == torch.float16 else gl.bfloat16
    return [TensorDescriptor(t, list(t.shape), [t.shape[1], 1], [rows, t.shape[1]],
                             gl.NVMMASharedLayout.get_default_for([rows, t.shape[1]], gdt))
            for t, rows in tensor_rows]


def attention_forward_ws(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                         sm_scale: float | None = None, block_n: int = 128,
                         schedule: str = "pingpong", stages: int = 2, consumer_regs: int = 240,
                         out: tuple[torch.Tensor, torch.Tensor] | None = None,
                         causal: bool = False) -> torch.Tensor:
    """O (B, H, N, d) on the warp-specialised Gluon forward (kernels.hopper_ws): a TMA
    producer warp, two consumer warpgroups of 64 rows; `schedule` "ws", "lag" (P V of tile
    j-1 under the softmax of tile j) or "pingpong" (lag + the two warpgroups taking turns).
    `out` = (o, lse) buffers to write, else o is new and lse dropped."""
    from ..kernels.hopper_ws import SCHEDULES, WG_ROWS, _attn_fwd_ws

    if (not hopper_supported(q, k, 2 * WG_ROWS, block_n) or v.shape != k.shape
            or schedule not in SCHEDULES or (2 * WG_ROWS) % block_n):
        raise ValueError("the warp-specialised Gluon forward takes q, k, v of one shape "
                         "(B, H, N, d), fp16/bf16, d 64 or 128, N a multiple of 128, block_n "
                         "64 or 128, on an sm_90 GPU")
    (b, h, n, d), scale, (q2, k2, v2) = _rows(q, sm_scale, q, k, v)
    o, lse = _forward_out(q2, out, d)
    descs = _descriptors(q.dtype, (q2, WG_ROWS), (k2, block_n), (v2, block_n), (o, WG_ROWS))
    _attn_fwd_ws[(n // (2 * WG_ROWS), b * h)](
        *descs, lse, scale * LOG2E, n, block_n, d, stages, bool(causal),
        SCHEDULES[schedule], consumer_regs, num_warps=4, maxnreg=WS_MAXNREG)
    return o.view(b, h, n, d)


# 12 warps a program (two consumer warpgroups + the producer's, padded to a warpgroup):
# 65536 registers / 384 threads, rounded down to a multiple of 8
WS_MAXNREG = 168


def attention_backward_dkdv_hopper(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                   do: torch.Tensor, lse: torch.Tensor, delta: torch.Tensor,
                                   sm_scale: float | None = None, causal: bool = False,
                                   block_m: int = 64, block_n: int = 128,
                                   num_warps: int = 8, stages: int = 2, overlap: int = 0,
                                   out: tuple[torch.Tensor, torch.Tensor] | None = None
                                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """dK, dV (B, H, N, d) on the Gluon dK/dV kernel (kernels.hopper_bwd) from the forward's
    lse (natural log, fp32) and D = rowsum(dO * O) (fp32), both (B, H, N); `out` = (dk, dv)
    contiguous buffers to write, else new ones. `stages`: the Q/dO ring's depth; `overlap`:
    0 every wgmma waited, 1 dP^T issued with S^T and run under P^T's exponentials, 2 also
    P^T dO under dS^T (the asynchronous wgmma schedules)."""
    from ..kernels.hopper_bwd import _attn_bwd_dkdv_hopper

    if (not hopper_supported(q, k, block_m, block_n) or v.shape != k.shape
            or do.shape != q.shape or (causal and block_n % block_m)):
        raise ValueError("the Gluon dK/dV takes q, k, v, do of one shape (B, H, N, d), "
                         "fp16/bf16, d 64 or 128, N a multiple of the blocks, on an sm_90 GPU")
    (b, h, n, d), scale, (q2, k2, v2, do2) = _rows(q, sm_scale, q, k, v, do)
    dk, dv = (torch.empty_like(k2), torch.empty_like(v2)) if out is None else out
    descs = _descriptors(q.dtype, (q2, block_m), (k2, block_n), (v2, block_n), (do2, block_m))
    _attn_bwd_dkdv_hopper[(n // block_n, b * h)](
        *descs, dk, dv, lse.contiguous(), delta.contiguous(), scale, n, block_m, block_n, d,
        bool(causal), int(stages), int(overlap), num_warps=num_warps)
    return dk.view(b, h, n, d), dv.view(b, h, n, d)


def attention_backward_dq_hopper(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 do: torch.Tensor, lse: torch.Tensor, delta: torch.Tensor,
                                 sm_scale: float | None = None, causal: bool = False,
                                 block_m: int = 128, block_n: int = 64, num_warps: int = 8,
                                 stages: int = 2, overlap: int = 0,
                                 out: torch.Tensor | None = None) -> torch.Tensor:
    """dQ (B, H, N, d) on the Gluon dQ kernel (kernels.hopper_bwd), from the forward's lse and
    D as attention_backward_dkdv_hopper takes them; `out` a contiguous buffer to write;
    `stages`, `overlap` as there (the K/V ring; 1: dP under P's exponentials)."""
    from ..kernels.hopper_bwd import _attn_bwd_dq_hopper

    if (not hopper_supported(q, k, block_m, block_n) or v.shape != k.shape
            or do.shape != q.shape or (causal and block_m % block_n)):
        raise ValueError("the Gluon dQ takes q, k, v, do of one shape (B, H, N, d), "
                         "fp16/bf16, d 64 or 128, N a multiple of the blocks, on an sm_90 GPU")
    (b, h, n, d), scale, (q2, k2, v2, do2) = _rows(q, sm_scale, q, k, v, do)
    dq = torch.empty_like(q2) if out is None else out
    descs = _descriptors(q.dtype, (q2, block_m), (k2, block_n), (v2, block_n), (do2, block_m))
    _attn_bwd_dq_hopper[(n // block_m, b * h)](
        *descs, dq, lse.contiguous(), delta.contiguous(), scale, n, block_m, block_n, d,
        bool(causal), int(stages), int(overlap), num_warps=num_warps)
    return dq.view(b, h, n, d)
