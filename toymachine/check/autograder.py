"""Gradescope's autograder upload for a problem or an assignment:
``autograder_zip(FILE, wheel) -> bytes``.

The zip holds, at its root (Gradescope's layout: the zip's contents land in
``/autograder/source``):

* ``setup.sh`` — installs ``requirements.txt`` (a fixed script: no name of a file or problem
  is pasted into it);
* ``requirements.txt`` — every dependency toym needs, pinned to the exact version installed
  where the zip was built (``importlib.metadata``: numpy cannot move under a running term), and
  the bundled wheel;
* ``run_autograder`` — a fixed script that runs ``python3 -m toymachine.check.gsrun``: it
  grades ``/autograder/submission`` against every problem into
  ``/autograder/results/results.json``, the student's variants picked by the e-mail address in
  ``submission_metadata.json``;
* ``autograder.json`` — the data ``gsrun`` reads: the title, each problem's file, submission
  file name and points, and the wheel's name. Both scripts are fixed text: no name a lecturer
  chose is ever pasted into them;
* the problem files (and the machine files they name, beside them), and the wheel.

``build_wheel`` makes the toymachine wheel from the installed package's own files with the
standard library's ``zipfile`` (the wheel format: the files, ``METADATA``, ``WHEEL``,
``entry_points.txt`` and a ``RECORD`` of sha256 digests): no ``pip wheel``, ``setuptools`` or
``bdist_wheel`` is needed where ``toym autograder`` runs, so it works after a plain
``pip install``. ``TOYM_AUTOGRADER_ROOT`` moves ``/autograder`` elsewhere (tests),
``TOYM_PYTHON`` picks the interpreter.
"""

from __future__ import annotations

__all__ = ["autograder_zip", "build_wheel", "SETUP_SH", "RUN_AUTOGRADER", "run_autograder_script", "pinned_requirements",
           "CONFIG_NAME"]

import base64
import hashlib
import io
import json
import os
import re
import sys
import zipfile
from pathlib import Path

from ..errors import ConfigError, Location, Opt

CONFIG_NAME = "autograder.json"  # every name the scripts use: problems, submission files, the wheel

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image: toym and the exact
# versions of its dependencies it was built with (requirements.txt).
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v pip3 >/dev/null 2>&1; then
    apt-get install -y python3 python3-pip
fi
pip3 install -r requirements.txt || pip3 install --break-system-packages -r requirements.txt   # Ubuntu 24.04: PEP 668
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission: grade /autograder/submission against the problems
# that source/autograder.json lists, into /autograder/results/results.json.
# TOYM_AUTOGRADER_ROOT replaces /autograder (a test's temporary tree); TOYM_PYTHON the interpreter.
set -u
ROOT="${TOYM_AUTOGRADER_ROOT:-/autograder}"
PY="${TOYM_PYTHON:-python3}"
mkdir -p "$ROOT/results"
"$PY" -m toymachine.check.gsrun "$ROOT"
status=$?
if [ "$status" -ne 0 ] || [ ! -s "$ROOT/results/results.json" ]; then
    printf '{"score": 0, "output": "The autograder could not grade this submission (toym exit status %s); '\\
'please tell your lecturer.", "tests": []}\\n' "$status" > "$ROOT/results/results.json"
fi
exit 0
"""


def run_autograder_script(problem_name: str | None = None) -> str:
    """The ``run_autograder`` script: the same text for every problem (names are data, in the manifest)."""
    return RUN_AUTOGRADER


# a wheel's file name (PEP 427): distribution-version(-build)?-python-abi-platform.whl
_WHEEL_NAME = re.compile(r"[A-Za-z0-9_.]+-[A-Za-z0-9_.!+]+(-[0-9][A-Za-z0-9_.]*)?-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+"
                         r"-[A-Za-z0-9_.]+\.whl")

WHEEL_EPOCH = (2026, 1, 1, 0, 0, 0)  # the date of every zip entry: the same inputs give the same bytes
_SKIP = re.compile(r"(^|/)(__pycache__)(/|$)|\.py[co]$")


def _package_root() -> Path:
    return Path(__file__).resolve().parents[1]


def _requires() -> list[str]:
    """toymachine's own dependencies (no extras): the installed metadata's, else pyproject.toml's."""
    pyproject = _package_root().parent / "pyproject.toml"
    if pyproject.is_file() and sys.version_info >= (3, 11):  # (Python 3.10 has no tomllib: the metadata's)
        import tomllib

        with open(pyproject, "rb") as fh:
            return list(tomllib.load(fh)["project"]["dependencies"])
    from importlib import metadata

    try:
        return [r for r in (metadata.requires("toymachine") or []) if "extra ==" not in r]
    except metadata.PackageNotFoundError:
        return ["typer", "rich", "numpy", "pyyaml", "pygments"]


