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

import torch
import triton

from ..kernels import INTERPRETER
from . import dispatch, graphs, hopper, hopper_bwd_ws, hopper_d192, support
from . import launch as L
from .configs import KernelConfig, autotune_enabled
from .launch import FP8_DTYPES, MAX_HEAD_DIM, Problem
from .reference import attention_reference, softmax_scale

__all__ = ["flash_attention", "flash_attention_forward", "flash_attention_backward",
           "attention_reference", "resolve_config", "honour_config",
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
    choice = (dispatch.choose_for(p, INTERPRETER) if config is None and block_m is None
              and block_n is None and not autotune and not autotune_enabled()
              and descale is None and out_dtype == q.dtype else {})
    gluon, ws = choice.get("fwd"), choice.get("fwd_ws")
    try:
        if ws is not None:  # the warp-specialised Gluon forward where it measured fastest
            _replayable(("fwd-ws", p, scale, ws), (q, k, v, o, lse),
                        lambda: hopper.attention_forward_ws(q, k, v, scale, ws[0], ws[1], ws[2],
                                                            out=(o, lse), causal=p.causal), p)
            return o, lse
        if gluon is not None:  # the Gluon Hopper kernel where it measured faster (host/hopper.py)
            bm, bn, w = gluon
            _replayable(("fwd-gluon", p, scale, gluon), (q, k, v, o, lse),
                        lambda: hopper.attention_forward_hopper(q, k, v, scale, bm, bn, w,
                                                                out=(o, lse), causal=p.causal),
                        p)
            return o, lse
    except support.GLUON_COMPILE_ERRORS as e:  # this Triton cannot build it: the `tl` kernel
        _gluon_failed(e)
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
    choice = (dispatch.choose_for(p, INTERPRETER) if dkdv_config is None and block_m is None
              and block_n is None and not autotune and not autotune_enabled() else {})
    if dkdv_config is None or dq_config is None:
        timers = _backward_timers(p, q, k, v, o, lse, do, scale)
        if dkdv_config is None:
            dkdv_config = L.resolve_config("bwd_dkdv", p, block_m, block_n, autotune, timers[0])
        if dq_config is None:
            dq_config = L.resolve_config("bwd_dq", p, block_m, block_n, autotune, timers[1])
    return _backward(p, q, k, v, o, lse, do, scale, L.honour("bwd_dkdv", p, dkdv_config),
                     L.honour("bwd_dq", p, dq_config), choice)


def _backward_timers(p: Problem, q, k, v, o, lse, do, scale):
    """Autotuning timers of the dK/dV and dQ launches; their buffers (and the D they read) are
    made on the first timing only, so the untuned path pays nothing for them."""
    bufs: dict[str, torch.Tensor] = {}

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
              dq_cfg: KernelConfig, choice: dispatch.Choice | None = None):
    """The three launches on checked, contiguous inputs with resolved configs (the autograd
    path calls this directly: host time is what small shapes are bound by); `choice`
    (host/dispatch.py) names the passes that run on a Gluon kernel instead: the dK/dV (one
    partition or warp-specialised), the dQ, or the whole chunked d 192 backward. A small
    problem seen before with the very same buffers replays the launches as one CUDA graph
    (graphs). A Gluon kernel this Triton cannot build runs the `tl` launches instead."""
    if choice:
        try:
            return _backward_launches(p, q, k, v, o, lse, do, scale, dkdv_cfg, dq_cfg, choice)
        except support.GLUON_COMPILE_ERRORS as e:  # this Triton cannot build it: `tl` kernels
            _gluon_failed(e)
    return _backward_launches(p, q, k, v, o, lse, do, scale, dkdv_cfg, dq_cfg, {})


def _gluon_failed(error: BaseException) -> None:
    """A Gluon kernel failed to compile: none is dispatched from now on (support.gluon_failed);
    the one GluonFallbackWarning says why."""
    support.gluon_failed(error)
    support.gluon_usable()


def _backward_launches(p: Problem, q, k, v, o, lse, do, scale: float, dkdv_cfg: KernelConfig,
                       dq_cfg: KernelConfig, choice: dispatch.Choice):
    d192 = choice.get("bwd_d192")
    if isinstance(d192, hopper_d192.D192Config):
        return hopper_d192.run_backward_d192(p, q, k, v, o, lse, do, scale, d192, _replayable)
    delta = L.new_empty((p.batch, p.heads, p.nq), q, torch.float32)
    dq, dk, dv = L.new_empty(q.shape, q), L.new_empty(k.shape, k), L.new_empty(v.shape, v)
    gluon, gluon_dq, ws = (choice.get("bwd_dkdv"), choice.get("bwd_dq"),
                           choice.get("bwd_dkdv_ws"))

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
                                                  *gluon, out=(dk, dv), tma_out=True)
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


