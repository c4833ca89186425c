"""Machines: the frozen ``Machine`` config (register file, memory levels, unit rates), the YAML
loader and the presets in ``presets/`` (``toym run --machine NAME``)."""

from __future__ import annotations

__all__ = ["Machine", "DEFAULT_MACHINE", "TILE_FIELDS", "load_machine", "load_named_machine", "resolve_machine", "preset_names",
           "PRESET_DIR"]

from .config import DEFAULT_MACHINE, TILE_FIELDS, Machine
from .loader import PRESET_DIR, load_machine, load_named_machine, preset_names, resolve_machine
