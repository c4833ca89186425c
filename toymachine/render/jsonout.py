"""``--format json``: the JSON contract (``Result.to_dict``), narrowed and kept small.

* ``fields``: only these keys (``cycles,dram,ops``; a dotted path picks inside an object:
  ``dram.reads``). An unknown key is an error naming the keys there are.
* ``memory_max``: an array (in ``memory``, ``registers`` or a step's registers) with more
  elements than this is *summarised*: ``{"summary": true, "shape": [...], "elements": n,
  "min", "max", "mean", "nan", "inf"}`` (over its finite values; NaN counts never-written
  cells too) instead of its nested lists. The default, ``MEMORY_MAX`` = 1024 elements (a
  32 × 32 tile), keeps the seed's programs whole and one FA2 head small; ``None`` dumps every
  array whole. ``memory=False`` leaves ``memory`` out.
* ``error_json(err)``: the error object a command prints on stdout under ``-f json``.
"""

from __future__ import annotations

__all__ = ["dump_json", "result_json", "select_fields", "error_json", "error_object", "MEMORY_MAX", "JSON_KEYS"]

import dataclasses
import json
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import ConfigError, Namer, Opt, ToyMachineError, field_words
from ..result import MemoryView, Result, _nested_json, json_value

MEMORY_MAX = 1024  # elements; larger arrays are summarised unless a full dump is asked for

# the documented top-level keys (docs/reference/json.md): always valid in --json-fields
JSON_KEYS = ("file", "cycles", "instructions", "ops", "dram", "registers_used", "registers", "memory", "machine",
             "dtype", "symbolic", "alarms", "underflows", "first_underflow", "steps", "sram_peak", "sram_words",
             "flops", "sfu_ops", "cycle_breakdown", "tile_traffic", "hbm_footprint", "time_s", "roofline")


def _compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def dump_json(obj: dict) -> str:
    """One key per line at the top level, and one entry per line inside ``memory``,
    ``registers`` and ``steps``; everything below that compact. (json's ``indent`` turns
    off its C encoder, which made a run with a million-element array spend seconds here.)"""
    lines = ["{"]
    items = list(obj.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if key in ("memory", "registers", "steps") and value:
            if isinstance(value, dict):
                entries = [f"    {_compact(k)}: {_compact(v)}" for k, v in value.items()]
                lines += [f"  {_compact(key)}: {{", ",\n".join(entries), f"  }}{comma}"]
            else:
                lines += [f"  {_compact(key)}: [", ",\n".join("    " + _compact(v) for v in value), f"  ]{comma}"]
        else:
            lines.append(f"  {_compact(key)}: {_compact(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def summarise(a: np.ndarray) -> dict:
    """A big array as a few numbers (never-written cells are NaN in ``a``, counted as unwritten
    when ``written`` says so)."""
    a = np.asarray(a, dtype=np.float64)
    finite = a[np.isfinite(a)]
    out: dict[str, Any] = {"summary": True, "shape": list(a.shape), "elements": int(a.size)}
    if finite.size:
        out.update(min=float(finite.min()), max=float(finite.max()), mean=float(finite.mean()))
    else:
        out.update(min=None, max=None, mean=None)
    out.update(nan=int(np.isnan(a).sum()), inf=int(np.isinf(a).sum()))
    return out


def _big(v, limit: int | None) -> bool:
    return limit is not None and hasattr(v, "size") and hasattr(v, "shape") and v.size > limit


def _register_json(v, limit: int | None):
    if _big(v, limit):
        return summarise(v)
    return json_value(v)


def result_json(result: Result, *, steps: bool = True, memory: bool = True,
                memory_max: int | None = MEMORY_MAX, name: Namer = field_words) -> dict:
    """``result.to_dict(steps=…)`` with big arrays summarised (``memory_max``) and ``memory``
    left out if asked — without ever making the nested lists of a summarised array; the warnings'
    parameters said by ``name`` (the front's words)."""
    light = dataclasses.replace(result, memory={}, registers={}, steps=None)
    d = light.to_dict(steps=False, name=name)
    d["registers"] = {k: _register_json(v, memory_max) for k, v in result.registers.items()}
    if memory:
        d["memory"] = {name: _memory_json(result, name, memory_max) for name in result.memory}
    else:
        del d["memory"]
    if steps and result.steps is not None:
        d["steps"] = [{"step": s.step, "line": s.line, "instruction": s.instruction,
                       "registers": {n: _register_json(v, memory_max) for n, v in zip(result.register_names, s.registers)}}
                      for s in result.steps]
    return d


def _memory_json(result: Result, name: str, limit: int | None):
    mem = result.memory
    if limit is not None and isinstance(mem, MemoryView) and not result.symbolic:
        shape = mem._arrays[name].shape or []
        if math.prod(shape) > limit:
            return summarise(mem.array(name))
    return _nested_json(mem[name])


def select_fields(d: dict, fields: Iterable[str]) -> dict:
    """Only the given keys of ``d`` (dotted paths reach inside), in the order asked."""
    out: dict = {}
    for path in fields:
        path = path.strip()
        if not path:
            continue
        parts = path.split(".")
        if parts[0] not in d and parts[0] not in JSON_KEYS:
            raise ConfigError((Opt("json_fields"), f": no key '{parts[0]}' in this run's JSON"
                               + _did_you_mean(parts[0], d)), key="json_fields", hint="keys: " + ", ".join(d))
        value: Any = d.get(parts[0])
        for depth, p in enumerate(parts[1:], 1):
            if not isinstance(value, dict) or p not in value:
                where = ".".join(parts[:depth])
                have = ", ".join(value) if isinstance(value, dict) else "none (not an object)"
                raise ConfigError((Opt("json_fields"), f": no key '{p}' in {where}"), key="json_fields",
                                  hint=f"keys of {where}: {have}")
            value = value[p]
        target = out
        for p in parts[:-1]:
            target = target.setdefault(p, {})
        target[parts[-1]] = value
    return out


def _did_you_mean(name: str, keys) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(keys), n=1, cutoff=0.7)
    return f" (did you mean '{close[0]}'?)" if close else ""


def error_object(err: ToyMachineError, name: Namer = field_words) -> dict[str, Any]:
    """The error object every front answers with (``toym … -f json`` on stdout, ``toym serve``'s 4xx):
    ``message`` and ``hint`` (each parameter said by ``name``: the CLI's flags, else the keys),
    ``kind``, the location (``file``, ``line``, ``column``), and the fields a caller tests —
    ``key`` (the parameter concerned), ``suggestion`` (a value of it that fixes the error) and
    ``code`` (which of a kind's causes). Absent parts are null."""
    loc = err.loc
    suggestion = err.suggestion
    if suggestion is not None and not isinstance(suggestion, (str, int, float, bool)):
        suggestion = str(suggestion)
    return {"message": err.text_in(name), "file": loc.where(name) if loc else None,
            "line": loc.line if loc and loc.line else None, "column": loc.col if loc and loc.col else None,
            "hint": err.hint_in(name), "kind": err.kind, "key": err.key, "suggestion": suggestion,
            "code": err.code}


def error_json(err: ToyMachineError, name: Namer = field_words) -> str:
    """``{"error": error_object(err, name)}`` as JSON text."""
    return json.dumps({"error": error_object(err, name)}, ensure_ascii=False, indent=2) + "\n"
