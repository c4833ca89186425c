"""The Gluon dK/dV (kernels.hopper_bwd, issue 21 item 3) beside the `tl` dK/dV launch, and the
whole backward built on it (the `tl` preprocess, the Gluon dK/dV, the `tl` dQ) beside the `tl`
backward, SDPA-flash and cuDNN, in one run on an sm_90 GPU. fp16, H 32, B·N = 16k; each figure
the median of --repeats do_bench medians; dK, dV checked against the `tl` backward's first.

    python -m kernels_gpu.bench.hopper_bwd [--out DIR] [--repeats 3] [--ns 1024,4096,16384]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from ..host import flash_attn as fa
from ..host import launch as L
from ..host.hopper import attention_backward_dkdv_hopper, attention_backward_dq_hopper
from . import study
from .run import attention_flops, environment

VARIANTS = {64: [(32, 128, 8)], 128: [(64, 64, 4), (64, 128, 8)]}
# the Gluon dQ (BLOCK_M, BLOCK_N, warps), timed alone and in a backward with the first dK/dV
DQ_VARIANTS = {64: [(128, 64, 8), (128, 128, 8)], 128: [(128, 64, 8), (128, 32, 8), (64, 64, 4)]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_gpu.bench.hopper_bwd")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ns", default="1024,4096,16384")
    ap.add_argument("--dims", default="64,128")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("kernels_gpu.bench.hopper_bwd needs a CUDA GPU", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for d in (int(x) for x in args.dims.split(",")):
        for causal in (False, True):
            for n in (int(x) for x in args.ns.split(",")):
                rows.append(point(d, n, causal, args.repeats))
                with open(os.path.join(args.out, "hopper_bwd.tmp"), "w") as f:
                    json.dump({"env": environment(), "rows": rows}, f, indent=1)
                os.replace(os.path.join(args.out, "hopper_bwd.tmp"),
                           os.path.join(args.out, "hopper_bwd.json"))
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
    row = {"d": d, "n": n, "batch": b, "heads": h, "causal": causal, "ms": {}, "runs": {},
           "err": {}, "tl_dkdv_config": dkdv_cfg.short()}
    L.launch_preprocess(p, o, dod, delta)
    for bm, bn, w in VARIANTS[d]:
        name = f"gluon dkdv M{bm}N{bn}w{w}"
        try:
            dk, dv = attention_backward_dkdv_hopper(qd, kd, vd, dod, lse, delta, scale, causal,
                                                    bm, bn, w)
            row["err"][name] = max(float((x.float() - r.float()).norm() / r.float().norm())
                                   for x, r in ((dk, ref[1]), (dv, ref[2])))
        except Exception as e:  # noqa: BLE001 - a variant that fails is reported
            row["err"][name] = f"{type(e).__name__}: {str(e)[-300:]}"
            continue
        study.time_into(row, name, lambda: attention_backward_dkdv_hopper(
            qd, kd, vd, dod, lse, delta, scale, causal, bm, bn, w), repeats)

        def whole(bm=bm, bn=bn, w=w):
            L.launch_preprocess(p, o, dod, delta)
            attention_backward_dkdv_hopper(qd, kd, vd, dod, lse, delta, scale, causal, bm, bn, w)
            L.launch_dq(p, qd, kd, vd, dod, dq, lse, delta, scale, dq_cfg)
        study.time_into(row, f"backward with {name}", whole, repeats)
    kv_cfg = VARIANTS[d][0]
    for bm, bn, w in DQ_VARIANTS[d]:
        name = f"gluon dq M{bm}N{bn}w{w}"
        try:
            g = attention_backward_dq_hopper(qd, kd, vd, dod, lse, delta, scale, causal, bm, bn,
                                             w)
            row["err"][name] = float((g.float() - ref[0].float()).norm() / ref[0].float().norm())
        except Exception as e:  # noqa: BLE001 - a variant that fails is reported
            row["err"][name] = f"{type(e).__name__}: {str(e)[-300:]}"
            continue
        study.time_into(row, name, lambda: attention_backward_dq_hopper(
            qd, kd, vd, dod, lse, delta, scale, causal, bm, bn, w), repeats)

        def all_gluon(bm=bm, bn=bn, w=w):
            L.launch_preprocess(p, o, dod, delta)
            attention_backward_dkdv_hopper(qd, kd, vd, dod, lse, delta, scale, causal, *kv_cfg)
            attention_backward_dq_hopper(qd, kd, vd, dod, lse, delta, scale, causal, bm, bn, w)
        study.time_into(row, f"backward gluon dkdv + {name}", all_gluon, repeats)
    study.time_into(row, f"tl dq {dq_cfg.short()}", lambda: L.launch_dq(
        p, qd, kd, vd, dod, dq, lse, delta, scale, dq_cfg), repeats)
    dk, dv = torch.empty_like(kd), torch.empty_like(vd)
    study.time_into(row, f"tl dkdv {dkdv_cfg.short()}", lambda: L.launch_dkdv(
        p, qd, kd, vd, dod, dk, dv, lse, delta, scale, dkdv_cfg, dq), repeats)
    study.time_into(row, "tl backward", lambda: fa.flash_attention_backward(
        qd, kd, vd, o, lse, dod, causal), repeats)
    study.time_sdpa_backward(row, q, k, v, dod, causal, repeats)
    flops = attention_flops(b, h, n, d, causal, "bwd")
    row["tflops"] = {k_: flops / ms * 1e-9 for k_, ms in row["ms"].items()}
    print(f"d={d} N={n} causal={int(causal)}: " + ", ".join(
        f"{k_} {ms:.3f}" for k_, ms in row["ms"].items()) + " ms | err " + ", ".join(
        f"{k_} {e if isinstance(e, str) else f'{e:.1e}'}" for k_, e in row["err"].items()),
        flush=True)
    return row


if __name__ == "__main__":
    sys.exit(main())
