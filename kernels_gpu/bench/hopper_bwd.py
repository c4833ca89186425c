"""The Gluon dK/dV (kernels.hopper_bwd) beside the `tl` dK/dV launch, and the
whole backward built on it (the `tl` preprocess, the Gluon dK/dV, the `tl` dQ) beside the `tl`
backward, SDPA-flash and cuDNN, in one run on an sm_90 GPU. fp16, H 32, B·N = 16k; each figure
the median of --repeats do_bench medians; dK, dV checked against the `tl` backward's first.

    python -m kernels_gpu.bench.studies hopper_bwd [--out DIR] [--repeats 3] [--ns 1024,4096,16384]
        [--tma-out]   # the first dK/dV and dQ with plain and with TMA stores of their outputs
"""
from __future__ import annotations

import argparse
import os
from typing import Any

import torch

from ..host import flash_attn as fa
from ..host import launch as L
from ..host.hopper import attention_backward_dkdv_hopper, attention_backward_dq_hopper
from . import study
from .run import attention_flops

# (BLOCK_M, BLOCK_N, warps, ring stages, overlap schedule); the first is the dispatched one
# ((64, 64, 4, 3, 0), (64, 64, 4, 3, 2), (64, 128, 8, 3, 0) and the dQ (64, 64, 4, 3, 1),
# (64, 128, 4, 2, 1) were timed too: all slower, the hopper_bwd_overlap studies in data/)
VARIANTS = {64: [(32, 128, 8, 2, 0)],
            128: [(64, 64, 4, 2, 0), (64, 64, 4, 2, 1), (64, 128, 8, 2, 0)]}
# the Gluon dQ, the same fields, timed alone and in a backward with the first dK/dV
DQ_VARIANTS = {64: [(128, 64, 8, 2, 0), (128, 128, 8, 2, 0)],
               128: [(64, 64, 4, 2, 0), (64, 64, 4, 2, 1), (128, 128, 8, 2, 1)]}


def label(kind: str, cfg: tuple) -> str:
    bm, bn, w, st, ov = cfg
    return f"gluon {kind} M{bm}N{bn}w{w}" + (f" s{st}" if st != 2 else "") + (
        f" ov{ov}" if ov else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_gpu.bench.studies hopper_bwd")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ns", default="1024,4096,16384")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--tma-out", action="store_true",
                    help="instead: the first dK/dV and dQ variants alone, with plain stores and "
                         "with TMA stores of their outputs, and the backward on each pair")
    args = ap.parse_args(argv)
    if not study.needs_cuda("hopper_bwd"):
        return 2
    os.makedirs(args.out, exist_ok=True)
    rows = []
    if args.tma_out:
        for d in (int(x) for x in args.dims.split(",")):
            for causal in (False, True):
                for n in (int(x) for x in args.ns.split(",")):
                    rows.append(tma_out_point(d, n, causal, args.repeats))
                    study.save_rows(args.out, "hopper_bwd_tma_out", rows)
        return 0
    for d in (int(x) for x in args.dims.split(",")):
        for causal in (False, True):
            for n in (int(x) for x in args.ns.split(",")):
                rows.append(point(d, n, causal, args.repeats))
                study.save_rows(args.out, "hopper_bwd", rows)
    return 0


