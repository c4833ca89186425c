"""The time model as the alarm: a measured point more than `SLOWER` x its predicted
time is "slower than the model: look here". `bench --predict` lists every such point and fails
(exit 1) unless each one matches an entry of `KNOWN` with its reason.

A prediction is a lower-bound-like estimate (compute, compulsory HBM bytes, L2 tile bytes,
launch cost; kernels_gpu.model.predict); a kernel that spills registers, runs a config that does
not suit the shape, or is bound by host time lands far above it. That is how the grouped-query
backward cliff (d 64, H_kv 8, N 4k: predicted/measured 0.24) and the causal cross-attention
dK/dV config (N_q 1k / N_k 8k: 0.23) showed in the tables before anyone looked.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SLOWER", "KNOWN", "Alarm", "Known", "alarms", "explain", "render"]

SLOWER = 1.3  # measured / predicted above this raises the alarm


@dataclass(frozen=True)
class Known:
    """Points the alarm may skip, with the reason. Every field given must equal the point's
    (None: any); `reason` is required and printed beside the point."""
    reason: str
    pass_: str | None = None       # "fwd" or "bwd"
    d: int | None = None
    causal: bool | None = None
    gpu: str | None = None         # a substring of the GPU's name
    min_n: int | None = None       # N_q >= this
    max_n: int | None = None       # N_q <= this
    cross: bool | None = None      # N_q != N_k

    def __post_init__(self):
        if not self.reason.strip():
            raise ValueError("a known slow point needs a reason")

    def matches(self, a: Alarm) -> bool:
        return ((self.pass_ is None or self.pass_ == a.pass_)
                and (self.d is None or self.d == a.d)
                and (self.causal is None or self.causal == bool(a.causal))
                and (self.gpu is None or self.gpu.upper() in a.gpu.upper())
                and (self.min_n is None or a.n >= self.min_n)
                and (self.max_n is None or a.n <= self.max_n)
                and (self.cross is None or self.cross == (a.n != a.nk)))


# Measured on an H100 and an H200 (data/frontier_h100.json, data/bench_h200.json). Each entry says why the model is
# not the kernel's time there; remove an entry when the kernel (or the model) is fixed. With
# the schedule terms (model/occupancy.py, predict.TERMS) the H100 frontier grid raises the
# alarm at one point (fwd d 256 N 1k causal, 1.31 x); the causal backward at N <= 2k and the
# dV-apart d 256 backward are within 1.3 x there (0.88 - 1.21) and their entries are gone.
KNOWN: tuple[Known, ...] = (
    Known("d 256 forward at N <= 2k: 8 - 16 programs of 128 rows a head at one program per SM "
          "(197 KB of shared memory each); the schedule model (per-program cost, waves) brings "
          "N 2k within 1.15 x but leaves N 1k causal at 1.31 x on the H100: its "
          "programs run 1 - 8 key tiles, so the prologue (the 256-wide Q tile in) and the O "
          "store dominate more than the fitted forward fixed cost (0) says",
          pass_="fwd", d=256, max_n=2048),
    Known("d 256 backward of the stored H200 run (data/bench_h200.json): the two-accumulator "
          "dK/dV it ran (255 registers, spills) has since been replaced by dV apart from dK; "
          "1.3 - 1.6 x the model", pass_="bwd", d=256, gpu="H200"),
    Known("d 192 backward of the same H200 run (padded to 256 on chip, the same spilling dK/dV): "
          "as d 256", pass_="bwd", d=192, gpu="H200"),
)


@dataclass(frozen=True)
class Alarm:
    gpu: str
    grid: str
    dtype: str
    d: int
    heads: int
    heads_kv: int
    n: int
    nk: int
    causal: object
    pass_: str
    measured_ms: float
    predicted_ms: float

    @property
    def slower(self) -> float:
        """measured / predicted."""
        return self.measured_ms / self.predicted_ms

    def where(self) -> str:
        lengths = str(self.n) if self.n == self.nk else f"{self.n}/{self.nk}"
        names: dict[object, str] = {True: "causal", False: "full"}
        causal = names.get(self.causal, str(self.causal))
        launch = f" ({self.grid[6:]})" if self.grid.startswith("study:") else ""
        return (f"{self.pass_} d {self.d} H {self.heads}/{self.heads_kv} N {lengths} {causal} "
                f"{self.dtype}{launch}")


def alarms(rows: list[dict], gpu: str, slower: float = SLOWER) -> list[Alarm]:
    """Every (row, pass) with a prediction whose measured time is > slower x predicted, in row
    order (rows as tables.add_predictions returns them)."""
    out = []
    for r in rows:
        pred = r.get("predict")
        if not pred:
            continue
        for pass_ in ("fwd", "bwd"):
            ratio = pred.get(f"{pass_}_ratio")  # predicted / measured
            if ratio is None or not ratio > 0:
                continue
            predicted_ms = pred[pass_]["total_s"] * 1e3
            measured_ms = predicted_ms / ratio
            if measured_ms > slower * predicted_ms:
                out.append(Alarm(gpu, r.get("grid", "main"), r.get("dtype", "fp16"), r["d"],
                                 r["heads"], r.get("heads_kv", r["heads"]), r["n"],
                                 r.get("nk", r["n"]), r["causal"], pass_, measured_ms,
                                 predicted_ms))
    return out


def explain(found: list[Alarm], known: tuple[Known, ...] = KNOWN
            ) -> tuple[list[Alarm], list[tuple[Alarm, Known]]]:
    """(unexplained, [(alarm, the first Known entry that covers it)])."""
    unexplained, explained = [], []
    for a in found:
        k = next((k for k in known if k.matches(a)), None)
        if k is None:
            unexplained.append(a)
        else:
            explained.append((a, k))
    return unexplained, explained


def render(found: list[Alarm], known: tuple[Known, ...] = KNOWN,
           slower: float = SLOWER) -> str:
    """Markdown: the unexplained points first ("look here"), then the known ones with reasons."""
    unexplained, explained = explain(found, known)
    lines = [f"Alarm: {len(found)} points measured > {slower:g} x the model's time; "
             f"{len(unexplained)} unexplained, {len(explained)} known.", ""]
    if unexplained:
        lines += ["Slower than the model: look here.", "",
                  "| point | measured ms | predicted ms | measured / predicted |",
                  "|---|---|---|---|"]
        lines += [f"| {a.where()} | {a.measured_ms:.3f} | {a.predicted_ms:.3f} | "
                  f"{a.slower:.2f} |" for a in unexplained]
        lines.append("")
    if explained:
        lines += ["Known (listed in kernels_gpu/bench/alarm.py with a reason):", "",
                  "| point | measured / predicted | reason |", "|---|---|---|"]
        lines += [f"| {a.where()} | {a.slower:.2f} | {k.reason} |" for a, k in explained]
        lines.append("")
    return "\n".join(lines)
