"""Benchmark the Triton FlashAttention-2 against PyTorch SDPA (FLASH and cuDNN backends).

    python -m kernels_gpu.bench [--tune] [--precompile] [--out DIR] [--ns 1024,4096] [--dims 64]

1. checks our outputs (O, and dQ/dK/dV) against SDPA and a float64 reference (exit 1 if wrong);
2. times forward and backward with triton.testing.do_bench (median) for ours, SDPA-flash and
   SDPA-cuDNN, in one run, fp16, batch 4 x 32 heads, d in {64, 128}, N in {1k .. 16k},
   causal and not;
3. prints a markdown table with ours/flash and ours/cudnn ratios, writes bench.json and
   bench.md under --out (default $OUT, else ./bench_out).

FLOP convention (the usual one, as in the FlashAttention papers and the Triton tutorial):
forward = 4 * B * H * N^2 * d (two N x N x d matmuls, 2 FLOP per multiply-add), halved when
causal; backward = 2.5 x forward (five matmuls instead of two). Exponentials are not counted.
Backward time is that of torch.autograd.grad(o, (q, k, v), do) after one forward: for ours the
three backward launches (D, dK/dV, dQ); for SDPA whatever its backward runs.

--precompile compiles (and checks on a small shape) every autotuning candidate in parallel
subprocesses first; a candidate that fails to compile, crashes or is wrong is excluded from
tuning. --tune times the candidates per (pass, d, causal, N) before measuring (else the TUNED
table in configs.py is used).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from . import configs as cfgs
from . import flash_attn as fa
from .configs import KernelConfig

BATCH, HEADS = 4, 32
NS = (1024, 2048, 4096, 8192, 16384)
DIMS = (64, 128)


def attention_flops(batch: int, heads: int, n: int, d: int, causal: bool, pass_: str) -> float:
    fwd = 4.0 * batch * heads * n * n * d * (0.5 if causal else 1.0)
    return fwd if pass_ == "fwd" else 2.5 * fwd


def _rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    return ((a.double() - ref).norm() / ref.norm()).item()


def _sdpa(backend):
    from torch.nn.attention import sdpa_kernel

    def run(q, k, v, causal):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return run


def _backends():
    from torch.nn.attention import SDPBackend
    return {"flash": _sdpa(SDPBackend.FLASH_ATTENTION), "cudnn": _sdpa(SDPBackend.CUDNN_ATTENTION)}


def _ours(q, k, v, causal):
    return fa.flash_attention(q, k, v, causal)


# ------------------------------------------------------------------------------------------
# 1. correctness
# ------------------------------------------------------------------------------------------
def check(log=print) -> bool:
    """Ours vs float64 reference, next to SDPA-flash vs the same reference."""
    ok = True
    backends = _backends()
    torch.manual_seed(0)
    cases = [(d, n, c, dt) for d in DIMS for n in (1024, 1000) for c in (False, True)
             for dt in (torch.float16,)]
    cases += [(64, 512, True, torch.bfloat16), (128, 384, False, torch.bfloat16),
              (64, 256, True, torch.float32)]
    log("| d | N | causal | dtype | ours O | sdpa O | ours lse | ours dQ | sdpa dQ | ours dK | "
        "sdpa dK | ours dV | sdpa dV | ok |")
    log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d, n, causal, dt in cases:
        try:
            ok &= _check_case(d, n, causal, dt, backends, log)
        except Exception as e:  # noqa: BLE001 - report and go on with the other cases
            ok = False
            log(f"| {d} | {n} | {causal} | {str(dt)[6:]} | ERROR {type(e).__name__}: "
                f"{str(e)[:300]} |")
    return ok


def _check_case(d, n, causal, dt, backends, log) -> bool:
    q, k, v = (torch.randn(2, 4, n, d, device="cuda", dtype=dt, requires_grad=True)
               for _ in range(3))
    do = torch.randn_like(q)
    qr, kr, vr = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref_o, ref_lse = fa.attention_reference(qr, kr, vr, causal)
    ref_o.backward(do.double())
    refs = [ref_o.detach(), qr.grad, kr.grad, vr.grad]
    o, lse = fa.flash_attention_forward(q.detach(), k.detach(), v.detach(), causal)
    ours = [o, *torch.autograd.grad(fa.flash_attention(q, k, v, causal), (q, k, v), do)]
    sdpa_name = "flash" if dt != torch.float32 else "cudnn"
    try:
        so = backends[sdpa_name](q, k, v, causal)
        theirs = [so, *torch.autograd.grad(so, (q, k, v), do)]
    except RuntimeError:  # a backend that does not take this dtype: math backend instead
        so = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        theirs = [so, *torch.autograd.grad(so, (q, k, v), do)]
    e_ours = [_rel(a, r) for a, r in zip(ours, refs)]
    e_them = [_rel(a, r) for a, r in zip(theirs, refs)]
    e_lse = _rel(lse, ref_lse)
    floor = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 5e-3}[dt]
    lse_tol = 1e-3 if dt == torch.float32 else 1e-4  # fp32 runs tf32 dots on the GPU
    good = all(eo <= max(2 * et, floor) for eo, et in zip(e_ours, e_them)) and e_lse < lse_tol
    good = good and all(torch.isfinite(t).all().item() for t in ours)
    log(f"| {d} | {n} | {causal} | {str(dt)[6:]} | {e_ours[0]:.1e} | {e_them[0]:.1e} | "
        f"{e_lse:.1e} | {e_ours[1]:.1e} | {e_them[1]:.1e} | {e_ours[2]:.1e} | "
        f"{e_them[2]:.1e} | {e_ours[3]:.1e} | {e_them[3]:.1e} | {'yes' if good else 'NO'} |")
    return good


# ------------------------------------------------------------------------------------------
# precompile: every candidate in its own subprocess (a compiler crash only loses that one)
# ------------------------------------------------------------------------------------------
def compile_one(spec: dict) -> dict:
    """Compile + run one candidate on a small even shape and check it against float64."""
    pass_, d, causal = spec["pass"], spec["d"], spec["causal"]
    cfg = KernelConfig.from_dict(spec["config"])
    torch.manual_seed(1)
    n = 256
    q, k, v, do = (torch.randn(1, 2, n, d, device="cuda", dtype=torch.float16) for _ in range(4))
    t0 = time.time()
    if pass_ == "fwd":
        o, lse = fa.flash_attention_forward(q, k, v, causal, config=cfg)
        ref, _ = fa.attention_reference(q, k, v, causal)
        err = _rel(o, ref)
    else:
        o, lse = fa.flash_attention_forward(q, k, v, causal, block_m=64, block_n=64)
        kw = {"dkdv_config": cfg} if pass_ == "bwd_dkdv" else {"dq_config": cfg}
        dq, dk, dv = fa.flash_attention_backward(q, k, v, o, lse, do, causal, **kw)
        qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
        fa.attention_reference(qr, kr, vr, causal)[0].backward(do.double())
        err = max(_rel(dk, kr.grad), _rel(dv, vr.grad)) if pass_ == "bwd_dkdv" else \
            _rel(dq, qr.grad)
    torch.cuda.synchronize()
    return {"err": err, "seconds": time.time() - t0, **_resources(pass_)}


def _resources(pass_: str) -> dict:
    """Registers / spills / shared memory of the compiled kernel of this pass (best effort)."""
    fn = {"fwd": fa._attn_fwd, "bwd_dkdv": fa._attn_bwd_dkdv, "bwd_dq": fa._attn_bwd_dq}[pass_]
    try:
        kernels = [k for cache in fn.device_caches.values() for k in cache[0].values()]
        k = kernels[-1]
        return {"regs": k.n_regs, "spills": k.n_spills, "smem": k.metadata.shared}
    except Exception as e:  # noqa: BLE001
        return {"resources_error": str(e)[:100]}


def precompile(dims, causals, log=print, workers: int = 14,
               passes=cfgs.PASSES) -> list[dict]:
    jobs = [{"pass": p, "d": d, "causal": c, "config": cfg.to_dict()}
            for p in passes for d in dims for c in causals
            for cfg in cfgs.candidates(p, d)]

    def run(spec):
        t0 = time.time()
        try:
            r = subprocess.run([sys.executable, "-m", "kernels_gpu.bench", "--compile-one",
                                json.dumps(spec)], capture_output=True, text=True, timeout=240)
            lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
            res = json.loads(lines[-1][7:]) if lines else {"error": (r.stderr or "")[-400:]}
        except subprocess.TimeoutExpired:
            res = {"error": "timeout"}
        res["wall"] = time.time() - t0
        return {**spec, **res}

    t0 = time.time()
    with cf.ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(run, jobs))
    for r in results:
        cfg = KernelConfig.from_dict(r["config"])
        bad = "error" in r or not (r["err"] < 2e-2)
        if bad:
            cfgs.exclude_candidate(r["pass"], r["d"], r["causal"], cfg)
        status = ("EXCLUDED " + str(r.get("error", f"err={r.get('err')}"))[-300:]) if bad else \
            f"ok err={r['err']:.1e} regs={r.get('regs')} spills={r.get('spills')} " \
            f"smem={r.get('smem')}"
        log(f"  precompile {r['pass']:8s} d={r['d']} causal={int(r['causal'])} "
            f"{cfg.short():24s} {r['wall']:5.1f}s {status}")
    log(f"precompiled {len(jobs)} candidates in {time.time() - t0:.0f}s")
    return results


# ------------------------------------------------------------------------------------------
# 2. timing
# ------------------------------------------------------------------------------------------
def _bench_ms(fn) -> float:
    import triton
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def time_point(d: int, n: int, causal: bool, impls: dict, fwd_only: bool = False) -> dict:
    torch.manual_seed(n + d)
    q, k, v = (torch.randn(BATCH, HEADS, n, d, device="cuda", dtype=torch.float16,
                           requires_grad=True) for _ in range(3))
    do = torch.randn_like(q)
    row = {"d": d, "n": n, "causal": causal, "batch": BATCH, "heads": HEADS}
    for name, fn in impls.items():
        try:
            with torch.no_grad():
                fwd_ms = _bench_ms(lambda: fn(q, k, v, causal))
            if fwd_only:
                bwd_ms = float("nan")
            else:
                o = fn(q, k, v, causal)
                bwd_ms = _bench_ms(lambda: torch.autograd.grad(o, (q, k, v), do,
                                                               retain_graph=True))
                del o
        except Exception as e:  # noqa: BLE001 - a backend missing here is reported, not fatal
            row[name] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
            continue
        row[name] = {"fwd_ms": fwd_ms, "bwd_ms": bwd_ms,
                     "fwd_tflops": attention_flops(BATCH, HEADS, n, d, causal, "fwd") / fwd_ms
                     * 1e-9,
                     "bwd_tflops": attention_flops(BATCH, HEADS, n, d, causal, "bwd") / bwd_ms
                     * 1e-9}
    qd = q.detach()
    row["configs"] = {p: fa.resolve_config(p, qd, causal).to_dict() for p in cfgs.PASSES}
    return row


def host_overhead(d: int = 64, n: int = 1024, causal: bool = False, calls: int = 200) -> dict:
    """CPU time to enqueue one call vs wall time per call (GPU-bound if wall > CPU), for ours
    and SDPA, forward and backward: shows whether small shapes are launch/host bound."""
    import triton
    q, k, v = (torch.randn(BATCH, HEADS, n, d, device="cuda", dtype=torch.float16,
                           requires_grad=True) for _ in range(3))
    do = torch.randn_like(q)
    out = {}
    for name, fn in {"ours": _ours, **_backends()}.items():
        o = fn(q, k, v, causal)
        for pass_, call in (("fwd", lambda: fn(q, k, v, causal)),
                            ("bwd", lambda: torch.autograd.grad(o, (q, k, v), do,
                                                                retain_graph=True))):
            for _ in range(10):
                call()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                call()
            cpu = (time.perf_counter() - t0) / calls
            torch.cuda.synchronize()
            wall = (time.perf_counter() - t0) / calls
            graph_free = triton.testing.do_bench(call, warmup=25, rep=100, return_mode="median")
            out[f"{name}_{pass_}"] = {"cpu_us": cpu * 1e6, "wall_us": wall * 1e6,
                                      "do_bench_us": graph_free * 1e3}
    return out


def _fmt(row, name, key):
    r = row.get(name, {})
    return f"{r[key]:.0f}" if key in r else "err"


def _ratio(row, a, b, key):
    ra, rb = row.get(a, {}), row.get(b, {})
    return f"{ra[key] / rb[key]:.2f}" if key in ra and key in rb else "-"


def render_table(rows: list[dict]) -> str:
    head = ("| d | causal | N | fwd ours | fwd flash | fwd cudnn | ours/flash | ours/cudnn | "
            "bwd ours | bwd flash | bwd cudnn | ours/flash | ours/cudnn |")
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        lines.append(
            f"| {r['d']} | {'yes' if r['causal'] else 'no'} | {r['n']} | "
            f"{_fmt(r, 'ours', 'fwd_tflops')} | {_fmt(r, 'flash', 'fwd_tflops')} | "
            f"{_fmt(r, 'cudnn', 'fwd_tflops')} | {_ratio(r, 'ours', 'flash', 'fwd_tflops')} | "
            f"{_ratio(r, 'ours', 'cudnn', 'fwd_tflops')} | {_fmt(r, 'ours', 'bwd_tflops')} | "
            f"{_fmt(r, 'flash', 'bwd_tflops')} | {_fmt(r, 'cudnn', 'bwd_tflops')} | "
            f"{_ratio(r, 'ours', 'flash', 'bwd_tflops')} | "
            f"{_ratio(r, 'ours', 'cudnn', 'bwd_tflops')} |")
    return "\n".join(lines)


def environment() -> dict:
    import triton
    p = torch.cuda.get_device_properties(0)
    return {"gpu": torch.cuda.get_device_name(0), "sms": p.multi_processor_count,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "torch": torch.__version__, "triton": triton.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--ns", default=",".join(map(str, NS)))
    ap.add_argument("--dims", default=",".join(map(str, DIMS)))
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--tune", action="store_true", help="autotune per shape before timing")
    ap.add_argument("--precompile", action="store_true")
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--fwd-only", action="store_true", help="time the forward pass only")
    ap.add_argument("--continue-on-fail", action="store_true",
                    help="time even if the check fails (the table is then marked)")
    ap.add_argument("--host-probe", action="store_true",
                    help="after timing, measure host (enqueue) time per call at d=64 N=1k")
    ap.add_argument("--compile-one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.compile_one:
        try:
            res = compile_one(json.loads(args.compile_one))
        except Exception as e:  # noqa: BLE001
            res = {"error": f"{type(e).__name__}: {str(e)[-300:]}"}
        print("RESULT " + json.dumps(res), flush=True)
        return 0

    if not torch.cuda.is_available():
        print("kernels_gpu.bench needs a CUDA GPU (the CPU interpreter is for tests only)")
        return 2
    os.makedirs(args.out, exist_ok=True)
    ns = [int(x) for x in args.ns.split(",")]
    dims = [int(x) for x in args.dims.split(",")]
    causals = [bool(int(x)) for x in args.causal.split(",")]
    env = environment()
    print(json.dumps(env), flush=True)

    if args.precompile:
        precompile(dims, causals, log=lambda s: print(s, flush=True),
                   passes=("fwd",) if args.fwd_only else cfgs.PASSES)
    if not args.skip_check:
        ok = check(log=lambda s: print(s, flush=True))
        print("check:", "PASS" if ok else "FAIL", flush=True)
        if not ok and not args.continue_on_fail:
            return 1

    impls = {"ours": _ours, **_backends()}
    rows = []
    if args.tune:
        os.environ["KERNELS_GPU_AUTOTUNE"] = "1"
    for d in dims:
        for causal in causals:
            for n in ns:
                t0 = time.time()
                rows.append(time_point(d, n, causal, impls, args.fwd_only))
                r = rows[-1]
                used = {p: KernelConfig.from_dict(c).short() for p, c in r["configs"].items()}
                print(f"d={d} causal={int(causal)} N={n}: " + "  ".join(
                    f"{k} {r[k].get('fwd_tflops', float('nan')):.0f}/"
                    f"{r[k].get('bwd_tflops', float('nan')):.0f}" for k in impls)
                    + f"  cfg fwd={used['fwd']} dkdv={used['bwd_dkdv']} dq={used['bwd_dq']} "
                    f"({time.time() - t0:.0f}s)", flush=True)
                tune_log = {"|".join(map(str, key)): [(c.short(), ms) for c, ms in v]
                            for key, v in cfgs.autotune_log().items()}
                with open(os.path.join(args.out, "bench.json"), "w") as f:
                    json.dump({"env": env, "rows": rows, "autotune": tune_log}, f, indent=1)
    if args.host_probe:
        for c in (False, True):
            for key, val in host_overhead(causal=c).items():
                print(f"host probe d=64 N=1024 causal={int(c)} {key}: " + ", ".join(
                    f"{k} {x:.0f}" for k, x in val.items()), flush=True)
    table = render_table(rows)
    md = (f"GPU: {env['gpu']} ({env['sms']} SMs), {env['date']}, torch {env['torch']}, "
          f"triton {env['triton']}, CUDA {env['cuda']}, cuDNN {env['cudnn']}\n"
          f"fp16, batch {BATCH} x {HEADS} heads; TFLOPS (fwd 4BHN^2d, causal /2; bwd 2.5x fwd); "
          f"do_bench median\n\n{table}\n")
    with open(os.path.join(args.out, "bench.md"), "w") as f:
        f.write(md)
    print(md, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
