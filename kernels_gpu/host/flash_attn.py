"""FlashAttention-2 forward and backward in Triton: the public functions.

Implements Dao (2023), "FlashAttention-2", Algorithm 1 (forward) and Algorithm 2 (backward), in the
shape of the Triton fused-attention tutorial (seed 004 walks through both). Layout everywhere:
q of shape (batch, heads, N_q, d); k, v of shape (batch, kv_heads, N_k, d); lse (batch, heads,
N_q) fp32. Inputs are made contiguous (a copy when they are not).

    S = sm_scale * Q K^T            (N_q, N_k)  never stored
    P = softmax(S) row-wise         (N_q, N_k)  never stored
    O = P V                         (N_q, d)
    lse_i = log(sum_j exp(S_ij))    natural log, saved for the backward pass

What the kernels accept:
* head dims 1 .. 256; a d that is not a power of two (80, 96, 192, ...) is padded on chip to
  the next one (>= 16) with masked loads and stores, so the tensor cores do d_p-wide work;
* N_q != N_k (cross-attention), any lengths >= 1 (ragged tiles are masked);
* grouped-query / multi-query attention: kv_heads divides heads; query head h reads K/V head
  h // (heads / kv_heads); dK, dV sum over the heads of a group;
* causal masking, aligned bottom-right (causal=True or 'bottom_right': query i sees keys
  j <= i + N_k - N_q, as flash-attn >= 2.1 and SDPA with torch.nn.attention.bias.
  causal_lower_right) or top-left ('top_left': j <= i, SDPA's is_causal=True); the same for
  N_q == N_k. Rows that see no key (bottom-right, N_q > N_k) get O = 0 and lse = -inf;
* dtypes fp16, bf16, fp32 (tf32 dots on a GPU) forward and backward; fp8 (float8_e5m2,
  float8_e4m3fn) forward only, as seed 004's "Triton [FP8]": P is rounded to the input's fp8
  format for the PV product, V is read transposed (a copy unless v.transpose(-1, -2) is
  contiguous already), O comes out in `out_dtype` (fp16 by default); `descale` = (q, k, v)
  multipliers for scaled fp8 inputs.

Causal masking costs only the tiles that cross the diagonal; N need not be a multiple of the
tiles (masked loads, a little slower). The @triton.jit kernels live in kernels_fwd.py and
kernels_bwd.py; launch.py checks shapes, picks configs (configs.py) and launches. On CPU (no
CUDA) the kernels run in Triton's interpreter on torch CPU tensors.
"""
from __future__ import annotations

from typing import Any

import torch
import triton

from . import graphs, hopper, hopper_bwd_ws, hopper_d192
from . import launch as L
from .configs import KernelConfig, autotune_enabled
from ..kernels import INTERPRETER
from .launch import FP8_DTYPES, MAX_HEAD_DIM, Problem
from .reference import attention_reference, softmax_scale

__all__ = ["flash_attention", "flash_attention_forward", "flash_attention_backward",
           "FlashAttentionFunction", "attention_reference", "resolve_config", "honour_config",
           "INTERPRETER",
           "SUPPORTED_HEAD_DIMS", "MAX_HEAD_DIM", "FP8_DTYPES"]

# the head dims the tests and benchmarks cover; any 1 <= d <= MAX_HEAD_DIM is accepted
SUPPORTED_HEAD_DIMS = (16, 32, 64, 80, 96, 128, 192, 256)


def resolve_config(pass_: str, q: torch.Tensor, causal=False, block_m: int | None = None,
                   block_n: int | None = None, autotune: bool | None = None, timer=None,
                   k: torch.Tensor | None = None) -> KernelConfig:
    """The config a launch of `pass_` ('fwd', 'bwd_dkdv', 'bwd_dq') on q's shape (and k's,
    default q's) will use, with use_tma cleared where this shape or GPU cannot honour it."""
    p = L.problem_of(q, q if k is None else k, q if k is None else k, causal)
    return L.resolve_config(pass_, p, block_m, block_n, autotune, timer)


def honour_config(pass_: str, q: torch.Tensor, cfg: KernelConfig, causal=False,
                  k: torch.Tensor | None = None) -> KernelConfig:
    """`cfg` as a launch of `pass_` on q's (and k's) shape runs it (TMA dropped where it
    cannot be used)."""
    p = L.problem_of(q, q if k is None else k, q if k is None else k, causal)
    return L.honour(pass_, p, cfg)


