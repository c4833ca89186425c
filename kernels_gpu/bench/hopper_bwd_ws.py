"""The warp-specialised Gluon dK/dV (kernels.hopper_bwd_ws) beside the
dispatched one-partition Gluon dK/dV, and the whole backward built on each (the `tl`
preprocess, the dK/dV, the dispatched dQ) beside the public path, SDPA-flash and cuDNN, in one
run on an sm_90 GPU. fp16, H 32, B·N = 16k; each figure the median of --repeats do_bench
medians; every variant's dK, dV compared with the one-partition kernel's first.

    python -m kernels_gpu.bench.studies hopper_bwd_ws [--out DIR] [--repeats 3] [--ns 1024,4096,16384]
        [--variants 64/2/1/0,...|none] [--public 64/2/1/0,...]
"""
from __future__ import annotations

import argparse
import os
from typing import Any

import torch

from ..host import dispatch, hopper
from ..host import flash_attn as fa
from ..host import launch as L
from ..host.hopper_bwd_ws import (
    attention_backward_dkdv_ws,
    attention_backward_ws_fused,
    ws_bwd_label,
)
from . import study
from .hopper_bwd import label
from .run import attention_flops

# (BLOCK_M, ring stages, overlap, fused dQ[, split]) of the warp-specialised dK/dV; fused dQ: dQ
# by atomics of 1 / 2 / 4 floats in the same launch (its time includes zeroing the fp32
# accumulator and the cast); split 1: the two warpgroups share dS^T, half the atomics.
# (64, 2, 0), (64, 3, 0), (32, 2, 1), (32, 3, 1) without dQ were timed too: slower (the
# hopper_bwd_ws_h100 study in data/)
VARIANTS = [(64, 2, 1, 0), (64, 2, 2, 0), (64, 3, 1, 0), (64, 2, 0, 1), (64, 2, 1, 1),
            (64, 3, 1, 1), (64, 2, 1, 2), (64, 2, 1, 4), (64, 2, 0, 4), (64, 2, 1, 4, 1),
            (64, 2, 0, 4, 1)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_gpu.bench.studies hopper_bwd_ws")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ns", default="1024,4096,16384")
    ap.add_argument("--variants", default="",
                    help="BLOCK_M/stages/overlap triples, e.g. 64/2/1,64/3/0 (default: all)")
    ap.add_argument("--public", default="",
                    help="configs (as --variants) to time through flash_attention_backward "
                         "with DISPATCH_DKDV_WS naming each in turn, beside the dispatch as is")
    ap.add_argument("--name", default="hopper_bwd_ws")
    args = ap.parse_args(argv)
    if not study.needs_cuda("hopper_bwd_ws"):
        return 2
    def configs(text):
        return [tuple(int(x) for x in v.split("/")) for v in text.split(",") if v]
    variants = VARIANTS if not args.variants else configs(args.variants.replace("none", ""))
    public = configs(args.public)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for causal in (False, True):
        for n in (int(x) for x in args.ns.split(",")):
            rows.append(point(128, n, causal, args.repeats, variants, public))
            study.save_rows(args.out, args.name, rows)
    return 0


def point(d: int, n: int, causal: bool, repeats: int, variants, public=()) -> dict:
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
    choice = dispatch.choose_for(p, False)
    kv1 = choice.get("bwd_dkdv")  # the one-partition Gluon dK/dV dispatched before
    gdq = choice.get("bwd_dq")
    if kv1 is None:
        raise ValueError(f"no one-partition Gluon dK/dV is dispatched at d = {d}, n = {n}")
    row: dict[str, Any] = {"d": d, "n": n, "batch": b, "heads": h, "causal": causal, "ms": {}, "runs": {},
           "err": {}, "dq": label("dq", gdq) if gdq else f"tl dq {dq_cfg.short()}"}
    L.launch_preprocess(p, o, dod, delta)
    rk, rv = hopper.attention_backward_dkdv_hopper(qd, kd, vd, dod, lse, delta, scale, causal,
                                                   *kv1)

    def dq_launch():
        if gdq is not None:
            hopper.attention_backward_dq_hopper(qd, kd, vd, dod, lse, delta, scale, causal,
                                                *gdq, out=dq.view(-1, d))
        else:
            L.launch_dq(p, qd, kd, vd, dod, dq, lse, delta, scale, dq_cfg)
    dq_launch()
    rq = dq.clone()  # the separate dQ launch's: what a fused dQ is compared with

    one = label("dkdv", kv1)
    study.time_into(row, one, lambda: hopper.attention_backward_dkdv_hopper(
        qd, kd, vd, dod, lse, delta, scale, causal, *kv1), repeats)
    study.time_into(row, "dq " + row["dq"], dq_launch, repeats)

    def whole1():
        L.launch_preprocess(p, o, dod, delta)
        hopper.attention_backward_dkdv_hopper(qd, kd, vd, dod, lse, delta, scale, causal, *kv1)
        dq_launch()
    study.time_into(row, f"backward with {one}", whole1, repeats)
    for cfg in variants:
        name = ws_bwd_label(cfg)
        fused = len(cfg) > 3 and cfg[3]

        def run(cfg=cfg, fused=fused):
            if fused:
                return attention_backward_ws_fused(qd, kd, vd, dod, lse, delta, scale, causal,
                                                   *cfg)
            return (rq, *attention_backward_dkdv_ws(qd, kd, vd, dod, lse, delta, scale,
                                                    causal, *cfg))
        try:
            got = run()
            torch.cuda.synchronize()
            row["err"][name] = max(float((x.float() - r.float()).norm() / r.float().norm())
                                   for x, r in zip(got, (rq, rk, rv)))
        except Exception as e:  # noqa: BLE001 - a variant that fails is reported
            row["err"][name] = f"{type(e).__name__}: {str(e)[-300:]}"
            continue
        study.time_into(row, name, run, repeats)

        def whole(run=run, fused=fused):
            L.launch_preprocess(p, o, dod, delta)
            run()
            if not fused:
                dq_launch()
        study.time_into(row, f"backward with {name}", whole, repeats)
    study.time_into(row, "dispatched backward", lambda: fa.flash_attention_backward(
        qd, kd, vd, o, lse, dod, causal), repeats)
    table = dispatch.DISPATCH_DKDV_WS
    saved = table.get((d, causal))
    try:
        for cfg in public:  # the public path with the warp-specialised kernel dispatched
            table[(d, causal)] = [(1 << 62, cfg)]
            study.time_into(row, f"dispatched backward with {ws_bwd_label(cfg)}",
                            lambda: fa.flash_attention_backward(qd, kd, vd, o, lse, dod,
                                                                causal), repeats)
    finally:
        table.pop((d, causal), None)
        if saved is not None:
            table[(d, causal)] = saved
    study.time_sdpa_backward(row, q, k, v, dod, causal, repeats)
    flops = attention_flops(b, h, n, d, causal, "bwd")
    row["tflops"] = {k_: flops / ms * 1e-9 for k_, ms in row["ms"].items()}
    print(f"d={d} N={n} causal={int(causal)}: " + ", ".join(
        f"{k_} {ms:.3f}" for k_, ms in row["ms"].items()) + " ms | diff vs one-partition " +
        ", ".join(f"{k_} {e if isinstance(e, str) else f'{e:.1e}'}"
                  for k_, e in row["err"].items()), flush=True)
    return row