def _version() -> str:
    pyproject = _package_root().parent / "pyproject.toml"
    if pyproject.is_file() and sys.version_info >= (3, 11):  # (Python 3.10 has no tomllib: the metadata's)
        import tomllib

        with open(pyproject, "rb") as fh:
            return str(tomllib.load(fh)["project"]["version"])
    from importlib import metadata

    try:
        return metadata.version("toymachine")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def _name(requirement: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return m.group(1) if m else ""


def _applies(requirement: str) -> bool:
    """A requirement of no extra whose marker holds here."""
    if ";" not in requirement:
        return True
    marker = requirement.split(";", 1)[1]
    if "extra" in marker:
        return False
    try:
        from packaging.markers import Marker
    except ImportError:  # without packaging: every marked requirement that is installed counts
        return True
    try:
        return Marker(marker).evaluate({"extra": ""})
    except Exception:
        return False


def pinned_requirements() -> list[str]:
    """``name==version`` of every package toym needs at run time, as installed here (the closure of
    its dependencies, sorted by name)."""
    from importlib import metadata

    seen: dict[str, str] = {}
    todo = [r for r in _requires() if _applies(r)]
    while todo:
        req = todo.pop()
        name = _name(req)
        key = re.sub(r"[-_.]+", "-", name).lower()
        if not name or key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = f"{dist.metadata['Name'] or name}=={dist.version}"
        todo += [r for r in (dist.requires or []) if _applies(r)]
    return [seen[k] for k in sorted(seen)]


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(project: str | os.PathLike | None = None) -> tuple[str, bytes]:
    """(file name, bytes) of toymachine's pure-Python wheel, made with ``zipfile`` from the files of
    the package ``project`` (default: this one, wherever it is installed) and its metadata."""
    root = Path(project) / "toymachine" if project else _package_root()
    if not (root / "__init__.py").is_file():
        raise ConfigError(f"no toymachine package at {root} to build a wheel from",
                          key="wheel", hint=("give a wheel with ", Opt("wheel", "FILE"),
                                             " (`pip wheel --no-deps toymachine`)"))
    version = _version()
    dist_info = f"toymachine-{version}.dist-info"
    files: list[tuple[str, bytes]] = []
    for path in sorted(root.rglob("*")):
        rel = "toymachine/" + path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and not _SKIP.search(rel):
            files.append((rel, path.read_bytes()))
    metadata_text = "".join([
        "Metadata-Version: 2.1\n", "Name: toymachine\n", f"Version: {version}\n",
        "Summary: An instruction-set simulator and cost model for the toy machine that teaches FlashAttention\n",
        "Requires-Python: >=3.10\n", *[f"Requires-Dist: {r}\n" for r in _requires()]])
    files += [(f"{dist_info}/METADATA", metadata_text.encode()),
              (f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: toymachine\nRoot-Is-Purelib: true\n"
                                     b"Tag: py3-none-any\n"),
              (f"{dist_info}/entry_points.txt", b"[console_scripts]\ntoym = toymachine.cli:main\n")]
    record = "".join(f"{n},{_digest(d)},{len(d)}\n" for n, d in files) + f"{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=WHEEL_EPOCH)
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return f"toymachine-{version}-py3-none-any.whl", buf.getvalue()


def _entry(name: str, data: bytes | str, mode: int) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name, date_time=WHEEL_EPOCH)  # fixed: the same inputs give the same bytes
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info, data.encode("utf-8") if isinstance(data, str) else data


def _machine_files(problem_path: Path, variants) -> dict[str, str]:
    """The machine files a problem names: their paths relative to its folder → the real files."""
    from ..named_paths import relative_to_folder

    out: dict[str, str] = {}
    for v in variants:
        if v.machine_file is None:
            continue
        relative = relative_to_folder(v.machine_file, problem_path)
        if relative is None:  # only with --allow-outside, which the autograder never passes
            raise ConfigError(f"the machine file {v.machine_file} lies outside the problem's folder",
                              loc=Location(str(problem_path)), hint="copy it beside the problem file")
        out[relative] = v.machine_file
    return out


def autograder_zip(problem: str | os.PathLike, wheel: tuple[str, bytes]) -> bytes:
    """The upload for a problem or an assignment file, with ``wheel`` = (file name, bytes)."""
    from .course import load_course_file
    from .problem import load_variants

    assignment = load_course_file(problem)  # a broken file fails here, not on Gradescope
    base = Path(assignment.file).parent
    if not _WHEEL_NAME.fullmatch(wheel[0]):
        raise ConfigError(f"'{wheel[0]}' is not a wheel's file name", loc=Location(wheel[0]),
                          hint="a wheel is named NAME-VERSION-PYTHON-ABI-PLATFORM.whl, as pip wheel writes it")
    bundled: dict[str, bytes] = {}
    parts = []
    for part in assignment.parts:
        path = Path(part.problem)
        rel = path.name if assignment.single else os.path.relpath(path, base).replace(os.sep, "/")
        bundled[rel] = path.read_bytes()
        folder = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
        for relative, real in _machine_files(path, load_variants(path)).items():
            bundled[folder + relative] = Path(real).read_bytes()
        parts.append({"id": part.id, "problem": rel, "submission": part.submission, "points": part.points})
    manifest = json.dumps({"title": assignment.title, "single": assignment.single, "parts": parts,
                           "wheel": wheel[0]}, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    requirements = "".join(f"{r}\n" for r in pinned_requirements()) + f"./{wheel[0]}\n"
    files = [_entry("setup.sh", SETUP_SH, 0o755), _entry("run_autograder", RUN_AUTOGRADER, 0o755),
             _entry("requirements.txt", requirements, 0o644), _entry(CONFIG_NAME, manifest, 0o644)]
    reserved = {info.filename for info, _ in files} | {wheel[0]}
    for name in bundled:
        if name in reserved:
            raise ConfigError(f"a problem or machine file is named {name}, a name the autograder uses itself",
                              loc=Location(assignment.file), hint="rename that file")
    files += [_entry(name, data, 0o644) for name, data in sorted(bundled.items())]
    files.append(_entry(wheel[0], wheel[1], 0o644))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for info, data in files:
            zf.writestr(info, data)
    return buf.getvalue()
