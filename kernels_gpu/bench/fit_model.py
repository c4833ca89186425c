"""Fit the time model's schedule constants on a declared calibration subset, check the rest.

    python -m kernels_gpu.bench.fit_model [--from kernels_gpu/data/frontier_h100.json]
    TRITON_INTERPRET=0 python -m kernels_gpu.bench.fit_model --compile   # resources_sm90.json
    TRITON_INTERPRET=0 python -m kernels_gpu.bench.fit_model --compile-gluon  # the Gluon kernels'
    python -m kernels_gpu.bench.fit_model --gluon   # the Gluon kernels' constants (fit_gluon.py)

`model.predict.TERMS` holds, per pass, three constants (fixed cost per program, exposed latency,
overlap of co-resident programs). This fits them by grid search, least squares of
log(predicted / measured), on the points of `predict.FIT_SUBSET` only (square N 1k, 4k, 16k:
every head dim, causal and not, every H_kv), and prints the spread of predicted / measured on
those points and on the held-out rest (N 2k, 8k and N_q != N_k), which the fit never saw.
Runs on the CPU from a stored bench.json; same input, same output. `--compile` rewrites
`data/resources_sm90.json` (the programs-per-SM input of the schedule): registers and shared
memory of every kernel of the stored grid, compiled offline for sm_90 (no GPU; ~1 minute).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass
from typing import Any

from ..host.configs import KernelConfig
from ..model import data
from ..model import predict as P
from ..model.occupancy import program_resources, program_row, programs_per_sm
from ..model.schedule import schedule
from .fit_gluon import DISPATCH, STUDIES, gluon_studies
from .tables import normalise

__all__ = ["GRID", "in_subset", "launches", "ratios", "loss", "fit", "main"]

GRID = {"fixed_s": (0.0, 0.5e-6, 1e-6, 2e-6, 3e-6, 4e-6, 5e-6, 6e-6, 8e-6, 10e-6, 12e-6),
        "exposed": (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4),
        "overlap": (0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0)}


def in_subset(r: dict) -> bool:
    """predict.FIT_SUBSET: square N of 1k, 4k or 16k."""
    return r["n"] == r["nk"] and r["n"] in (1024, 4096, 16384)


@dataclass(frozen=True)
class _Launch:
    rate: P.Prediction  # the tile machine's rate prediction
    per: tuple | None   # iterations per program of one row, launch order (None: rate only)
    rows: int
    occ: int
    sms: int
    dq: bool = False    # the dQ launch: its own constants, predict.TERMS["bwd_dq"]


def _launch(rate, sched, config, sms, part=None) -> _Launch:
    per, rows = program_row(sched)
    regs, smem, _ = program_resources(sched.pass_, sched.head_dim, sched.causal, config, part,
                                      sched.elem_bytes)
    occ = programs_per_sm(regs, smem, config.num_warps)
    return _Launch(rate, tuple(per), rows, occ, sms, sched.pass_ == "bwd_dq")


def launches(r: dict, gpu: str, calib: dict) -> dict[str, list[_Launch]]:
    """The row's launches per pass, with what the schedule needs (mirrors predict.*)."""
    m = P.machine_for(gpu, 2, calib)
    l2, lt, sms = P.l2_rate(calib), calib["launch_s"], calib.get("sms") or 132
    c = {p: KernelConfig.from_dict(v) for p, v in r["configs"].items()}
    kw: dict[str, Any] = dict(n=r["n"], nk=r["nk"], d=r["d"], batch=r["batch"], heads=r["heads"],
              causal=bool(r["causal"]), kv_heads=r["heads_kv"])
    geo: dict[str, Any] = dict(nk=r["nk"], kv_heads=r["heads_kv"])
    sargs = (r["n"], r["d"], r["batch"], r["heads"], bool(r["causal"]))
    f, kv, dq = c["fwd"], c["bwd_dkdv"], c["bwd_dq"]
    out = {"fwd": [_launch(P._one(m, l2, lt, block_m=f.block_m, block_n=f.block_n,
                                  pass_="forward", **kw),
                           schedule(*sargs, pass_="fwd", config=f, **geo), f, sms)]}
    bwd = [_Launch(P._one(m, l2, lt, block_m=P.PREPROCESS_BLOCK, block_n=P.PREPROCESS_BLOCK,
                          pass_="backward", phase="preprocess", **kw), None, 0, 1, sms)]
    kw2: dict[str, Any] = dict(kw, kv_heads=r["heads_kv"] * kv.split) if kv.split > 1 else kw
    for i, ph in enumerate(("dv", "dk") if kv.dv_apart else ("dkdv",)):
        part = i + 1 if kv.dv_apart else None
        bwd.append(_launch(P._one(m, l2, lt, block_m=kv.block_m, block_n=kv.block_n,
                                  pass_="backward", phase=ph, **kw2),
                           schedule(*sargs, pass_="bwd_dkdv", config=kv, part=part, **geo),
                           kv, sms, part))
    bwd.append(_launch(P._one(m, l2, lt, block_m=dq.block_m, block_n=dq.block_n,
                              pass_="backward", phase="dq", **kw),
                       schedule(*sargs, pass_="bwd_dq", config=dq, **geo), dq, sms))
    if kv.split > 1:
        bwd.append(_Launch(P._split_sum(m, lt, batch=r["batch"], kv_heads=r["heads_kv"],
                                        split=kv.split, nk=r["nk"], d=r["d"]), None, 0, 1, sms))
    out["bwd"] = bwd
    return out


