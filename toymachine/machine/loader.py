"""Machine files: YAML parsed in one place (unknown keys and bad values are errors that name
the file, line and key), and the presets shipped in ``presets/``."""

from __future__ import annotations

__all__ = ["load_machine", "resolve_machine", "preset_names", "PRESET_DIR"]

import dataclasses
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..dtypes import DTYPES
from ..errors import ConfigError, Location
from ..isa import ISA
from .config import (
    ACCOUNTINGS,
    DEFAULT_MACHINE,
    FIELDS,
    RATE_FIELDS,
    ROOFLINE_NEEDS,
    SRAM_RULES,
    Machine,
)
from .units import MXU, VPU, VPU_OPS

PRESET_DIR = Path(__file__).with_name("presets")


def _node_loc(path: str, node, text_lines) -> Location:
    line = node.start_mark.line + 1
    col = node.start_mark.column + 1
    src = text_lines[line - 1] if 0 < line <= len(text_lines) else None
    length = max(1, node.end_mark.column - node.start_mark.column) if node.start_mark.line == node.end_mark.line else 1
    return Location(path, line, col, src, length)


def load_machine(path: str | os.PathLike, text: str | None = None) -> Machine:
    """Load a machine YAML file. Errors name the file, line and key."""
    from .. import yamlsafe  # yaml loads with the first file that needs it (a fast start)

    path = str(path)
    if text is None:
        try:
            text = yamlsafe.read_text(path, "machine file")
        except FileNotFoundError:
            raise ConfigError(f"no such machine file: {path}", loc=Location(path),
                              hint=f"built-in machines: {', '.join(preset_names())}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"machine file {path} is not UTF-8 text", loc=Location(path)) from None
        except OSError as exc:
            raise ConfigError(f"cannot read machine file {path}: {exc.strerror}", loc=Location(path)) from None
    import yaml  # loaded with the first machine file (the default machine needs none)

    lines = text.splitlines()
    root = yamlsafe.compose(text, path, "machine file")
    if root is None:
        raise ConfigError("machine file is empty", loc=Location(path), hint="see examples/machines/ for the format")
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError("a machine file must be a mapping of keys to values", loc=_node_loc(path, root, lines))
    values: dict[str, Any] = {}
    for knode, vnode in root.value:
        if not isinstance(knode, yaml.ScalarNode):
            raise ConfigError("a machine file's keys are names, not lists or mappings", loc=_node_loc(path, knode, lines))
        key = knode.value
        if key in values:
            raise ConfigError(f"machine file: duplicate key '{key}' (first on line {values[key][1].line})",
                              loc=_node_loc(path, knode, lines), hint="give each key once")
        if key not in FIELDS:
            import difflib

            close = difflib.get_close_matches(key, sorted(FIELDS), n=1)
            raise ConfigError(f"unknown key '{key}' in machine file", loc=_node_loc(path, knode, lines),
                              hint=(f"did you mean '{close[0]}'? " if close else "") + f"keys are: {', '.join(sorted(FIELDS))}")
        value = yamlsafe.construct(vnode, path, lines, "machine file") if vnode is not None else None
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
            kwargs[key] = _cycle_counts(value, "cycles", ISA, loc, lambda op: (
                f"unknown instruction '{op}' in cycles", f"instructions are: {', '.join(ISA)}"))
        elif key == "mac_accumulator":
            if not isinstance(value, bool):
                raise ConfigError(f"'mac_accumulator' must be true or false, got {value!r}", loc=loc)
            kwargs[key] = value
        elif key == "sram_rule":
            if value not in SRAM_RULES:
                raise ConfigError(f"'sram_rule' must be one of {', '.join(SRAM_RULES)}, got {value!r}", loc=loc,
                                  hint="exact: every tile counts against sram_words; paper: only blocks of HBM "
                                       "matrices (the FlashAttention paper's Q_i, K_j, V_j, O_i)")
            kwargs[key] = value
        elif key == "accounting":
            if value not in ACCOUNTINGS:
                raise ConfigError(f"'accounting' must be one of {', '.join(ACCOUNTINGS)}, got {value!r}", loc=loc,
                                  hint="toym: each tile instruction at its unit's price; seed-002: seed 002's "
                                       "TPUCycleSimulator (its ops, its masking, M + K + N − 2 per matmul)")
            kwargs[key] = value
        elif key in ("mxu", "vpu"):
            kwargs[key] = _unit(key, value, loc)
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
    _check_units(kwargs, values)
    if kwargs.get("clock_hz") is not None:
        needs = ("hbm_bytes_per_cycle",) if kwargs.get("mxu") else ROOFLINE_NEEDS
        missing = [k for k in needs if kwargs.get(k) is None]
        if missing:
            raise ConfigError(f"'clock_hz' needs {', '.join(missing)} to estimate time", loc=values["clock_hz"][1],
                              hint="give the HBM bandwidth and the tensor/vector throughputs per cycle, "
                                   "or drop clock_hz")
    return Machine(**kwargs)


_UNIT_KEYS = {"mxu": ("rows", "cols", "count"), "vpu": ("lanes", "cycles_per_vector")}
_UNIT_EXAMPLE = {"mxu": "mxu: {rows: 128, cols: 128, count: 4}",
                 "vpu": "vpu: {lanes: 128, cycles_per_vector: {EXP: 2}}"}


def _cycle_counts(value: dict, what: str, known: Iterable[str], loc: Location,
                  unknown: Callable[[Any], tuple[str, str]]) -> dict[str, float]:
    """An instruction → cycles mapping (``cycles``, ``vpu.cycles_per_vector``): every name one of
    ``known`` (else an error with ``unknown(name)``'s message and hint), every count a non-negative
    number; names upper-cased."""
    out = {}
    for op, c in value.items():
        if str(op).upper() not in known:
            message, hint = unknown(op)
            raise ConfigError(message, loc=loc, hint=hint)
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0 <= c < float("inf"):
            raise ConfigError(f"{what} for {op} must be a non-negative number, got {c!r}", loc=loc)
        out[str(op).upper()] = c
    return out


def _unit(key: str, value, loc: Location):
    """``mxu: {rows, cols, count}`` or ``vpu: {lanes, cycles_per_vector}`` (``units`` says what they cost)."""
    if not isinstance(value, dict):
        raise ConfigError(f"'{key}' must be a mapping", loc=loc, hint=f"e.g. {_UNIT_EXAMPLE[key]}")
    args: dict[str, Any] = {}
    for name, v in value.items():
        if name not in _UNIT_KEYS[key]:
            raise ConfigError(f"unknown key '{name}' in '{key}'", loc=loc,
                              hint=f"'{key}' takes {', '.join(_UNIT_KEYS[key])}, e.g. {_UNIT_EXAMPLE[key]}")
        if name == "cycles_per_vector":
            if not isinstance(v, dict):
                raise ConfigError("'vpu.cycles_per_vector' must map instruction names to cycles", loc=loc,
                                  hint="e.g. cycles_per_vector: {EXP: 2, MASK: 2}")
            args[name] = _cycle_counts(v, "vpu.cycles_per_vector", VPU_OPS, loc, lambda op: (
                f"'{op}' in vpu.cycles_per_vector is not a vector-unit instruction",
                f"the VPU runs {', '.join(VPU_OPS)} on tiles"))
        else:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"'{key}.{name}' must be a positive integer, got {v!r}", loc=loc)
            args[name] = v
    return MXU(**args) if key == "mxu" else VPU(**args)


