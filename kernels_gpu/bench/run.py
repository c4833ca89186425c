"""Benchmark the Triton FlashAttention-2 against PyTorch SDPA (FLASH and cuDNN backends).

    python -m kernels_gpu.bench [--tune] [--precompile] [--grid main,shapes,fp8] [--out DIR]
    python -m kernels_gpu.bench --predict [--from kernels_gpu/data/bench_h200.json]   # time model beside it
    python -m kernels_gpu.bench --memory [--ns 1024,...,32768]          # seed 003's probe

1. checks ours against a float64 reference and SDPA on every shape (bench_check; exit 1 if one
   is wrong);
2. times forward and backward with triton.testing.do_bench (median) for ours, SDPA-flash and
   SDPA-cuDNN in one run, fp16, batch 4 x 32 heads. Grids: `main` d 64/128 x causal x N 1k..16k
   (the tutorial's); `shapes` head dims 32..256, grouped-query heads, N_q != N_k; `fp8` the
   forward with float8_e5m2 / e4m3 inputs (seed 004's "Triton [FP8]") beside ours in fp16;
3. --predict puts the tile machine's predicted time (kernels_gpu.model.predict, the GPU's preset)
   beside every measured point, with the ratio predicted / measured and its spread; with
   --from it recomputes that from a stored bench.json on any machine (no GPU);
4. writes bench.json and bench.md under --out (default $OUT, else ./bench_out).

FLOP convention (the FlashAttention papers' and the Triton tutorial's): forward
4 * B * H * N_q * N_k * d, halved when causal and N_q == N_k (for N_q != N_k the visible pairs
are counted exactly); backward 2.5 x forward. Exponentials are not counted. Backward time is
that of torch.autograd.grad(o, (q, k, v), do) after one forward, for every implementation.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time

import torch

from ..host import configs as cfgs
from ..host import flash_attn as fa
from ..host import support
from . import alarm, tables
from .check import DTYPES, check, compile_one, precompile, sdpa

__all__ = ["GRIDS", "attention_flops", "time_point", "main"]

BATCH, HEADS = 4, 32


def _spec(grid, d, n, causal, nk=None, heads_kv=HEADS, dtype="fp16", batch=BATCH):
    return {"grid": grid, "d": d, "n": n, "nk": nk or n, "heads": HEADS, "heads_kv": heads_kv,
            "causal": causal, "dtype": dtype, "batch": batch}


GRIDS = {
    "main": [_spec("main", d, n, c) for d in (64, 128) for c in (False, True)
             for n in (1024, 2048, 4096, 8192, 16384)],
    "shapes": ([_spec("shapes", d, n, c) for d in (32, 80, 96, 192, 256) for c in (False, True)
                for n in (2048, 8192)]
               + [_spec("shapes", 128, n, c, heads_kv=kv) for kv in (8, 1) for c in (False, True)
                  for n in (4096, 16384)]
               + [_spec("shapes", 128, nq, c, nk=nk) for nq, nk in ((1024, 16384), (4096, 8192),
                                                                   (16384, 2048))
                  for c in (False, True)]),
    # what users run, so that no cliff can hide. B*N = 16k tokens a head (each
    # point quick), H 32; H_kv in H, H/4, H/8, 1; N_q != N_k both ways, causal bottom-right.
    "frontier": ([_spec("frontier", d, n, c, heads_kv=kv, batch=max(1, 16384 // n))
                  for d in (64, 128, 256) for c in (False, True) for kv in (32, 8, 4, 1)
                  for n in (1024, 2048, 4096, 8192, 16384)]
                 + [_spec("frontier", d, nq, c, nk=nk, heads_kv=kv, batch=2)
                    for d in (64, 128) for c in (False, True) for kv in (32, 8)
                    for nq, nk in ((1024, 8192), (8192, 2048))]),
    # d 192 (beside the frontier grid): the same points, where the chunked Gluon backward runs
    # (H_kv = H) and where the padded `tl` path still does (grouped heads)
    "d192": [_spec("d192", 192, n, c, heads_kv=kv, batch=max(1, 16384 // n))
             for c in (False, True) for kv in (32, 8, 4, 1)
             for n in (1024, 2048, 4096, 8192, 16384)],
    "fp8": [_spec("fp8", d, n, c, dtype=dt) for dt in ("e5m2", "e4m3") for d in (64, 128)
            for c in (False, True) for n in (1024, 4096, 16384)],
}


def visible_pairs(nq: int, nk: int, causal) -> float:
    """Score pairs computed by the usual convention: all, or half when causal and square;
    for N_q != N_k the exact count of pairs the causal mask keeps (bottom-right or top-left)."""
    if not causal:
        return float(nq * nk)
    if nq == nk:
        return nq * nk / 2
    off = 0 if causal == "top_left" else nk - nq
    return float(sum(min(nk, max(0, i + off + 1)) for i in range(nq)))


def attention_flops(batch: int, heads: int, n: int, d: int, causal, pass_: str,
                    nk: int | None = None) -> float:
    fwd = 4.0 * batch * heads * visible_pairs(n, nk or n, causal) * d
    return fwd if pass_ == "fwd" else 2.5 * fwd


REPEATS = 1  # --repeats: each time is the median of this many do_bench medians


def _bench_ms(fn) -> float:
    import statistics

    import triton
    if REPEATS <= 1:
        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
    return statistics.median(triton.testing.do_bench(fn, warmup=10, rep=40,
                                                     return_mode="median")
                             for _ in range(REPEATS))


def _impls(spec: dict) -> dict:
    from torch.nn.attention import SDPBackend

    ours = lambda q, k, v, c: fa.flash_attention(q, k, v, c)  # noqa: E731
    flash = lambda q, k, v, c: sdpa(q, k, v, c, SDPBackend.FLASH_ATTENTION)  # noqa: E731
    cudnn = lambda q, k, v, c: sdpa(q, k, v, c, SDPBackend.CUDNN_ATTENTION)  # noqa: E731
    if spec["dtype"] in ("e5m2", "e4m3"):  # fp8: ours in fp8 beside ours and SDPA in fp16
        return {"ours_fp8": lambda q, k, v, c: fa.flash_attention_forward(q, k, v, c)[0],
                "ours": ours, "flash": flash, "cudnn": cudnn}
    return {"ours": ours, "flash": flash, "cudnn": cudnn}


def _takes(fn, args, causal) -> bool:
    """Whether an SDPA backend runs this case as given (e.g. enable_gqa)."""
    try:
        with torch.no_grad():
            fn(*args, causal)
        return True
    except RuntimeError:
        return False


def time_point(spec: dict, fwd_only: bool = False) -> dict:
    """Forward (and backward) time of every implementation at one shape."""
    d, n, nk, causal = spec["d"], spec["n"], spec["nk"], spec["causal"]
    torch.manual_seed(n + d)
    fp8 = spec["dtype"] in ("e5m2", "e4m3")
    dtype = torch.float16 if fp8 else DTYPES[spec["dtype"]]
    b = spec.get("batch", BATCH)
    q = torch.randn(b, spec["heads"], n, d, device="cuda", dtype=dtype, requires_grad=True)
    k, v = (torch.randn(b, spec["heads_kv"], nk, d, device="cuda", dtype=dtype,
                        requires_grad=True) for _ in range(2))
    do = torch.randn_like(q)
    row = dict(spec)
    flops = {p: attention_flops(b, spec["heads"], n, d, causal, p, nk) for p in ("fwd", "bwd")}
    for name, fn in _impls(spec).items():
        args = (q, k, v)
        if name == "ours_fp8":  # V stored transposed, as seed 004's benchmark stores it
            f8 = DTYPES[spec["dtype"]]
            args = (q.detach().to(f8), k.detach().to(f8),
                    v.detach().transpose(-1, -2).contiguous().transpose(-1, -2).to(f8))
        if name in ("flash", "cudnn") and spec["heads_kv"] != spec["heads"] and \
                not _takes(fn, args, causal):  # no grouped heads in this backend: expand K/V
            g = spec["heads"] // spec["heads_kv"]
            fn = (lambda f: lambda q_, k_, v_, c: f(q_, k_.repeat_interleave(g, 1),
                                                    v_.repeat_interleave(g, 1), c))(fn)
            row.setdefault("notes", []).append(f"{name}: K/V expanded to {spec['heads']} heads")
        try:
            with torch.no_grad():
                fwd_ms = _bench_ms(lambda: fn(*args, causal))
            bwd_ms = float("nan")
            if not (fwd_only or fp8):
                o = fn(q, k, v, causal)
                bwd_ms = _bench_ms(lambda: torch.autograd.grad(o, (q, k, v), do,
                                                               retain_graph=True))
                del o
        except Exception as e:  # noqa: BLE001 - a backend that refuses a case is reported
            row[name] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
            continue
        row[name] = {"fwd_ms": fwd_ms, "bwd_ms": bwd_ms,
                     "fwd_tflops": flops["fwd"] / fwd_ms * 1e-9,
                     "bwd_tflops": flops["bwd"] / bwd_ms * 1e-9}
    qd, kd = q.detach(), k.detach()
    if fp8:
        qd, kd = (t.to(DTYPES[spec["dtype"]]) for t in (qd, kd))
    passes = ("fwd",) if fp8 else cfgs.PASSES
    row["configs"] = {p: fa.resolve_config(p, qd, causal, k=kd).to_dict() for p in passes}
    from ..host import dispatch, hopper, launch
    choice = {} if fp8 else dispatch.choose_for(launch.problem_of(qd, kd, kd, causal), False)
    gluon = choice.get("fwd")
    if gluon is not None:  # the forward ran on the Gluon Hopper kernel, not configs["fwd"]
        ws = choice.get("fwd_ws")
        row["fwd_kernel"] = hopper.ws_label(ws) if ws else "gluon M{}N{}w{}".format(*gluon)
        dkdv = choice.get("bwd_dkdv")
        if dkdv is not None:  # the backward's dK/dV ran on the Gluon kernel
            row["bwd_dkdv_kernel"] = "gluon M{}N{}w{} s{} ov{}".format(*dkdv)
            dq = choice.get("bwd_dq")
            if dq is not None:  # and its dQ too (model/gluon.py reads both names)
                row["bwd_dq_kernel"] = "gluon M{}N{}w{} s{} ov{}".format(*dq)
    d192 = choice.get("bwd_d192")
    if d192 is not None:  # the backward ran on the chunked Gluon d 192 launches
        row.update(d192_names(d192))
    return row


def d192_names(cfg) -> dict:
    """The bench row's names of a chunked d 192 backward (a host/hopper_d192.py D192Config):
    `bwd_kernel` its whole label, `bwd_dkdv_kernel` its dV and dK launches ("gluon192 dv
    M..s.. dk M..s.."), `bwd_dq_kernel` its dQ launch: what the time model predicts
    (model/gluon.py parses them, tables.kernels_of)."""
    from ..model.dispatch import d192_labels
    labels = d192_labels(cfg)
    return {"bwd_kernel": cfg.label(), "bwd_dkdv_kernel": labels["bwd_dkdv"],
            "bwd_dq_kernel": labels["bwd_dq"]}


def environment() -> dict:
    import triton
    p = torch.cuda.get_device_properties(0)
    return {"gpu": torch.cuda.get_device_name(0), "sms": p.multi_processor_count,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "torch": torch.__version__, "triton": triton.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "gluon": support.gluon_status()[1]}  # whether the Gluon kernels run, and why


def _precompile_specs(specs: list[dict], fwd_only: bool) -> list[dict]:
    jobs = {}
    for s in specs:
        fp8 = s["dtype"] in ("e5m2", "e4m3")
        eb = 1 if fp8 else 2
        for pass_ in ("fwd",) if (fp8 or fwd_only) else cfgs.PASSES:
            for cfg in cfgs.candidates(pass_, s["d"], eb):
                key = (pass_, s["d"], bool(s["causal"]), s["heads"] // s["heads_kv"],
                       s["dtype"], cfg)
                jobs[key] = {"pass": pass_, "d": s["d"], "causal": bool(s["causal"]),
                             "group": key[3], "dtype": s["dtype"], "config": cfg.to_dict()}
    return list(jobs.values())


def _write(out: str, env: dict, rows: list[dict], extra: dict | None = None) -> None:
    tune_log = {"|".join(map(str, key)): [(c.short(), ms) for c, ms in v]
                for key, v in cfgs.autotune_log().items()}
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump({"env": env, "rows": rows, "autotune": tune_log, **(extra or {})}, f, indent=1)


def run_predict(args) -> int:
    """--predict: the time model beside stored or fresh measurements (writes predict.md)."""
    from ..model.predict import calibration, calibration_file

    src = args.from_ or os.path.join(args.out, "bench.json")
    with open(src) as f:
        stored = json.load(f)
    gpu = stored["env"]["gpu"]
    calib = calibration(args.calibration or calibration_file(gpu))
    if stored["rows"] and "ms" in stored["rows"][0]:  # a launch study (bench/hopper*.py)
        from .fit_gluon import points_of, render_study, study_rows
        from .fit_gluon_bwd import render_whole, whole_of, whole_rows
        points = points_of(stored, os.path.basename(src), calib)
        whole = whole_of(stored, os.path.basename(src), calib)  # d 192, ws: whole backwards
        rows = study_rows(points) + whole_rows(whole)
        head = render_study(points, stored["env"]) + render_whole(whole)
    else:
        rows = tables.add_predictions(stored["rows"], gpu, calib)
        head = tables.render_predict(rows, stored["env"], calib)
    found = alarm.alarms(rows, gpu, args.alarm)
    unexplained, _ = alarm.explain(found)
    md = head + "\n" + alarm.render(found, slower=args.alarm)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "predict.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.out, "predict.json"), "w") as f:
        json.dump({"env": stored["env"], "source": os.path.basename(src),
                   "rows": [{k: r[k] for k in ("grid", "d", "n", "nk", "heads", "heads_kv",
                                               "causal", "dtype", "predict") if k in r}
                            for r in rows if "predict" in r]}, f, indent=1, sort_keys=True)
    print(md, flush=True)
    if unexplained:
        print(f"bench --predict: {len(unexplained)} points slower than {args.alarm:g} x the "
              "model and not listed in kernels_gpu/bench/alarm.py KNOWN", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_gpu.bench",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--grid", default="main", help="comma list of main, shapes, fp8, frontier, d192")
    ap.add_argument("--ns", help="only these N (comma list); with --memory: the probe's N")
    ap.add_argument("--dims", help="only these head dims (comma list)")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--kv", help="only these H_kv (comma list)")
    ap.add_argument("--cross", action="store_true", help="only the N_q != N_k points")
    ap.add_argument("--repeats", type=int, default=1,
                    help="median of this many do_bench medians per time")
    ap.add_argument("--tune", action="store_true", help="autotune per shape before timing")
    ap.add_argument("--precompile", action="store_true")
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--check-only", action="store_true",
                    help="precompile (if asked) and check, time nothing")
    ap.add_argument("--fwd-only", action="store_true", help="time the forward pass only")
    ap.add_argument("--continue-on-fail", action="store_true",
                    help="time even if the check fails (the table is then marked)")
    ap.add_argument("--predict", action="store_true", help="the tile machine's time beside it")
    ap.add_argument("--from", dest="from_", help="--predict on a stored bench.json (no GPU)")
    ap.add_argument("--calibration", default=None,
                    help="calibration.json (default: data/calibration_<gpu>.json)")
    ap.add_argument("--alarm", type=float, default=alarm.SLOWER,
                    help="--predict: flag points measured > this x predicted; exit 1 if one is "
                         "not listed in bench/alarm.py KNOWN")
    ap.add_argument("--memory", action="store_true", help="seed 003's memory probe")
    ap.add_argument("--tiled-max-n", type=int, default=32768,
                    help="--memory: the Python tiled loop only up to this N")
    ap.add_argument("--compile-one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.compile_one:
        try:
            res = compile_one(json.loads(args.compile_one))
        except Exception as e:  # noqa: BLE001
            res = {"error": f"{type(e).__name__}: {str(e)[-300:]}"}
        print("RESULT " + json.dumps(res), flush=True)
        return 0
    if args.predict and args.from_:
        return run_predict(args)
    if not torch.cuda.is_available():
        print("kernels_gpu.bench needs a CUDA GPU (the CPU interpreter is for tests only); "
              "--predict --from FILE works without one", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    env = environment()
    print(json.dumps(env), flush=True)
    if args.memory:
        from ..model import memory
        ns = [int(x) for x in args.ns.split(",")] if args.ns else memory.NS
        res = memory.probe(ns, tiled_max_n=args.tiled_max_n, log=lambda s: print(s, flush=True))
        memory.write(res, args.out, env)
        return 0

    specs = [s for g in args.grid.split(",") for s in GRIDS[g]]
    if args.ns:
        specs = [s for s in specs if s["n"] in {int(x) for x in args.ns.split(",")}]
    if args.dims:
        specs = [s for s in specs if s["d"] in {int(x) for x in args.dims.split(",")}]
    if args.cross:
        specs = [s for s in specs if s["n"] != s["nk"]]
    if args.kv:
        specs = [s for s in specs if s["heads_kv"] in {int(x) for x in args.kv.split(",")}]
    global REPEATS
    REPEATS = args.repeats
    causals = {bool(int(x)) for x in args.causal.split(",")}
    specs = [s for s in specs if bool(s["causal"]) in causals]
    if args.precompile:
        precompile(_precompile_specs(specs, args.fwd_only), log=lambda s: print(s, flush=True))
    if not args.skip_check:
        ok = check(log=lambda s: print(s, flush=True))
        print("check:", "PASS" if ok else "FAIL", flush=True)
        if not ok and not args.continue_on_fail:
            return 1
        if args.check_only:
            return 0 if ok else 1
    if args.tune:
        os.environ["KERNELS_GPU_AUTOTUNE"] = "1"
    rows = []
    for spec in specs:
        t0 = time.time()
        rows.append(time_point(spec, args.fwd_only))
        print(tables.one_line(rows[-1]) + f" ({time.time() - t0:.0f}s)", flush=True)
        _write(args.out, env, rows)
    md = tables.render_all(rows, env, BATCH, HEADS)
    with open(os.path.join(args.out, "bench.md"), "w") as f:
        f.write(md)
    print(md, flush=True)
    if args.predict:
        args.from_ = os.path.join(args.out, "bench.json")
        return run_predict(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
