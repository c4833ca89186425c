"""FlashAttention-2 forward and backward in Triton.

Implements Dao (2023), "FlashAttention-2", Algorithm 1 (forward) and Algorithm 2 (backward), in the
shape of the Triton fused-attention tutorial (seed 004 walks through both). Layout everywhere:
q, k, v, o of shape (batch, heads, N, d), contiguous; lse of shape (batch, heads, N), fp32.

    S = sm_scale * Q K^T            (N, N)  never stored
    P = softmax(S) row-wise          (N, N)  never stored
    O = P V                          (N, d)
    lse_i = log(sum_j exp(S_ij))     natural log, saved for the backward pass

Forward, per program: one BLOCK_M tile of Q stays on chip; K and V stream past in BLOCK_N tiles;
a running row max m and row sum l rescale the (BLOCK_M, d) fp32 accumulator (online softmax).
The kernels work in base 2 (exp2 is the native instruction): logits are scaled by
sm_scale * log2(e) and the saved natural-log lse is converted on load.

Backward (FA2): D = rowsum(dO * O) first; then a dK/dV kernel (one BLOCK_N tile of K/V stays on
chip, Q/dO stream past in BLOCK_M tiles) and a dQ kernel (one BLOCK_M tile of Q/dO stays, K/V
stream past). P is recomputed from q, k and lse in both; nothing of size N x N is stored.

    dV = P^T dO        dP = dO V^T        dS = P * (dP - D)        dQ = s dS K      dK = s dS^T Q

Causal masking: tiles entirely below the diagonal run without a mask; only the tiles crossing it
apply one. N need not be a multiple of the tile sizes: when it is not (EVEN_N false), every load
and every score is masked against N (correct, a little slower); the benchmarked shapes are even.

The @triton.jit kernels live in kernels.py; this module checks inputs, picks a launch config
(configs.py), builds the grids and TMA descriptors, launches, and wraps it all in an
autograd.Function. On CPU (no CUDA) kernels.py switches Triton to its interpreter, and the same
functions take torch CPU tensors.
"""
from __future__ import annotations

import math
from dataclasses import replace

import torch
import triton

from .configs import KernelConfig, choose_config
from .kernels import (INTERPRETER, _attn_bwd_dkdv, _attn_bwd_dq, _attn_bwd_preprocess,
                      _attn_fwd)

try:  # host-side TMA descriptors (triton >= 3.4)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover
    TensorDescriptor = None

__all__ = ["flash_attention", "flash_attention_forward", "flash_attention_backward",
           "FlashAttentionFunction", "attention_reference", "resolve_config", "INTERPRETER",
           "SUPPORTED_HEAD_DIMS"]

SUPPORTED_HEAD_DIMS = (16, 32, 64, 128)


# ----------------------------------------------------------------------------------------------
# Host side: checks, config resolution, launches
# ----------------------------------------------------------------------------------------------
def _check_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"q, k, v must all have shape (batch, heads, N, d); got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float16, torch.bfloat16,
                                                               torch.float32):
        raise ValueError(f"q, k, v must share one dtype of float16, bfloat16, float32; got "
                         f"{q.dtype}, {k.dtype}, {v.dtype}")
    d = q.shape[-1]
    if d not in SUPPORTED_HEAD_DIMS:
        raise ValueError(f"head dim d={d} is not supported; use one of {SUPPORTED_HEAD_DIMS}")
    if q.shape[2] < 1:
        raise ValueError("sequence length N must be at least 1")
    want_cuda = not INTERPRETER
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.is_cuda != want_cuda:
            where = "CUDA" if want_cuda else "CPU (Triton interpreter is active)"
            raise ValueError(f"{name} must be a {where} tensor; got device {t.device}")


def _tma_ok(n: int, cfg: KernelConfig) -> bool:
    """TMA needs even tiles (the flattened descriptor would read the next head's rows),
    a descriptor-capable Triton, and sm_90+ (or the interpreter, which emulates it)."""
    if TensorDescriptor is None or n % cfg.block_m or n % cfg.block_n:
        return False
    if INTERPRETER:
        return True
    return torch.cuda.get_device_capability()[0] >= 9


def _check_blocks(cfg: KernelConfig) -> None:
    for name, b in (("block_m", cfg.block_m), ("block_n", cfg.block_n)):
        if b < 16 or b & (b - 1):
            raise ValueError(f"{name}={b} must be a power of two >= 16 (tl.dot's minimum tile)")


def resolve_config(pass_: str, q: torch.Tensor, causal: bool, block_m: int | None = None,
                   block_n: int | None = None, autotune: bool | None = None,
                   timer=None) -> KernelConfig:
    """The config a launch of `pass_` ('fwd', 'bwd_dkdv', 'bwd_dq') on q's shape will use,
    with use_tma already cleared where this shape or GPU cannot honour them."""
    n, d = q.shape[2], q.shape[3]
    cfg = choose_config(pass_, d, causal, q.element_size(), n, block_m=block_m, block_n=block_n,
                        interpreter=INTERPRETER, autotune=autotune, timer=timer)
    _check_blocks(cfg)
    if cfg.use_tma and not _tma_ok(n, cfg):
        cfg = replace(cfg, use_tma=False)
    return cfg