def point(d: int, n: int, causal: bool, repeats: int) -> dict:
    b, h = max(1, 16384 // n), 32
    torch.manual_seed(n + d + causal)
    q, k, v, do = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16,
                               requires_grad=True) for _ in range(4))
    qd, kd, vd, dod = (t.detach() for t in (q, k, v, do))
    o, lse = fa.flash_attention_forward(qd, kd, vd, causal)
    p = L.problem_of(qd, kd, vd, causal)
    scale = fa.softmax_scale(None, d)
    delta = L.new_empty((b, h, n), qd, torch.float32)
    dq = torch.empty_like(qd)
    dq_cfg = L.honour("bwd_dq", p, L.resolve_config("bwd_dq", p))
    dkdv_cfg = L.honour("bwd_dkdv", p, L.resolve_config("bwd_dkdv", p))
    ref = fa.flash_attention_backward(qd, kd, vd, o, lse, dod, causal)
    row: dict[str, Any] = {"d": d, "n": n, "batch": b, "heads": h, "causal": causal, "ms": {}, "runs": {},
           "err": {}, "tl_dkdv_config": dkdv_cfg.short()}
    L.launch_preprocess(p, o, dod, delta)
    for cfg in VARIANTS[d]:
        name = label("dkdv", cfg)
        try:
            dk, dv = attention_backward_dkdv_hopper(qd, kd, vd, dod, lse, delta, scale, causal,
                                                    *cfg)
            row["err"][name] = max(float((x.float() - r.float()).norm() / r.float().norm())
                                   for x, r in ((dk, ref[1]), (dv, ref[2])))
        except Exception as e:  # noqa: BLE001 - a variant that fails is reported
            row["err"][name] = f"{type(e).__name__}: {str(e)[-300:]}"
            continue
        study.time_into(row, name, lambda: attention_backward_dkdv_hopper(
            qd, kd, vd, dod, lse, delta, scale, causal, *cfg), repeats)

        def whole(cfg=cfg):
            L.launch_preprocess(p, o, dod, delta)
            attention_backward_dkdv_hopper(qd, kd, vd, dod, lse, delta, scale, causal, *cfg)
            L.launch_dq(p, qd, kd, vd, dod, dq, lse, delta, scale, dq_cfg)
        study.time_into(row, f"backward with {name}", whole, repeats)
    kv_cfg = VARIANTS[d][0]
    for cfg in DQ_VARIANTS[d]:
        name = label("dq", cfg)
        try:
            g = attention_backward_dq_hopper(qd, kd, vd, dod, lse, delta, scale, causal, *cfg)
            row["err"][name] = float((g.float() - ref[0].float()).norm() / ref[0].float().norm())
        except Exception as e:  # noqa: BLE001 - a variant that fails is reported
            row["err"][name] = f"{type(e).__name__}: {str(e)[-300:]}"
            continue
        study.time_into(row, name, lambda: attention_backward_dq_hopper(
            qd, kd, vd, dod, lse, delta, scale, causal, *cfg), repeats)

        def all_gluon(cfg=cfg):
            L.launch_preprocess(p, o, dod, delta)
            attention_backward_dkdv_hopper(qd, kd, vd, dod, lse, delta, scale, causal, *kv_cfg)
            attention_backward_dq_hopper(qd, kd, vd, dod, lse, delta, scale, causal, *cfg)
        study.time_into(row, f"backward gluon dkdv + {name}", all_gluon, repeats)
    study.time_into(row, f"tl dq {dq_cfg.short()}", lambda: L.launch_dq(
        p, qd, kd, vd, dod, dq, lse, delta, scale, dq_cfg), repeats)
    dk, dv = torch.empty_like(kd), torch.empty_like(vd)
    study.time_into(row, f"tl dkdv {dkdv_cfg.short()}", lambda: L.launch_dkdv(
        p, qd, kd, vd, dod, dk, dv, lse, delta, scale, dkdv_cfg, dq), repeats)
    best_kv = min((c for c in VARIANTS[d] if label("dkdv", c) in row["ms"]),
                  key=lambda c: row["ms"][label("dkdv", c)])
    best_dq = min((c for c in DQ_VARIANTS[d] if label("dq", c) in row["ms"]),
                  key=lambda c: row["ms"][label("dq", c)], default=None)
    if best_dq is not None and row["ms"][label("dq", best_dq)] < row["ms"][
            f"tl dq {dq_cfg.short()}"]:
        def best():
            L.launch_preprocess(p, o, dod, delta)
            attention_backward_dkdv_hopper(qd, kd, vd, dod, lse, delta, scale, causal, *best_kv)
            attention_backward_dq_hopper(qd, kd, vd, dod, lse, delta, scale, causal, *best_dq)
        study.time_into(row, f"backward best: {label('dkdv', best_kv)} + "
                        f"{label('dq', best_dq)}", best, repeats)
    study.time_into(row, "dispatched backward", lambda: fa.flash_attention_backward(
        qd, kd, vd, o, lse, dod, causal), repeats)
    study.time_into(row, "tl backward", lambda: fa.flash_attention_backward(
        qd, kd, vd, o, lse, dod, causal, dkdv_config=dkdv_cfg, dq_config=dq_cfg), repeats)
    study.time_sdpa_backward(row, q, k, v, dod, causal, repeats)
    flops = attention_flops(b, h, n, d, causal, "bwd")
    row["tflops"] = {k_: flops / ms * 1e-9 for k_, ms in row["ms"].items()}
    print(f"d={d} N={n} causal={int(causal)}: " + ", ".join(
        f"{k_} {ms:.3f}" for k_, ms in row["ms"].items()) + " ms | err " + ", ".join(
        f"{k_} {e if isinstance(e, str) else f'{e:.1e}'}" for k_, e in row["err"].items()),
        flush=True)
    return row



