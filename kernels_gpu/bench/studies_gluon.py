"""The Gluon kernels' studies (read by `study.run` through `studies.STUDIES`), each launch of a
Gluon kernel timed alone and in the whole pass it would run in, on an sm_90 GPU:

* hopper: the Gluon forwards (one-partition configs; --ws the warp-specialised schedules, their
  persistent forms and d 192's three-chunk kernel; --kv grouped heads) beside the public forward
  as dispatched ("ours"), the `tl` forward, SDPA-flash and cuDNN, checked against float32
  SDPA-math (N ≤ 4k); --dispatched: only those four;
* hopper_bwd: the Gluon dK/dV and dQ configs beside the `tl` launches, and the whole backwards
  built on them (the `tl` preprocess, the dK/dV, the dQ), checked against the `tl` backward;
  --tma-out: the dispatched (else the first) dK/dV and dQ with plain and with TMA stores of
  their outputs, alone and as a backward;
* hopper_bwd_ws: the warp-specialised dK/dV (and its fused dQ) beside the dispatched
  one-partition dK/dV, each checked against it; --public the public path with the
  warp-specialised kernel dispatched.
"""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from ..host import dispatch
from ..host import flash_attn as fa
from ..host import launch as L
from ..host.hopper import (
    attention_backward_dkdv_hopper,
    attention_backward_dq_hopper,
    attention_forward_hopper,
    attention_forward_ws,
)
from ..host.hopper_bwd_ws import (
    attention_backward_dkdv_ws,
    attention_backward_ws_fused,
    ws_bwd_label,
)
from . import study
from .check import sdpa
from .study import (
    Point,
    Study,
    check_into,
    finish,
    grid_points,
    time_into,
    time_sdpa_backward,
)

__all__ = ["GLUON_STUDIES", "label", "FWD_VARIANTS", "WS_FWD_VARIANTS", "BWD_VARIANTS",
           "DQ_VARIANTS", "WS_BWD_VARIANTS"]

# the one-partition forward: (BLOCK_M, BLOCK_N, warps); the warp-specialised forward
# (kernels.hopper_ws): (block_n, schedule, stages), "p...": its persistent form
# (kernels.hopper_ws_persistent); d 192 (three 64-column chunks): block_n 64
FWD_VARIANTS = {64: [(128, 128, 8), (128, 64, 8), (64, 128, 4)],
                128: [(128, 128, 8), (128, 64, 8), (64, 64, 4)], 192: []}
WS_FWD_VARIANTS = {64: [(128, "ws", 2), (128, "lag", 2), (128, "pingpong", 2),
                        (128, "plag", 2), (128, "ppingpong", 2), (128, "plag", 3)],
                   128: [(128, "ws", 2), (128, "lag", 2), (128, "pingpong", 2),
                         (128, "lag", 3), (128, "pingpong", 3), (128, "plag", 2),
                         (128, "ppingpong", 2)],
                   192: [(64, "ws", 2), (64, "lag", 2), (64, "pingpong", 2), (64, "lag", 3),
                         (64, "pingpong", 3)]}
# the Gluon dK/dV: (BLOCK_M, BLOCK_N, warps, ring stages, overlap schedule); the first is the
# dispatched one ((64, 64, 4, 3, 0), (64, 64, 4, 3, 2), (64, 128, 8, 3, 0) and the dQ
# (64, 64, 4, 3, 1), (64, 128, 4, 2, 1) were timed too: all slower, the hopper_bwd_overlap
# studies in data/)
BWD_VARIANTS = {64: [(32, 128, 8, 2, 0)],
                128: [(64, 64, 4, 2, 0), (64, 64, 4, 2, 1), (64, 128, 8, 2, 0)]}
# the Gluon dQ, the same fields, timed alone and in a backward with the first dK/dV
DQ_VARIANTS = {64: [(128, 64, 8, 2, 0), (128, 128, 8, 2, 0)],
               128: [(64, 64, 4, 2, 0), (64, 64, 4, 2, 1), (128, 128, 8, 2, 1)]}
