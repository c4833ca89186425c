"""The tile simulator's prediction of one kernel launch's global-memory traffic.

`simulated_traffic(...)` runs the tile machine (toymachine.gen.tile) on the launch's own
schedule: the forward is FlashAttention-2 (Q tile outer, K/V streamed) with the kernel's
BLOCK_M/BLOCK_N; the backward is the split order, one program per launch (preprocess, dK/dV
with K/V outer, dQ with Q outer). The simulator counts words per array; they become bytes with
the kernel's element sizes (fp16/bf16 tensors `elem_bytes`, the fp32 lse and D 4 bytes). Every
head runs the same loops, so one head is simulated and its bytes are multiplied by batch x
heads (a test holds that equal to simulating all heads). The simulator has no cache: a tile
load is a global-memory read each time a program issues it.

The Gluon kernels run the same loops with their own blocks; `kernel` (a
Gluon label, `model.dispatch`) says which tensors they move through TMA (every (rows, d) tile
they read, O written by a TMA store), which ncu counts apart from pointer loads. `traffic.py`
puts these predictions beside ncu's counters.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from toymachine.gen.tile import attention_program
from toymachine.sim import simulate

from ..host.configs import KernelConfig
from .schedule import LSE_BYTES, Traffic, dkdv_part, launch_config, schedule

__all__ = ["LaunchPrediction", "simulated_traffic", "TILE_PROGRAM", "TENSOR_OF_ARRAY",
           "STAT_TENSORS"]


# ---------------------------------------------------------------- the simulator's prediction
# the tile program of each launch (toymachine.gen.tile.attention_program keywords)
TILE_PROGRAM: dict[str, dict[str, Any]] = {
    "fwd": dict(pass_="forward"),
    "bwd_preprocess": dict(pass_="backward", order="split", phase="preprocess"),
    "bwd_dkdv": dict(pass_="backward", order="split", phase="dkdv"),
    "bwd_dq": dict(pass_="backward", order="split", phase="dq"),
}
TENSOR_OF_ARRAY = {"L": "lse"}  # tile-machine array -> kernel tensor, where the names differ
STAT_TENSORS = ("lse", "D")  # fp32, LSE_BYTES per row whatever the input dtype


@dataclass(frozen=True)
class LaunchPrediction:
    """Bytes one launch moves between the SMs and global memory, as the tile simulator counts
    them for the kernel's schedule (all programs, all heads; no cache)."""

    pass_: str
    config: KernelConfig
    tensors: Mapping[str, tuple[int, int]]  # kernel tensor -> (bytes read, bytes written)
    tma_tensors: tuple[str, ...]  # tensors the launch loads through TMA descriptors
    compulsory_read_bytes: int  # every tensor the launch reads, once (what DRAM must supply)
    sim_words: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # one head, words
    kernel: str = ""  # the Gluon kernel's label (model.dispatch); "" the `tl` kernel
    tma_stores: tuple[str, ...] = ()  # outputs written by TMA stores (Schedule.tma_stores)
    load_copies: tuple[tuple[str, int], ...] = ()  # (tensor, requests per byte) where not 1

    def __post_init__(self):
        object.__setattr__(self, "tensors", MappingProxyType(dict(self.tensors)))
        object.__setattr__(self, "sim_words", MappingProxyType(dict(self.sim_words)))

    @property
    def read_bytes(self) -> int:
        return sum(r for r, _ in self.tensors.values())

    @property
    def write_bytes(self) -> int:
        return sum(w for _, w in self.tensors.values())

    @property
    def pointer_read_bytes(self) -> int:
        """Read bytes that come through pointer loads (ncu's l1tex ..._global_op_ld), a
        tensor every warp loads whole counted once per warp (`Schedule.load_copies`)."""
        copies = dict(self.load_copies)
        return sum(r * copies.get(t, 1) for t, (r, _) in self.tensors.items()
                   if t not in self.tma_tensors)

    @property
    def traffic(self) -> Traffic:
        return Traffic(self.read_bytes, self.write_bytes)


def simulated_traffic(n: int, d: int, batch: int = 1, heads: int = 1, causal: bool = False,
                      block_m: int | None = None, block_n: int | None = None, pass_: str = "fwd",
                      elem_bytes: int = 2, config: KernelConfig | None = None,
                      nk: int | None = None, kv_heads: int | None = None,
                      part: int | None = None, kernel: str = "") -> LaunchPrediction:
    """The tile simulator's bytes for one kernel launch (`pass_` in PASS_NAMES) with the
    launch's config (`schedule.launch_config`: `config`, or the blocks the wrapper would
    choose). Builds the tile program for that schedule, simulates one K/V head with the
    heads / kv_heads query heads that read it (one head when not grouped), and converts each
    array's words to bytes (elem_bytes per element; lse and D 4) times batch * kv_heads.
    nk: keys (default n; causal aligned bottom-right), kv_heads: K/V heads (default heads).
    part (dK/dV with dv_apart): 1 the dV launch, 2 the dK launch (the tile machine's phases dv,
    dk). kernel: the label of the Gluon kernel that runs the launch (`config` its tiles): the
    same loops and bytes, its TMA loads and stores recorded (`schedule.Schedule.tma_tensors`)."""
    nk = n if nk is None else nk
    kv_heads = heads if kv_heads is None else kv_heads
    group = heads // kv_heads
    cfg = launch_config(n, d, causal, block_m, block_n, pass_, elem_bytes, config, nk)
    part = dkdv_part(pass_, cfg, part)
    # a grouped dK/dV split over `split` programs: each is the tile program of group / split
    # query heads with its own copy of the K/V tile, writing fp32 partials
    split = cfg.split if pass_ == "bwd_dkdv" and group > 1 else 1
    shape: dict[str, Any] = {"nk": nk, "kv_heads": 1} if (nk, group // split) != (n, 1) else {}
    program = attention_program(n=n, d=d, algo="fa2", causal=causal, block_m=cfg.block_m,
                                block_n=cfg.block_n, heads=group // split, **shape,
                                **dict(TILE_PROGRAM[pass_], **({"phase": ("dv", "dk")[part - 1]}
                                                                 if part else {})))
    result = simulate(program, dtype="fp64", steps=False)
    words = {a: (t["reads"], t["writes"]) for a, t in result.extra["tile_traffic"].items()}
    copies = batch * kv_heads * split  # the simulated K/V head (or share), once per program row
    tensors, compulsory = {}, 0
    sizes = {a.name: math.prod(a.shape) for a in program.arrays if a.shape is not None}
    for array, (r, w) in words.items():
        tensor = TENSOR_OF_ARRAY.get(array, array)
        per = LSE_BYTES if tensor in STAT_TENSORS else elem_bytes
        w_per = 4 if split > 1 and tensor in ("dK", "dV") else per  # fp32 partials
        tensors[tensor] = (r * per * copies, w * w_per * copies)
        if r:
            compulsory += sizes[array] * per * copies
    s = schedule(n, d, batch, heads, causal, pass_=pass_, elem_bytes=elem_bytes, config=cfg,
                 nk=nk, kv_heads=kv_heads, part=part or None, kernel=kernel)
    return LaunchPrediction(pass_, cfg, tensors, s.tma_tensors, compulsory, words, kernel,
                            s.tma_stores, tuple(sorted(s.load_copies.items())))