# causal as the custom ops take it (a str: their schema has no bool-or-str type)
_CAUSAL_NAMES = {False: "none", None: "none", True: "bottom_right",
                 "bottom_right": "bottom_right", "top_left": "top_left"}
_CAUSAL_VALUES = {"none": False, "bottom_right": True, "top_left": "top_left"}


def _causal_name(causal) -> str:
    if not isinstance(causal, (bool, str, type(None))) or causal not in _CAUSAL_NAMES:
        raise ValueError(f"causal must be False, True, 'bottom_right' or 'top_left'; got "
                         f"{causal!r}")
    return _CAUSAL_NAMES[causal]


@torch.library.custom_op("kernels_gpu::flash_attn_fwd", mutates_args=())
def _fwd_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: str,
            sm_scale: float | None, block_m: int | None, block_n: int | None
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """(o, lse) of flash_attention_forward: the forward as one operator that torch.compile
    and torch.export keep whole (the dispatch, the configs and the launches happen inside,
    on real tensors, never in a traced graph)."""
    return flash_attention_forward(q, k, v, _CAUSAL_VALUES[causal], sm_scale, block_m, block_n)


@_fwd_op.register_fake
def _fwd_fake(q, k, v, causal, sm_scale, block_m, block_n):
    p = L.problem_of(q, k, v, _CAUSAL_VALUES[causal])  # the same checks, on shapes alone
    out_dtype = torch.float16 if p.fp8 else q.dtype
    return (q.new_empty(q.shape, dtype=out_dtype),
            q.new_empty(q.shape[:3], dtype=torch.float32))


@torch.library.custom_op("kernels_gpu::flash_attn_bwd", mutates_args=())
def _bwd_op(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
            o: torch.Tensor, lse: torch.Tensor, causal: str, sm_scale: float | None,
            block_m: int | None, block_n: int | None
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) from the forward's o and lse: the three launches with the configs
    resolved once per shape (launch.resolve_config's cache), as one operator. At small
    shapes the backward is bound by host time, not by the GPU (`python -m kernels_gpu.bench.hostprobe`)."""
    p = L.problem_of(q, k, v, _CAUSAL_VALUES[causal])
    if p.fp8 or autotune_enabled():  # the general path: its checks, or the autotuner
        return flash_attention_backward(q, k, v, o, lse, do, _CAUSAL_VALUES[causal], sm_scale,
                                        block_m, block_n)
    return _backward(
        p, q.contiguous(), k.contiguous(), v.contiguous(), o.contiguous(), lse.contiguous(),
        do.to(q.dtype).contiguous(), softmax_scale(sm_scale, p.d),
        L.resolve_config("bwd_dkdv", p, block_m, block_n),
        L.resolve_config("bwd_dq", p, block_m, block_n),
        dispatch.choose_for(p, INTERPRETER) if block_m is None and block_n is None else None)


@_bwd_op.register_fake
def _bwd_fake(do, q, k, v, o, lse, causal, sm_scale, block_m, block_n):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _setup_context(ctx, inputs, output) -> None:
    q, k, v, causal, sm_scale, block_m, block_n = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.args = (causal, sm_scale, block_m, block_n)
    ctx.mark_non_differentiable(lse)


def _autograd_backward(ctx, do, _dlse):
    """The lse output carries no gradient (flash_attention returns o alone)."""
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = _bwd_op(do, q, k, v, o, lse, *ctx.args)
    return dq, dk, dv, None, None, None, None


_fwd_op.register_autograd(_autograd_backward, setup_context=_setup_context)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal=False,
                    sm_scale: float | None = None, block_m: int | None = None,
                    block_n: int | None = None) -> torch.Tensor:
    """Differentiable FlashAttention-2: softmax(sm_scale * q k^T) v, shape (B, H, N_q, d).

    Runs the custom operator torch.ops.kernels_gpu.flash_attn_fwd (backward:
    kernels_gpu::flash_attn_bwd), so torch.compile(fullgraph=True) traces a model calling it
    with no graph break, CUDA graphs capture it and torch.export exports it."""
    return torch.ops.kernels_gpu.flash_attn_fwd(q, k, v, _causal_name(causal), sm_scale,
                                                block_m, block_n)[0]
