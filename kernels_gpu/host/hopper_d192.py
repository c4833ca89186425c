"""Host side of the d 192 chunked Gluon backward (kernels.hopper_bwd_chunked): descriptors,
launches and the candidate configurations the bench times (where it runs: host/dispatch.py).

The backward at d 192 runs as: the `tl` preprocess (D = rowsum(dO * O)), the chunked dK/dV
(one launch, or dV apart: a dV launch and a dK launch), the chunked dQ. TMA descriptors are
made on the unpadded (B*H*N, 192) tensors with boxes of (rows, 64). N_q = N_k a multiple of
the blocks, fp16 / bf16, sm_90; anything else (cross-attention, ragged N) stays on the `tl`
kernels padded to 256. Grouped heads (H_kv < H) run the same launches on K and V copied out to
H heads, with dK and dV written as fp32 partials per query head and summed over each group
(the `tl` dK/dV's full split does the same in its kernel): the kernels stay the MHA ones.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from ..kernels.hopper_bwd_chunked import CHUNK
from . import launch as L
from .launch_common import gluon_operands, gluon_supported, grid, launch, out_rows

__all__ = ["D192Config", "CANDIDATES",
           "attention_backward_dkdv_d192", "attention_backward_dq_d192", "backward_d192",
           "run_backward_d192"]

Blocks = tuple[int, int, int, int]  # (BLOCK_M, BLOCK_N, warps, ring stages)


class D192Config(NamedTuple):
    """The launches of one d 192 backward: dv None = one dK/dV launch (PART 0) with `dk`'s
    blocks, else a dV launch (PART 1) and a dK launch (PART 2); dq the dQ launch."""
    dv: Blocks | None
    dk: Blocks
    dq: Blocks

    def label(self) -> str:
        f = "M{}N{}w{}s{}".format
        kv = f"dv {f(*self.dv)} dk {f(*self.dk)}" if self.dv else f"dkdv {f(*self.dk)}"
        return f"gluon192 {kv} dq {f(*self.dq)}"


# What the bench (`python -m kernels_gpu.bench.studies d192`) times: name -> config. The offline
# compile (`python -m kernels_gpu.bench.compile_check --d192`) dropped the rest (spills, shared memory).
CANDIDATES: dict[str, D192Config] = {
    "g-n64": D192Config((64, 64, 4, 2), (64, 64, 4, 2), (64, 64, 4, 2)),
    "g-m32": D192Config((32, 64, 4, 2), (32, 64, 4, 2), (64, 32, 4, 2)),
    "g-n128": D192Config((64, 128, 8, 2), (64, 128, 8, 2), (128, 64, 8, 2)),
    "g-mix": D192Config((32, 64, 4, 2), (64, 64, 4, 2), (128, 32, 8, 2)),
    # each launch's fastest blocks in the first call (dV M32N64w4, dK M64N128w8, dQ M128N64w8)
    "g-best": D192Config((32, 64, 4, 2), (64, 128, 8, 2), (128, 64, 8, 2)),
}

def _check(q, k, v, do, causal, block_m, block_n, held_first: bool) -> None:
    held, streamed = (block_n, block_m) if held_first else (block_m, block_n)
    if (not gluon_supported(q, k, (192,), block_m, block_n) or v.shape != k.shape
            or do.shape != q.shape or (causal and held % streamed)):
        raise ValueError("the chunked Gluon backward takes q, k, v, do of one shape "
                         "(B, H, N, 192), fp16/bf16, N a multiple of the blocks (causal: the "
                         "held block a multiple of the streamed one), on an sm_90 GPU")


def attention_backward_dkdv_d192(q, k, v, do, lse, delta, sm_scale=None, causal=False,
                                 block_m=64, block_n=64, num_warps=4, stages=2, part=0,
                                 out=None):
    """dK, dV (B, H, N, 192) of the chunked Gluon dK/dV from the forward's lse (natural log)
    and D, both (B, H, N) fp32; part 1 writes dV alone, 2 dK alone, 0 both; `out` = (dk, dv)
    contiguous buffers (the one a part does not write is left as it is)."""
    from ..kernels.hopper_bwd_chunked import _attn_bwd_dkdv_d192

    _check(q, k, v, do, causal, block_m, block_n, True)
    (b, h, n, d), scale, (_, k2, v2, _), descs = gluon_operands(
        sm_scale, (q, block_m), (k, block_n), (v, block_n), (do, block_m), cols=CHUNK)
    dk, dv = (out_rows(o, t) for o, t in zip(out or (None, None), (k2, v2)))
    launch(_attn_bwd_dkdv_d192, grid(n, block_n, b * h), *descs, dk, dv, lse.contiguous(),
           delta.contiguous(), scale, n, block_m, block_n, bool(causal), int(stages), int(part),
           num_warps=num_warps)
    return dk.view(b, h, n, d), dv.view(b, h, n, d)


def attention_backward_dq_d192(q, k, v, do, lse, delta, sm_scale=None, causal=False,
                               block_m=64, block_n=64, num_warps=4, stages=2, out=None):
    """dQ (B, H, N, 192) of the chunked Gluon dQ; arguments as attention_backward_dkdv_d192."""
    from ..kernels.hopper_bwd_chunked import _attn_bwd_dq_d192

    _check(q, k, v, do, causal, block_m, block_n, False)
    (b, h, n, d), scale, (q2, *_), descs = gluon_operands(
        sm_scale, (q, block_m), (k, block_n), (v, block_n), (do, block_m), cols=CHUNK)
    dq = out_rows(out, q2)
    launch(_attn_bwd_dq_d192, grid(n, block_m, b * h), *descs, dq, lse.contiguous(),
           delta.contiguous(), scale, n, block_m, block_n, bool(causal), int(stages),
           num_warps=num_warps)
    return dq.view(b, h, n, d)


def backward_d192(q, k, v, do, lse, delta, scale, causal, cfg: D192Config, dq, dk, dv) -> None:
    """The chunked launches of `cfg` into the contiguous buffers dq, dk, dv (D given)."""
    kv = (dk, dv)
    if cfg.dv is None:
        attention_backward_dkdv_d192(q, k, v, do, lse, delta, scale, causal, *cfg.dk, 0, out=kv)
    else:
        attention_backward_dkdv_d192(q, k, v, do, lse, delta, scale, causal, *cfg.dv, 1, out=kv)
        attention_backward_dkdv_d192(q, k, v, do, lse, delta, scale, causal, *cfg.dk, 2, out=kv)
    attention_backward_dq_d192(q, k, v, do, lse, delta, scale, causal, *cfg.dq, out=dq)


def run_backward_d192(p, q, k, v, o, lse, do, scale: float, cfg: D192Config, replayable):
    """(dq, dk, dv) of the whole backward on checked, contiguous inputs: the `tl` preprocess,
    then the chunked launches; `replayable` (flash_attn._replayable) replays small problems
    as a CUDA graph. Grouped heads: K and V copied out to the H query heads first (head h
    reads K/V head h // group, as every kernel here maps them), dK and dV written in fp32 per
    query head (the kernel stores in its output's dtype), then summed over each group."""
    delta = L.new_empty((p.batch, p.heads, p.nq), q, torch.float32)
    dq, dk, dv = L.new_empty(q.shape, q), L.new_empty(k.shape, k), L.new_empty(v.shape, v)
    if p.group == 1:
        def launch():
            L.launch_preprocess(p, o, do, delta)
            backward_d192(q, k, v, do, lse, delta, scale, p.causal, cfg, dq, dk, dv)

        replayable(("bwd-d192", p, scale, cfg), (q, k, v, o, lse, do, delta, dq, dk, dv),
                   launch, p)
        return dq, dk, dv
    b, hkv, g, n, d = p.batch, p.heads_kv, p.group, p.nk, p.d
    ke, ve = L.new_empty(q.shape, k), L.new_empty(q.shape, v)
    dke, dve = (L.new_empty(q.shape, q, torch.float32) for _ in range(2))
    sums = L.new_empty((2, b, hkv, n, d), q, torch.float32)

    def launch_grouped():
        L.launch_preprocess(p, o, do, delta)
        ke.view(b, hkv, g, n, d).copy_(k.unsqueeze(2).expand(b, hkv, g, n, d))
        ve.view(b, hkv, g, n, d).copy_(v.unsqueeze(2).expand(b, hkv, g, n, d))
        backward_d192(q, ke, ve, do, lse, delta, scale, p.causal, cfg, dq, dke, dve)
        torch.sum(dke.view(b, hkv, g, n, d), dim=2, out=sums[0])
        torch.sum(dve.view(b, hkv, g, n, d), dim=2, out=sums[1])
        dk.copy_(sums[0])
        dv.copy_(sums[1])

    replayable(("bwd-d192-grouped", p, scale, cfg),
               (q, k, v, o, lse, do, delta, dq, dk, dv, ke, ve, dke, dve, sums),
               launch_grouped, p)
    return dq, dk, dv