def _time(x: _Launch, t: P.ScheduleTerms) -> float:
    """predict.scheduled's total_s for this launch and these terms (a dQ launch: the stored
    predict.TERMS["bwd_dq"], fitted on the launch studies, bench/fit_gluon.py)."""
    if not x.per:
        return x.rate.total_s
    t = P.TERMS["bwd_dq"] if x.dq else t
    return P.schedule_time(x.rate, list(x.per), x.rows, x.occ, t, x.sms)


def ratios(points: list[tuple[dict, float]], terms: P.ScheduleTerms) -> list[float]:
    """predicted / measured for (launches of one pass, measured s) points."""
    return [sum(_time(x, terms) for x in ls) / meas for ls, meas in points]


def loss(rs: list[float]) -> float:
    return sum(math.log(v) ** 2 for v in rs)


def fit(points, grid: dict = GRID) -> P.ScheduleTerms:
    """The grid point of least loss (the first such, in grid order)."""
    best = None
    for fixed in grid["fixed_s"]:
        for exposed in grid["exposed"]:
            for overlap in grid["overlap"]:
                t = P.ScheduleTerms(fixed, exposed, overlap)
                v = round(loss(ratios(points, t)), 9)
                if best is None or v < best[0]:
                    best = (v, t)
    assert best is not None  # the grid is not empty
    return best[1]


def _spread(rs: list[float]) -> str:
    inside = sum(0.85 <= v <= 1.15 for v in rs)
    return (f"{len(rs)} points, {min(rs):.2f} - {max(rs):.2f} (median "
            f"{statistics.median(rs):.2f}), {inside} within ±15 %")


def _modelled(stored: dict):
    """(row, launches) of every fp16 row the model covers."""
    gpu = stored["env"]["gpu"]
    calib = P.calibration(P.calibration_file(gpu))
    for r in map(normalise, stored["rows"]):
        if "configs" in r and r["dtype"] == "fp16" and \
                (r["causal"] is False or (r["causal"] is True and r["nk"] >= r["n"])):
            yield r, launches(r, gpu, calib)


def split_points(stored: dict) -> dict:
    """{pass: (calibration points, held-out points)} of a stored bench.json."""
    out: dict[str, tuple[list, list]] = {"fwd": ([], []), "bwd": ([], [])}
    for r, ls in _modelled(stored):
        for p in ("fwd", "bwd"):
            ms = r.get("ours", {}).get(f"{p}_ms")
            if ms and ms == ms:
                out[p][0 if in_subset(r) else 1].append((ls[p], ms * 1e-3))
    return out


