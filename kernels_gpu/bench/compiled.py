"""flash_attention under torch.compile beside the direct call, and the fwd + bwd peak memory.

    python -m kernels_gpu.bench.compiled [--out DIR] [--ns 512,4096] [--dims 64,128] [--memory-n 16384]

Rows (fp16, causal, forward + backward: torch.autograd.grad(o, (q, k, v), do) after one
forward, triton.testing.do_bench medians, all in one process):

* timing: B 4 x H 16, each d of --dims and N of --ns: the direct (eager) call, the same function
  compiled (torch.compile(fullgraph=True), inductor), the ratio compiled / eager (the
  operator's overhead under compile: 1.00 = none), and SDPA-flash eager for scale; which
  kernels ran (the host's dispatch) and the Triton whose Gluon status decided it;
* memory: B 1 x H 16, d 128, N --memory-n (16k): the peak allocated bytes of one forward +
  backward above the inputs (q, k, v, do), ours and SDPA-flash, and their ratio.

Writes compiled.json and compiled.md under --out (default $OUT, else ./bench_out).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

import torch

from ..host import flash_attn as fa
from ..host import graphs, support
from .check import sdpa

__all__ = ["time_rows", "memory_row", "main"]

BATCH, HEADS = 4, 16


def _fwd_bwd(attn: Callable, q, k, v, do) -> Callable[[], object]:
    def run():
        o = attn(q, k, v)
        return torch.autograd.grad(o, (q, k, v), do)
    return run


def _inputs(b: int, h: int, n: int, d: int, seed: int = 0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return tuple(torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, generator=g)
                 .requires_grad_(i < 3) for i in range(4))


def _kernels(q, k, v) -> str:
    from ..model.dispatch import host_labels

    labels = host_labels(q, k, v, True)
    return ", ".join(f"{p} {lab}" for p, lab in sorted(labels.items())) or "tl"


def time_rows(ns: list[int], dims: tuple[int, ...] = (64, 128)) -> list[dict]:
    import triton
    from torch.nn.attention import SDPBackend

    rows = []
    for d in dims:
        for n in ns:
            q, k, v, do = _inputs(BATCH, HEADS, n, d)

            def ours(q, k, v):
                return fa.flash_attention(q, k, v, True)

            torch._dynamo.reset()
            compiled = torch.compile(ours, fullgraph=True)
            impls = {"eager": ours, "compiled": compiled,
                     "sdpa_flash": lambda q, k, v: sdpa(q, k, v, True,
                                                        SDPBackend.FLASH_ATTENTION)}
            ms, replayed = {}, {}
            for name, fn in impls.items():
                run = _fwd_bwd(fn, q, k, v, do)
                run()  # compile (Triton and torch.compile) outside the timing
                before = graphs.stats()
                ms[name] = triton.testing.do_bench(run, warmup=25, rep=100,
                                                   return_mode="median")
                after = graphs.stats()
                calls = sum(after[s] - before[s] for s in ("eager", "captured", "replayed"))
                replayed[name] = round((after["replayed"] - before["replayed"]) / calls, 2) \
                    if calls else 0.0
            o_eager, o_comp = ours(q, k, v), compiled(q, k, v)
            rows.append({"d": d, "n": n, "batch": BATCH, "heads": HEADS, "causal": True,
                         **{f"{k_}_ms": round(t, 4) for k_, t in ms.items()},
                         "compiled_over_eager": round(ms["compiled"] / ms["eager"], 3),
                         "same_output": bool(torch.equal(o_eager, o_comp)),
                         # the share of our launches replayed as CUDA graphs (host/graphs.py)
                         "eager_graph_replays": replayed["eager"],
                         "compiled_graph_replays": replayed["compiled"],
                         "kernels": _kernels(q, k, v)})
            del q, k, v, do
    return rows


def _peak_above_inputs(run: Callable[[], object]) -> int:
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    grads = run()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del grads
    return peak


def memory_row(n: int = 16384, d: int = 128, heads: int = 16) -> dict:
    from torch.nn.attention import SDPBackend

    q, k, v, do = _inputs(1, heads, n, d)
    ours = _fwd_bwd(lambda q, k, v: fa.flash_attention(q, k, v, True), q, k, v, do)
    flash = _fwd_bwd(lambda q, k, v: sdpa(q, k, v, True, SDPBackend.FLASH_ATTENTION),
                     q, k, v, do)
    ours(), flash()  # compile and warm the allocator first
    mib = {name: _peak_above_inputs(run) / 2 ** 20 for name, run in
           (("ours", ours), ("sdpa_flash", flash))}
    return {"n": n, "batch": 1, "heads": heads, "d": d, "causal": True,
            "ours_peak_mib": round(mib["ours"], 1), "sdpa_flash_peak_mib": round(mib["sdpa_flash"], 1),
            "ours_over_sdpa_flash": round(mib["ours"] / mib["sdpa_flash"], 3),
            "kernels": _kernels(q, k, v)}


def render(env: dict, rows: list[dict], mem: dict) -> str:
    out = [f"# flash_attention compiled and eager ({env['device']}, torch {env['torch']}, "
           f"triton {env['triton']})", "", f"Gluon kernels: {env['gluon']}", "",
           "fp16, causal, forward + backward, B 4 x H 16, median ms (triton.testing.do_bench)",
           "", "| d | N | eager ms | compiled ms | compiled / eager | SDPA-flash ms | same O | "
           "graph replays eager / compiled | kernels |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['d']} | {r['n']} | {r['eager_ms']:.3f} | {r['compiled_ms']:.3f} | "
                   f"{r['compiled_over_eager']:.3f} | {r['sdpa_flash_ms']:.3f} | "
                   f"{'yes' if r['same_output'] else 'no'} | {r['eager_graph_replays']:.2f} / "
                   f"{r['compiled_graph_replays']:.2f} | {r['kernels']} |")
    out += ["", f"Peak memory above the inputs, forward + backward, B 1 x H {mem['heads']}, "
            f"d {mem['d']}, N {mem['n']}, causal", "",
            "| ours MiB | SDPA-flash MiB | ours / SDPA-flash | kernels |", "|---|---|---|---|",
            f"| {mem['ours_peak_mib']:.1f} | {mem['sdpa_flash_peak_mib']:.1f} | "
            f"{mem['ours_over_sdpa_flash']:.3f} | {mem['kernels']} |", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_gpu.bench.compiled")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--ns", default="512,4096", help="N of the timing rows (comma list)")
    ap.add_argument("--dims", default="64,128", help="head dims of the timing rows")
    ap.add_argument("--memory-n", type=int, default=16384)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("kernels_gpu.bench.compiled needs a CUDA GPU", file=sys.stderr)
        return 2
    import triton

    env = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "triton": triton.__version__, "gluon": support.gluon_status()[1]}
    rows = time_rows([int(x) for x in args.ns.split(",")],
                     tuple(int(x) for x in args.dims.split(",")))
    mem = memory_row(args.memory_n)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "compiled.json"), "w") as f:
        json.dump({"environment": env, "timing": rows, "memory": mem}, f, indent=1)
    text = render(env, rows, mem)
    with open(os.path.join(args.out, "compiled.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
