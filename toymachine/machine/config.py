"""Machine configuration: a frozen dataclass (``loader`` reads it from YAML).

The default machine is the seed's toy machine: every instruction costs 1 cycle, words
are 4 bytes, registers fp64 exact, and as many registers as the program names. A
machine file (``--machine FILE``) or a preset name (``--machine toy3``) changes that;
``--registers N`` overrides the register count.

YAML keys (units in the names; an unknown key is an error naming the file and key)::

    name: toy3
    description: the seed's 3-register machine
    registers: 3            # omit (or null) for "as many as the program names"
    word_bytes: 4           # bytes per DRAM word / element
    dtype: fp64             # fp64 | fp32 | fp16 | bf16 (register and DRAM format)
    cycles:                 # per-instruction cost; unlisted instructions cost 1
      LOAD: 1
      EXP: 4
    mac_accumulator: true   # the MAC unit keeps its own accumulator, register ACC (default false)

``mac_accumulator`` is seed 000's Blackwell remark ("the accumulator lives inside the compute
unit … shrinking the register file back toward 2 registers"): ``ACC`` is then a register that
is not in the register file — MAC_Z/MAC may write it, MAC may take it as its addend, STORE and
MOV may read it; nothing else touches it. ``registers: 2`` then computes a matmul.

The tile machine ("Element is Tile", seed 000: register file ↔ SRAM, DRAM ↔ HBM, MAC ↔
tensor core) adds, all optional::

    sram_words: 116736            # SRAM capacity in words (T registers + one word per R register)
    hbm_bytes_per_cycle: 1692     # HBM bandwidth
    tensor_flops_per_cycle: 499697  # MAC_Z/MAC on tiles
    vector_flops_per_cycle: 33792   # elementwise ops and row reductions on tiles
    sfu_ops_per_cycle: 2112       # EXP/LOG elements (default: the vector unit's rate)
    clock_hz: 1.98e9              # turns cycles into seconds: time_s (a roofline estimate)
    sram_rule: exact              # exact: every tile in SRAM counts against sram_words (default);
                                  # paper: only tiles of HBM matrices' blocks (a register a 2-D block is
                                  # LOADed into or STOREd from: Q_i, K_j, V_j, O_i …) — the FlashAttention
                                  # paper's Bc = ⌈M/4d⌉ sizes those four and leaves S, m, ℓ off the count

Cost of a run (``toymachine.cost.tile`` gives the same formula in closed form)::

    cycles = Σ_instructions cycles[op]                      (issue: 1 each by default)
           + words moved · word_bytes / hbm_bytes_per_cycle   (if given)
           + matmul FLOPs / tensor_flops_per_cycle            (if given)
           + other FLOPs (excluding EXP/LOG) / vector_flops_per_cycle   (if given)
           + EXP/LOG elements / sfu_ops_per_cycle             (if given; else at the vector rate)

i.e. an in-order machine whose units never overlap. ``time_s`` is the roofline estimate
that lets them overlap perfectly: max(HBM time, compute time) / clock_hz, where HBM time
is the transfer term and compute time the sum of the three compute terms.

A machine with compute units (seed 002's TPU: ``units`` has the formulas) declares them instead
of the tensor/vector/sfu rates, and may name its on-chip memory VMEM::

    mxu: {rows: 128, cols: 128, count: 4}     # systolic arrays (MAC_Z/MAC on tiles)
    vpu: {lanes: 128, cycles_per_vector: {EXP: 2}}   # every other tile op
    vmem_bytes: 134217728                     # on-chip capacity in bytes (instead of sram_words)

There a tile instruction costs its unit's cycles instead of ``cycles[op]`` (tile LOAD/STORE are the
DMA engine's: their cycles overlap the compute units and are not added), and

    cycles = Σ_scalar instructions cycles[op] + MXU cycles + VPU cycles

(the units in sequence, as seed 002 counts them); ``time_s`` = max(DMA time, that) / clock_hz.
"""

from __future__ import annotations

__all__ = ["Machine", "DEFAULT_MACHINE", "TILE_FIELDS", "SRAM_RULES", "ACCOUNTINGS", "UNIT_FIELDS", "MXU", "VPU"]

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..isa import ISA, TILE_ONLY
from .units import MXU, MXU_OPS, VPU, VPU_OPS, frozen_reduce


