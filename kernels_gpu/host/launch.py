"""Host side of the FlashAttention-2 kernels: the problem's shape, config choice, launches.

`Problem` is what one call computes: batch B, query heads H, K/V heads H_kv (H % H_kv == 0:
grouped-query attention; H_kv = 1 is multi-query), query length N_q, key length N_k, head dim
d (padded on chip to d_p, the next power of two >= 16), dtype, and the causal offset. The
launch functions take contiguous tensors laid out (B, H, N, d); they start the @triton.jit
kernels (kernels_fwd.py, kernels_bwd.py) with the grids, TMA descriptors and launch of
`launch_common`.

Host time matters at small shapes (a backward of d 64, N 1k runs ~200 us on an H200): the
config of each (pass, shape) is resolved once and cached, and only the streamed tiles go
through TMA descriptors (each costs ~10 us of host time per launch).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import torch

from ..kernels import (
    INTERPRETER,
    _attn_bwd_dkdv,
    _attn_bwd_dq,
    _attn_bwd_preprocess,
    _attn_fwd,
    padded_head_dim,
)
from .configs import (
    KernelConfig,
    autotune_enabled,
    choose_config,
    cross_config,
    dkdv_split,
    tma_allowed,
)
from .launch_common import TensorDescriptor, flat_desc, flat_desc_t, grid, launch

__all__ = ["Problem", "FP8_DTYPES", "INPUT_DTYPES", "MAX_HEAD_DIM", "problem_of",
           "resolve_config", "launch_fwd", "launch_preprocess", "launch_dkdv", "launch_dq",
           "new_empty"]

FP8_DTYPES = tuple(t for t in (getattr(torch, "float8_e5m2", None),
                               getattr(torch, "float8_e4m3fn", None)) if t is not None)
INPUT_DTYPES = (torch.float16, torch.bfloat16, torch.float32) + FP8_DTYPES
MAX_HEAD_DIM = 256  # the largest padded head dim whose fp32 accumulators fit the registers
CAUSAL_ALIGNMENTS = ("bottom_right", "top_left")


@dataclass(frozen=True)
class Problem:
    batch: int
    heads: int        # query heads H
    heads_kv: int     # K/V heads H_kv (H % H_kv == 0)
    nq: int           # query rows per head
    nk: int           # key rows per head
    d: int            # head dim
    dtype: torch.dtype
    causal: bool
    causal_off: int   # query row i sees keys j <= i + causal_off (bottom-right: N_k - N_q)

    @property
    def dp(self) -> int:
        return padded_head_dim(self.d)

    @property
    def group(self) -> int:
        return self.heads // self.heads_kv

    @property
    def empty_rows(self) -> bool:
        """Some query rows see no key at all (causal with N_q > N_k, bottom-right)."""
        return self.causal and self.causal_off < 0

    @property
    def visible_pairs(self) -> int:
        """(query, key) pairs of one head the mask keeps: N_q N_k, or causal the keys
        j <= i + causal_off of each row i (rows before -causal_off see none)."""
        if not self.causal:
            return self.nq * self.nk
        first = min(self.nq, max(0, -self.causal_off))  # rows that see no key end here
        full = min(self.nq, max(first, self.nk - self.causal_off - 1))  # rows from here see all
        # rows [first, full) see i + off + 1 keys: an arithmetic series
        tri = (full - first) * (first + full - 1 + 2 * (self.causal_off + 1)) // 2
        return tri + (self.nq - full) * self.nk

    @property
    def elem_bytes(self) -> int:
        return self.dtype.itemsize

    @property
    def fp8(self) -> bool:
        return self.dtype in FP8_DTYPES


def causal_offset(causal, nq: int, nk: int) -> tuple[bool, int]:
    """(causal?, offset) from causal = False | True | 'bottom_right' | 'top_left'. True is
    bottom-right, as flash-attn aligns it (and SDPA with torch.nn.attention.bias.
    causal_lower_right); 'top_left' is SDPA's is_causal=True. Equal for N_q == N_k."""
    if causal is False or causal is None:
        return False, 0
    if causal is True or causal == "bottom_right":
        return True, nk - nq
    if causal == "top_left":
        return True, 0
    raise ValueError(f"causal must be False, True, 'bottom_right' or 'top_left'; got {causal!r}")


