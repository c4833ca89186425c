"""The bundled examples the playground offers: ``programs/*.asm`` and ``examples/problems/*.yaml``.

Looked up by *name* in the listing of those folders; a request never supplies a path, so nothing
outside them can be opened. The folders are found beside the package in a source checkout or an
editable install, else where a wheel installs them (its data files: ``share/toymachine/programs`` and
``share/toymachine/examples/problems`` under the environment's prefix, or the user base for
``pip install --user``), so the page offers the same examples however toym was installed. The
problems' ``reference: ../../programs/…`` paths hold in both places.
"""

from __future__ import annotations

__all__ = ["listing", "example_text", "problem_path", "ROOT"]

import functools
import sysconfig
from pathlib import Path

import yaml

from ..errors import ConfigError, Location

ROOT = Path(__file__).resolve().parents[2]  # the checkout: toymachine/serve/examples.py → ../../..
FOLDERS = {"programs": ("programs", ".asm"), "problems": ("examples/problems", ".yaml")}
DATA = "share/toymachine"  # where pyproject's [tool.setuptools.data-files] puts the folders


def roots() -> list[Path]:
    """Where the example folders may be, in order: the checkout (only where it is one: its
    ``pyproject.toml`` beside the package), then the wheel's data files under the environment's
    prefix and under the user base."""
    found = [ROOT] if (ROOT / "pyproject.toml").is_file() else []
    for scheme in ("prefix", "user"):
        try:
            found.append(Path(sysconfig.get_path("data", sysconfig.get_preferred_scheme(scheme))) / DATA)
        except KeyError:  # no such scheme on this platform
            continue
    return found


@functools.cache
def _files(kind: str) -> dict[str, Path]:
    sub, suffix = FOLDERS[kind]
    for root in roots():
        folder = root / sub
        if folder.is_dir():
            return {p.stem: p for p in sorted(folder.iterdir()) if p.suffix == suffix and p.is_file()}
    return {}


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