# the warp-specialised dK/dV: (BLOCK_M, ring stages, overlap, fused dQ[, split]); fused dQ: dQ
# by atomics of 1 / 2 / 4 floats in the same launch (its time includes zeroing the fp32
# accumulator and the cast); split 1: the two warpgroups share dS^T, half the atomics.
# (64, 2, 0), (64, 3, 0), (32, 2, 1), (32, 3, 1) without dQ were timed too: slower (the
# hopper_bwd_ws_h100 study in data/)
WS_BWD_VARIANTS = [(64, 2, 1, 0), (64, 2, 2, 0), (64, 3, 1, 0), (64, 2, 0, 1), (64, 2, 1, 1),
                   (64, 3, 1, 1), (64, 2, 1, 2), (64, 2, 1, 4), (64, 2, 0, 4),
                   (64, 2, 1, 4, 1), (64, 2, 0, 4, 1)]


def label(kind: str, cfg: tuple) -> str:
    """The study's name of a one-partition Gluon dK/dV ('dkdv') or dQ ('dq') config."""
    bm, bn, w, st, ov = cfg
    return f"gluon {kind} M{bm}N{bn}w{w}" + (f" s{st}" if st != 2 else "") + (
        f" ov{ov}" if ov else "")


def _fwd_row(pt: Point, args) -> dict:
    from torch.nn.attention import SDPBackend

    q, k, v, _ = study.inputs(pt, grad=False)
    c, g = pt.causal, pt.heads // pt.heads_kv
    ref = sdpa(q.float(), k.float(), v.float(), c, SDPBackend.MATH) if pt.n <= 4096 else None
    variants: dict[str, Callable[..., Any]] = {}
    for bm, bn, w in ([] if args.dispatched else FWD_VARIANTS[pt.d]):
        variants[f"gluon M{bm}N{bn}w{w}"] = partial(attention_forward_hopper, q, k, v,
                                                    block_m=bm, block_n=bn, num_warps=w,
                                                    causal=c)
    for bn, sched, st in (WS_FWD_VARIANTS[pt.d] if args.ws and not args.dispatched else []):
        variants[f"ws N{bn} {sched} s{st}"] = partial(attention_forward_ws, q, k, v,
                                                      block_n=bn, schedule=sched, stages=st,
                                                      causal=c)
    variants["ours"] = lambda: fa.flash_attention_forward(q, k, v, c)[0]  # as dispatched
    row = pt.row()
    with torch.no_grad():
        for name, fn in variants.items():
            if check_into(row, name, lambda fn=fn: (fn(),), None if ref is None else (ref,)):
                time_into(row, name, fn, args.repeats, rep=40)
        time_into(row, "ours (tl)", partial(fa.flash_attention_forward, q, k, v, c,
                                            config=fa.resolve_config("fwd", q, c, k=k)),
                  args.repeats, rep=40)
        for name, be in (("flash", SDPBackend.FLASH_ATTENTION),
                         ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                sdpa(q, k, v, c, be)
                kk, vv = k, v
            except RuntimeError:  # a backend without grouped heads: K/V expanded
                kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
            time_into(row, name, partial(sdpa, q, kk, vv, c, be), args.repeats, rep=40)
    return finish(row, pt, "fwd")


def _fwd_points(args) -> list[Point]:
    """grid_points at each --kv (K/V heads; 32: dense)."""
    return [Point(p.d, p.n, p.causal, p.batch, heads_kv=int(kv))
            for p in grid_points(args) for kv in args.kv.split(",")]


def _bwd_point(pt: Point):
    """The tensors of a backward point, its forward's o and lse, D, a dQ buffer and the `tl`
    configs resolved."""
    q, k, v, do = study.inputs(pt, grad=True)
    qd, kd, vd = (t.detach() for t in (q, k, v))
    o, lse = fa.flash_attention_forward(qd, kd, vd, pt.causal)
    p = L.problem_of(qd, kd, vd, pt.causal)
    delta = L.new_empty((pt.batch, pt.heads, pt.n), qd, torch.float32)
    L.launch_preprocess(p, o, do, delta)
    return (q, k, v, do), (qd, kd, vd, o, lse, delta), p, torch.empty_like(qd)


def _bwd_row(pt: Point, args) -> dict:
    (q, k, v, do), (qd, kd, vd, o, lse, delta), p, dq = _bwd_point(pt)
    scale, causal, reps = fa.softmax_scale(None, pt.d), pt.causal, args.repeats
    dq_cfg = L.honour("bwd_dq", p, L.resolve_config("bwd_dq", p))
    kv_cfg = L.honour("bwd_dkdv", p, L.resolve_config("bwd_dkdv", p))
    ref = fa.flash_attention_backward(qd, kd, vd, o, lse, do, causal)
    row = dict(pt.row(), tl_dkdv_config=kv_cfg.short())
    dkdv = partial(attention_backward_dkdv_hopper, qd, kd, vd, do, lse, delta, scale, causal)
    gdq = partial(attention_backward_dq_hopper, qd, kd, vd, do, lse, delta, scale, causal)

    def whole(kv: tuple, q_: tuple | None) -> Callable[[], None]:
        """The backward on a Gluon dK/dV and a Gluon dQ (None: the `tl` one)."""
        def call():
            L.launch_preprocess(p, o, do, delta)
            dkdv(*kv)
            if q_:
                gdq(*q_)
            else:
                L.launch_dq(p, qd, kd, vd, do, dq, lse, delta, scale, dq_cfg)
        return call
    for cfg in BWD_VARIANTS[pt.d]:
        if check_into(row, name := label("dkdv", cfg), partial(dkdv, *cfg), ref[1:]):
            time_into(row, name, partial(dkdv, *cfg), reps)
            time_into(row, f"backward with {name}", whole(cfg, None), reps)
    for cfg in DQ_VARIANTS[pt.d]:
        if check_into(row, name := label("dq", cfg), lambda cfg=cfg: (gdq(*cfg),), ref[:1]):
            time_into(row, name, partial(gdq, *cfg), reps)
            time_into(row, f"backward gluon dkdv + {name}", whole(BWD_VARIANTS[pt.d][0], cfg),
                      reps)
    tl_dq = time_into(row, f"tl dq {dq_cfg.short()}", lambda: L.launch_dq(
        p, qd, kd, vd, do, dq, lse, delta, scale, dq_cfg), reps)
    dk, dv = torch.empty_like(kd), torch.empty_like(vd)
    time_into(row, f"tl dkdv {kv_cfg.short()}", lambda: L.launch_dkdv(
        p, qd, kd, vd, do, dk, dv, lse, delta, scale, kv_cfg, dq), reps)
    best_kv = _fastest(row, "dkdv", BWD_VARIANTS[pt.d])
    best_dq = _fastest(row, "dq", DQ_VARIANTS[pt.d])
    if best_kv and best_dq and row["ms"][label("dq", best_dq)] < tl_dq:
        time_into(row, f"backward best: {label('dkdv', best_kv)} + {label('dq', best_dq)}",
                  whole(best_kv, best_dq), reps)
    time_into(row, "dispatched backward", partial(fa.flash_attention_backward, qd, kd, vd, o,
                                                  lse, do, causal), reps)
    time_into(row, "tl backward", partial(fa.flash_attention_backward, qd, kd, vd, o, lse, do,
                                          causal, dkdv_config=kv_cfg, dq_config=dq_cfg), reps)
    time_sdpa_backward(row, q, k, v, do, causal, reps)
    return finish(row, pt, "bwd")


def _tma_out_row(pt: Point, args) -> dict:
    """The dispatched (else the first) dK/dV and dQ configs of d, each with plain stores and
    with TMA stores (`tma_out`), alone and as a backward (the `tl` preprocess, the dK/dV, the
    dQ), beside the dispatched backward and SDPA's; the outputs checked against the dispatched
    backward first."""
    (q, k, v, do), (qd, kd, vd, o, lse, delta), p, _ = _bwd_point(pt)
    scale, causal, reps = fa.softmax_scale(None, pt.d), pt.causal, args.repeats
    ref = fa.flash_attention_backward(qd, kd, vd, o, lse, do, causal)
    kv_cfg = dispatch.DISPATCH_DKDV.get(pt.d, BWD_VARIANTS[pt.d][0])
    dq_cfg = dispatch.DISPATCH_DQ.get((pt.d, True), DQ_VARIANTS[pt.d][0])
    row = pt.row()
    for tma in (False, True):
        tag = " tma" if tma else ""
        dkdv = partial(attention_backward_dkdv_hopper, qd, kd, vd, do, lse, delta, scale,
                       causal, *kv_cfg, tma_out=tma)
        gdq = partial(attention_backward_dq_hopper, qd, kd, vd, do, lse, delta, scale, causal,
                      *dq_cfg, tma_out=tma)
        if check_into(row, name := label("dkdv", kv_cfg) + tag, dkdv, ref[1:]):
            time_into(row, name, dkdv, reps)
        if check_into(row, name := label("dq", dq_cfg) + tag, lambda gdq=gdq: (gdq(),),
                      ref[:1]):
            time_into(row, name, gdq, reps)

        def whole(dkdv=dkdv, gdq=gdq):
            L.launch_preprocess(p, o, do, delta)
            dkdv()
            gdq()
        time_into(row, "backward" + tag, whole, reps)
    time_into(row, "dispatched backward", partial(fa.flash_attention_backward, qd, kd, vd, o,
                                                  lse, do, causal), reps)
    time_sdpa_backward(row, q, k, v, do, causal, reps)
    return finish(row, pt, "bwd")


def _fastest(row: dict, kind: str, cfgs: list[tuple]) -> tuple | None:
    """The config of `kind` timed fastest in the row (None if none was timed)."""
    timed = {c: row["ms"].get(label(kind, c), math.nan) for c in cfgs}
    return min((c for c, ms in timed.items() if math.isfinite(ms)), key=timed.__getitem__,
               default=None)


def _configs(text: str) -> list[tuple[int, ...]]:
    return [tuple(int(x) for x in v.split("/")) for v in text.split(",") if v]


def _ws_bwd_row(pt: Point, args) -> dict:
    (q, k, v, do), (qd, kd, vd, o, lse, delta), p, dq = _bwd_point(pt)
    scale, causal, reps, d = fa.softmax_scale(None, pt.d), pt.causal, args.repeats, pt.d
    dq_cfg = L.honour("bwd_dq", p, L.resolve_config("bwd_dq", p))
    choice = dispatch.choose_for(p, False)
    kv1, gdq = choice.get("bwd_dkdv"), choice.get("bwd_dq")  # the one-partition Gluon ones
    if kv1 is None:
        raise ValueError(f"no one-partition Gluon dK/dV is dispatched at d = {d}, n = {pt.n}")
    row = dict(pt.row(), dq=label("dq", gdq) if gdq else f"tl dq {dq_cfg.short()}")
    one_kv = partial(attention_backward_dkdv_hopper, qd, kd, vd, do, lse, delta, scale, causal,
                     *kv1)

    def dq_launch():
        if gdq is not None:
            attention_backward_dq_hopper(qd, kd, vd, do, lse, delta, scale, causal, *gdq,
                                         out=dq)
        else:
            L.launch_dq(p, qd, kd, vd, do, dq, lse, delta, scale, dq_cfg)
    rk, rv = one_kv()
    dq_launch()
    rq = dq.clone()  # the separate dQ launch's: what a fused dQ is compared with

    def whole(run: Callable, fused: bool = False) -> Callable[[], None]:
        def call():
            L.launch_preprocess(p, o, do, delta)
            run()
            if not fused:
                dq_launch()
        return call
    one = label("dkdv", kv1)
    time_into(row, one, one_kv, reps)
    time_into(row, "dq " + row["dq"], dq_launch, reps)
    time_into(row, f"backward with {one}", whole(one_kv), reps)
    variants = WS_BWD_VARIANTS if not args.variants else _configs(args.variants.replace(
        "none", ""))
    for cfg in variants:
        fused = bool(len(cfg) > 3 and cfg[3])

        def run(cfg=cfg, fused=fused):
            if fused:
                return attention_backward_ws_fused(qd, kd, vd, do, lse, delta, scale, causal,
                                                   *cfg)
            return (rq, *attention_backward_dkdv_ws(qd, kd, vd, do, lse, delta, scale,
                                                    causal, *cfg))
        if check_into(row, name := ws_bwd_label(cfg), run, (rq, rk, rv)):
            time_into(row, name, run, reps)
            time_into(row, f"backward with {name}", whole(run, fused), reps)
    public = partial(fa.flash_attention_backward, qd, kd, vd, o, lse, do, causal)
    time_into(row, "dispatched backward", public, reps)
    table = dispatch.DISPATCH_DKDV_WS
    saved = table.get((d, causal))
    try:
        for cfg in _configs(args.public):  # the public path, the warp-specialised one dispatched
            table[(d, causal)] = [(1 << 62, cfg)]
            time_into(row, f"dispatched backward with {ws_bwd_label(cfg)}", public, reps)
    finally:
        table.pop((d, causal), None)
        if saved is not None:
            table[(d, causal)] = saved
    time_sdpa_backward(row, q, k, v, do, causal, reps)
    return finish(row, pt, "bwd")


def _fwd_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--ws", action="store_true", help="the warp-specialised kernel's schedules too")
    ap.add_argument("--kv", default="32", help="K/V heads (comma list; 32 = dense)")
    ap.add_argument("--dispatched", action="store_true",
                    help="only the dispatched forward, the `tl` one, SDPA-flash and cuDNN")


def _bwd_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--tma-out", action="store_true",
                    help="instead: the dispatched (else the first) dK/dV and dQ, with plain "
                         "and with TMA stores of their outputs, and the backward on each pair")


