"""The benchmark's tables (markdown): speed against SDPA per grid, and the time model beside the
measured times (`bench --predict`). Pure functions of the stored rows: same rows, same bytes.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from ..host.configs import KernelConfig
from ..model import gluon
from ..model.predict import machine_for, predict_backward, predict_forward

__all__ = ["one_line", "render_all", "add_predictions", "render_predict", "ratio_spread",
           "normalise"]

FP8 = ("e5m2", "e4m3")


def _fmt(row, name, key):
    r = row.get(name, {})
    return f"{r[key]:.0f}" if key in r and r[key] == r[key] else "err"


def _ratio(row, a, b, key):
    ra, rb = row.get(a, {}), row.get(b, {})
    if key in ra and key in rb and ra[key] == ra[key] and rb[key] == rb[key]:
        return f"{ra[key] / rb[key]:.2f}"
    return "-"


def _causal(c) -> str:
    return {False: "no", True: "yes", "top_left": "top-left"}.get(c, str(c))


def one_line(r: dict) -> str:
    names = [k for k in ("ours_fp8", "ours", "flash", "cudnn") if k in r]
    cfg = " ".join(f"{p}={KernelConfig.from_dict(c).short()}" for p, c in r["configs"].items())
    return (f"{r['grid']} d={r['d']} H={r['heads']}/{r['heads_kv']} N={r['n']}/{r['nk']} "
            f"causal={int(bool(r['causal']))} {r['dtype']}: "
            + "  ".join(f"{k} {_fmt(r, k, 'fwd_tflops')}/{_fmt(r, k, 'bwd_tflops')}"
                        for k in names) + f"  cfg {cfg}")


def _speed_table(rows: list[dict], lead: list[tuple[str, Callable[[dict], str]]]) -> list[str]:
    head = [h for h, _ in lead] + ["fwd ours", "fwd flash", "fwd cudnn", "ours/flash",
                                   "ours/cudnn", "bwd ours", "bwd flash", "bwd cudnn",
                                   "ours/flash", "ours/cudnn"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [f(r) for _, f in lead] + [
            _fmt(r, "ours", "fwd_tflops"), _fmt(r, "flash", "fwd_tflops"),
            _fmt(r, "cudnn", "fwd_tflops"), _ratio(r, "ours", "flash", "fwd_tflops"),
            _ratio(r, "ours", "cudnn", "fwd_tflops"), _fmt(r, "ours", "bwd_tflops"),
            _fmt(r, "flash", "bwd_tflops"), _fmt(r, "cudnn", "bwd_tflops"),
            _ratio(r, "ours", "flash", "bwd_tflops"), _ratio(r, "ours", "cudnn", "bwd_tflops")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_all(rows: list[dict], env: dict, batch: int, heads: int) -> str:
    when = f", {env['date']}" if env.get("date") else ""
    out = [f"GPU: {env['gpu']} ({env['sms']} SMs){when}, torch {env['torch']}, "
           f"triton {env['triton']}, CUDA {env['cuda']}, cuDNN {env['cudnn']}",
           f"batch {batch}, TFLOPS (fwd 4 B H N_q N_k d, causal: visible pairs; bwd 2.5x fwd); "
           "do_bench median", ""]
    main = [r for r in rows if r["grid"] == "main"]
    if main:
        out += ["fp16, 32 heads:", ""] + _speed_table(main, [
            ("d", lambda r: str(r["d"])), ("causal", lambda r: _causal(r["causal"])),
            ("N", lambda r: str(r["n"]))]) + [""]
    shapes = [r for r in rows if r["grid"] == "shapes"]
    if shapes:
        out += ["Shapes users run (fp16; H = query / K-V heads; causal bottom-right):", ""]
        out += _speed_table(shapes, [
            ("d", lambda r: str(r["d"])), ("H", lambda r: f"{r['heads']}/{r['heads_kv']}"),
            ("N_q", lambda r: str(r["n"])), ("N_k", lambda r: str(r["nk"])),
            ("causal", lambda r: _causal(r["causal"]))]) + [""]
        notes = sorted({n for r in shapes for n in r.get("notes", [])})
        out += [f"* {n}" for n in notes] + ([""] if notes else [])
    fp8 = [r for r in rows if r["grid"] == "fp8"]
    if fp8:
        head = ["fp8", "d", "causal", "N", "fwd ours fp8", "fwd ours fp16", "fwd flash fp16",
                "fwd cudnn fp16", "fp8/fp16", "fp8/flash", "fp8/cudnn"]
        out += ["FP8 forward (seed 004's \"Triton [FP8]\"), beside fp16 runs of the same shape:",
                "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in fp8:
            out.append(f"| {r['dtype']} | {r['d']} | {_causal(r['causal'])} | {r['n']} | "
                       f"{_fmt(r, 'ours_fp8', 'fwd_tflops')} | {_fmt(r, 'ours', 'fwd_tflops')} | "
                       f"{_fmt(r, 'flash', 'fwd_tflops')} | {_fmt(r, 'cudnn', 'fwd_tflops')} | "
                       f"{_ratio(r, 'ours_fp8', 'ours', 'fwd_tflops')} | "
                       f"{_ratio(r, 'ours_fp8', 'flash', 'fwd_tflops')} | "
                       f"{_ratio(r, 'ours_fp8', 'cudnn', 'fwd_tflops')} |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------- the time model
def _modelled(r: dict) -> bool:
    """The tile machine models N_q != N_k and grouped heads; causal only bottom-right with
    N_k >= N_q (it refuses query rows that see no key)."""
    return r["causal"] is False or (r["causal"] is True and r["nk"] >= r["n"])


def normalise(r: dict) -> dict:
    """A bench row with the keys of this version (rows stored before the shapes grid have no
    grid, nk, heads_kv, dtype)."""
    return {"grid": "main", "nk": r["n"], "heads_kv": r.get("heads"), "dtype": "fp16", **r}


def kernels_of(r: dict) -> tuple:
    """(forward, dK/dV, dQ) Gluon kernels a row ran (model.gluon.GluonKernel; None: the `tl`
    kernel), from the names the bench writes (`fwd_kernel`, `bwd_dkdv_kernel`,
    `bwd_dq_kernel`)."""
    return (gluon.parse(r.get("fwd_kernel"), "fwd"),
            gluon.parse(r.get("bwd_dkdv_kernel"), "bwd_dkdv"),
            gluon.parse(r.get("bwd_dq_kernel"), "bwd_dq"))


def add_predictions(rows: list[dict], gpu: str, calib: dict) -> list[dict]:
    """Each modelled row with row['predict'] = {fwd, bwd: Prediction dicts, *_ratio}."""
    out = []
    for r in rows:
        r = normalise(r)
        if _modelled(r) and "configs" in r:
            fp8 = r["dtype"] in FP8
            m = machine_for(gpu, 1 if fp8 else 2, calib)
            c = {p: KernelConfig.from_dict(v) for p, v in r["configs"].items()}
            kw: dict[str, Any] = dict(n=r["n"], d=r["d"], batch=r["batch"], heads=r["heads"],
                      causal=bool(r["causal"]), nk=r["nk"], kv_heads=r["heads_kv"])
            fwd, (kernel, dkdv_kernel, dq_kernel) = c["fwd"], kernels_of(r)
            pred = {"fwd": predict_forward(m, calib, block_m=fwd.block_m,
                                           block_n=fwd.block_n, config=fwd, kernel=kernel,
                                           **kw).to_dict()}
            meas = r.get("ours_fp8" if fp8 else "ours", {})
            if "fwd_ms" in meas:
                pred["fwd_ratio"] = pred["fwd"]["total_s"] * 1e3 / meas["fwd_ms"]
            if "bwd_dkdv" in c:
                pred["bwd"] = predict_backward(
                    m, calib, dkdv=(c["bwd_dkdv"].block_m, c["bwd_dkdv"].block_n),
                    dq=(c["bwd_dq"].block_m, c["bwd_dq"].block_n),
                    dkdv_split=c["bwd_dkdv"].split, dkdv_apart=c["bwd_dkdv"].dv_apart,
                    dkdv_config=c["bwd_dkdv"], dq_config=c["bwd_dq"],
                    dkdv_kernel=dkdv_kernel, dq_kernel=dq_kernel, **kw).to_dict()
                if meas.get("bwd_ms", float("nan")) == meas.get("bwd_ms"):
                    pred["bwd_ratio"] = pred["bwd"]["total_s"] * 1e3 / meas["bwd_ms"]
            r["predict"] = pred
        out.append(r)
    return out


def ratio_spread(ratios: list[float]) -> str:
    if not ratios:
        return "no points"
    inside = sum(0.85 <= x <= 1.15 for x in ratios)
    return (f"{len(ratios)} points, predicted/measured {min(ratios):.2f} - {max(ratios):.2f} "
            f"(median {statistics.median(ratios):.2f}); {inside} of {len(ratios)} within ±15%")


def _lengths(r: dict) -> str:
    """N, or N_q/N_k for cross-attention."""
    return str(r["n"]) if r["n"] == r["nk"] else f"{r['n']}/{r['nk']}"


def _ms(x: float) -> str:
    return f"{x * 1e3:.3f}"


def render_predict(rows: list[dict], env: dict, calib: dict) -> str:
    when = f", {env['date']}" if env.get("date") else ""
    lines = [f"Measured: {env['gpu']}{when}. Predicted: the tile machine "
             f"(kernels_gpu.model.predict) on the preset of that GPU, calibrated on "
             f"{calib.get('gpu', '?')}. Times in ms; "
             "terms: tensor + vector + sfu = compute; HBM = compulsory bytes; L2 = the tile "
             "program's bytes; sched = what the schedule adds to max(compute, HBM, L2) + launch "
             "(wave quantisation, per-program cost, exposed latency, overlap of co-resident "
             "programs); occ = programs per SM; roofline = the tile machine with no cache.", ""]
    for pass_ in ("fwd", "bwd"):
        pts = [r for r in rows if "predict" in r and pass_ in r["predict"]]
        if not pts:
            continue
        head = ["grid", "dtype", "d", "H", "causal", "N", "config", "measured", "predicted",
                "pred/meas", "bound", "tensor", "vector", "sfu", "HBM", "L2", "launch",
                "sched", "occ", "roofline", "roofline/meas"]
        lines += [f"{'Forward' if pass_ == 'fwd' else 'Backward (3 launches)'}:", "",
                  "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        ratios = []
        for r in pts:
            p = r["predict"][pass_]
            meas = r.get("ours_fp8" if r["dtype"] in FP8 else "ours", {}).get(f"{pass_}_ms")
            ratio = r["predict"].get(f"{pass_}_ratio")
            if ratio is not None:
                ratios.append(ratio)
            ran = dict(zip(("fwd", "bwd_dkdv", "bwd_dq"), kernels_of(r)))
            cfg = ("/".join(ran[k].label if ran.get(k) else
                            KernelConfig.from_dict(r["configs"][k]).short()
                            for k in ("bwd_dkdv", "bwd_dq")) if pass_ == "bwd" else
                   ran["fwd"].label if ran["fwd"] else
                   KernelConfig.from_dict(r["configs"]["fwd"]).short())
            roof = (f"{p['roofline_s'] * 1e3 / meas:.2f}" if meas else "-")
            lines.append(
                f"| {r['grid']} | {r['dtype']} | {r['d']} | {r['heads']}/{r['heads_kv']} | "
                f"{_causal(r['causal'])} | {_lengths(r)} | "
                f"{cfg} | {f'{meas:.3f}' if meas else '-'} | {_ms(p['total_s'])} | "
                f"{f'{ratio:.2f}' if ratio is not None else '-'} | {p['bound']} | "
                f"{_ms(p['tensor_s'])} | {_ms(p['vector_s'])} | {_ms(p['sfu_s'])} | "
                f"{_ms(p['hbm_s'])} | {_ms(p['l2_s'])} | {_ms(p['launch_s'])} | "
                f"{_ms(p.get('schedule_s', 0.0))} | {p.get('occupancy') or '-'} | "
                f"{_ms(p['roofline_s'])} | {roof} |")
        lines += ["", f"{'Forward' if pass_ == 'fwd' else 'Backward'}: {ratio_spread(ratios)}.",
                  ""]
    return "\n".join(lines)
