"""The measurements the time model, the tests and the performance page read: the files of
`kernels_gpu/data/`, each declared in `kernels_gpu/data/manifest.json` with its role (fit input,
test fixture, published table), the GPU it ran on, the software and the command that makes it.

Nothing here lists a folder: a reader names the file (and, for a bundle of runs, the part) it
wants, and a file the manifest does not declare, or one it declares that is absent, is an error
naming it (`DataError`).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = ["DATA_DIR", "MANIFEST", "ROLES", "DataError", "Entry", "manifest", "entry", "path",
           "load_json", "load_text", "part", "parts", "files_with_role"]

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
MANIFEST = os.path.join(DATA_DIR, "manifest.json")
ROLES = ("fit input", "test fixture", "published table")


class DataError(LookupError):
    """A data file the manifest does not declare, or one it declares that is missing."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"kernels_gpu/data/{name}: {reason}")
        self.name = name
        self.reason = reason


@dataclass(frozen=True)
class Entry:
    """One declared file: `role` (ROLES), `gpu` (or the offline compile's target), `software`
    (name -> version), `command` (what regenerates it), `what` (what it holds), and for a
    bundle of runs `parts` (part name -> its own command)."""

    name: str
    role: str
    gpu: str
    software: dict[str, str]
    command: str
    what: str
    parts: dict[str, str] = field(default_factory=dict)


def manifest(path: str | None = None) -> dict[str, Entry]:
    """file name -> Entry, as declared (default: data/manifest.json)."""
    return _manifest_of(path or MANIFEST)


@lru_cache(maxsize=4)
def _manifest_of(path: str) -> dict[str, Entry]:
    if not os.path.exists(path):
        raise DataError("manifest.json", "the manifest is missing")
    with open(path) as f:
        raw = json.load(f)
    out = {}
    for name, e in raw["files"].items():
        if e["role"] not in ROLES:
            raise DataError(name, f"role {e['role']!r} is not one of {', '.join(ROLES)}")
        out[name] = Entry(name, e["role"], e["gpu"], dict(e["software"]), e["command"],
                          e["what"], dict(e.get("parts", {})))
    return out


def entry(name: str) -> Entry:
    """The manifest's entry for `name`; DataError if it declares none."""
    try:
        return manifest()[name]
    except KeyError:
        raise DataError(name, "not declared in kernels_gpu/data/manifest.json") from None


def path(name: str) -> str:
    """The path of a declared file; DataError if undeclared or missing."""
    entry(name)
    p = os.path.join(DATA_DIR, name)
    if not os.path.exists(p):
        raise DataError(name, "declared in the manifest but missing")
    return p


@lru_cache(maxsize=64)
def _json(name: str) -> Any:
    with open(path(name)) as f:
        return json.load(f)


def load_json(name: str) -> Any:
    """A declared JSON file's content (parsed once; callers must not modify it)."""
    return _json(name)


def load_text(name: str) -> str:
    """A declared text file (an ncu CSV, say)."""
    with open(path(name)) as f:
        return f.read()


def parts(name: str) -> list[str]:
    """The part names of a declared bundle (a file holding several runs), as declared."""
    return list(entry(name).parts)


def part(name: str, key: str) -> Any:
    """One run of a declared bundle: `load_json(name)`'s runs / studies entry `key`."""
    if key not in entry(name).parts:
        raise DataError(name, f"declares no part {key!r}")
    content = load_json(name)
    body = content.get("studies", content.get("runs", {}))
    if key not in body:
        raise DataError(name, f"part {key!r} is declared but missing from the file")
    return body[key]


def files_with_role(role: str) -> list[str]:
    """The declared files of one role, in the manifest's order."""
    return [n for n, e in manifest().items() if e.role == role]