def _check_units(kwargs: dict, values: dict) -> None:
    """Units come as a pair and replace the rates; one on-chip capacity."""
    has = [k for k in ("mxu", "vpu") if kwargs.get(k) is not None]
    if len(has) == 1:
        other = "vpu" if has[0] == "mxu" else "mxu"
        raise ConfigError(f"'{has[0]}' needs '{other}': a machine with units prices every tile instruction by them",
                          loc=values[has[0]][1], hint=f"add e.g. {_UNIT_EXAMPLE[other]}")
    if has:
        rates = [k for k in RATE_FIELDS if kwargs.get(k) is not None]
        if rates:
            raise ConfigError(f"'{rates[0]}' is a rate of the unit-less tile machine; mxu and vpu price tile "
                              f"instructions here", loc=values[rates[0]][1], hint=f"drop {', '.join(rates)}")
    if kwargs.get("accounting", "toym") != "toym" and not has:
        raise ConfigError("'accounting' says how compute units price a program; this machine has none",
                          loc=values["accounting"][1], hint=f"add {_UNIT_EXAMPLE['mxu']} and {_UNIT_EXAMPLE['vpu']}")
    if kwargs.get("sram_words") is not None and kwargs.get("vmem_bytes") is not None:
        raise ConfigError("give the on-chip capacity once: 'sram_words' or 'vmem_bytes'", loc=values["vmem_bytes"][1],
                          hint="vmem_bytes names the on-chip level VMEM (in bytes); sram_words names it SRAM "
                               "(in words)")


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def load_named_machine(name: str, naming_file: str | os.PathLike, *,
                       allow_outside: bool = False) -> tuple[Machine, str | None]:
    """The machine a file (a problem) names: a bare preset name (``h100``) is the preset, anything else
    a machine file resolved by ``named_paths`` against ``naming_file``'s folder — never the working
    directory. Returns the machine and the file's real path (None for a preset)."""
    from ..named_paths import NamedPathError, resolve_named_file

    looks_like_path = "/" in name or "\\" in name or name.lower().endswith((".yaml", ".yml"))
    if not looks_like_path and name.lower() in preset_names():
        return load_machine(PRESET_DIR / f"{name.lower()}.yaml"), None
    try:
        path = resolve_named_file(name, naming_file, what="machine file", allow_outside=allow_outside)
    except NamedPathError as exc:
        if exc.reason != "missing" or looks_like_path:
            raise
        raise NamedPathError(f"no machine file or preset named '{name}'", reason=exc.reason, name=name,
                             folder=exc.folder, hint=f"built-in machines: {', '.join(preset_names())}; or a YAML "
                             "file next to the problem") from None
    return load_machine(path), path


def resolve_machine(spec: str | None) -> Machine:
    """``None`` → the default machine; a preset name; or a path to a YAML file."""
    if spec is None:
        return DEFAULT_MACHINE
    if os.path.exists(spec) or spec.endswith((".yaml", ".yml")) or os.sep in spec:
        return load_machine(spec)
    preset = PRESET_DIR / f"{spec.lower()}.yaml"
    if preset.exists():
        return load_machine(preset)
    raise ConfigError(f"no machine file or preset named '{spec}'", loc=Location.of_option("machine"), key="machine",
                      hint=f"built-in machines: {', '.join(preset_names())}; or pass a path to a YAML file")