def _flat_desc(t: torch.Tensor, block_rows: int):
    """TensorDescriptor over t viewed as (B*H*N, d), loading (block_rows, d) tiles."""
    d = t.shape[-1]
    return TensorDescriptor(t, shape=[t.numel() // d, d], strides=[d, 1],
                            block_shape=[block_rows, d])


def _launch_kwargs(cfg: KernelConfig) -> dict:
    return {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}


def _dot_f32(dtype: torch.dtype) -> bool:
    return INTERPRETER and dtype == torch.bfloat16


def _launch_fwd(q, k, v, o, lse, sm_scale: float, causal: bool, cfg: KernelConfig) -> None:
    B, H, N, D = q.shape
    even = N % cfg.block_m == 0 and N % cfg.block_n == 0
    if cfg.use_tma:  # descriptors only for the streamed tiles (each costs host time per launch)
        args = (q, _flat_desc(k, cfg.block_n), _flat_desc(v, cfg.block_n), o)
    else:
        args = (q, k, v, o)
    grid = (triton.cdiv(N, cfg.block_m), B * H)
    _attn_fwd[grid](*args, lse, sm_scale, N, HEAD_DIM=D, BLOCK_M=cfg.block_m,
                    BLOCK_N=cfg.block_n, CAUSAL=causal, EVEN_N=even, USE_TMA=cfg.use_tma,
                    DOT_F32=_dot_f32(q.dtype),
                    **_launch_kwargs(cfg))


def _launch_preprocess(o, do, delta) -> None:
    B, H, N, D = o.shape
    block = 64 if INTERPRETER else 128
    grid = (triton.cdiv(N, block), B * H)
    _attn_bwd_preprocess[grid](o, do, delta, N, HEAD_DIM=D, BLOCK_M=block,
                               EVEN_N=N % block == 0, num_warps=4)


def _launch_dkdv(q, k, v, do, dk, dv, lse, delta, sm_scale, causal, cfg: KernelConfig) -> None:
    B, H, N, D = q.shape
    even = N % cfg.block_m == 0 and N % cfg.block_n == 0
    if cfg.use_tma:  # streamed: Q and dO
        tiles = (_flat_desc(q, cfg.block_m), k, v, _flat_desc(do, cfg.block_m), dk, dv)
    else:
        tiles = (q, k, v, do, dk, dv)
    grid = (triton.cdiv(N, cfg.block_n), B * H)
    _attn_bwd_dkdv[grid](*tiles, lse, delta, sm_scale, N, HEAD_DIM=D, BLOCK_M=cfg.block_m,
                         BLOCK_N=cfg.block_n, CAUSAL=causal, EVEN_N=even, USE_TMA=cfg.use_tma,
                         DOT_F32=_dot_f32(q.dtype), **_launch_kwargs(cfg))


def _launch_dq(q, k, v, do, dq, lse, delta, sm_scale, causal, cfg: KernelConfig) -> None:
    B, H, N, D = q.shape
    even = N % cfg.block_m == 0 and N % cfg.block_n == 0
    if cfg.use_tma:  # streamed: K and V
        tiles = (q, _flat_desc(k, cfg.block_n), _flat_desc(v, cfg.block_n), do, dq)
    else:
        tiles = (q, k, v, do, dq)
    grid = (triton.cdiv(N, cfg.block_m), B * H)
    _attn_bwd_dq[grid](*tiles, lse, delta, sm_scale, N, HEAD_DIM=D, BLOCK_M=cfg.block_m,
                       BLOCK_N=cfg.block_n, CAUSAL=causal, EVEN_N=even, USE_TMA=cfg.use_tma,
                       DOT_F32=_dot_f32(q.dtype), **_launch_kwargs(cfg))


def _timer(launch):
    """ms per call of launch(cfg), or inf if the config fails to compile/launch (autotuning)."""
    def time_config(cfg: KernelConfig) -> float:
        try:
            return triton.testing.do_bench(lambda: launch(cfg), warmup=5, rep=25,
                                           return_mode="median")
        except Exception:  # noqa: BLE001 - a candidate that does not compile is just skipped
            return float("inf")
    return time_config


def _scale(sm_scale: float | None, d: int) -> float:
    return 1.0 / math.sqrt(d) if sm_scale is None else float(sm_scale)


def flash_attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                            causal: bool = False, sm_scale: float | None = None,
                            block_m: int | None = None, block_n: int | None = None,
                            autotune: bool | None = None, config: KernelConfig | None = None
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """O = softmax(sm_scale * q k^T [causal mask]) v and lse = logsumexp of the scaled scores.

    q, k, v: (B, H, N, d), one of fp16/bf16/fp32 (fp32 runs tf32 dots on GPU).
    Returns o (B, H, N, d) in q's dtype and lse (B, H, N) fp32, natural log.
    block_m / block_n override the tuned tile sizes (powers of two >= 16, any N); `config`
    overrides everything (warps, stages, TMA); autotune=True times the candidates once per shape.
    """
    _check_inputs(q, k, v)
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    B, H, N, D = q.shape
    scale = _scale(sm_scale, D)
    o = torch.empty_like(q)
    lse = torch.empty((B, H, N), device=q.device, dtype=torch.float32)
    timer = _timer(lambda c: _launch_fwd(q, k, v, o, lse, scale, causal, _honour(c, N)))
    cfg = (_honour(config, N) if config is not None
           else resolve_config("fwd", q, causal, block_m, block_n, autotune, timer))
    _check_blocks(cfg)
    _launch_fwd(q, k, v, o, lse, scale, causal, cfg)
    return o, lse


def _honour(cfg: KernelConfig, n: int) -> KernelConfig:
    """A candidate as it will run on this shape (TMA dropped where it cannot be used)."""
    if cfg.use_tma and not _tma_ok(n, cfg):
        return replace(cfg, use_tma=False)
    return cfg


def flash_attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                             lse: torch.Tensor, do: torch.Tensor, causal: bool = False,
                             sm_scale: float | None = None, block_m: int | None = None,
                             block_n: int | None = None, autotune: bool | None = None,
                             dkdv_config: KernelConfig | None = None,
                             dq_config: KernelConfig | None = None
                             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients (dq, dk, dv) of sum(o * do) for o = attention(q, k, v), given the forward's o
    and lse. Three launches: D = rowsum(do * o); dK/dV (K/V tile held, Q streamed); dQ (Q tile
    held, K/V streamed). block_m / block_n set the Q-row and K-row tile sizes of both kernels;
    dkdv_config / dq_config override everything for one kernel."""
    _check_inputs(q, k, v)
    if o.shape != q.shape or do.shape != q.shape or lse.shape != q.shape[:3]:
        raise ValueError(f"o and do must have q's shape {tuple(q.shape)} and lse "
                         f"{tuple(q.shape[:3])}; got {tuple(o.shape)}, {tuple(do.shape)}, "
                         f"{tuple(lse.shape)}")
    q, k, v, o, do = (t.contiguous() for t in (q, k, v, o, do))
    do = do.to(q.dtype)
    lse = lse.contiguous().float()
    B, H, N, D = q.shape
    scale = _scale(sm_scale, D)
    delta = torch.empty((B, H, N), device=q.device, dtype=torch.float32)
    _launch_preprocess(o, do, delta)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    dkdv_timer = _timer(lambda c: _launch_dkdv(q, k, v, do, dk, dv, lse, delta, scale, causal,
                                               _honour(c, N)))
    cfg = (_honour(dkdv_config, N) if dkdv_config is not None
           else resolve_config("bwd_dkdv", q, causal, block_m, block_n, autotune, dkdv_timer))
    _check_blocks(cfg)
    _launch_dkdv(q, k, v, do, dk, dv, lse, delta, scale, causal, cfg)

    dq_timer = _timer(lambda c: _launch_dq(q, k, v, do, dq, lse, delta, scale, causal,
                                           _honour(c, N)))
    cfg = (_honour(dq_config, N) if dq_config is not None
           else resolve_config("bwd_dq", q, causal, block_m, block_n, autotune, dq_timer))
    _check_blocks(cfg)
    _launch_dq(q, k, v, do, dq, lse, delta, scale, causal, cfg)
    return dq, dk, dv


class FlashAttentionFunction(torch.autograd.Function):
    """autograd wrapper: forward saves (q, k, v, o, lse); backward runs the FA2 backward."""

    @staticmethod
    def forward(ctx, q, k, v, causal=False, sm_scale=None, block_m=None, block_n=None):
        o, lse = flash_attention_forward(q, k, v, causal, sm_scale, block_m, block_n)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.sm_scale, ctx.block_m, ctx.block_n = causal, sm_scale, block_m, block_n
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = flash_attention_backward(q, k, v, o, lse, do, ctx.causal, ctx.sm_scale,
                                              ctx.block_m, ctx.block_n)
        return dq, dk, dv, None, None, None, None


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    sm_scale: float | None = None, block_m: int | None = None,
                    block_n: int | None = None) -> torch.Tensor:
    """Differentiable FlashAttention-2: softmax(sm_scale * q k^T) v, shape (B, H, N, d)."""
    return FlashAttentionFunction.apply(q, k, v, causal, sm_scale, block_m, block_n)


def attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                        sm_scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Plain-math attention in float64 (the oracle): returns (o, lse), both float64."""
    q, k, v = q.double(), k.double(), v.double()
    n = q.shape[2]
    scores = (q @ k.transpose(-1, -2)) * _scale(sm_scale, q.shape[-1])  # (B, H, N, N)
    if causal:
        hidden = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(hidden, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    return torch.softmax(scores, dim=-1) @ v, lse
