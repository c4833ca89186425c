"""The time model on the other Gluon backward kernels (warp-specialised dK/dV, chunked d 192): their constants fitted on the
declared subset (gluon.GLUON_FIT_SUBSET: the launch studies at N 1k and 16k), the spread
on the rest, and the d 192 whole backward (held out wholly).

    python -m kernels_gpu.bench.fit_model --gluon     # prints fit_gluon.report, then this one

* **The warp-specialised dK/dV** (data/gluon_studies_h100.json's hopper_bwd_ws parts, columns "gluon dkdv ws
  ..."): its chain constants (`predict.GLUON_TERMS["bwd_ws"]`) on the unfused launches;
* **its fused dQ** ("gluon dkdv+dq ws ... red<w> [split]"): the same chain with 5 / 4 of the
  tensor time (held), plus the reductions' bytes at one throughput per form
  (`gluon_bwd.ATOMIC_BPS`), fitted on the fused launches;
* **the d 192 chunked launches** (its d192_gluon_h100 part's `launch_ms`: each dV, dK and
  dQ launch timed alone): `GLUON_TERMS["d192_dv"]`, `["d192_dk"]`, `["d192_dq"]`.

Held out: the studies' other N (512, 2k, 4k, 8k), and the whole d 192 backward of each
candidate (`d192_whole`: preprocess + dV + dK + dQ predicted, against its measured time in
both d 192 calls, the public path's included). Same input, same output.
"""
from __future__ import annotations

import math

from ..host.configs import KernelConfig
from ..host.hopper_d192 import CANDIDATES, D192Config
from ..model import data, gluon, gluon_bwd
from ..model import predict as P
from ..model.dispatch import d192_labels
from .fit_gluon import (
    STUDIES,
    StudyPoint,
    fit_chain,
    gluon_studies,
    in_gluon_subset,
    spread,
    study_points,
)

__all__ = ["BWD_GROUPS", "bwd_grid", "ATOMIC_GRID", "fit_bwd", "fit_atomic", "atomic_loss",
           "chain_points", "d192_whole", "D192_RUNS", "bwd_report", "whole_of", "whole_rows",
           "render_whole"]

BWD_GROUPS = ("bwd_ws", "d192_dv", "d192_dk", "d192_dq")
ATOMIC_GRID = tuple(round(1e12 + i * 0.1e12, 12) for i in range(91))  # 1 - 10 TB/s
D192_RUNS = ("d192_gluon_h100", "d192_gluon_h100_run2")


def bwd_grid(grid: dict) -> dict:
    """fit_model.GRID with the exposed latency reaching 1.2: these chains wait longer (d 192's
    chunked wgmma, the warpgroups' barriers) than the grid of the `tl` kernels reaches."""
    return {**grid, "exposed": tuple(sorted(set(grid["exposed"]) |
                                            {i / 20 for i in range(25)}))}


def chain_points(points: list[StudyPoint], group: str) -> list[StudyPoint]:
    """The group's launches its chain constants are fitted on (the fused dQ's apart)."""
    return [p for p in points if p.group == group and p.kernel is not None
            and not p.kernel.fused]


def fit_bwd(points: list[StudyPoint], grid: dict) -> dict:
    """{group: ScheduleTerms} of least loss on each group's chain launches in `points`."""
    g = bwd_grid(grid)
    return {group: fit_chain(chain_points(points, group), group, g) for group in BWD_GROUPS}


def atomic_loss(points: list[StudyPoint], form: str, bps: float) -> float:
    mine = [p for p in points if p.kernel is not None and p.kernel.fused == form]
    return round(sum(math.log(p.predicted(atomic={form: bps}) / p.measured_s) ** 2
                     for p in mine), 9)


def fit_atomic(points: list[StudyPoint]) -> dict:
    """{form: bytes / s} of least loss on each form's fused launches in `points` (the chain's
    constants as stored; first of equals in grid order)."""
    forms = sorted({p.kernel.fused for p in points if p.kernel is not None and p.kernel.fused})
    return {f: min(ATOMIC_GRID, key=lambda b: (atomic_loss(points, f, b), b)) for f in forms}


def _whole(r: dict, m, calib: dict, dkdv_kernel, dq_kernel=None, dq_config=None) -> float:
    dq = (dq_config.block_m, dq_config.block_n) if dq_config is not None else (0, 0)
    return P.predict_backward(
        m, calib, n=r["n"], d=r["d"], batch=r["batch"], heads=r["heads"],
        causal=bool(r["causal"]), dkdv=(0, 0), dq=dq, dkdv_kernel=dkdv_kernel,
        dq_kernel=dq_kernel, dq_config=dq_config).total_s


def _ran(col: str, r: dict):
    """(dK/dV kernel, dQ kernel, `tl` dQ config) of a whole-backward column, or None: a d 192
    candidate (host/hopper_d192.py CANDIDATES) or "public" (the dispatch the row names); a
    warp-specialised study's "backward with <dK/dV column>" or "dispatched backward with
    <...>" (its dQ: the row's "dq", none for a fused dQ)."""
    cfg = CANDIDATES.get(col) if r["d"] == 192 else None
    if cfg is None and col == "public" and r.get("dispatch"):
        cfg = _config_of(r["dispatch"])
    if cfg is not None:
        labels = d192_labels(cfg)
        return (gluon.parse(labels["bwd_dkdv"], "bwd_dkdv"),
                gluon.parse(labels["bwd_dq"], "bwd_dq"), None)
    for prefix in ("backward with ", "dispatched backward with "):
        k = gluon.from_study(col[len(prefix):]) if col.startswith(prefix) else None
        if k is not None and k.pass_ == "bwd_dkdv" and r.get("dq"):
            if k.fused:
                return k, None, None
            dq = gluon.from_study(r["dq"])
            return k, dq, None if dq is not None else KernelConfig.from_short(r["dq"].split()[2])
    return None


