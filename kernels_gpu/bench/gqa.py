"""The grouped-query backward study: dK/dV with the head-group loop in one program
(split 1, each autotune candidate) against the group split over programs (split = group, the
MHA code per query head, fp32 partials summed; and split = group / 2), beside SDPA-flash and
cuDNN, in one run on the GPU.

    python -m kernels_gpu.bench.studies gqa [--out DIR] [--dims 64,128] [--repeats 3] [--ns N,..] [--kvs ..]

Each point: the whole backward (preprocess, dK/dV, dQ: `flash_attention_backward` with only the
dK/dV config varied), median of `--repeats` do_bench medians; SDPA through autograd as in the
bench. Writes gqa.json and gqa.md.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import replace
from typing import Any

import torch

from ..host import configs as cfgs
from ..host import flash_attn as fa
from ..host import launch as L
from . import study
from .check import precompile
from .run import attention_flops

B, H = 4, 32


def shapes(dims, ns=None, kvs=None):
    """(d, N, causal, H_kv) points; ns / kvs (if given) keep only those N / H_kv."""
    out = []
    for d in dims:
        dn = (2048, 4096, 8192) if d == 64 else (4096, 8192)
        dkv = (8, 4, 1) if d == 64 else (8, 1)
        out += [(d, n, c, kv) for c in (True, False) for n in dn for kv in dkv
                if (ns is None or n in ns) and (kvs is None or kv in kvs)]
    return out


def variants(d: int, causal: bool, n: int, group: int) -> dict[str, cfgs.KernelConfig]:
    base = cfgs.tuned_config("bwd_dkdv", d, causal, n)
    if base is None:
        raise ValueError(f"no tuned bwd_dkdv config at d = {d}, n = {n}")
    out = {"loop (before)": replace(base, split=1)}
    if d == 64:
        for c in cfgs.candidates("bwd_dkdv", d, 2, causal):
            if c != base:
                out[f"loop {c.short()}"] = replace(c, split=1)
    out["split group"] = replace(base, split=group)
    if group >= 4:
        out["split group/2"] = replace(base, split=group // 2)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_gpu.bench.studies gqa",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ns", help="only these N (comma-separated)")
    ap.add_argument("--kvs", help="only these H_kv (comma-separated)")
    args = ap.parse_args(argv)
    if not study.needs_cuda("gqa"):
        return 2
    os.makedirs(args.out, exist_ok=True)
    ints = lambda t: None if t is None else {int(x) for x in t.split(",")}  # noqa: E731
    pts = shapes([int(x) for x in args.dims.split(",")], ints(args.ns), ints(args.kvs))
    jobs = {}
    for d, n, c, kv in pts:
        for cfg in variants(d, c, n, H // kv).values():
            jobs[(d, c, H // kv, cfg)] = {"pass": "bwd_dkdv", "d": d, "causal": c,
                                          "group": H // kv, "dtype": "fp16",
                                          "config": cfg.to_dict()}
    precompile(list(jobs.values()), log=lambda s: print(s, flush=True))
    rows = []
    for d, n, causal, kv in pts:
        torch.manual_seed(n + d + kv)
        q = torch.randn(B, H, n, d, device="cuda", dtype=torch.float16, requires_grad=True)
        k, v = (torch.randn(B, kv, n, d, device="cuda", dtype=torch.float16,
                            requires_grad=True) for _ in range(2))
        do = torch.randn_like(q)
        flops = attention_flops(B, H, n, d, causal, "bwd")
        row: dict[str, Any] = {"d": d, "n": n, "causal": causal, "heads": H, "heads_kv": kv, "ms": {},
               "runs": {}}
        o, lse = fa.flash_attention_forward(q.detach(), k.detach(), v.detach(), causal)
        p = L.problem_of(q, k, v, causal)
        dq_cfg = L.resolve_config("bwd_dq", p)
        for name, cfg in variants(d, causal, n, H // kv).items():
            study.time_into(row, name, lambda: fa.flash_attention_backward(
                q.detach(), k.detach(), v.detach(), o, lse, do, causal, dkdv_config=cfg,
                dq_config=dq_cfg), args.repeats)
        study.time_sdpa_backward(row, q, k, v, do, causal, args.repeats)
        row["tflops"] = {k_: flops / ms * 1e-9 for k_, ms in row["ms"].items()}
        rows.append(row)
        best = min((ms, nm) for nm, ms in row["ms"].items() if nm not in ("flash", "cudnn"))
        print(f"d={d} N={n} causal={int(causal)} H_kv={kv}: " + ", ".join(
            f"{nm} {ms:.3f}" for nm, ms in row["ms"].items()) + f" | best {best[1]} "
            f"{row['ms']['flash'] / best[0]:.2f}x flash", flush=True)
        study.save_rows(args.out, "gqa", rows, batch=B)
    with open(os.path.join(args.out, "gqa.md"), "w") as f:
        f.write(render(rows))
    return 0


def render(rows) -> str:
    """Backward ms of every variant, and the best of ours against SDPA-flash."""
    return study.render(rows, ["d", "N", "causal", "H/H_kv"], lambda r: [
        str(r["d"]), str(r["n"]), "yes" if r["causal"] else "no",
        f"{r['heads']}/{r['heads_kv']}"])

