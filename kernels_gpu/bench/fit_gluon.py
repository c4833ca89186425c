"""The time model on the Gluon kernels: the warp-specialised forward's pipeline constants fitted
on a declared subset (model.gluon.GLUON_FIT_SUBSET), the spread on every measured Gluon point.

    python -m kernels_gpu.bench.fit_model --gluon

Two kinds of measured points, all on an H100, each declared in `data/manifest.json`:

* **launch studies** (`data/gluon_studies_h100.json`, `python -m kernels_gpu.bench.studies`): each
  Gluon kernel timed alone (one launch: the forward, the dK/dV or the dQ), median of do_bench;
  a column per kernel, named as `gluon.from_study` reads it;
* **dispatch runs** (`data/dispatch_runs_h100.json`, `python -m kernels_gpu.bench`):
  the whole forward and backward through the public path, the rows naming the Gluon kernels
  that ran (`tables.kernels_of`).

By grid search, least squares of log(predicted / measured), on the studies' points at N 1024
and 16384 only (`gluon.GLUON_FIT_SUBSET`; everything else is held out):

* `gluon.PIPELINE` (the warp-specialised forward: a per-program fixed cost, the balance
  exponent and, per schedule, the fraction of the shorter stage hidden);
* `predict.GLUON_TERMS` (the one-partition Gluon forward, dK/dV and dQ: the chain's three
  constants each);
* `predict.TERMS["bwd_dq"]` (the `tl` dQ launch, from the studies' `tl dq` columns; the `tl`
  dK/dV's are then refitted on the `tl` grid with it held, `fit_model`).

The report prints the fit beside the stored constants, so a stale constant shows. Same input,
same output.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ..host.configs import KernelConfig
from ..model import data, gluon
from ..model import predict as P
from ..model.occupancy import program_resources, program_row, programs_per_sm
from ..model.schedule import schedule
from .tables import add_predictions

__all__ = ["gluon_studies", "DISPATCH_RUNS", "StudyPoint", "points_of", "study_points",
           "study_rows", "render_study", "in_gluon_subset",
           "fit_pipeline", "fit_chain", "spread", "dispatch_ratios", "report", "HIDDEN_GRID",
           "FIXED_GRID", "BALANCE_GRID"]

STUDIES = "gluon_studies_h100.json"  # a bundle: one part per launch study
DISPATCH = "dispatch_runs_h100.json"  # a bundle: one part per dispatch run
DISPATCH_RUNS = ("frontier_gluon_dispatch_h100", "frontier_ws_dispatch_h100",
                 "frontier_ws_dispatch_h100_run2")
# the d 192 studies (bench/d192.py): each launch timed (`launch_ms`, the first), the whole
# backward of each candidate and of the public path (both)
D192_STUDIES = ("d192_gluon_h100", "d192_gluon_h100_run2")
FIT_N = (1024, 16384)  # gluon.GLUON_FIT_SUBSET: the studies' N the pipeline is fitted on
HIDDEN_GRID = tuple(i / 20 for i in range(21))
FIXED_GRID = (0.0, 0.5e-6, 1e-6, 1.5e-6, 2e-6, 3e-6, 4e-6, 6e-6, 8e-6)
BALANCE_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)


def gluon_studies() -> list[str]:
    """The stored launch studies of the Gluon kernels on the H100 (file names, sorted): the
    bench/hopper*.py ones and the d 192 one with each launch timed (`launch_ms`)."""
    declared = data.parts(STUDIES)
    return sorted(p for p in declared if p not in D192_STUDIES) + list(D192_STUDIES)


@dataclass(frozen=True)
class StudyPoint:
    run: str
    column: str             # the study's name of the launch
    kernel: gluon.GluonKernel | None  # None: a `tl` launch (its config: `config`)
    config: KernelConfig
    pass_: str              # "fwd", "bwd_dkdv" or "bwd_dq"
    d: int
    n: int
    batch: int
    heads: int
    causal: bool
    measured_s: float
    rate: P.Prediction      # the tile machine's rate prediction of the launch
    per: tuple              # iterations of each program of a row, launch order
    rows: int
    occ: int
    hbm_Bps: float = 0.0    # the GPU's HBM rate (a fused dQ's accumulator)

    @property
    def group(self) -> str:
        """"pipeline" (the warp-specialised forward), else its key in (GLUON_)TERMS."""
        if self.kernel is not None and self.kernel.specialised:
            return "pipeline"
        if self.kernel is not None and gluon.KINDS[self.kernel.kind].terms:
            return gluon.KINDS[self.kernel.kind].terms
        return P.TERMS_OF[self.pass_]

    def predicted(self, pipeline: gluon.PipelineTerms | None = None, terms: dict | None = None,
                  atomic: dict | None = None) -> float:
        k = self.kernel
        if self.group == "pipeline" and k is not None:  # (the pipeline group is Gluon's)
            pipeline = pipeline or gluon.PIPELINE
            return P.overlapped_time(self.rate, list(self.per), self.rows, self.occ,
                                     0.0 if k.persistent else pipeline.fixed_s, 132,
                                     pipeline.hidden[k.pipeline_schedule], pipeline.balance)
        terms = terms or (P.GLUON_TERMS if k is not None else P.TERMS)
        return P.chain_time(self.rate, list(self.per), self.rows, self.occ, terms[self.group],
                            132, k, (self.n, self.d, self.batch, self.heads, self.causal, 2),
                            self.hbm_Bps, atomic)


_PHASE = {"fwd": None, "bwd_dkdv": "dkdv", "bwd_dq": "dq"}


def _tl_column(col: str):
    """(pass, KernelConfig) of a study's `tl` launch column ("tl dq M128N32w8s3-tma"), or
    None (the `tl` dQ launches are the ones the model is fitted on: TERMS["bwd_dq"])."""
    parts = col.split()
    if len(parts) == 3 and parts[:2] == ["tl", "dq"]:
        return "bwd_dq", KernelConfig.from_short(parts[2])
    return None


def points_of(st: dict, name: str, calib: dict | None = None) -> list[StudyPoint]:
    """The StudyPoints of one stored launch study `st` (named `name`): every Gluon column and
    `tl` dQ column, on the calibration of the GPU that ran unless `calib` is given."""
    calib = calib or P.calibration(P.calibration_file(st["env"]["gpu"]))
    m = P.machine_for(st["env"]["gpu"], 2, calib)
    out = []
    hbm = m.hbm_bytes_per_cycle * m.clock_hz
    for r in st["rows"]:
        causal = bool(r.get("causal"))
        launches = [(col, gluon.from_study(col), ms) for col, ms in sorted(r["ms"].items())]
        launches += [(key, gluon.from_d192_launch(key), ms)  # the d 192 study's launches
                     for key, ms in sorted((r.get("launch_ms") or {}).items())
                     if key.split()[0] in gluon.D192_PART]
        for col, k, ms in launches:
            tl = None if k is not None else _tl_column(col)
            if not ms == ms:
                continue
            if k is not None:
                pass_, cfg = k.pass_, k.config
            elif tl is not None:
                pass_, cfg = tl
            else:
                continue
            rate = P._one(m, P.l2_rate(calib), calib["launch_s"], n=r["n"], nk=None,
                          d=r["d"], batch=r["batch"], heads=r["heads"], causal=causal,
                          block_m=cfg.block_m, block_n=cfg.block_n,
                          pass_="forward" if pass_ == "fwd" else "backward",
                          phase=gluon.phase(k) if k is not None else _PHASE[pass_],
                          pad=k is None or k.family != "d192")
            sched = schedule(r["n"], r["d"], r["batch"], r["heads"], causal, pass_=pass_,
                             config=cfg, part=(k.part or None) if k is not None else None)
            per, rows = program_row(sched)
            regs, smem, _ = (gluon.resources(k, r["d"], causal) if k is not None else
                             program_resources(pass_, r["d"], causal, cfg))
            out.append(StudyPoint(name, col, k, cfg, pass_, r["d"], r["n"], r["batch"],
                                  r["heads"], causal, ms * 1e-3, rate, tuple(per), rows,
                                  programs_per_sm(regs, smem, cfg.num_warps), hbm))
    return out


def study_points(names: list[str] | None = None) -> list[StudyPoint]:
    """Every Gluon column (and `tl` dQ column) of the stored launch studies, as StudyPoints
    (the calibration of the GPU that ran)."""
    out = []
    for name in names or gluon_studies():
        out += points_of(data.part(STUDIES, name), name)
    return out


def study_rows(points: list[StudyPoint]) -> list[dict]:
    """The points as bench-like rows for the alarm (bench/alarm.py): one launch each, under
    "fwd" (a forward launch) or "bwd" (a dK/dV or dQ launch), grid "study:<column>"."""
    rows = []
    for p in points:
        pass_ = "fwd" if p.pass_ == "fwd" else "bwd"
        t = p.predicted()
        rows.append({"grid": f"study:{p.column}", "dtype": "fp16", "d": p.d, "heads": p.heads,
                     "heads_kv": p.heads, "n": p.n, "nk": p.n, "causal": p.causal,
                     "predict": {pass_: {"total_s": t}, f"{pass_}_ratio": t / p.measured_s}})
    return rows


def render_study(points: list[StudyPoint], env: dict) -> str:
    """Markdown: every launch of a study with its predicted time (`bench --predict --from`
    a launch study)."""
    lines = [f"Measured: {env['gpu']}, {env.get('torch', '?')} (a launch study: each kernel timed alone). "
             "Predicted: the time model (kernels_gpu.model.gluon, predict); occ = programs "
             "per SM.", "", "| launch | d | causal | N | batch | measured ms | predicted ms | "
             "pred/meas | occ |", "|---|---|---|---|---|---|---|---|---|"]
    for p in points:
        t = p.predicted()
        lines.append(f"| {p.column} | {p.d} | {'yes' if p.causal else 'no'} | {p.n} | "
                     f"{p.batch} | {p.measured_s * 1e3:.3f} | {t * 1e3:.3f} | "
                     f"{t / p.measured_s:.2f} | {p.occ} |")
    lines += ["", f"All launches: {spread([p.predicted() / p.measured_s for p in points])}.", ""]
    return "\n".join(lines)


def in_gluon_subset(p: StudyPoint) -> bool:
    """gluon.GLUON_FIT_SUBSET: a study point at N 1024 or 16384."""
    return p.n in FIT_N


def fit_chain(points: list[StudyPoint], group: str, grid: dict, gluon_: bool = True
              ) -> P.ScheduleTerms:
    """(GLUON_)TERMS[group]: the grid point of least loss on the group's chain launches of
    the Gluon kernels (gluon_) or of the `tl` ones (first of equals in grid order)."""
    mine = [p for p in points if p.group == group and (p.kernel is not None) == gluon_]
    best = None
    for fixed in grid["fixed_s"]:
        for exposed in grid["exposed"]:
            for overlap in grid["overlap"]:
                t = P.ScheduleTerms(fixed, exposed, overlap)
                v = round(sum(math.log(p.predicted(terms={group: t}) / p.measured_s) ** 2
                              for p in mine), 9)
                if best is None or v < best[0]:
                    best = (v, t)
    assert best is not None  # the grids are not empty
    return best[1]


def _loss(points, pipeline) -> float:
    return sum(math.log(p.predicted(pipeline) / p.measured_s) ** 2 for p in points)


def fit_pipeline(points: list[StudyPoint]) -> gluon.PipelineTerms:
    """The grid point of least loss on `points` (the warp-specialised ones): for each fixed
    cost and balance, each schedule's hidden fraction on its own points (the loss separates),
    first of equals in grid order."""
    ws = [p for p in points if p.group == "pipeline"]
    scheds = sorted({p.kernel.pipeline_schedule for p in ws if p.kernel is not None})
    best = None
    for balance in BALANCE_GRID:
        for fixed in FIXED_GRID:
            hidden, total = {}, 0.0
            for s in scheds:
                mine = [p for p in ws if p.kernel is not None and p.kernel.pipeline_schedule == s]
                v, h = min((round(_loss(mine, gluon.PipelineTerms(fixed, {s: h}, balance)), 9),
                            h) for h in HIDDEN_GRID)
                hidden[s], total = h, total + v
            if best is None or round(total, 9) < best[0]:
                best = (round(total, 9), gluon.PipelineTerms(fixed, hidden, balance))
    assert best is not None  # the grids are not empty
    return best[1]


def spread(rs: list[float]) -> str:
    if not rs:
        return "no points"
    inside = sum(0.85 <= v <= 1.15 for v in rs)
    return (f"{len(rs)} points, {min(rs):.2f} - {max(rs):.2f} (median "
            f"{statistics.median(rs):.2f}), {inside} within ±15 %")


def dispatch_ratios(name: str) -> dict[str, list[tuple[dict, float]]]:
    """{pass: [(row, predicted / measured)]} of the Gluon rows of a stored dispatch run (rows
    where a Gluon kernel ran in that pass)."""
    st = data.part(DISPATCH, name)
    calib = P.calibration(P.calibration_file(st["env"]["gpu"]))
    out: dict[str, list[tuple[dict, float]]] = {"fwd": [], "bwd": []}
    for r in add_predictions(st["rows"], st["env"]["gpu"], calib):
        for p in ("fwd", "bwd"):
            v = r.get("predict", {}).get(f"{p}_ratio")
            if v is not None:
                out[p].append((r, v))
    return out


def _kind(p: StudyPoint) -> str:
    return p.kernel.kind if p.kernel is not None else f"tl {p.pass_}"


def report(grid: dict, points: list[StudyPoint] | None = None) -> str:
    """Markdown: the fitted constants beside the stored ones, the spread per kind on the
    subset and held out, the spread of each dispatch run. `grid`: fit_model.GRID."""
    points = study_points() if points is None else points
    sub = [p for p in points if in_gluon_subset(p)]
    lines = [f"Fitted on {gluon.GLUON_FIT_SUBSET}:",
             f"* pipeline: {fit_pipeline(sub)} (stored: {gluon.PIPELINE})"]
    lines += [f"* Gluon chain {g}: {fit_chain(sub, g, grid)} (stored: {P.GLUON_TERMS[g]})"
              for g in ("fwd", "bwd", "bwd_dq")]
    lines.append(f"* `tl` chain bwd_dq: {fit_chain(sub, 'bwd_dq', grid, False)} "
                 f"(stored: {P.TERMS['bwd_dq']})")
    lines += ["", "| launches | kind | subset | predicted / measured |", "|---|---|---|---|"]
    for kind in sorted({_kind(p) for p in points}):
        for fitted in (True, False):
            rs = [p.predicted() / p.measured_s for p in points
                  if _kind(p) == kind and in_gluon_subset(p) == fitted]
            if rs:
                lines.append(f"| studies | {kind} | {'fitted' if fitted else 'held out'} | "
                             f"{spread(rs)} |")
    for name in DISPATCH_RUNS:
        for p, pairs in dispatch_ratios(name).items():
            lines.append(f"| {name} | {p} | held out | {spread([v for _, v in pairs])} |")
    return "\n".join(lines)