def problem_of(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal) -> Problem:
    """Check q (B, H, N_q, d), k and v (B, H_kv, N_k, d) and describe the problem."""
    if q.dim() != 4 or k.dim() != 4 or k.shape != v.shape:
        raise ValueError(f"q must have shape (batch, heads, N_q, d) and k, v one shape (batch, "
                         f"kv_heads, N_k, d); got {tuple(q.shape)}, {tuple(k.shape)}, "
                         f"{tuple(v.shape)}")
    (b, h, nq, d), (bk, hkv, nk, dk) = q.shape, k.shape
    if bk != b or dk != d:
        raise ValueError(f"q and k, v must share batch and head dim; got shape {tuple(q.shape)} "
                         f"and {tuple(k.shape)}")
    if hkv < 1 or h % hkv:
        raise ValueError(f"query heads ({h}) must be a multiple of key/value heads ({hkv}) "
                         f"(grouped-query attention)")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in INPUT_DTYPES:
        names = ", ".join(str(t).removeprefix("torch.") for t in INPUT_DTYPES)
        raise ValueError(f"q, k, v must share one dtype of {names}; got {q.dtype}, {k.dtype}, "
                         f"{v.dtype}")
    if not 1 <= d <= MAX_HEAD_DIM:
        raise ValueError(f"head dim d={d} is not supported; use 1 <= d <= {MAX_HEAD_DIM} "
                         f"(d that is not a power of two is padded on chip)")
    if nq < 1 or nk < 1:
        raise ValueError("sequence lengths N_q and N_k must be at least 1")
    want_cuda = not INTERPRETER
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.is_cuda != want_cuda:
            where = "CUDA" if want_cuda else "CPU (Triton interpreter is active)"
            raise ValueError(f"{name} must be a {where} tensor; got device {t.device}")
    is_causal, off = causal_offset(causal, nq, nk)
    return Problem(b, h, hkv, nq, nk, d, q.dtype, is_causal, off)


@functools.cache
def _capability(index: int) -> tuple[int, int]:
    return torch.cuda.get_device_capability(index)


def _tma_ok(pass_: str, p: Problem, cfg: KernelConfig) -> bool:
    """TMA needs a descriptor-capable Triton, sm_90+ (or the interpreter, which emulates it),
    and streamed tiles that stay inside one head (configs.tma_allowed)."""
    if TensorDescriptor is None or not tma_allowed(pass_, p.nq, p.nk, p.d, cfg):
        return False
    if p.fp8 and pass_ == "fwd" and p.nk % 16:  # V^T descriptor: rows of N_k bytes, 16-aligned
        return False
    return INTERPRETER or _capability(torch.cuda.current_device())[0] >= 9


def _check_blocks(cfg: KernelConfig) -> None:
    for name, b in (("block_m", cfg.block_m), ("block_n", cfg.block_n)):
        if b < 16 or b & (b - 1):
            raise ValueError(f"{name}={b} must be a power of two >= 16 (tl.dot's minimum tile)")


def honour(pass_: str, p: Problem, cfg: KernelConfig) -> KernelConfig:
    """A config as it will run on this problem (TMA dropped where it cannot be used; the
    dK/dV split a divisor of the head group, 1 for the other passes)."""
    _check_blocks(cfg)
    split = math.gcd(cfg.split, p.group) if pass_ == "bwd_dkdv" else 1
    if split != cfg.split:
        cfg = replace(cfg, split=split)
    if cfg.use_tma and not _tma_ok(pass_, p, cfg):
        return replace(cfg, use_tma=False)
    return cfg


_RESOLVED: dict[tuple, KernelConfig] = {}


