"""The bundled examples the playground offers: ``programs/*.asm`` and ``examples/problems/*.yaml``.

Looked up by *name* in the listing of those folders (beside the package in a source checkout or
an editable install); a request never supplies a path, so nothing outside them can be opened.
A wheel without the folders lists no examples (the machine presets still come with the package).
"""

from __future__ import annotations

__all__ = ["listing", "example_text", "problem_path", "ROOT"]

import functools
from pathlib import Path

import yaml

from ..errors import ConfigError, Location

ROOT = Path(__file__).resolve().parents[2]  # the checkout: toymachine/serve/examples.py → ../../..
FOLDERS = {"programs": (ROOT / "programs", ".asm"), "problems": (ROOT / "examples" / "problems", ".yaml")}


@functools.lru_cache(maxsize=None)
def _files(kind: str) -> dict[str, Path]:
    folder, suffix = FOLDERS[kind]
    if not (ROOT / "pyproject.toml").is_file() or not folder.is_dir():  # a checkout, not site-packages
        return {}
    return {p.stem: p for p in sorted(folder.iterdir()) if p.suffix == suffix and p.is_file()}


def listing() -> dict[str, list[dict]]:
    """``{"programs": [{"name", "title"}], "problems": [{"name", "title"}]}`` (title: the first
    comment line of a program, a problem's ``title``)."""
    out: dict[str, list[dict]] = {}
    for kind in FOLDERS:
        rows = []
        for name, path in _files(kind).items():
            text = path.read_text(encoding="utf-8")
            rows.append({"name": name, "title": _title(kind, text)})
        out[kind] = rows
    return out


def _title(kind: str, text: str) -> str:
    if kind == "problems":
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            return ""
        return str(doc.get("title", "")) if isinstance(doc, dict) else ""
    for line in text.splitlines():
        s = line.strip()
        if s[:1] in (";", "#"):
            return s.lstrip(";# ").strip()
        if s:
            break
    return ""


def _find(kind: str, name: str) -> Path:
    if kind not in FOLDERS:
        raise ConfigError(f"no kind of example '{kind}'", loc=Location("examples"), hint="programs or problems")
    files = _files(kind)
    if name not in files:
        raise ConfigError(f"no bundled {kind[:-1]} named '{name}'", loc=Location("examples"),
                          hint="bundled: " + ", ".join(files) if files else "none bundled in this install")
    return files[name]


def example_text(kind: str, name: str) -> str:
    return _find(kind, name).read_text(encoding="utf-8")


def problem_path(name: str) -> str:
    """A bundled problem's path (its machine and reference paths are relative to it)."""
    return str(_find("problems", name))
