"""The large-head-dim backward study: variants of the d 256 (and d 192,
padded to 256) backward timed beside SDPA-flash and cuDNN in one run on the GPU.

    python -m kernels_gpu.bench.studies d256 [--out DIR] [--dims 256,192] [--ns 4096,8192,16384]
                                     [--repeats 3] [--dkdv M64N64w8s2-tma,...] [--dq ...]

Variants: the TUNED pair (dK/dV, dQ); other dK/dV configs with the TUNED dQ; other dQ configs
with the TUNED dK/dV; and dK/dV configs with the fused dQ (`-fq`: dS K added to an fp32 dQ with
atomics inside the dK/dV loop, no dQ launch; 5 matmuls per tile pair instead of 7). Each
point: the whole backward (`flash_attention_backward` with both configs given), median of
`--repeats` do_bench medians; the TUNED pair's two launches are also timed alone. fp16, H 32,
B = 16384 / N (the frontier grid's points). Writes d256.json and d256.md.
"""
from __future__ import annotations

import argparse
import os
from functools import partial
from typing import Any

import torch

from ..host import configs as cfgs
from ..host import flash_attn as fa
from ..host import launch as L
from ..host.configs import KernelConfig
from . import study
from .check import precompile
from .run import attention_flops

H = 32
TOKENS = 16384
DKDV = ("M64N64w8s2-tma,M32N64w8s2-tma,M64N32w8s2-tma,M64N32w8s3-tma,"
        "M64N32w8s2-tma-fq,M16N64w8s2-tma-fq,M32N64w8s2-tma-fq,M64N64w8s2-tma-fq")
DQ = "M128N32w8s2-tma,M64N64w8s2-tma,M128N16w8s3-tma,M64N32w4s2-tma,M128N32w8s3-tma"


def variants(d: int, causal: bool, n: int, dkdv: list, dq: list, dq_base=None) -> dict:
    """name -> (dK/dV config, dQ config); names 'tuned', 'dkdv <cfg>' (with dq_base, default
    the TUNED dQ), 'dq <cfg>' (with the TUNED dK/dV)."""
    base_kv = cfgs.tuned_config("bwd_dkdv", d, causal, n)
    base_q = cfgs.tuned_config("bwd_dq", d, causal, n)
    out = {"tuned": (base_kv, base_q)}
    for c in dkdv:
        if c != base_kv or (dq_base or base_q) != base_q:
            out[f"dkdv {c.short()}"] = (c, dq_base or base_q)
    for c in dq:
        if c != base_q:
            out[f"dq {c.short()}"] = (base_kv, c)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_gpu.bench.studies d256",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--dims", default="256")
    ap.add_argument("--ns", default="4096,8192,16384")
    ap.add_argument("--causal", default="1,0")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dkdv", default=DKDV)
    ap.add_argument("--dq", default=DQ)
    ap.add_argument("--dq-base", default=None, help="the dQ config beside the dK/dV variants")
    ap.add_argument("--no-precompile", action="store_true")
    args = ap.parse_args(argv)
    if not study.needs_cuda("d256"):
        return 2
    os.makedirs(args.out, exist_ok=True)
    dkdv = [KernelConfig.from_short(s) for s in args.dkdv.split(",") if s]
    dqs = [KernelConfig.from_short(s) for s in args.dq.split(",") if s]
    dq_base = KernelConfig.from_short(args.dq_base) if args.dq_base else None
    pts = [(d, n, c == "1") for d in (int(x) for x in args.dims.split(","))
           for c in args.causal.split(",") for n in (int(x) for x in args.ns.split(","))]
    if not args.no_precompile:
        jobs = {}
        for d, n, c in pts:
            for kv, q in variants(d, c, n, dkdv, dqs, dq_base).values():
                for pass_, cfg in (("bwd_dkdv", kv), ("bwd_dq", q)):
                    jobs[(pass_, d, c, cfg)] = {"pass": pass_, "d": d, "causal": c, "group": 1,
                                                "dtype": "fp16", "config": cfg.to_dict()}
        precompile(list(jobs.values()), log=lambda s: print(s, flush=True))
    rows = []
    for d, n, causal in pts:
        b = TOKENS // n
        torch.manual_seed(n + d)
        q = torch.randn(b, H, n, d, device="cuda", dtype=torch.float16, requires_grad=True)
        k, v = (torch.randn(b, H, n, d, device="cuda", dtype=torch.float16, requires_grad=True)
                for _ in range(2))
        do = torch.randn_like(q)
        flops = attention_flops(b, H, n, d, causal, "bwd")
        row: dict[str, Any] = {"d": d, "n": n, "batch": b, "causal": causal, "heads": H, "ms": {}, "runs": {},
               "err": {}}
        qd, kd, vd = q.detach(), k.detach(), v.detach()
        o, lse = fa.flash_attention_forward(qd, kd, vd, causal)
        ref = None
        for name, (ckv, cq) in variants(d, causal, n, dkdv, dqs, dq_base).items():
            try:
                grads = fa.flash_attention_backward(qd, kd, vd, o, lse, do, causal,
                                                    dkdv_config=ckv, dq_config=cq)
                if ref is None:
                    ref = [g.float() for g in grads]
                row["err"][name] = max(float((g.float() - r).abs().max()) /
                                       max(float(r.abs().max()), 1e-6)
                                       for g, r in zip(grads, ref))
            except Exception as e:  # noqa: BLE001 - e.g. out of shared memory: report, go on
                row["ms"][name], row["runs"][name] = float("nan"), [f"{type(e).__name__}: "
                                                                    f"{str(e)[:160]}"]
                continue
            study.time_into(row, name, partial(fa.flash_attention_backward, qd, kd, vd, o, lse, do,
                                               causal, dkdv_config=ckv, dq_config=cq), args.repeats)
        p = L.problem_of(qd, kd, vd, causal)
        t_kv, t_q = fa._backward_timers(p, qd, kd, vd, o, lse, do, fa.softmax_scale(None, d))
        base_kv, base_q = variants(d, causal, n, [], [])["tuned"]
        row["launch_ms"] = {"bwd_dkdv": t_kv(base_kv), "bwd_dq": t_q(base_q)}
        study.time_sdpa_backward(row, q, k, v, do, causal, args.repeats)
        row["tflops"] = {k_: flops / ms * 1e-9 for k_, ms in row["ms"].items()}
        rows.append(row)
        ours = {nm: ms for nm, ms in row["ms"].items() if nm not in ("flash", "cudnn")
                and ms == ms}
        best = min(ours, key=ours.__getitem__)
        print(f"d={d} N={n} causal={int(causal)}: tuned {row['ms']['tuned']:.3f} "
              f"(dkdv {row['launch_ms']['bwd_dkdv']:.3f} dq {row['launch_ms']['bwd_dq']:.3f}) "
              f"flash {row['ms']['flash']:.3f} cudnn {row['ms']['cudnn']:.3f} | best {best} "
              f"{ours[best]:.3f} = {row['ms']['flash'] / ours[best]:.2f}x flash "
              f"(tuned {row['ms']['flash'] / row['ms']['tuned']:.2f}x)", flush=True)
        study.save_rows(args.out, "d256", rows)
        del q, k, v, do, o, lse, qd, kd, vd, ref
        torch.cuda.empty_cache()
    with open(os.path.join(args.out, "d256.md"), "w") as f:
        f.write(render(rows))
    return 0


render = study.render_points  # backward ms of every variant, against flash and cuDNN