def resolve_config(pass_: str, p: Problem, block_m: int | None = None,
                   block_n: int | None = None, autotune: bool | None = None,
                   timer=None) -> KernelConfig:
    """The config a launch of `pass_` ('fwd', 'bwd_dkdv', 'bwd_dq') on problem p will use,
    with use_tma already cleared where p or the GPU cannot honour it. Cached per problem
    shape (not while autotuning, whose own cache keeps the winner)."""
    key = (pass_, p.nq, p.nk, p.d, p.group, p.causal, p.causal_off, p.elem_bytes, block_m,
           block_n, autotune, autotune_enabled(), p.batch * p.heads_kv)
    cfg = _RESOLVED.get(key)
    if cfg is None:
        cfg = choose_config(pass_, p.dp, p.causal, p.elem_bytes, max(p.nq, p.nk),
                            block_m=block_m, block_n=block_n, interpreter=INTERPRETER,
                            autotune=autotune, timer=timer, shape_key=(p.nq, p.nk, p.group))
        cross = cross_config(pass_, p.dp, p.causal and p.causal_off > 0, p.nq, p.nk)
        if cross is not None and block_m is None and block_n is None and not INTERPRETER \
                and not (autotune or autotune_enabled()):
            cfg = cross
        if pass_ == "bwd_dkdv" and cfg.split == 1:
            programs = p.batch * p.heads_kv * -(-p.nk // cfg.block_n)  # the loop's grid
            cfg = replace(cfg, split=dkdv_split(p.group, p.dp, p.causal, max(p.nq, p.nk),
                                                programs))
        cfg = honour(pass_, p, cfg)
        if not autotune:
            _RESOLVED[key] = cfg
    return cfg


def clear_config_cache() -> None:
    """Forget the resolved configs (after the autotuner or the TUNED table changed)."""
    _RESOLVED.clear()


def new_empty(shape, like: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Every output buffer the launches write comes from here (tests poison it with NaN)."""
    return torch.empty(shape, device=like.device, dtype=dtype or like.dtype)


def _dot_f32(dtype: torch.dtype) -> bool:
    return INTERPRETER and dtype == torch.bfloat16


def _common(p: Problem, cfg: KernelConfig) -> dict:
    return dict(GROUP=p.group, HEAD_DIM=p.d, HEAD_DIM_P=p.dp, BLOCK_M=cfg.block_m,
                BLOCK_N=cfg.block_n, CAUSAL=p.causal, EVEN_M=p.nq % cfg.block_m == 0,
                EVEN_N=p.nk % cfg.block_n == 0, EMPTY_ROWS=p.empty_rows, USE_TMA=cfg.use_tma,
                DOT_F32=_dot_f32(p.dtype), num_warps=cfg.num_warps, num_stages=cfg.num_stages)


def launch_fwd(p: Problem, q, k, v, o, lse, sm_scale: float, out_scale: float,
               cfg: KernelConfig) -> None:
    """O, lse = attention(q, k, v). q, o (B, H, N_q, d); k (B, H_kv, N_k, d); v the same, or
    for fp8 V^T (B, H_kv, d, N_k) contiguous."""
    if cfg.use_tma:  # descriptors only for the streamed tiles (each costs host time per launch)
        vd = flat_desc_t(v, cfg.block_n) if p.fp8 else flat_desc(v, cfg.block_n)
        args = (q, flat_desc(k, cfg.block_n), vd, o)
    else:
        args = (q, k, v, o)
    launch(_attn_fwd, grid(p.nq, cfg.block_m, p.batch * p.heads), *args, lse, sm_scale,
           out_scale, p.nq, p.nk, p.heads, p.causal_off, V_TRANS=p.fp8, **_common(p, cfg))


def launch_preprocess(p: Problem, o, do, delta) -> None:
    block = 64 if INTERPRETER else 128
    launch(_attn_bwd_preprocess, grid(p.nq, block, p.batch * p.heads), o, do, delta, p.nq,
           HEAD_DIM=p.d, HEAD_DIM_P=p.dp, BLOCK_M=block, EVEN_M=p.nq % block == 0,
           num_warps=4, num_stages=2)


def launch_dkdv(p: Problem, q, k, v, do, dk, dv, lse, delta, sm_scale: float,
                cfg: KernelConfig, dq=None) -> None:
    """dK, dV. With cfg.split > 1 (grouped-query heads split over programs) the programs write
    fp32 partials (2, B, H_kv, split, N_k, d), summed here over the split. With cfg.fused_dq
    dQ too (into `dq`): the programs add dS K to a zeroed fp32 buffer with atomics, scaled and
    cast here."""
    split = cfg.split
    acc = None
    if cfg.fused_dq:
        if dq is None:
            raise ValueError("a fused-dQ dK/dV launch needs the dq buffer")
        acc = torch.zeros((p.batch, p.heads, p.nq, p.d), device=q.device, dtype=torch.float32)
    if split > 1:
        part = new_empty((2, p.batch, p.heads_kv, split, p.nk, p.d), k, torch.float32)
        out_k, out_v = part[0], part[1]
    else:
        out_k, out_v = dk, dv
    if cfg.use_tma:  # streamed: Q and dO
        tiles = (flat_desc(q, cfg.block_m), k, v, flat_desc(do, cfg.block_m), out_k, out_v)
    else:
        tiles = (q, k, v, do, out_k, out_v)
    programs = grid(p.nk, cfg.block_n, p.batch * p.heads_kv * split)
    for which in ((1, 2) if cfg.dv_apart else (0,)):  # dV, then dK: one accumulator a launch
        launch(_attn_bwd_dkdv, programs, *tiles, out_k if acc is None else acc, lse, delta,
               sm_scale, p.nq, p.nk, p.heads, p.causal_off,
               OFF_POS=p.causal and p.causal_off > 0, SPLIT=split,
               FUSED_DQ=cfg.fused_dq and which != 1, PART=which, **_common(p, cfg))
    if acc is not None:
        dq.copy_(acc.mul_(sm_scale))
    if split > 1:
        total = part.sum(dim=3)  # (2, B, H_kv, N_k, d) fp32
        dk.copy_(total[0])
        dv.copy_(total[1])


def launch_dq(p: Problem, q, k, v, do, dq, lse, delta, sm_scale: float,
              cfg: KernelConfig) -> None:
    if cfg.use_tma:  # streamed: K and V
        tiles = (q, flat_desc(k, cfg.block_n), flat_desc(v, cfg.block_n), do, dq)
    else:
        tiles = (q, k, v, do, dq)
    launch(_attn_bwd_dq, grid(p.nq, cfg.block_m, p.batch * p.heads), *tiles, lse, delta,
           sm_scale, p.nq, p.nk, p.heads, p.causal_off, **_common(p, cfg))