def _frozen(d: Mapping[str, float] | None) -> Mapping[str, float]:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class Machine:
    """What the simulator runs on. All costs are in cycles; sizes in words or bytes."""

    name: str = "toy"  # the machine's name, shown in reports and JSON (`machine`)
    description: str = "the seed's toy machine: every instruction 1 cycle, 4-byte words"  # a line under the name
    registers: int | None = None  # None: as many as the program names
    mac_accumulator: bool = False  # the MAC unit holds its own accumulator ACC (not a register-file register)
    word_bytes: int = 4  # bytes per DRAM word (element)
    dtype: str = "fp64"
    cycles: Mapping[str, float] = field(default_factory=lambda: _frozen({}))  # mnemonic → cycles
    # the tile machine (all optional; None = not modelled)
    sram_words: int | None = None  # SRAM capacity, words; None = unlimited
    hbm_bytes_per_cycle: float | None = None  # bytes per cycle between HBM and SRAM
    tensor_flops_per_cycle: float | None = None  # matmul FLOPs per cycle (MAC_Z/MAC on tiles)
    vector_flops_per_cycle: float | None = None  # other FLOPs per cycle (elementwise, row reductions)
    sfu_ops_per_cycle: float | None = None  # EXP/LOG elements per cycle; None = vector rate
    clock_hz: float | None = None  # cycles per second, for time_s
    sram_rule: str = "exact"  # what sram_words bounds: exact (every tile) | paper (blocks of HBM matrices only)
    # compute units (seed 002's TPU; None = not modelled): they price tile instructions
    mxu: MXU | None = None  # systolic arrays: MAC_Z/MAC on tiles
    vpu: VPU | None = None  # vector unit: every other tile op
    vmem_bytes: int | None = None  # on-chip memory named VMEM, bytes (instead of sram_words)
    accounting: str = "toym"  # how the units price a program: toym (per instruction) | seed-002 (the seed's ops)

    def __post_init__(self):
        if not isinstance(self.cycles, MappingProxyType):
            object.__setattr__(self, "cycles", _frozen(self.cycles))

    __reduce__ = frozen_reduce

    def op_cycles(self, mnemonic: str) -> float:
        return self.cycles.get(mnemonic, 1)

    def work_cycles(self, *, words: float, matmul: float, vector: float, sfu: float,
                    matmul_outputs: float = 0) -> dict[str, float]:
        """Cycles of the units beyond instruction issue (0 where the machine gives no rate):
        HBM transfers, tensor-core FLOPs, vector FLOPs, special-function (EXP/LOG) elements.
        A machine without a clock counts cycles as it spends them, whole (``whole_cycles``): its
        tensor unit takes one MAC a cycle per 2 FLOPs of rate, so a length-k dot product (k multiplies,
        k − 1 adds: 2k − 1 FLOPs) takes k MACs — ``matmul_outputs``, the elements MAC_Z wrote, add the
        multiply each output's first MAC spends without an add. A machine with a clock is a bandwidth
        model: its cycles are averages (its time, ``time_s``, is what it reports)."""
        sfu_rate = self.sfu_ops_per_cycle or self.vector_flops_per_cycle
        mm = matmul + matmul_outputs if self.whole_cycles else matmul
        return {
            "hbm": words * self.word_bytes / self.hbm_bytes_per_cycle if self.hbm_bytes_per_cycle else 0,
            "tensor": mm / self.tensor_flops_per_cycle if self.tensor_flops_per_cycle else 0,
            "vector": vector / self.vector_flops_per_cycle if self.vector_flops_per_cycle else 0,
            "sfu": sfu / sfu_rate if sfu_rate else 0,
        }

    @property
    def whole_cycles(self) -> bool:
        """A cycle-level machine (no clock: one instruction issued a cycle, each unit's work in whole
        steps) rather than a bandwidth model whose cycles are averages (``work_cycles``)."""
        return self.clock_hz is None

    @property
    def is_tile(self) -> bool:
        """Whether the machine describes SRAM or throughputs (then results report them)."""
        return any(getattr(self, f) is not None for f in TILE_FIELDS + UNIT_FIELDS)

    @property
    def has_units(self) -> bool:
        """Whether compute units (``mxu``, ``vpu``) price the tile instructions."""
        return self.mxu is not None or self.vpu is not None

    @property
    def onchip_words(self) -> int | None:
        """On-chip capacity in words: ``sram_words``, or ``vmem_bytes`` / ``word_bytes``."""
        if self.sram_words is not None:
            return self.sram_words
        return None if self.vmem_bytes is None else self.vmem_bytes // self.word_bytes

    @property
    def onchip_name(self) -> str:
        """The on-chip level's name in results: ``vmem`` on a machine that declares VMEM, else ``sram``."""
        return "vmem" if self.vmem_bytes is not None else "sram"

    def unit_of(self, mnemonic: str) -> str | None:
        """The unit that executes ``mnemonic`` on tiles (``mxu``, ``vpu``, ``dma``), or None when the
        per-instruction ``cycles`` and the rates price it."""
        if not self.has_units:
            return None
        if mnemonic in MXU_OPS:
            return "mxu"
        if mnemonic in VPU_OPS:
            return "vpu"
        return "dma" if mnemonic in ("LOAD", "STORE") else None

    def with_(self, **changes: Any) -> Machine:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The machine as JSON. Tile-only instructions and tile fields appear only when the
        machine describes a tile machine (so the seed's scalar results keep their shape)."""
        tile = self.is_tile or any(op in TILE_ONLY for op in self.cycles)
        d = {
            "name": self.name,
            "registers": self.registers,
            "word_bytes": self.word_bytes,
            "dtype": self.dtype,
            "cycles": {op: self.op_cycles(op) for op in ISA if tile or op not in TILE_ONLY},
        }
        if tile:
            d.update({f: getattr(self, f) for f in TILE_FIELDS})
        if self.mac_accumulator:
            d["mac_accumulator"] = True
        if self.sram_rule != "exact":
            d["sram_rule"] = self.sram_rule
        if self.accounting != "toym":
            d["accounting"] = self.accounting
        for f in UNIT_FIELDS:  # only when declared: every other machine's JSON keeps its shape
            v = getattr(self, f)
            if v is not None:
                d[f] = v.to_dict() if hasattr(v, "to_dict") else v
        return d


DEFAULT_MACHINE = Machine()
SRAM_RULES = ("exact", "paper")
ACCOUNTINGS = ("toym", "seed-002")  # seed-002: seed 002's TPUCycleSimulator (cost.tpu_seed, sim.engines.seed_units)

TILE_FIELDS = ("sram_words", "hbm_bytes_per_cycle", "tensor_flops_per_cycle", "vector_flops_per_cycle",
               "sfu_ops_per_cycle", "clock_hz")
UNIT_FIELDS = ("mxu", "vpu", "vmem_bytes")
RATE_FIELDS = ("tensor_flops_per_cycle", "vector_flops_per_cycle", "sfu_ops_per_cycle")  # replaced by units
ROOFLINE_NEEDS = ("hbm_bytes_per_cycle", "tensor_flops_per_cycle", "vector_flops_per_cycle")
FIELDS = {f.name for f in dataclasses.fields(Machine)}