def _ws_bwd_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--variants", default="",
                    help="BLOCK_M/stages/overlap[/fused dQ[/split]] configs, e.g. 64/2/1,64/3/0 "
                         "(default: all; none: only the one-partition kernel)")
    ap.add_argument("--public", default="",
                    help="configs (as --variants) to time through flash_attention_backward "
                         "with DISPATCH_DKDV_WS naming each in turn, beside the dispatch as is")
    ap.add_argument("--name", default="hopper_bwd_ws", help="the output file's stem")


GLUON_STUDIES: dict[str, Study] = {
    "hopper": Study("the Gluon Hopper forwards beside the `tl` kernel, SDPA-flash and cuDNN",
                    _fwd_row, lambda a: ("hopper_dispatched" if a.dispatched else "hopper_ws"
                                         if a.ws else "hopper")
                    + ("_causal" if a.causal == "1" else ""), causal="0",
                    options=_fwd_options, points=_fwd_points),
    "hopper_bwd": Study("the Gluon dK/dV and dQ beside the `tl` launches, SDPA-flash and cuDNN",
                        lambda pt, a: _tma_out_row(pt, a) if a.tma_out else _bwd_row(pt, a),
                        lambda a: "hopper_bwd_tma_out" if a.tma_out else "hopper_bwd",
                        options=_bwd_options),
    "hopper_bwd_ws": Study("the warp-specialised Gluon dK/dV beside the one-partition one",
                           _ws_bwd_row, lambda a: a.name, dims="128",
                           options=_ws_bwd_options),
}
