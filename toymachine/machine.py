"""Machine configuration: a frozen dataclass, loaded from YAML in one place.

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

The tile machine ("Element is Tile", seed 000: register file ↔ SRAM, DRAM ↔ HBM, MAC ↔
tensor core) adds, all optional::

    sram_words: 116736            # SRAM capacity in words (T registers + one word per R register)
    hbm_bytes_per_cycle: 1692     # HBM bandwidth
    tensor_flops_per_cycle: 499697  # MAC_Z/MAC on tiles
    vector_flops_per_cycle: 33792   # elementwise ops and row reductions on tiles
    sfu_ops_per_cycle: 2112       # EXP/LOG elements (default: the vector unit's rate)
    clock_hz: 1.98e9              # turns cycles into seconds: time_s (a roofline estimate)

Cost of a run (``toymachine.cost_tile.cycles_of`` documents the same formula)::

    cycles = Σ_instructions cycles[op]                      (issue: 1 each by default)
           + words moved · word_bytes / hbm_bytes_per_cycle   (if given)
           + matmul FLOPs / tensor_flops_per_cycle            (if given)
           + other FLOPs (excluding EXP/LOG) / vector_flops_per_cycle   (if given)
           + EXP/LOG elements / sfu_ops_per_cycle             (if given; else at the vector rate)

i.e. an in-order machine whose units never overlap. ``time_s`` is the roofline estimate
that lets them overlap perfectly: max(HBM time, compute time) / clock_hz, where HBM time
is the transfer term and compute time the sum of the three compute terms.
"""

from __future__ import annotations

__all__ = ["Machine", "load_machine", "resolve_machine", "preset_names", "DEFAULT_MACHINE"]

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import yaml

from .dtypes import DTYPES
from .errors import ConfigError, Location
from .isa import ISA, TILE_ONLY

PRESET_DIR = Path(__file__).with_name("presets")


def _frozen(d: Mapping[str, float] | None) -> Mapping[str, float]:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class Machine:
    """What the simulator runs on. All costs are in cycles; sizes in words or bytes."""

    name: str = "toy"
    description: str = "the seed's toy machine: every instruction 1 cycle, 4-byte words"
    registers: int | None = None  # None: as many as the program names
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

    def __post_init__(self):
        if not isinstance(self.cycles, MappingProxyType):
            object.__setattr__(self, "cycles", _frozen(self.cycles))

    def op_cycles(self, mnemonic: str) -> float:
        return self.cycles.get(mnemonic, 1)

    def work_cycles(self, *, words: float, matmul: float, vector: float, sfu: float) -> dict[str, float]:
        """Cycles of the units beyond instruction issue (0 where the machine gives no rate):
        HBM transfers, tensor-core FLOPs, vector FLOPs, special-function (EXP/LOG) elements."""
        sfu_rate = self.sfu_ops_per_cycle or self.vector_flops_per_cycle
        return {
            "hbm": words * self.word_bytes / self.hbm_bytes_per_cycle if self.hbm_bytes_per_cycle else 0,
            "tensor": matmul / self.tensor_flops_per_cycle if self.tensor_flops_per_cycle else 0,
            "vector": vector / self.vector_flops_per_cycle if self.vector_flops_per_cycle else 0,
            "sfu": sfu / sfu_rate if sfu_rate else 0,
        }

    @property
    def is_tile(self) -> bool:
        """Whether the machine describes SRAM or throughputs (then results report them)."""
        return any(getattr(self, f) is not None for f in TILE_FIELDS)

    def with_(self, **changes: Any) -> "Machine":
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
        return d


DEFAULT_MACHINE = Machine()

TILE_FIELDS = ("sram_words", "hbm_bytes_per_cycle", "tensor_flops_per_cycle", "vector_flops_per_cycle",
               "sfu_ops_per_cycle", "clock_hz")
_ROOFLINE_NEEDS = ("hbm_bytes_per_cycle", "tensor_flops_per_cycle", "vector_flops_per_cycle")
_FIELDS = {f.name for f in dataclasses.fields(Machine)}


def _node_loc(path: str, node, text_lines) -> Location:
    line = node.start_mark.line + 1
    col = node.start_mark.column + 1
    src = text_lines[line - 1] if 0 < line <= len(text_lines) else None
    length = max(1, node.end_mark.column - node.start_mark.column) if node.start_mark.line == node.end_mark.line else 1
    return Location(path, line, col, src, length)