def _timer(launch):
    """ms per call of launch(cfg), or inf if the config fails to compile/launch (autotuning)."""
    def time_config(cfg: KernelConfig) -> float:
        try:
            return triton.testing.do_bench(lambda: launch(cfg), warmup=5, rep=25,
                                           return_mode="median")
        except Exception:  # noqa: BLE001 - a candidate that does not compile is just skipped
            return float("inf")
    return time_config


def _v_for(p: Problem, v: torch.Tensor) -> torch.Tensor:
    """V as the forward kernel reads it: (B, H_kv, N_k, d), or V^T (B, H_kv, d, N_k) for fp8."""
    if not p.fp8:
        return v.contiguous()
    vt = v.transpose(-1, -2)
    return vt if vt.is_contiguous() else vt.contiguous()


def flash_attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal=False,
                            sm_scale: float | None = None, block_m: int | None = None,
                            block_n: int | None = None, autotune: bool | None = None,
                            config: KernelConfig | None = None,
                            out_dtype: torch.dtype | None = None,
                            descale: tuple[float, float, float] | None = None
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """O = softmax(sm_scale * q k^T [causal mask]) v and lse = logsumexp of the scaled scores.

    q (B, H, N_q, d); k, v (B, H_kv, N_k, d). Returns o (B, H, N_q, d) in q's dtype (fp8
    inputs: `out_dtype`, default fp16) and lse (B, H, N_q) fp32, natural log. block_m /
    block_n override the tuned tile sizes (powers of two >= 16); `config` overrides
    everything (warps, stages, TMA); autotune=True times the candidates once per shape.
    """
    p = L.problem_of(q, k, v, causal)
    scale = softmax_scale(sm_scale, p.d)
    if scale <= 0:
        raise ValueError(f"sm_scale must be positive; got {scale}")
    out_scale = 1.0
    if descale is not None:
        dq_, dk_, dv_ = (float(x) for x in descale)
        scale, out_scale = scale * dq_ * dk_, dv_
    if out_dtype is None:
        out_dtype = torch.float16 if p.fp8 else q.dtype
    q, k, v = q.contiguous(), k.contiguous(), _v_for(p, v)
    o = L.new_empty(q.shape, q, out_dtype)
    lse = L.new_empty((p.batch, p.heads, p.nq), q, torch.float32)
    gluon = (hopper.dispatch_config(p, INTERPRETER) if config is None and block_m is None
             and block_n is None and not autotune and not autotune_enabled()
             and descale is None and out_dtype == q.dtype else None)
    ws = hopper.dispatch_ws(p, INTERPRETER) if gluon is not None else None
    if ws is not None:  # the warp-specialised Gluon forward where it measured fastest
        _replayable(("fwd-ws", p, scale, ws), (q, k, v, o, lse),
                    lambda: hopper.attention_forward_ws(q, k, v, scale, ws[0], ws[1], ws[2],
                                                        out=(o, lse), causal=p.causal), p)
        return o, lse
    if gluon is not None:  # the Gluon Hopper kernel where it measured faster (host/hopper.py)
        bm, bn, w = gluon
        _replayable(("fwd-gluon", p, scale, gluon), (q, k, v, o, lse),
                    lambda: hopper.attention_forward_hopper(q, k, v, scale, bm, bn, w,
                                                            out=(o, lse), causal=p.causal), p)
        return o, lse
    timer = _timer(lambda c: L.launch_fwd(p, q, k, v, o, lse, scale, out_scale,
                                          L.honour("fwd", p, c)))
    cfg = (L.honour("fwd", p, config) if config is not None
           else L.resolve_config("fwd", p, block_m, block_n, autotune, timer))
    _replayable(("fwd", p, scale, out_scale, cfg), (q, k, v, o, lse),
                lambda: L.launch_fwd(p, q, k, v, o, lse, scale, out_scale, cfg), p)
    return o, lse


def _replayable(what: tuple, tensors: tuple, launch, p: Problem) -> None:
    """launch() now; a small problem (its visible pairs: a causal mask's empty part is no
    work) seen before with the very same buffers replays it as a CUDA graph instead (kernels_gpu.host.graphs: ~10 us of host time instead of ~30 per launch)."""
    if not INTERPRETER and graphs.enabled(p.batch * p.heads * p.visible_pairs * p.dp):
        key = (*what, torch.cuda.current_stream().cuda_stream,
               *(t.data_ptr() for t in tensors))
        graphs.run(key, launch)
    else:
        launch()