def tma_out_point(d: int, n: int, causal: bool, repeats: int) -> dict:
    """The dispatched (else the first) dK/dV and dQ configs of d, each with plain stores and with TMA stores
    (`tma_out`), alone and as a backward (the `tl` preprocess, the dK/dV, the dQ), beside
    SDPA's; the outputs checked against the dispatched backward first."""
    b, h = max(1, 16384 // n), 32
    torch.manual_seed(n + d + causal)
    q, k, v, do = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16,
                               requires_grad=True) for _ in range(4))
    qd, kd, vd, dod = (t.detach() for t in (q, k, v, do))
    o, lse = fa.flash_attention_forward(qd, kd, vd, causal)
    p = L.problem_of(qd, kd, vd, causal)
    scale = fa.softmax_scale(None, d)
    delta = L.new_empty((b, h, n), qd, torch.float32)
    L.launch_preprocess(p, o, dod, delta)
    ref = fa.flash_attention_backward(qd, kd, vd, o, lse, dod, causal)
    from ..host import dispatch

    kv_cfg = dispatch.DISPATCH_DKDV.get(d, VARIANTS[d][0])  # the dispatched ones where any
    dq_cfg = dispatch.DISPATCH_DQ.get((d, True), DQ_VARIANTS[d][0])
    row: dict[str, Any] = {"d": d, "n": n, "batch": b, "heads": h, "causal": causal, "ms": {},
                           "runs": {}, "err": {}}
    for tma in (False, True):
        tag = " tma" if tma else ""

        def dkdv(tma=tma):
            return attention_backward_dkdv_hopper(qd, kd, vd, dod, lse, delta, scale, causal,
                                                  *kv_cfg, tma_out=tma)

        def dq_(tma=tma):
            return attention_backward_dq_hopper(qd, kd, vd, dod, lse, delta, scale, causal,
                                                *dq_cfg, tma_out=tma)
        dk, dv = dkdv()
        g = dq_()
        row["err"][label("dkdv", kv_cfg) + tag] = max(
            float((x.float() - r.float()).norm() / r.float().norm())
            for x, r in ((dk, ref[1]), (dv, ref[2])))
        row["err"][label("dq", dq_cfg) + tag] = float(
            (g.float() - ref[0].float()).norm() / ref[0].float().norm())
        study.time_into(row, label("dkdv", kv_cfg) + tag, dkdv, repeats)
        study.time_into(row, label("dq", dq_cfg) + tag, dq_, repeats)

        def whole(dkdv=dkdv, dq_=dq_):
            L.launch_preprocess(p, o, dod, delta)
            dkdv()
            dq_()
        study.time_into(row, "backward" + tag, whole, repeats)
    study.time_into(row, "dispatched backward", lambda: fa.flash_attention_backward(
        qd, kd, vd, o, lse, dod, causal), repeats)
    study.time_sdpa_backward(row, q, k, v, dod, causal, repeats)
    print(f"d={d} N={n} causal={int(causal)}: " + ", ".join(
        f"{k_} {ms:.3f}" for k_, ms in row["ms"].items()) + " ms | err " + ", ".join(
        f"{k_} {e:.1e}" for k_, e in row["err"].items()), flush=True)
    return row
