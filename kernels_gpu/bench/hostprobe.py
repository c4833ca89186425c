"""Where a call's host (CPU) time goes, at a shape small enough to be host bound.

    python -m kernels_gpu.bench.hostprobe [--d 64 --n 1024 --causal 1] [--out DIR]   # on a CUDA GPU

For each way of running the forward and the backward (ours through autograd, ours called
directly, ours with pointer-only configs, SDPA-flash and SDPA-cuDNN through autograd) it
measures: CPU microseconds to enqueue one call (the loop of calls without synchronising),
wall microseconds per call once the GPU has caught up, and do_bench's median (what the speed
table reports). A call is host bound when CPU >= GPU time: then the table measures the CPU.
Parts: one TensorDescriptor built; one launch of the preprocess kernel (pointers only);
autograd alone (a Function that launches nothing); the time spent inside
flash_attention_backward when autograd calls it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace

import torch
import triton

from ..host import flash_attn as fa
from ..host import launch as L
from ..host.launch_common import flat_desc

__all__ = ["probe", "main"]


class _Identity(torch.autograd.Function):
    """No kernels: what autograd itself costs per forward / backward call."""

    @staticmethod
    def forward(ctx, q, k, v):
        return torch.empty_like(q)

    @staticmethod
    def backward(ctx, do):
        return do, do, do


def _cpu_wall(call, calls: int = 200) -> dict:
    for _ in range(10):
        call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    cpu = (time.perf_counter() - t0) / calls
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / calls
    bench = triton.testing.do_bench(call, warmup=25, rep=100, return_mode="median")
    return {"cpu_us": cpu * 1e6, "wall_us": wall * 1e6, "do_bench_us": bench * 1e3}


def probe(d: int = 64, n: int = 1024, causal: bool = True, batch: int = 4,
          heads: int = 32) -> dict:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = (torch.randn(batch, heads, n, d, device="cuda", dtype=torch.float16,
                           requires_grad=True) for _ in range(3))
    do = torch.randn_like(q)
    qd, kd, vd = q.detach(), k.detach(), v.detach()
    o, lse = fa.flash_attention_forward(qd, kd, vd, causal)
    p = L.problem_of(qd, kd, vd, causal)
    cfgs = {pass_: L.resolve_config(pass_, p) for pass_ in ("fwd", "bwd_dkdv", "bwd_dq")}
    ptr = {k_: replace(c, use_tma=False) for k_, c in cfgs.items()}
    out = {"shape": {"d": d, "n": n, "causal": causal, "batch": batch, "heads": heads},
           "configs": {k_: c.short() for k_, c in cfgs.items()}}

    def sdpa(backend):
        def run():
            with sdpa_kernel(backend):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                                        is_causal=causal)
        return run

    runs = {"ours": lambda: fa.flash_attention(q, k, v, causal),
            "flash": sdpa(SDPBackend.FLASH_ATTENTION), "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION)}
    os.environ["KERNELS_GPU_GRAPHS"] = "0"  # ours without CUDA graphs first
    o_eager = fa.flash_attention(q, k, v, causal)
    out["ours_bwd_autograd_no_graphs"] = _cpu_wall(
        lambda: torch.autograd.grad(o_eager, (q, k, v), do, retain_graph=True))
    os.environ["KERNELS_GPU_GRAPHS"] = "1"
    for name, fn in runs.items():
        o_graph = fn()
        out[f"{name}_fwd_autograd"] = _cpu_wall(fn)
        out[f"{name}_bwd_autograd"] = _cpu_wall(
            lambda: torch.autograd.grad(o_graph, (q, k, v), do, retain_graph=True))
    out["ours_fwd_direct"] = _cpu_wall(lambda: fa.flash_attention_forward(qd, kd, vd, causal))
    out["ours_fwd_direct_pointers"] = _cpu_wall(
        lambda: fa.flash_attention_forward(qd, kd, vd, causal, config=ptr["fwd"]))
    out["ours_bwd_direct"] = _cpu_wall(
        lambda: fa.flash_attention_backward(qd, kd, vd, o, lse, do, causal))
    out["ours_bwd_direct_pointers"] = _cpu_wall(
        lambda: fa.flash_attention_backward(qd, kd, vd, o, lse, do, causal,
                                            dkdv_config=ptr["bwd_dkdv"], dq_config=ptr["bwd_dq"]))
    scale = d ** -0.5
    out["ours_bwd_internal"] = _cpu_wall(  # no checks, configs resolved: the autograd path's
        lambda: fa._backward(p, qd, kd, vd, o, lse, do, scale, cfgs["bwd_dkdv"], cfgs["bwd_dq"]))
    delta = torch.empty_like(lse)
    dq_, dk_, dv_ = torch.empty_like(qd), torch.empty_like(kd), torch.empty_like(vd)

    def launches_only():
        L.launch_preprocess(p, o, do, delta)
        L.launch_dkdv(p, qd, kd, vd, do, dk_, dv_, lse, delta, scale, cfgs["bwd_dkdv"])
        L.launch_dq(p, qd, kd, vd, do, dq_, lse, delta, scale, cfgs["bwd_dq"])
    out["ours_bwd_three_launches_only"] = _cpu_wall(launches_only)
    out["one_preprocess_launch"] = _cpu_wall(lambda: L.launch_preprocess(p, o, do, delta))
    # autograd's own cost: a Function whose forward allocates and whose backward returns do
    ident = _Identity.apply
    o_id = ident(q, k, v)
    out["autograd_trivial_fwd"] = _cpu_wall(lambda: ident(q, k, v))
    out["autograd_trivial_bwd"] = _cpu_wall(
        lambda: torch.autograd.grad(o_id, (q, k, v), do, retain_graph=True))
    # time inside flash_attention_backward when autograd calls it
    inside = []
    real = fa._backward  # what the backward operator (flash_attn_bwd) calls

    def timed(*a, **kw):
        t0 = time.perf_counter()
        r = real(*a, **kw)
        inside.append(time.perf_counter() - t0)
        return r

    fa._backward = timed
    try:
        o_t = fa.flash_attention(q, k, v, causal)
        out["ours_bwd_autograd_again"] = _cpu_wall(
            lambda: torch.autograd.grad(o_t, (q, k, v), do, retain_graph=True))
    finally:
        fa._backward = real
    inside.sort()
    out["inside_backward_under_autograd_us"] = (inside[len(inside) // 2] * 1e6 if inside
                                                else float("nan"))
    out["one_preprocess_launch"] = _cpu_wall(lambda: L.launch_preprocess(p, o, do, delta))
    out["one_descriptor"] = _cpu_wall(lambda: flat_desc(kd, 64))
    out["problem_of"] = _cpu_wall(lambda: L.problem_of(qd, kd, vd, causal))
    from ..host import graphs
    out["graph_stats"] = graphs.stats()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--causal", type=int, default=1)
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("kernels_gpu.bench.hostprobe needs a CUDA GPU", file=sys.stderr)
        return 2
    res = probe(args.d, args.n, bool(args.causal))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"hostprobe_d{args.d}_n{args.n}.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"configs: {res['configs']}")
    print("| call | CPU us | wall us | do_bench us |\n|---|---|---|---|")
    for key, val in res.items():
        if isinstance(val, dict) and "cpu_us" in val:
            print(f"| {key} | {val['cpu_us']:.1f} | {val['wall_us']:.1f} | "
                  f"{val['do_bench_us']:.1f} |", flush=True)
    print(f"inside flash_attention_backward under autograd: "
          f"{res['inside_backward_under_autograd_us']:.1f} us (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
