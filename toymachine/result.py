"""The result of a run: counters, final registers and memory, optional step rows.

``Result.to_dict()`` is the JSON contract (``toym run --format json``); its keys are
documented in docs/reference/json.md (generated; tests/test_docs.py fails on an unexplained key).
"""

from __future__ import annotations

__all__ = ["Result", "Step", "Alarm", "MemoryView", "json_value", "arithmetic_intensity", "DISPLAY"]

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import Namer, field_words
from .program import ACCUMULATOR


def json_value(v: Any):
    """A register/memory value as JSON: numbers; 'inf'/'-inf'/'nan' strings; text for symbols."""
    if v is None:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(v, int):
        return v
    if hasattr(v, "tolist"):  # a tile (ndarray)
        return _nested_json(v.tolist())
    return str(v)


class MemoryView(Mapping):
    """Every array's final contents as nested lists, made on first access (a tile run's
    arrays can hold millions of words; most callers read one or two)."""

    def __init__(self, arrays: dict, convert: Callable | None = None):
        self._arrays = arrays  # name → memory.Array, final state
        self._convert = convert
        self._lists: dict[str, list] = {}

    def __getitem__(self, name: str) -> list:
        got = self._lists.get(name)
        if got is None:
            arr = self._arrays[name]
            got = self._lists[name] = self._convert(arr) if self._convert else arr.to_nested()
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def __repr__(self) -> str:
        return f"MemoryView({', '.join(self._arrays)})"

    def shape(self, name: str) -> tuple[int, ...]:
        """One array's shape, without making its nested lists (which may be billions of cells)."""
        return tuple(self._arrays[name].shape or ())

    def array(self, name: str) -> np.ndarray:
        """One array's final contents as float64 (cells never written: NaN)."""
        if name not in self._arrays:
            raise KeyError(f"no array named {name!r} (arrays: {', '.join(self._arrays)})")
        arr = self._arrays[name]
        if self._convert is None:
            return arr.to_array()
        return np.array(self[name], dtype=np.float64)


def arithmetic_intensity(flops: float, words: int, word_bytes: int) -> dict:
    """Arithmetic intensity (seed 000's quizzes): FLOPs per word and per byte of DRAM/HBM traffic
    (reads + writes). FLOPs as the simulator counts them: MAC_Z m·n·(2k−1), MAC 2·m·n·k (the
    scalar MAC_Z 1, MAC 2), one per elementwise result, r·(c−1) per row reduction. ``None``
    ratios when nothing moved."""
    flops = int(flops) if float(flops).is_integer() else flops
    return {"flops": flops, "words": words, "bytes": words * word_bytes,
            "flops_per_word": flops / words if words else None,
            "flops_per_byte": flops / (words * word_bytes) if words else None}


# Jupyter display of a Result, MIME type → renderer. The renderers live in a higher stage
# (toymachine.notebook), which fills this in when the package is imported; without them a
# Result shows as text.
DISPLAY: dict[str, Callable[[Result], str]] = {}


@dataclass(frozen=True)
class Step:
    """One executed instruction and the register file after it."""

    step: int
    line: int
    instruction: str
    registers: tuple  # values in Result.register_names order (None = never written)


@dataclass(frozen=True)
class Alarm:
    """A numerical event: overflow, nan, or division by zero (first of each kind)."""

    kind: str  # overflow | nan | div-by-zero | underflow
    step: int
    line: int
    instruction: str
    operands: tuple
    result: Any

    def to_dict(self) -> dict:
        return {"kind": self.kind, "step": self.step, "line": self.line, "instruction": self.instruction,
                "operands": [json_value(o) if not hasattr(o, "shape") else f"tile{tuple(o.shape)}" for o in self.operands],
                "result": json_value(self.result) if not hasattr(self.result, "shape") else f"tile{tuple(self.result.shape)}"}


@dataclass(frozen=True)
class Result:
    """Everything a run produced. Values are floats (or Expr in symbolic mode)."""

    file: str
    machine: dict
    cycles: float
    instructions: int
    ops: dict[str, int]
    dram_reads: int  # elements
    dram_writes: int  # elements
    word_bytes: int
    register_names: tuple[str, ...]
    registers: dict[str, Any]
    memory: Mapping[str, list]  # a MemoryView: nested lists made on first access
    steps: tuple[Step, ...] | None = None
    steps_dropped: bool = False
    alarms: tuple[Alarm, ...] = ()
    underflows: int = 0
    first_underflow: Alarm | None = None
    symbolic: bool = False
    dtype: str = "fp64"
    written_arrays: tuple[str, ...] = ()  # arrays the program stored to
    extra: dict = field(default_factory=dict)  # tile machine: sram_peak, flops, time_s …
    warnings: tuple = ()  # located ToyMachineErrors the run survived (arrays read but never given)
    # symbolic runs: names whole expressions as the seed does (c₀₀, m), for the tables (sim.symbolic.Namer)
    namer: Any = field(default=None, compare=False, repr=False)

    @property
    def registers_used(self) -> int:
        return sum(1 for name in self.register_names if name != ACCUMULATOR)  # ACC is in the MAC unit

    def array(self, name: str) -> np.ndarray:
        """Final contents of array ``name`` as a float64 ndarray of its declared shape
        (cells never written are NaN) — the API for comparing with numpy or a GPU kernel."""
        if isinstance(self.memory, MemoryView):
            return self.memory.array(name)
        return np.array(self.memory[name], dtype=np.float64)

    @property
    def read_bytes(self) -> int:
        return self.dram_reads * self.word_bytes

    @property
    def write_bytes(self) -> int:
        return self.dram_writes * self.word_bytes

    def _repr_html_(self) -> str | None:  # Jupyter: the run's tables (DISPLAY)
        show = DISPLAY.get("text/html")
        return show(self) if show else None

    def _repr_markdown_(self) -> str | None:
        show = DISPLAY.get("text/markdown")
        return show(self) if show else None

    def to_dict(self, *, steps: bool = True, name: Namer = field_words) -> dict:
        d: dict = {
            "file": self.file,
            "cycles": self.cycles,
            "instructions": self.instructions,
            "ops": dict(self.ops),
            "dram": {"reads": self.dram_reads, "writes": self.dram_writes,
                     "read_bytes": self.read_bytes, "write_bytes": self.write_bytes},
            "registers_used": self.registers_used,
            "registers": {k: json_value(v) for k, v in self.registers.items()},
            "memory": {k: _nested_json(v) for k, v in self.memory.items()},
            "machine": self.machine,
            "dtype": self.dtype,
            "symbolic": self.symbolic,
            "alarms": [a.to_dict() for a in self.alarms],
            "underflows": self.underflows,
            "first_underflow": self.first_underflow.to_dict() if self.first_underflow else None,
        }
        d.update(self.extra)
        if self.warnings:
            d["warnings"] = [w.to_dict(name) for w in self.warnings]  # parameters said by ``name``
        if steps and self.steps is not None:
            d["steps"] = [
                {"step": s.step, "line": s.line, "instruction": s.instruction,
                 "registers": {n: json_value(v) for n, v in zip(self.register_names, s.registers)}}
                for s in self.steps
            ]
        return d


def _nested_json(v):
    if isinstance(v, list):
        if v and all(type(x) is float for x in v) and math.isfinite(sum(v)):
            return v  # a row of finite floats is JSON as it is (the common, big case)
        return [_nested_json(x) for x in v]
    return json_value(v)