def flash_attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                             lse: torch.Tensor, do: torch.Tensor, causal=False,
                             sm_scale: float | None = None, block_m: int | None = None,
                             block_n: int | None = None, autotune: bool | None = None,
                             dkdv_config: KernelConfig | None = None,
                             dq_config: KernelConfig | None = None
                             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients (dq, dk, dv) of sum(o * do) for o = attention(q, k, v), given the forward's o
    and lse. Three launches: D = rowsum(do * o); dK/dV (K/V tile held, Q streamed, summed over
    the query heads of a group); dQ (Q tile held, K/V streamed). block_m / block_n set the
    Q-row and K-row tile sizes of both kernels; dkdv_config / dq_config override everything
    for one kernel."""
    p = L.problem_of(q, k, v, causal)
    if p.fp8:
        raise ValueError("the fp8 kernels are forward only (as seed 004's tutorial); run the "
                         "backward in fp16 or bf16")
    if o.shape != q.shape or do.shape != q.shape or tuple(lse.shape) != tuple(q.shape[:3]):
        raise ValueError(f"o and do must have q's shape {tuple(q.shape)} and lse "
                         f"{tuple(q.shape[:3])}; got {tuple(o.shape)}, {tuple(do.shape)}, "
                         f"{tuple(lse.shape)}")
    q, k, v, o = q.contiguous(), k.contiguous(), v.contiguous(), o.contiguous()
    do = do.to(q.dtype).contiguous()
    lse = lse.float().contiguous()
    scale = softmax_scale(sm_scale, p.d)
    gluon = ((hopper.dispatch_dkdv(p, INTERPRETER) or hopper_d192.dispatch_d192(p, INTERPRETER))
             if dkdv_config is None and block_m is None
             and block_n is None and not autotune and not autotune_enabled() else None)
    if dkdv_config is None or dq_config is None:
        timers = _backward_timers(p, q, k, v, o, lse, do, scale)
        if dkdv_config is None:
            dkdv_config = L.resolve_config("bwd_dkdv", p, block_m, block_n, autotune, timers[0])
        if dq_config is None:
            dq_config = L.resolve_config("bwd_dq", p, block_m, block_n, autotune, timers[1])
    return _backward(p, q, k, v, o, lse, do, scale, L.honour("bwd_dkdv", p, dkdv_config),
                     L.honour("bwd_dq", p, dq_config), gluon)


def _backward_timers(p: Problem, q, k, v, o, lse, do, scale):
    """Autotuning timers of the dK/dV and dQ launches; their buffers (and the D they read) are
    made on the first timing only, so the untuned path pays nothing for them."""
    bufs: dict[str, Any] = {}

    def buffers():
        if not bufs:
            bufs["delta"] = L.new_empty((p.batch, p.heads, p.nq), q, torch.float32)
            L.launch_preprocess(p, o, do, bufs["delta"])
            bufs.update(dq=torch.empty_like(q), dk=torch.empty_like(k), dv=torch.empty_like(v))
        return bufs

    def dkdv(c):
        b = buffers()
        L.launch_dkdv(p, q, k, v, do, b["dk"], b["dv"], lse, b["delta"], scale,
                      L.honour("bwd_dkdv", p, c), b["dq"])

    def dq(c):
        b = buffers()
        L.launch_dq(p, q, k, v, do, b["dq"], lse, b["delta"], scale, L.honour("bwd_dq", p, c))
    return _timer(dkdv), _timer(dq)


def _backward(p: Problem, q, k, v, o, lse, do, scale: float, dkdv_cfg: KernelConfig,
              dq_cfg: KernelConfig, gluon: tuple[int, ...] | hopper_d192.D192Config | None = None):
    """The three launches on checked, contiguous inputs with resolved configs (the autograd
    path calls this directly: host time is what small shapes are bound by); gluon (BLOCK_M,
    BLOCK_N, warps): dK/dV on the Gluon kernel (host/hopper.py DISPATCH_DKDV) instead. A
    small problem seen before with the very same buffers replays the launches as one CUDA
    graph (graphs); gluon a hopper_d192.D192Config: the chunked d 192 backward instead."""
    if isinstance(gluon, hopper_d192.D192Config):
        return hopper_d192.run_backward_d192(p, q, k, v, o, lse, do, scale, gluon, _replayable)
    delta = L.new_empty((p.batch, p.heads, p.nq), q, torch.float32)
    dq, dk, dv = L.new_empty(q.shape, q), L.new_empty(k.shape, k), L.new_empty(v.shape, v)

    gluon_dq = hopper.dispatch_dq(p, False) if gluon is not None else None
    ws = hopper_bwd_ws.dispatch_dkdv_ws(p, False) if gluon is not None else None

    def launch():
        L.launch_preprocess(p, o, do, delta)
        if ws is not None and ws[3]:  # dQ, dK, dV in one warp-specialised launch
            hopper_bwd_ws.attention_backward_ws_fused(q, k, v, do, lse, delta, scale, p.causal,
                                                      *ws, out=(dq, dk, dv))
            return
        if ws is not None:  # the warp-specialised dK/dV (host/hopper_bwd_ws.py)
            hopper_bwd_ws.attention_backward_dkdv_ws(q, k, v, do, lse, delta, scale, p.causal,
                                                     *ws, out=(dk, dv))
        elif gluon is not None:
            hopper.attention_backward_dkdv_hopper(q, k, v, do, lse, delta, scale, p.causal,
                                                  *gluon, out=(dk, dv))
        else:
            L.launch_dkdv(p, q, k, v, do, dk, dv, lse, delta, scale, dkdv_cfg, dq)
        if gluon_dq is not None:
            hopper.attention_backward_dq_hopper(q, k, v, do, lse, delta, scale, p.causal,
                                                *gluon_dq, out=dq.view(-1, p.d))
        elif gluon is not None or not dkdv_cfg.fused_dq:  # else the dK/dV launch wrote dQ
            L.launch_dq(p, q, k, v, do, dq, lse, delta, scale, dq_cfg)

    _replayable(("bwd", p, scale, dkdv_cfg, dq_cfg, gluon, gluon_dq, ws),
                (q, k, v, o, lse, do, delta, dq, dk, dv), launch, p)
    return dq, dk, dv


class FlashAttentionFunction(torch.autograd.Function):
    """autograd wrapper: forward saves (q, k, v, o, lse); backward runs the FA2 backward.

    The backward goes straight to the three launches with the problem checked by the forward
    and the configs resolved once per shape (launch.resolve_config's cache): at small shapes
    the backward is bound by host time, not by the GPU (hostprobe, NOTES.md)."""

    @staticmethod
    def forward(ctx, q, k, v, causal=False, sm_scale=None, block_m=None, block_n=None):
        o, lse = flash_attention_forward(q, k, v, causal, sm_scale, block_m, block_n)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.problem = L.problem_of(q, k, v, causal)
        ctx.causal, ctx.sm_scale, ctx.block_m, ctx.block_n = causal, sm_scale, block_m, block_n
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        p = ctx.problem
        if p.fp8 or autotune_enabled():  # the general path: its checks, or the autotuner
            dq, dk, dv = flash_attention_backward(q, k, v, o, lse, do, ctx.causal,
                                                  ctx.sm_scale, ctx.block_m, ctx.block_n)
        else:
            dq, dk, dv = _backward(
                p, q.contiguous(), k.contiguous(), v.contiguous(), o.contiguous(), lse,
                do.to(q.dtype).contiguous(), softmax_scale(ctx.sm_scale, p.d),
                L.resolve_config("bwd_dkdv", p, ctx.block_m, ctx.block_n),
                L.resolve_config("bwd_dq", p, ctx.block_m, ctx.block_n),
                (hopper.dispatch_dkdv(p, INTERPRETER) or hopper_d192.dispatch_d192(p, INTERPRETER))
                if ctx.block_m is None and ctx.block_n is None else None)
        return dq, dk, dv, None, None, None, None


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal=False,
                    sm_scale: float | None = None, block_m: int | None = None,
                    block_n: int | None = None) -> torch.Tensor:
    """Differentiable FlashAttention-2: softmax(sm_scale * q k^T) v, shape (B, H, N_q, d)."""
    return FlashAttentionFunction.apply(q, k, v, causal, sm_scale, block_m, block_n)