def whole_of(st: dict, name: str, calib: dict | None = None) -> list[tuple]:
    """(run, column, row, predicted s, measured s) of every whole backward of a stored study
    whose launches the model knows (`_ran`), on the calibration of the GPU that ran."""
    calib = calib or P.calibration(P.calibration_file(st["env"]["gpu"]))
    m = P.machine_for(st["env"]["gpu"], 2, calib)
    out = []
    for r in st["rows"]:
        for col, ms in sorted(r["ms"].items()):
            ran = _ran(col, r)
            if ran is not None and ms == ms:
                out.append((name, col, r, _whole(r, m, calib, *ran), ms * 1e-3))
    return out


def d192_whole(names: tuple = D192_RUNS) -> list[tuple]:
    """whole_of each stored study named (default: the d 192 ones, the candidates' and the
    public path's backward)."""
    out = []
    for name in names:
        out += whole_of(data.part(STUDIES, name), name)
    return out


def whole_rows(whole: list[tuple]) -> list[dict]:
    """The whole backwards as bench-like rows for the alarm (grid "study:<column>")."""
    return [{"grid": f"study:{col}", "dtype": "fp16", "d": r["d"], "heads": r["heads"],
             "heads_kv": r["heads"], "n": r["n"], "nk": r["n"], "causal": bool(r["causal"]),
             "predict": {"bwd": {"total_s": t}, "bwd_ratio": t / ms}}
            for _, col, r, t, ms in whole]


def render_whole(whole: list[tuple]) -> str:
    """Markdown: each whole backward (preprocess, dK/dV launches, dQ) beside its prediction."""
    if not whole:
        return ""
    lines = ["Whole backward (preprocess, the dK/dV launches, the dQ: each predicted as "
             "above, summed):", "", "| backward | d | causal | N | batch | measured ms | "
             "predicted ms | pred/meas |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {col} | {r['d']} | {'yes' if r['causal'] else 'no'} | {r['n']} | "
              f"{r['batch']} | {ms * 1e3:.3f} | {t * 1e3:.3f} | {t / ms:.2f} |"
              for _, col, r, t, ms in whole]
    lines += ["", f"All whole backwards: {spread([t / ms for *_, t, ms in whole])}.", ""]
    return "\n".join(lines)


def _config_of(label: str) -> D192Config:
    """The D192Config a row's "gluon192 dv M..s.. dk M..s.. dq M..s.." names."""
    words = label.split()

    def tiles(text: str) -> tuple[int, int, int, int]:  # "M64N128w8s2" → (64, 128, 8, 2)
        bm, bn, w, s = (int(x) for x in text.replace("M", " ").replace("N", " ").replace("w", " ")
                        .replace("s", " ").split())
        return bm, bn, w, s

    blocks = {k: tiles(b) for k, b in zip(words[1::2], words[2::2])}
    return D192Config(blocks.get("dv"), blocks.get("dk") or blocks["dkdv"], blocks["dq"])


def bwd_report(grid: dict, points: list[StudyPoint] | None = None) -> str:
    """Markdown: the new kernels' fitted constants beside the stored ones, their spread per
    launch family (fitted / held out), the d 192 whole backward."""
    points = study_points() if points is None else points
    sub = [p for p in points if in_gluon_subset(p)]
    lines = ["", "The warp-specialised and chunked d 192 backward kernels (fitted on the same subset):"]
    lines += [f"* chain {g}: {t} (stored: {P.GLUON_TERMS[g]})"
              for g, t in fit_bwd(sub, grid).items()]
    lines += [f"* fused dQ atomics {f}: {b / 1e12:.1f} TB/s (stored: "
              f"{gluon_bwd.ATOMIC_BPS[f] / 1e12:.1f})" for f, b in fit_atomic(sub).items()]
    lines += ["", "| launches | family | subset | predicted / measured |", "|---|---|---|---|"]
    fams = sorted({_family(p) for p in points if p.kernel is not None and p.kernel.family})
    for fam in fams:
        for fitted in (True, False):
            rs = [p.predicted() / p.measured_s for p in points if p.kernel is not None
                  and p.kernel.family and _family(p) == fam and in_gluon_subset(p) == fitted]
            if rs:
                lines.append(f"| studies | {fam} | {'fitted' if fitted else 'held out'} | "
                             f"{spread(rs)} |")
    whole = d192_whole(tuple(gluon_studies()))
    for name in sorted({w[0] for w in whole}):
        rs = [t / ms for run, _, _, t, ms in whole if run == name]
        lines.append(f"| {name} | whole backward | held out | {spread(rs)} |")
    return "\n".join(lines)


def _family(p: StudyPoint) -> str:
    """A launch family: its kind, and for the warp-specialised dK/dV its BLOCK_M and (fused)
    atomics' form."""
    k = p.kernel
    if k is None:
        raise ValueError("a tl launch has no Gluon family")
    if k.family == "ws":
        return f"{k.kind} M{k.block_m}" + (f" {k.fused}" if k.fused else "")
    return f"{k.kind} M{k.block_m}N{k.block_n}w{k.num_warps}"
