"""What every closed form returns: ``Cost`` (instruction counts) and ``Bound`` (least traffic)."""

from __future__ import annotations

__all__ = ["Cost", "Bound", "ops_of", "compulsory", "scalar_work", "SCALAR_FLOPS"]

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..isa import MNEMONICS
from ..machine import DEFAULT_MACHINE, Machine


@dataclass(frozen=True)
class Cost:
    """Instruction counts of a program, in closed form."""

    ops: Mapping[str, int]  # mnemonic → instructions executed
    registers: int  # distinct registers the program names
    breakdown: Mapping[str, float] = field(default_factory=dict)  # named parts (e.g. "Q row loads")
    # the units' work beyond issue, for a machine with rates (``Machine.work_cycles``): words moved,
    # matmul / vector FLOPs, EXP/LOG elements; None = only issue cycles (the scalar machine's programs)
    work: Mapping[str, float] | None = None

    def __post_init__(self):
        ordered = {m: int(self.ops[m]) for m in MNEMONICS if self.ops.get(m)}
        object.__setattr__(self, "ops", MappingProxyType(ordered))
        object.__setattr__(self, "breakdown", MappingProxyType(dict(self.breakdown)))
        if self.work is not None:
            object.__setattr__(self, "work", MappingProxyType(dict(self.work)))

    @property
    def reads(self) -> int:
        """DRAM words read (= LOADs on the scalar machine)."""
        return self.ops.get("LOAD", 0)

    @property
    def writes(self) -> int:
        """DRAM words written (= STOREs)."""
        return self.ops.get("STORE", 0)

    @property
    def instructions(self) -> int:
        return sum(self.ops.values())

    def cycles(self, machine: Machine | None = None) -> float:
        """Σ count × the machine's cycles for that instruction, plus (``work`` given) the units'
        cycles on a machine with rates — the simulator's in-order formula."""
        machine = machine or DEFAULT_MACHINE
        total = sum(n * machine.op_cycles(op) for op, n in self.ops.items())
        total += sum(machine.work_cycles(**(self.work if self.work is not None else scalar_work(self.ops))).values())
        return int(total) if float(total).is_integer() else total


@dataclass(frozen=True)
class Bound:
    """Least DRAM traffic (words) of any program for the computation on this machine."""

    reads: int  # every input word read once
    writes: int  # every output word written once
    traffic: int  # reads + writes, or a stronger bound on their sum
    source: str  # which argument gives ``traffic``


# a scalar instruction is the 1×1×1 case of its tile form: (unit, FLOPs) — as the simulator counts it
SCALAR_FLOPS = {"MAC_Z": ("matmul", 1), "MAC": ("matmul", 2), "MAX": ("vector", 1), "SUB": ("vector", 1),
                "ADD": ("vector", 1), "MUL": ("vector", 1), "DIV": ("vector", 1), "EXP": ("sfu", 1)}


def scalar_work(ops: Mapping[str, int]) -> dict[str, float]:
    """The units' work of scalar instructions: one word per LOAD/STORE, ``SCALAR_FLOPS`` each."""
    work: dict[str, float] = {"words": ops.get("LOAD", 0) + ops.get("STORE", 0), "matmul": 0, "vector": 0, "sfu": 0,
                              "matmul_outputs": ops.get("MAC_Z", 0)}  # a scalar MAC_Z writes one element
    for op, n in ops.items():
        if op in SCALAR_FLOPS:
            unit, per = SCALAR_FLOPS[op]
            work[unit] += per * n
    return work


def ops_of(**counts: int) -> dict[str, int]:
    return {op.upper(): n for op, n in counts.items() if n}


def compulsory(reads: int, writes: int) -> Bound:
    """The bound every program meets: each input word read once, each output word written once."""
    return Bound(reads, writes, reads + writes, "every input read once, every output written once")
