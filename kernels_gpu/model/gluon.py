"""The Gluon kernels as the time model sees them: which kernel ran, its tiles, its occupancy and
its schedule.

A bench row names the kernel that ran where it is not the `tl` one: `fwd_kernel` (e.g.
"gluon M128N64w8", the one-partition Hopper forward of `kernels/hopper.py`, or
"gluon M128N128w12 ws-lag-s3", the warp-specialised forward of `kernels/hopper_ws.py` with its
schedule and ring stages), `bwd_dkdv_kernel` and `bwd_dq_kernel` ("gluon M64N64w4 s2 ov1", the
dK/dV and the dQ of `kernels/hopper_bwd.py` with ring stages and OVERLAP; " s2" and " ov0" may
be left out). `parse` turns a name into a `GluonKernel`; absent or "tl ..." is the `tl` kernel
(None). The launch studies (bench/hopper.py, hopper_bwd.py) name their columns differently
("ws N128 lag s2", "gluon dq M64N64w4 ov1"): `from_study`. The other backward
kernels (model/gluon_bwd.py: their resources and the fused dQ's atomics): the warp-specialised
dK/dV "gluon ws M64N128w12 s2 ov1" (dQ fused by fp32 atomics: "gluon ws+dq ... red4 split"),
a chain in each of its two consumer warpgroups (KINDS' `lanes` 2); the chunked d 192 launches
"gluon192 dv|dk|dq M..N..w..s.." (`bwd_dkdv_kernel` "gluon192 dv .. dk ..": both launches),
the chain on unpadded d 192 work, each with its own constants (KINDS' `terms`).

**The table** (`KINDS`, keyed by `GluonKernel.kind`: the pass, and the warp-specialised
schedule) says how each family runs in the model. A new kernel: its name in `parse` (the bench
row's `*_kernel` field), a row in KINDS, its offline compile (`fit_model --compile-gluon`), and
if it schedules its work neither as a chain nor as the forward's pipeline, a branch in
`predict.scheduled`; then refit (`python -m kernels_gpu.bench.fit_model --gluon`).

What the model takes from the kernel:

* **tiles** (`config`, `launch_schedule`): the blocks the tile machine and `schedule()` run,
  so the L2 words and the traffic (`schedule.predict_traffic`, `traffic.simulated_traffic(
  config=kernel.config)`) follow the kernel's tiles: 128 query rows (two consumer warpgroups
  of 64) x BLOCK_N for the warp-specialised forward, BLOCK_M x BLOCK_N for the others; all TMA.
* **occupancy** (`resources`): registers and shared memory of one program. The stored offline
  sm_90 compile (`data/resources_gluon_sm90.json`, `TRITON_INTERPRET=0 python -m
  kernels_gpu.bench.fit_model --compile-gluon`: every kernel the dispatch runs and the launch
  studies ran) where it has the kernel, else the closed form of the kernel's budgets: the
  warp-specialised forward's registers are set by `setmaxnreg`, two consumer warpgroups at 240
  and the producer's warpgroup at 24 per thread (12 warps: 64 512 registers, one program per
  SM); its shared memory the two Q halves and K, V x stages. The one-partition kernels:
  `occupancy.resources` of their config (a `stages`-deep TMA ring).
* **schedule**. The one-partition kernels (forward, dK/dV, dQ) wait for every tile and every
  product in turn, like the `tl` kernels: the chain of `predict.schedule_time`, with their own
  constants (`predict.GLUON_TERMS`). The backward's OVERLAP 1 issues one GEMM (dP^T in the
  dK/dV, a quarter of its four equal products; dP in the dQ, a third of three) with S and
  retires it after the exponentials: `overlap_hidden` takes the shorter of that GEMM's time
  and the exponentials' off the chain (a closed form, nothing fitted). The warp-specialised
  forward is a two-stage software pipeline of matrix work T and softmax work S per iteration
  on its SM (`program_time`): in `lag` the softmax of tile j runs under P V of tile j-1, in
  `pingpong` under the other warpgroup's GEMMs, in `ws` only the other warpgroup's chain
  overlaps. A fraction `hidden` of the shorter stage runs under the longer, and the exposed
  rest grows as the two stages approach each other (the longer leaves less slack): an
  iteration takes max(T, S) + (1 - hidden) min(T, S) (min / max) ** balance; a program adds
  `fixed_s` (Q in, the ring's fill, O out: one program per SM, so nothing co-resident hides
  it). `PIPELINE` holds one fixed cost, one balance and a `hidden` per schedule, fitted on
  `GLUON_FIT_SUBSET` (bench/fit_gluon.py). The ring's depth enters through the shared memory
  (programs per SM); no per-stage constant.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from ..host.configs import KernelConfig
from . import data, gluon_bwd
from .occupancy import resources as tl_resources
from .pipeline import overlapped_time, program_time  # noqa: F401 (re-exported)
from .schedule import Schedule, schedule

__all__ = ["GluonKernel", "parse", "from_study", "Kind", "KINDS", "resources", "program_time",
           "PipelineTerms", "PIPELINE", "GLUON_FIT_SUBSET", "launch_schedule", "GLUON_FILE",
           "overlap_hidden", "overlapped_time", "phase", "from_d192_launch",
           "WS_ROWS", "CONSUMER_REGS", "PRODUCER_REGS"]

GLUON_FILE = data.path("resources_gluon_sm90.json")
WS_ROWS = 128          # query rows of a warp-specialised program: two consumer warpgroups of 64
CONSUMER_REGS = 240    # setmaxnreg of each consumer warpgroup (kernels/hopper_ws.py)
PRODUCER_REGS = 24     # setmaxnreg of the producer's warpgroup
BARRIER_BYTES = 8      # one mbarrier

_NAME = re.compile(r"gluon M(\d+)N(\d+)w(\d+)(?: ws-([a-z]+)-s(\d+))?(?: s(\d+))?"
                   r"(?: ov(\d+))?")
_STUDY_WS = re.compile(r"ws N(\d+) (ws|lag|pingpong|pws|plag|ppingpong) s(\d+)")
# the warp-specialised dK/dV (kernels/hopper_bwd_ws.py; "+dq": dQ fused by fp32 atomics,
# red1 Triton's atomic_add, red2 / red4 the vector reductions, split: half the atomics)
_NAME_WS = re.compile(r"gluon ws(\+dq)? M(\d+)N(\d+)w(\d+)(?: s(\d+))?(?: ov(\d+))?"
                      r"(?: red(\d))?( split)?")
# one launch of the chunked d 192 backward (kernels/hopper_bwd_chunked.py, model/dispatch.py)
_NAME_D192 = re.compile(r"gluon192 (dv|dk|dq) M(\d+)N(\d+)w(\d+)s(\d+)")
D192_PART = {"dv": ("bwd_dkdv", 1), "dk": ("bwd_dkdv", 2), "dq": ("bwd_dq", 0)}
PASSES = ("fwd", "bwd_dkdv", "bwd_dq")
# the persistent warp-specialised forward's schedules and the one-launch-a-tile ones they run
PERSISTENT_BASE = {"pws": "ws", "plag": "lag", "ppingpong": "pingpong"}


@dataclass(frozen=True)
class GluonKernel:
    label: str
    pass_: str          # "fwd", "bwd_dkdv" or "bwd_dq"
    block_m: int
    block_n: int
    num_warps: int
    stages: int         # the K/V (forward, dQ) or Q/dO (dK/dV) TMA ring
    schedule: str = ""  # "" (one partition), "ws", "lag", "pingpong" (or persistent: "p...")
    overlap: int = 0    # the backward's asynchronous wgmma schedule (kernels/hopper_bwd.py)
    family: str = ""    # "" (hopper.py, hopper_bwd.py, hopper_ws.py), "ws" (the warp-
    #                     specialised dK/dV, hopper_bwd_ws.py), "d192" (hopper_bwd_chunked.py)
    part: int = 0       # d192: 1 the dV launch, 2 the dK launch, 0 the dQ launch
    fused: str = ""     # ws: the fused dQ's atomics, "red1", "red2", "red4", "red4 split"
    launches: tuple = ()  # d192 "gluon192 dv .. dk ..": the pass's two launches (GluonKernels)

    @property
    def config(self) -> KernelConfig:
        """The tiles the tile machine and `schedule()` run for this kernel."""
        return KernelConfig(self.block_m, self.block_n, self.num_warps, self.stages, True,
                            dv_apart=self.part > 0)

    @property
    def specialised(self) -> bool:
        return bool(self.schedule)

    @property
    def persistent(self) -> bool:
        """The persistent warp-specialised forward (schedules "pws", "plag", "ppingpong")."""
        return self.schedule in PERSISTENT_BASE

    @property
    def pipeline_schedule(self) -> str:
        """The schedule whose pipeline constants it runs (a persistent one: its base's)."""
        return PERSISTENT_BASE.get(self.schedule, self.schedule)

    @property
    def kind(self) -> str:
        """Its row of KINDS."""
        if self.family == "ws":
            return "bwd_dkdv-ws+dq" if self.fused else "bwd_dkdv-ws"
        if self.family == "d192":
            return "d192-pair" if self.launches else f"d192-{('dq', 'dv', 'dk')[self.part]}"
        return f"{self.pass_}-{self.schedule}" if self.schedule else self.pass_

    @property
    def canonical(self) -> str:
        """The name with the defaults left out (the key of the stored compile)."""
        base = f"gluon M{self.block_m}N{self.block_n}w{self.num_warps}"
        if self.family == "ws":
            return (f"gluon ws{'+dq' if self.fused else ''} M{self.block_m}N{self.block_n}"
                    f"w{self.num_warps} s{self.stages}" + (f" ov{self.overlap}" if self.overlap
                                                           else "")
                    + (f" {self.fused}" if self.fused else ""))
        if self.family == "d192":
            return " ".join(self.label.split())
        if self.schedule:
            return f"{base} ws-{self.schedule}-s{self.stages}"
        return base + (f" s{self.stages}" if self.stages != 2 else "") + (
            f" ov{self.overlap}" if self.overlap else "")


def parse(label: str | None, pass_: str) -> GluonKernel | None:
    """The Gluon kernel a bench row names (`fwd_kernel`, `bwd_dkdv_kernel`, `bwd_dq_kernel`),
    or None for the `tl` kernel (absent, or a name not starting with "gluon "). Names: "gluon
    M<bm>N<bn>w<warps>", then " ws-<schedule>-s<stages>" (the warp-specialised forward) or
    " s<stages>" (2 if absent), then " ov<overlap>" (0 if absent)."""
    if not label or not label.startswith(("gluon ", "gluon192 ")):
        return None
    if label.startswith(("gluon ws ", "gluon ws+dq ", "gluon192 ")):
        return _parse_bwd(label.strip(), pass_)
    m = _NAME.fullmatch(label.strip())
    if m is None or pass_ not in PASSES:
        raise ValueError(f"not a Gluon kernel name for {pass_}: {label!r} (expected like "
                         "'gluon M128N64w8', 'gluon M128N128w12 ws-lag-s3' or "
                         "'gluon M64N64w4 s2 ov1')")
    bm, bn, w = (int(g) for g in m.group(1, 2, 3))
    stages = int(m.group(5) or m.group(6) or 2)
    return _known(GluonKernel(label.strip(), pass_, bm, bn, w, stages, m.group(4) or "",
                              int(m.group(7) or 0)))


def _known(kernel: GluonKernel) -> GluonKernel:
    if kernel.kind not in KINDS:
        raise ValueError(f"no time model for the Gluon kernel {kernel.label!r} ({kernel.kind}); "
                         "add its row to model/gluon.py KINDS")
    return kernel


def _parse_bwd(label: str, pass_: str) -> GluonKernel:
    """The warp-specialised dK/dV ("gluon ws M64N128w12 s2 ov1", "gluon ws+dq M64N128w12 s2
    ov1 red4 split"; a fused one without "red" ran Triton's atomic_add: red1) or the chunked d
    192 launches ("gluon192 dq M128N64w8s2"; the dK/dV pass "gluon192 dv M..s.. dk M..s..",
    its two launches in `launches`)."""
    ws = _NAME_WS.fullmatch(label)
    if ws and pass_ == "bwd_dkdv":
        bm, bn, w = (int(g) for g in ws.group(2, 3, 4))
        fused = (f"red{ws.group(7) or 1}" + (" split" if ws.group(8) else "")
                 if ws.group(1) else "")
        if not ws.group(1) and (ws.group(7) or ws.group(8)):
            raise ValueError(f"{label!r}: 'red' and 'split' name a fused dQ (gluon ws+dq)")
        return _known(GluonKernel(label, pass_, bm, bn, w, int(ws.group(5) or 2),
                                  overlap=int(ws.group(6) or 0), family="ws", fused=fused))
    words = label.split()
    if words[0] == "gluon192" and len(words) == 5 and words[1::2] == ["dv", "dk"] \
            and pass_ == "bwd_dkdv":
        pair = tuple(_parse_bwd(f"gluon192 {k} {b}", pass_) for k, b in
                     zip(words[1::2], words[2::2]))
        return _known(GluonKernel(label, pass_, pair[1].block_m, pair[1].block_n,
                                  pair[1].num_warps, pair[1].stages, family="d192",
                                  launches=pair))
    m = _NAME_D192.fullmatch(label)
    if m and D192_PART[m.group(1)][0] == pass_:
        bm, bn, w, st = (int(g) for g in m.group(2, 3, 4, 5))
        part = D192_PART[m.group(1)][1]
        return _known(GluonKernel(label, pass_, bm, bn, w, st, overlap=int(part != 1),
                                  family="d192", part=part))
    raise ValueError(f"not a Gluon backward name for {pass_}: {label!r} (expected like "
                     "'gluon ws M64N128w12 s2 ov1', 'gluon ws+dq M64N128w12 s2 ov1 red4 "
                     "split', 'gluon192 dv M64N128w8s2 dk M64N128w8s2', 'gluon192 dq "
                     "M128N64w8s2')")


def from_d192_launch(key: str) -> GluonKernel:
    """The launch a d 192 study's `launch_ms` key names ("dv M64N128w8s2", "dq M128N64w8s2")."""
    kind = key.split()[0]
    if kind not in D192_PART:
        raise ValueError(f"not a chunked d 192 launch: {key!r}")
    kernel = parse(f"gluon192 {key}", D192_PART[kind][0])
    if kernel is None:  # pragma: no cover - parse reads every "gluon192 …" name or raises
        raise ValueError(f"not a chunked d 192 launch: {key!r}")
    return kernel


def from_study(name: str) -> GluonKernel | None:
    """The Gluon kernel a study's column names (bench/hopper.py, hopper_bwd.py): "gluon
    M128N64w8" (forward), "ws N128 lag s2" (warp-specialised forward), "gluon dkdv M64N64w4 s3
    ov2", "gluon dq M64N64w4 ov1"; None for any other column ("tl ...", "flash", "backward
    ...")."""
    ws = _STUDY_WS.fullmatch(name)
    if ws:
        return parse(f"gluon M{WS_ROWS}N{ws.group(1)}w12 ws-{ws.group(2)}-s{ws.group(3)}",
                     "fwd")
    for prefix, name_ in (("gluon dkdv ws ", "gluon ws "), ("gluon dkdv+dq ws ", "gluon ws+dq ")):
        if name.startswith(prefix):
            return parse(name_ + name[len(prefix):], "bwd_dkdv")
    for prefix, pass_ in (("gluon dkdv ", "bwd_dkdv"), ("gluon dq ", "bwd_dq")):
        if name.startswith(prefix):
            return parse("gluon " + name[len(prefix):], pass_)
    return parse(name, "fwd") if _NAME.fullmatch(name) else None


@dataclass(frozen=True)
class Kind:
    """How the time model runs one family of Gluon kernels (module docstring)."""
    schedule: str       # "chain" (one program's units in series, predict.schedule_time) or
    #                     "pipeline" (softmax overlapped with the GEMMs, pipeline_time)
    overlap_share: float  # OVERLAP >= 1: the share of the launch's tensor time (one GEMM of
    #                       equal ones) issued under the exponentials, 0: none
    doc: str
    terms: str = ""     # its chain constants' key in predict.GLUON_TERMS ("": its pass's)
    lanes: int = 1      # chains one program runs side by side (the warp-specialised dK/dV:
    #                     two consumer warpgroups of 64 key rows, as two co-resident programs)
    products: float = 1.0  # its tensor time over the tile machine's pass (fused dQ: 5 / 4)
    atomics: bool = False  # adds the fused dQ's fp32 reductions (gluon_bwd.atomic_s)


# Every Gluon kernel the model knows, keyed by GluonKernel.kind (the pass, and the
# warp-specialised schedule: "bwd_dkdv-ws" for a warp-specialised dK/dV named "gluon
# M..N..w.. ws-ws-s2" in bwd_dkdv_kernel). A new kernel: a row here; if its schedule is
# neither, a branch in predict.scheduled; its offline compile in bench/fit_model._compile_one.
# A bench row naming a kind not here stops `--predict` with the name (nothing is guessed).
KINDS = {
    "fwd": Kind("chain", 0.0, "one-partition forward (kernels/hopper.py): every tile and "
                "product waited in turn, like `tl`"),
    "fwd-ws": Kind("pipeline", 0.0, "warp-specialised forward, no lag: the two consumer "
                   "warpgroups overlap each other's softmax"),
    "fwd-lag": Kind("pipeline", 0.0, "warp-specialised forward, the softmax of tile j under "
                    "P V of tile j-1"),
    "fwd-pingpong": Kind("pipeline", 0.0, "warp-specialised forward, the two warpgroups' "
                         "GEMMs alternated by a named barrier"),
    # the persistent form (kernels/hopper_ws_persistent.py): the same pipeline per work item,
    # the item's prologue and epilogue under its neighbours' work (no fixed_s but the first);
    # its "pws" schedule was never timed, so it has no row
    "fwd-plag": Kind("pipeline", 0.0, "persistent warp-specialised forward, lag"),
    "fwd-ppingpong": Kind("pipeline", 0.0, "persistent warp-specialised forward, ping-pong"),
    # four equal GEMMs an iteration (S^T, dP^T, dV, dK): dP^T is a quarter of the tensor time
    "bwd_dkdv": Kind("chain", 1 / 4, "dK/dV (kernels/hopper_bwd.py): K, V held, Q, dO "
                     "through the ring; OVERLAP 1 issues dP^T with S^T"),
    # three (S, dP, dQ): dP is a third
    "bwd_dq": Kind("chain", 1 / 3, "dQ (kernels/hopper_bwd.py): Q, dO held, K, V through "
                   "the ring; OVERLAP 1 issues dP with S"),
    # the one-partition dK/dV's chain in each of two consumer warpgroups (64 key rows each)
    # fed by one producer warp: two lanes on one program per SM; OVERLAP 1 and 2 both issue
    # dP^T under the exponentials (the same closed form)
    "bwd_dkdv-ws": Kind("chain", 1 / 4, "warp-specialised dK/dV (kernels/hopper_bwd_ws.py): "
                        "two consumer warpgroups of 64 key rows, a TMA producer warp",
                        terms="bwd_ws", lanes=2),
    # five equal GEMMs (S^T, dP^T, dV, dK, dQ_part = dS K): the same chain with 5 / 4 of the
    # tensor time, then the fp32 reductions of dQ_part at their form's throughput
    "bwd_dkdv-ws+dq": Kind("chain", 1 / 5, "warp-specialised dK/dV with dQ fused by fp32 "
                           "atomics (FUSED_DQ)", terms="bwd_ws", lanes=2, products=5 / 4,
                           atomics=True),
    # the d 192 chunked launches: the chain on d 192 work (three 64-wide chunks, no padding)
    "d192-dv": Kind("chain", 0.0, "d 192 dV launch (kernels/hopper_bwd_chunked.py PART 1): "
                    "S^T and dV, 2 products a tile pair", terms="d192_dv"),
    "d192-dk": Kind("chain", 1 / 3, "d 192 dK launch (PART 2): S^T, dP^T (issued with S^T), "
                    "dK, 3 products", terms="d192_dk"),
    "d192-dq": Kind("chain", 1 / 3, "d 192 dQ launch: S, dP (issued with S), dQ, 3 products",
                    terms="d192_dq"),
    "d192-pair": Kind("launches", 0.0, "the d 192 dK/dV pass as its dV and dK launches"),
}


@lru_cache(maxsize=4)
def compiled(path: str = GLUON_FILE) -> dict:
    """{"pass|label|causal": {"regs", "smem", ...}} of the stored offline compile."""
    with open(path) as f:
        return json.load(f)["kernels"]


def closed_form(kernel: GluonKernel, d: int, elem_bytes: int = 2) -> tuple[int, int]:
    """(registers per thread, shared-memory bytes) from the kernel's budgets (docstring)."""
    if kernel.specialised:
        warps = kernel.num_warps  # 12: two consumer warpgroups and the producer's
        regs = (2 * 4 * CONSUMER_REGS + 4 * PRODUCER_REGS) // warps
        # Q (and the persistent kernel's O buffers), the K and V rings
        tiles = (2 if kernel.persistent else 1) * 2 * (WS_ROWS // 2) * d \
            + 2 * kernel.stages * kernel.block_n * d
        bars = (2 + 2 + 4 * kernel.stages) * BARRIER_BYTES
        return regs, tiles * elem_bytes + bars
    return tl_resources(kernel.pass_, d, kernel.config, None, elem_bytes)


def resources(kernel: GluonKernel, d: int, causal: bool, elem_bytes: int = 2
              ) -> tuple[int, int, str]:
    """(registers, shared-memory bytes, "compiled" or "closed form") of one program."""
    if kernel.family == "d192" and elem_bytes == 2:
        hit = gluon_bwd.d192_compiled().get(
            (kernel.part or "dq", f"M{kernel.block_m}N{kernel.block_n}w{kernel.num_warps}"
             f"s{kernel.stages}", bool(causal)))
        if hit:
            return (*hit, "compiled")
    if kernel.family == "ws":
        return (*gluon_bwd.ws_resources(kernel.block_m, kernel.block_n, kernel.num_warps,
                                        kernel.stages, d, bool(kernel.fused), elem_bytes),
                "closed form")
    if elem_bytes == 2:
        hit = compiled().get(
            f"{kernel.pass_}|{kernel.canonical}|{int(d)}|{int(bool(causal))}")
        if hit:
            return hit["regs"], hit["smem"], "compiled"
    return (*closed_form(kernel, d, elem_bytes), "closed form")


@dataclass(frozen=True)
class PipelineTerms:
    """The warp-specialised forward's schedule constants (module docstring)."""
    fixed_s: float          # per program: Q in, the ring's fill, O out (one program per SM,
    #                         nothing co-resident hides it)
    hidden: dict            # schedule -> the fraction of the shorter stage (softmax or
    #                         GEMMs) hidden under the longer one, per iteration
    balance: float = 0.0    # the exposed rest scales with (shorter / longer) ** balance: the
    #                         nearer the two stages, the less slack the longer leaves


# Fitted by `python -m kernels_gpu.bench.fit_model --gluon` on GLUON_FIT_SUBSET (see there).
PIPELINE = PipelineTerms(fixed_s=2e-6, hidden={"ws": 0.25, "lag": 0.4, "pingpong": 0.35},
                         balance=0.25)
GLUON_FIT_SUBSET = ("the launch studies of data/gluon_studies_h100.json (each Gluon kernel and "
                    "`tl` dQ timed alone; the d 192 ones each launch alone, `launch_ms`) at N "
                    "1024 and 16384; held out: their N 512, 2048, 4096, 8192, every whole "
                    "backward of the studies and every dispatch run "
                    "(data/dispatch_runs_h100.json)")


def overlap_hidden(rate, kernel: GluonKernel | None) -> float:
    """Seconds of the launch's serial chain that the backward's OVERLAP schedule takes off it:
    the GEMM issued asynchronously (dP^T, dP: KINDS' share of the tensor time) runs
    under the exponentials, so the shorter of the two leaves the chain; 0 with OVERLAP 0."""
    if kernel is None or not kernel.overlap:
        return 0.0
    return min(KINDS[kernel.kind].overlap_share * rate.tensor_s, rate.sfu_s)


def phase(kernel: GluonKernel) -> str | None:
    """The tile machine's phase of the kernel's launch (None: the forward)."""
    if kernel.family == "d192":
        return ("dq", "dv", "dk")[kernel.part]
    return {"fwd": None, "bwd_dkdv": "dkdv", "bwd_dq": "dq"}[kernel.pass_]


def launch_schedule(kernel: GluonKernel, n: int, d: int, batch: int = 1, heads: int = 1,
                    causal: bool = False, nk: int | None = None,
                    kv_heads: int | None = None) -> Schedule:
    """The launch's schedule with the kernel's tiles (its traffic: schedule.predict_traffic;
    the tile simulator's: traffic.simulated_traffic with config=kernel.config)."""
    return schedule(n, d, batch, heads, causal, pass_=kernel.pass_, config=kernel.config,
                    nk=nk, kv_heads=kv_heads, part=kernel.part or None)