def residuals(stored: dict, terms: dict = P.TERMS) -> str:
    """Markdown: predicted / measured per (pass, d, causal, N_q/N_k) over the H_kv values,
    the tile machine's rate alone ("rate") beside the model with the schedule, and the
    programs per SM of the launches."""
    groups: dict = {}
    for r, ls in _modelled(stored):
        for p in ("fwd", "bwd"):
            ms = r.get("ours", {}).get(f"{p}_ms")
            if not (ms and ms == ms):
                continue
            rate = sum(x.rate.total_s for x in ls[p]) / (ms * 1e-3)
            new = sum(_time(x, terms[p]) for x in ls[p]) / (ms * 1e-3)
            lengths = str(r["n"]) if r["n"] == r["nk"] else f"{r['n']}/{r['nk']}"
            key = (p, r["d"], bool(r["causal"]), r["n"] != r["nk"], r["n"], r["nk"])
            g = groups.setdefault(key, {"lengths": lengths, "kv": [], "rate": [], "new": [],
                                        "occ": "+".join(str(x.occ) for x in ls[p] if x.per)})
            g["kv"].append(r["heads_kv"])
            g["rate"].append(rate)
            g["new"].append(new)
    lines = ["| pass | d | causal | N | H_kv | programs / SM | rate model | with schedule |",
             "|---|---|---|---|---|---|---|---|"]
    for key in sorted(groups):
        g = groups[key]
        span = lambda v: f"{min(v):.2f} - {max(v):.2f}" if len(v) > 1 else f"{v[0]:.2f}"  # noqa
        lines.append(f"| {key[0]} | {key[1]} | {'yes' if key[2] else 'no'} | {g['lengths']} | "
                     f"{','.join(map(str, sorted(set(g['kv']), reverse=True)))} | {g['occ']} | "
                     f"{span(g['rate'])} | {span(g['new'])} |")
    return "\n".join(lines)


def compile_resources(stored: dict) -> dict:
    """{kernel_key: registers, shared memory, spill stores} of every fp16 kernel the stored
    rows ran, compiled offline for sm_90 (needs TRITON_INTERPRET=0)."""
    from ..model.occupancy import kernel_key
    from .compile_check import compile_kernel, resources

    out = {}
    for r in map(normalise, stored["rows"]):
        for pass_, v in sorted(r.get("configs", {}).items()):
            cfg = KernelConfig.from_dict({**v, "split": 1})
            for part in ((1, 2) if pass_ == "bwd_dkdv" and cfg.dv_apart else (None,)):
                key = kernel_key(pass_, r["d"], bool(r["causal"]), cfg, part)
                if key not in out:
                    res = resources(compile_kernel(pass_, cfg, r["d"], "fp16",
                                                   causal=bool(r["causal"]), part=part))
                    out[key] = {k: res[k] for k in ("regs", "smem", "spill_stores")}
    return out


GLUON_RUNS = ("frontier_ws_dispatch_h100", "frontier_gluon_dispatch_h100")


def _compile_one(k, d: int, causal: bool):
    """One Gluon kernel (model.gluon.GluonKernel) compiled offline for sm_90, fp16."""
    from .compile_check import compile_bwd, compile_hopper, compile_ws
    if k.pass_ != "fwd":
        return compile_bwd(d, k.block_m, k.block_n, k.num_warps, causal=causal,
                           dq=k.pass_ == "bwd_dq", stages=k.stages, overlap=k.overlap)
    if k.specialised:
        return compile_ws(d, k.block_n, k.schedule, causal=causal, stages=k.stages)
    return compile_hopper(d, k.block_m, k.block_n, k.num_warps, causal=causal)


