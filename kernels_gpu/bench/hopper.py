"""The Gluon Hopper forward (kernels.hopper) beside the `tl` kernel, SDPA-flash
and cuDNN, in one run on an sm_90 GPU: correctness against float32 SDPA-math, then forward time
(median of --repeats do_bench medians), fp16, H 32, B·N = 16k, non-causal (--causal: causal);
--ws adds the warp-specialised kernel (kernels.hopper_ws) in its schedules; --kv the K/V heads
(grouped heads: 8, 4, 1); d 192 runs the warp-specialised kernel on three 64-column chunks.
"ours" is the public forward as dispatched (host/dispatch.py), "ours (tl)" the `tl` kernel.

    python -m kernels_gpu.bench.studies hopper [--out DIR] [--repeats 3] [--causal] [--ws]
        [--dims 64,128,192] [--kv 32,8,1] [--ns 1024,4096,16384] [--dispatched]
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from ..host import flash_attn as fa
from ..host.hopper import attention_forward_hopper, attention_forward_ws
from . import study
from .check import sdpa
from .run import attention_flops
from .study import median_ms

VARIANTS = {64: [(128, 128, 8), (128, 64, 8), (64, 128, 4)],
            128: [(128, 128, 8), (128, 64, 8), (64, 64, 4)], 192: []}
# the warp-specialised forward (kernels.hopper_ws): (block_n, schedule, stages); "p...": its
# persistent form (kernels.hopper_ws_persistent)
WS_VARIANTS = {64: [(128, "ws", 2), (128, "lag", 2), (128, "pingpong", 2), (128, "plag", 2),
                    (128, "ppingpong", 2), (128, "plag", 3)],
               128: [(128, "ws", 2), (128, "lag", 2), (128, "pingpong", 2), (128, "lag", 3),
                     (128, "pingpong", 3), (128, "plag", 2), (128, "ppingpong", 2)],
               192: [(64, "ws", 2), (64, "lag", 2), (64, "pingpong", 2), (64, "lag", 3),
                     (64, "pingpong", 3)]}


def variants(d: int, causal: bool, ws: bool) -> dict:
    """name -> the forward call, for the one-partition Gluon configs and (ws) the
    warp-specialised schedules."""
    out: dict[str, Callable[..., Any]] = {}  # name → f(q, k, v)
    for bm, bn, w in VARIANTS[d]:
        out[f"gluon M{bm}N{bn}w{w}"] = partial(attention_forward_hopper, block_m=bm, block_n=bn,
                                               num_warps=w, causal=causal)
    for bn, sched, st in (WS_VARIANTS[d] if ws else []):
        out[f"ws N{bn} {sched} s{st}"] = partial(attention_forward_ws, block_n=bn, schedule=sched,
                                                 stages=st, causal=causal)
    return out


def _ms(fn, repeats):
    return median_ms(fn, repeats, rep=40)[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_gpu.bench.studies hopper")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ns", default="1024,4096,16384")
    ap.add_argument("--causal", action="store_true", help="causal (square N) instead")
    ap.add_argument("--ws", action="store_true", help="the warp-specialised kernel's schedules too")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--kv", default="32", help="K/V heads (comma list; 32 = dense)")
    ap.add_argument("--dispatched", action="store_true",
                    help="only the dispatched forward, the `tl` one, SDPA-flash and cuDNN")
    args = ap.parse_args(argv)
    if not study.needs_cuda("hopper"):
        return 2
    from torch.nn.attention import SDPBackend
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for d, kv, n in ((int(d), int(kv), int(n)) for d in args.dims.split(",")
                     for kv in args.kv.split(",") for n in args.ns.split(",")):
        b, h = max(1, 16384 // n), 32
        torch.manual_seed(n + d + kv)
        q = torch.randn(b, h, n, d, device="cuda", dtype=torch.float16)
        k, v = (torch.randn(b, kv, n, d, device="cuda", dtype=torch.float16) for _ in range(2))
        c = args.causal
        flops = attention_flops(b, h, n, d, c, "fwd")
        g = h // kv
        ref = sdpa(q.float(), k.float().repeat_interleave(g, 1), v.float().repeat_interleave(g, 1),
                   c, SDPBackend.MATH) if n <= 4096 else None
        row: dict[str, Any] = {"d": d, "n": n, "batch": b, "heads": h, "kv_heads": kv,
                               "causal": c, "ms": {}, "err": {}}
        with torch.no_grad():
            calls = {**({} if args.dispatched else variants(d, c, args.ws)),
                     "ours": lambda q_, k_, v_: fa.flash_attention_forward(q_, k_, v_, c)[0]}
            for name, fn in calls.items():
                try:
                    o = fn(q, k, v)
                    if ref is not None:
                        row["err"][name] = ((o.float() - ref).norm() / ref.norm()).item()
                    row["ms"][name] = _ms(lambda: fn(q, k, v), args.repeats)
                except Exception as e:  # noqa: BLE001 - a variant that fails is reported
                    row["ms"][name] = float("nan")
                    row["err"][name] = f"{type(e).__name__}: {str(e)[-300:]}"
            row["ms"]["ours (tl)"] = _ms(lambda: fa.flash_attention_forward(
                q, k, v, c, config=fa.resolve_config("fwd", q, c, k=k)), args.repeats)
            for name, be in (("flash", SDPBackend.FLASH_ATTENTION),
                             ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                try:
                    sdpa(q, k, v, c, be)
                    kk, vv = k, v
                except RuntimeError:  # a backend without grouped heads: K/V expanded
                    kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
                row["ms"][name] = _ms(lambda: sdpa(q, kk, vv, c, be), args.repeats)
        row["tflops"] = {k_: flops / ms * 1e-9 for k_, ms in row["ms"].items()}
        rows.append(row)
        print(f"d={d} H_kv={kv} N={n}: " + ", ".join(f"{k_} {t:.0f}" for k_, t in row["tflops"].items())
              + " TFLOP/s | err " + ", ".join(f"{k_} {e if isinstance(e, str) else f'{e:.1e}'}"
                                             for k_, e in row["err"].items()), flush=True)
        stem = ("hopper_dispatched" if args.dispatched else "hopper_ws" if args.ws
                else "hopper") + ("_causal" if c else "")
        study.save_rows(args.out, stem, rows)
    return 0
