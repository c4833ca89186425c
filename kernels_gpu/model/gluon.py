"""The Gluon kernels as the time model sees them: which kernel ran, its tiles, its occupancy and
its schedule (issue 21, items 2 and 5).

A bench row names the kernel that ran where it is not the `tl` one: `fwd_kernel` (e.g.
"gluon M128N64w8", the one-partition Hopper forward of `kernels/hopper.py`, or
"gluon M128N128w12 ws-lag-s3", the warp-specialised forward of `kernels/hopper_ws.py` with its
schedule and ring stages) and `bwd_dkdv_kernel` ("gluon M64N64w4", the dK/dV of
`kernels/hopper_bwd.py`). `parse` turns a name into a `GluonKernel`; absent or "tl ..." is the
`tl` kernel (None), which the model handles as before.

What the model takes from the kernel, all from its code, none fitted on its measurements:

* **tiles** (`config`, `launch_schedule`): the blocks the tile machine and `schedule()` run,
  so the L2 words and the traffic (`schedule.predict_traffic`, `traffic.simulated_traffic(
  config=kernel.config)`) follow the kernel's tiles: 128 query rows (two consumer warpgroups
  of 64) x BLOCK_N for the warp-specialised forward, BLOCK_M x BLOCK_N for the others; all TMA.
* **occupancy** (`resources`): registers and shared memory of one program. The stored offline
  sm_90 compile (`results/resources_gluon_sm90.json`, `TRITON_INTERPRET=0 python -m
  kernels_gpu.bench.fit_model --compile-gluon`) where it has the kernel, else the closed form of
  the kernel's budgets: the warp-specialised forward's registers are set by `setmaxnreg`, two
  consumer warpgroups at 240 and the producer's warpgroup at 24 per thread (12 warps: 64 512
  registers, one program per SM); its shared memory the two Q halves and K, V x stages. The
  one-partition kernels: `occupancy.resources` of their config (2-stage TMA ring).
* **schedule** (`overlapped`): the one-partition kernels wait for every tile and every product
  in turn, like the `tl` kernels, so they run through the `tl` schedule (`predict.TERMS`). In
  the `lag` and `pingpong` schedules the softmax of tile j runs while P V of tile j-1 (and the
  other warpgroup's GEMMs) are on the tensor cores: matrix and softmax work are two stages of a
  software pipeline. A program of n iterations of tensor time T and softmax time S (per SM) then
  takes n max(T, S) + min(T, S) (the first softmax and the last P V have nothing to hide
  under), and no exposed latency: the waits the `tl` model charges as `exposed` are what the
  overlap hides. The `ws` schedule (no lag) is the two consumer warpgroups as two co-resident
  programs of 64 rows each running the `tl` chain.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache

from ..host.configs import KernelConfig
from .occupancy import resources as tl_resources
from .schedule import Schedule, schedule

__all__ = ["GluonKernel", "parse", "resources", "program_time", "launch_schedule", "GLUON_FILE",
           "WS_ROWS",
           "CONSUMER_REGS", "PRODUCER_REGS"]

GLUON_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "results", "resources_gluon_sm90.json")
WS_ROWS = 128          # query rows of a warp-specialised program: two consumer warpgroups of 64
CONSUMER_REGS = 240    # setmaxnreg of each consumer warpgroup (kernels/hopper_ws.py)
PRODUCER_REGS = 24     # setmaxnreg of the producer's warpgroup
BARRIER_BYTES = 8      # one mbarrier

_NAME = re.compile(r"gluon M(\d+)N(\d+)w(\d+)(?: ws-(ws|lag|pingpong)-s(\d+))?")


@dataclass(frozen=True)
class GluonKernel:
    label: str
    pass_: str          # "fwd" or "bwd_dkdv"
    block_m: int
    block_n: int
    num_warps: int
    stages: int         # the K/V (forward) or Q/dO (dK/dV) TMA ring
    schedule: str = ""  # "" (one partition), "ws", "lag" or "pingpong"

    @property
    def config(self) -> KernelConfig:
        """The tiles the tile machine and `schedule()` run for this kernel."""
        return KernelConfig(self.block_m, self.block_n, self.num_warps, self.stages, True)

    @property
    def specialised(self) -> bool:
        return bool(self.schedule)


def parse(label: str | None, pass_: str) -> GluonKernel | None:
    """The Gluon kernel a bench row names (`fwd_kernel` / `bwd_dkdv_kernel`), or None for the
    `tl` kernel (absent, or a name not starting with "gluon ")."""
    if not label or not label.startswith("gluon "):
        return None
    m = _NAME.fullmatch(label.strip())
    if m is None:
        raise ValueError(f"not a Gluon kernel name: {label!r} "
                         "(expected like 'gluon M128N64w8' or 'gluon M128N128w12 ws-lag-s3')")
    bm, bn, w = (int(g) for g in m.group(1, 2, 3))
    if m.group(4):
        return GluonKernel(label.strip(), pass_, bm, bn, w, int(m.group(5)), m.group(4))
    return GluonKernel(label.strip(), pass_, bm, bn, w, 2)


@lru_cache(maxsize=4)
def compiled(path: str = GLUON_FILE) -> dict:
    """{"pass|label|causal": {"regs", "smem", ...}} of the stored offline compile."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)["kernels"]


def closed_form(kernel: GluonKernel, d: int, elem_bytes: int = 2) -> tuple[int, int]:
    """(registers per thread, shared-memory bytes) from the kernel's budgets (docstring)."""
    if kernel.specialised:
        warps = kernel.num_warps  # 12: two consumer warpgroups and the producer's
        regs = (2 * 4 * CONSUMER_REGS + 4 * PRODUCER_REGS) // warps
        tiles = 2 * (WS_ROWS // 2) * d + 2 * kernel.stages * kernel.block_n * d
        bars = (2 + 2 + 4 * kernel.stages) * BARRIER_BYTES
        return regs, tiles * elem_bytes + bars
    return tl_resources(kernel.pass_, d, kernel.config, None, elem_bytes)


def resources(kernel: GluonKernel, d: int, causal: bool, elem_bytes: int = 2
              ) -> tuple[int, int, str]:
    """(registers, shared-memory bytes, "compiled" or "closed form") of one program."""
    if elem_bytes == 2:
        hit = compiled().get(f"{kernel.pass_}|{kernel.label}|{int(d)}|{int(bool(causal))}")
        if hit:
            return hit["regs"], hit["smem"], "compiled"
    return (*closed_form(kernel, d, elem_bytes), "closed form")


def program_time(iterations: int, tensor: float, softmax: float, rate: float) -> float:
    """Seconds of one warp-specialised program (`lag` / `pingpong`) of `iterations` loop
    iterations, each `tensor` s of matrix work and `softmax` s of vector + SFU work on its SM,
    `rate` the SM's throughput bound per iteration (max of tensor, softmax, HBM and L2 shares):
    a two-stage software pipeline, n max(stage) + min(stage) (docstring)."""
    if iterations <= 0:
        return 0.0
    return iterations * max(rate, tensor, softmax) + min(tensor, softmax)


def launch_schedule(kernel: GluonKernel, n: int, d: int, batch: int = 1, heads: int = 1,
                    causal: bool = False, nk: int | None = None,
                    kv_heads: int | None = None) -> Schedule:
    """The launch's schedule with the kernel's tiles (its traffic: schedule.predict_traffic;
    the tile simulator's: traffic.simulated_traffic with config=kernel.config)."""
    return schedule(n, d, batch, heads, causal, pass_=kernel.pass_, config=kernel.config,
                    nk=nk, kv_heads=kv_heads)