def compile_gluon(stored: dict) -> dict:
    """{"pass|name|d|causal": registers, shared memory, spill stores, warps} of every Gluon
    kernel the stored rows ran (tables.kernels_of; a launch study's columns,
    gluon.from_study), compiled offline for sm_90, fp16."""
    from ..model import gluon
    from .compile_check import resources
    from .tables import kernels_of

    out = {}
    for r in stored["rows"]:
        causal = bool(r.get("causal"))
        if "ms" in r:  # a launch study (bench/hopper.py, hopper_bwd.py)
            ran = [gluon.from_study(name) for name, ms in sorted(r["ms"].items()) if ms == ms]
        else:
            ran = list(kernels_of(normalise(r)))
        for k in ran:
            key = k and f"{k.pass_}|{k.canonical}|{r['d']}|{int(causal)}"
            if k is None or k.family or key in out:  # ws: closed form; d 192: compile_check --d192
                continue
            kern = _compile_one(k, r["d"], causal)
            res = resources(kern)
            out[key] = {**{x: res[x] for x in ("regs", "smem", "spill_stores")},
                        "num_warps": kern.metadata.num_warps}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--from", dest="from_", default=data.path("frontier_h100.json"))
    ap.add_argument("--residuals", action="store_true",
                    help="print predicted / measured per (pass, d, causal, N), before / after")
    ap.add_argument("--gluon", action="store_true",
                    help="fit the Gluon kernels' constants on their declared subset; print "
                         "the spread on every stored Gluon point (bench/fit_gluon.py)")
    ap.add_argument("--compile", action="store_true",
                    help="rewrite data/resources_sm90.json (offline sm_90 compile)")
    ap.add_argument("--compile-gluon", action="store_true",
                    help="rewrite data/resources_gluon_sm90.json from the Gluon kernels the "
                         "stored rows ran (offline sm_90 compile)")
    args = ap.parse_args(argv)
    with open(args.from_) as f:
        stored = json.load(f)
    if args.compile_gluon:
        from ..model.gluon import GLUON_FILE
        names = sorted({*GLUON_RUNS, *gluon_studies()})
        runs = [stored] + [data.part(DISPATCH if name in GLUON_RUNS else STUDIES, name)
                           for name in names]
        names = [os.path.basename(args.from_), *names]
        how = ("TRITON_INTERPRET=0 python -m kernels_gpu.bench.fit_model --compile-gluon: every "
               f"Gluon kernel {', '.join(names)} ran (fwd_kernel, bwd_dkdv_kernel, "
               "bwd_dq_kernel; the studies' Gluon columns), fp16, sm_90, Triton's own ptxas "
               "(no GPU)")
        kernels = {k: v for run in runs for k, v in compile_gluon(run).items()}
        text = json.dumps({"how": how, "kernels": kernels}, indent=1, sort_keys=True)
        with open(GLUON_FILE, "w") as f:
            f.write(text + "\n")
        print(f"wrote {GLUON_FILE}")
        return 0
    if args.compile:
        from ..model.occupancy import COMPILED_FILE
        how = ("TRITON_INTERPRET=0 python -m kernels_gpu.bench.fit_model --compile --from "
               f"{os.path.basename(args.from_)}: every (pass, d, causal, config, dv-apart part) "
               "it ran, fp16, sm_90, split 1, Triton's own ptxas (no GPU)")
        text = json.dumps({"how": how, "kernels": compile_resources(stored)}, indent=1,
                          sort_keys=True)
        with open(COMPILED_FILE, "w") as f:
            f.write(text + "\n")
        print(f"wrote {COMPILED_FILE}")
        return 0
    if args.gluon:
        from .fit_gluon import report, study_points
        from .fit_gluon_bwd import bwd_report
        points = study_points()
        print(report(GRID, points))
        print(bwd_report(GRID, points))
        return 0
    if args.residuals:
        print(residuals(stored))
        return 0
    for p, (cal, held) in split_points(stored).items():
        t = fit(cal)
        print(f"{p}: fitted {t} on {P.FIT_SUBSET} (stored: {P.TERMS[p]})")
        print(f"  calibration: {_spread(ratios(cal, t))}")
        print(f"  held out:    {_spread(ratios(held, t))}")
        print(f"  all:         {_spread(ratios(cal + held, t))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
