"""What a tile program costs, as a record and as the accumulator the closed forms fill
(``toymachine.cost.tile``): ``TileCost`` holds instruction counts, HBM words per array, FLOPs,
SRAM peak and registers, and converts them to cycles and a roofline time by ``Machine``'s one
formula (the simulator's); ``Tally`` is what ``forward`` and ``backward``
add their per-program counts into.
"""

from __future__ import annotations

__all__ = ["TileCost", "Tally"]

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ...isa import MNEMONICS
from ...machine import DEFAULT_MACHINE, Machine


@dataclass(frozen=True)
class TileCost:
    """Everything a generated tile program costs, in closed form."""

    ops: Mapping[str, int]  # mnemonic → instructions executed
    reads: int  # HBM words read (all heads)
    writes: int  # HBM words written
    traffic: Mapping[str, tuple[int, int]]  # array → (words read, words written)
    flops_matmul: int
    flops_other: int  # includes sfu_ops
    sfu_ops: int  # EXP/LOG elements
    sram_peak: int  # words
    registers: int  # distinct registers the program names
    hbm_footprint: int = 0  # words of HBM the program's arrays occupy
    formula: str = ""  # the HBM formula in words, as the header prints it
    breakdown: Mapping[str, int] = field(default_factory=dict)
    mac_z_outputs: int = 0  # elements MAC_Z writes: each a whole MAC on a cycle-level machine

    def __post_init__(self):
        ordered = {m: int(self.ops[m]) for m in MNEMONICS if self.ops.get(m)}
        object.__setattr__(self, "ops", MappingProxyType(ordered))
        object.__setattr__(self, "traffic", MappingProxyType(dict(self.traffic)))

    @property
    def instructions(self) -> int:
        return sum(self.ops.values())

    @property
    def flops(self) -> int:
        return self.flops_matmul + self.flops_other

    def intensity(self, machine: Machine | None = None) -> float:
        """Arithmetic intensity: FLOPs per byte of HBM traffic (reads + writes) with ``machine``'s
        word size — the simulator's ``intensity.flops_per_byte``; per word: ``machine`` with
        ``word_bytes=1``."""
        m = machine or DEFAULT_MACHINE
        return self.flops / ((self.reads + self.writes) * m.word_bytes)

    def cycles(self, machine: Machine | None = None) -> float:
        """Cycles on ``machine`` by the simulator's formula (``Machine.work_cycles``)."""
        m = machine or DEFAULT_MACHINE
        issue = sum(n * m.op_cycles(op) for op, n in self.ops.items())
        work = m.work_cycles(words=self.reads + self.writes, matmul=self.flops_matmul,
                             vector=self.flops_other - self.sfu_ops, sfu=self.sfu_ops,
                             matmul_outputs=self.mac_z_outputs)
        total = issue + sum(work.values())
        return int(total) if float(total).is_integer() else total

    def time_s(self, machine: Machine) -> float | None:
        """The roofline estimate max(HBM time, compute time), as the simulator reports it."""
        if not machine.clock_hz:
            return None
        work = machine.work_cycles(words=self.reads + self.writes, matmul=self.flops_matmul,
                                   vector=self.flops_other - self.sfu_ops, sfu=self.sfu_ops)
        return max(work["hbm"], work["tensor"] + work["vector"] + work["sfu"]) / machine.clock_hz


class Tally:
    """Accumulates instruction counts, FLOPs and per-array words for the formulas."""

    def __init__(self) -> None:
        self.ops: Counter = Counter()
        self.mm = self.vec = self.sfu = 0
        self.mzo = 0  # elements MAC_Z writes (Machine.work_cycles: a whole MAC each on a cycle-level machine)
        self.reads: Counter = Counter()
        self.writes: Counter = Counter()

    def load(self, array: str, words: int, times: int = 1) -> None:
        self.ops["LOAD"] += times
        self.reads[array] += words

    def store(self, array: str, words: int, times: int = 1) -> None:
        self.ops["STORE"] += times
        self.writes[array] += words

    def op(self, name: str, times: int = 1, *, elems: int = 0, unit: str = "vec", outputs: int = 0) -> None:
        """``times`` instructions of ``name`` with ``elems`` FLOPs (or SFU ops) in all; ``outputs``: the
        elements a MAC_Z writes."""
        self.ops[name] += times
        self.mzo += outputs
        if unit == "mm":
            self.mm += elems
        elif unit == "sfu":
            self.sfu += elems
        else:
            self.vec += elems