def load_machine(path: str | os.PathLike, text: str | None = None) -> Machine:
    """Load a machine YAML file. Errors name the file, line and key."""
    path = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"no such machine file: {path}", loc=Location(path),
                              hint=f"built-in machines: {', '.join(preset_names())}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"machine file {path} is not UTF-8 text", loc=Location(path)) from None
        except OSError as exc:
            raise ConfigError(f"cannot read machine file {path}: {exc.strerror}", loc=Location(path)) from None
    lines = text.splitlines()
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        loc = Location(path, mark.line + 1, mark.column + 1, lines[mark.line] if mark and mark.line < len(lines) else None) if mark else Location(path)
        raise ConfigError(f"machine file is not valid YAML: {getattr(exc, 'problem', exc)}", loc=loc) from None
    if root is None:
        raise ConfigError("machine file is empty", loc=Location(path), hint="see examples/machines/ for the format")
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError("a machine file must be a mapping of keys to values", loc=_node_loc(path, root, lines))
    values: dict[str, Any] = {}
    for knode, vnode in root.value:
        key = knode.value
        if key not in _FIELDS:
            import difflib

            close = difflib.get_close_matches(key, sorted(_FIELDS), n=1)
            raise ConfigError(f"unknown key '{key}' in machine file", loc=_node_loc(path, knode, lines),
                              hint=(f"did you mean '{close[0]}'? " if close else "") + f"keys are: {', '.join(sorted(_FIELDS))}")
        value = yaml.safe_load(yaml.serialize(vnode)) if vnode is not None else None
        values[key] = (value, _node_loc(path, vnode, lines))
    return _build(values)


def _build(values: dict[str, tuple[Any, Location]]) -> Machine:
    kwargs: dict[str, Any] = {}
    for key, (value, loc) in values.items():
        ftype = {f.name: f.type for f in dataclasses.fields(Machine)}[key]
        if key == "cycles":
            if value is None:
                value = {}
            if not isinstance(value, dict):
                raise ConfigError("'cycles' must map instruction names to cycle counts", loc=loc,
                                  hint="e.g. cycles: {LOAD: 100, EXP: 4}")
            out = {}
            for op, c in value.items():
                if str(op).upper() not in ISA:
                    raise ConfigError(f"unknown instruction '{op}' in cycles", loc=loc,
                                      hint=f"instructions are: {', '.join(ISA)}")
                if isinstance(c, bool) or not isinstance(c, (int, float)) or c < 0:
                    raise ConfigError(f"cycles for {op} must be a non-negative number, got {c!r}", loc=loc)
                out[str(op).upper()] = c
            kwargs[key] = out
        elif key == "dtype":
            if str(value).lower() not in DTYPES:
                raise ConfigError(f"unknown dtype '{value}'", loc=loc, hint=f"choose one of {', '.join(DTYPES)}")
            kwargs[key] = str(value).lower()
        elif "int" in str(ftype):
            if value is None and "None" in str(ftype):
                kwargs[key] = None
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"'{key}' must be a positive integer, got {value!r}", loc=loc)
            kwargs[key] = value
        elif "float" in str(ftype):
            if value is None and "None" in str(ftype):
                kwargs[key] = None
                continue
            if isinstance(value, str):  # YAML 1.1 reads 1.98e9 (no '.', no sign) as text
                try:
                    value = float(value)
                except ValueError:
                    pass
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"'{key}' must be a positive number, got {value!r}", loc=loc)
            kwargs[key] = float(value)
        else:
            if not isinstance(value, str):
                raise ConfigError(f"'{key}' must be text, got {value!r}", loc=loc)
            kwargs[key] = value
    if kwargs.get("clock_hz") is not None:
        missing = [k for k in _ROOFLINE_NEEDS if kwargs.get(k) is None]
        if missing:
            raise ConfigError(f"'clock_hz' needs {', '.join(missing)} to estimate time", loc=values["clock_hz"][1],
                              hint="give the HBM bandwidth and the tensor/vector throughputs per cycle, "
                                   "or drop clock_hz")
    return Machine(**kwargs)


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def resolve_machine(spec: str | None) -> Machine:
    """``None`` → the default machine; a preset name; or a path to a YAML file."""
    if spec is None:
        return DEFAULT_MACHINE
    if os.path.exists(spec) or spec.endswith((".yaml", ".yml")) or os.sep in spec:
        return load_machine(spec)
    preset = PRESET_DIR / f"{spec.lower()}.yaml"
    if preset.exists():
        return load_machine(preset)
    raise ConfigError(f"no machine file or preset named '{spec}'", loc=Location("--machine"),
                      hint=f"built-in machines: {', '.join(preset_names())}; or pass a path to a YAML file")
