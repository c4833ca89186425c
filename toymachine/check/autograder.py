"""Gradescope's autograder upload for one problem: ``autograder_zip(problem, wheel) -> bytes``.

The zip holds, at its root (Gradescope's layout: the zip's contents land in
``/autograder/source``): ``setup.sh`` (installs toym from the bundled wheel; pip fetches
numpy and co. from its index), ``run_autograder`` (grades ``/autograder/submission`` into
``/autograder/results/results.json``: ``toym check SUBMISSION --format gradescope``, the
student's variant picked from the e-mail address in ``submission_metadata.json``), the
problem file (and a machine file it names next to it) and the wheel. ``TOYM_AUTOGRADER_ROOT``
moves ``/autograder`` elsewhere (tests), ``TOYM_PYTHON`` picks the interpreter.
"""

from __future__ import annotations

__all__ = ["autograder_zip", "build_wheel", "SETUP_SH", "RUN_AUTOGRADER", "CONFIG_NAME"]

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..errors import ConfigError, Location
from ..named_paths import relative_to_folder
from .problem import load_variants

CONFIG_NAME = "autograder.json"  # {"problem": file name, "wheel": file name}: every name the scripts use

# Both scripts are fixed text: no name a lecturer chose is ever pasted into them. They read the
# names from autograder.json with Python and pass them on as quoted data.
SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v python3 >/dev/null 2>&1 || ! command -v pip3 >/dev/null 2>&1; then
    apt-get install -y python3 python3-pip
fi
WHEEL=$(python3 -c 'import json, sys; sys.stdout.write(json.load(open("autograder.json", encoding="utf-8"))["wheel"])')
pip3 install -- "./$WHEEL" || pip3 install --break-system-packages -- "./$WHEEL"   # Ubuntu 24.04: PEP 668
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission: grade /autograder/submission into
# /autograder/results/results.json (toym check --format gradescope). TOYM_AUTOGRADER_ROOT
# replaces /autograder (a test's temporary tree); TOYM_PYTHON the interpreter.
set -u
ROOT="${TOYM_AUTOGRADER_ROOT:-/autograder}"
PY="${TOYM_PYTHON:-python3}"
mkdir -p "$ROOT/results"
"$PY" - "$ROOT" "$PY" <<'GRADE'
import json, os, subprocess, sys

root, python = sys.argv[1], sys.argv[2]
results = os.path.join(root, "results", "results.json")
with open(os.path.join(root, "source", "autograder.json"), encoding="utf-8") as fh:
    problem = json.load(fh)["problem"]
try:
    with open(os.path.join(root, "submission_metadata.json"), encoding="utf-8") as fh:
        user = (json.load(fh).get("users") or [{}])[0]
    student = str(user.get("email") or user.get("sid") or user.get("id") or "")
except Exception:
    student = ""
status = subprocess.run([python, "-m", "toymachine", "check", os.path.join(root, "submission"),
                         "--problem=" + os.path.join(root, "source", problem), "--student=" + student,
                         "--format=gradescope", "--output=" + results]).returncode
if status >= 2 or not os.path.isfile(results) or os.path.getsize(results) == 0:
    with open(results, "w", encoding="utf-8") as fh:
        json.dump({"score": 0, "tests": [], "output": "The autograder could not grade this submission "
                   f"(toym exit status {status}); please tell your lecturer."}, fh)
        fh.write("\\n")
GRADE
exit 0
"""

# a wheel's file name (PEP 427): distribution-version(-build)?-python-abi-platform.whl
_WHEEL_NAME = re.compile(r"[A-Za-z0-9_.]+-[A-Za-z0-9_.!+]+(-[0-9][A-Za-z0-9_.]*)?-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+"
                         r"-[A-Za-z0-9_.]+\.whl")


WHEEL_EPOCH = 1767225600  # midnight UTC, 1 January 2026: the date of the zip's other entries


def build_wheel(project: str | os.PathLike | None = None) -> tuple[str, bytes]:
    """(file name, bytes) of toymachine's wheel, built from its source tree with
    ``pip wheel --no-deps --no-build-isolation`` (no network)."""
    root = Path(project) if project else Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        raise ConfigError(f"no toymachine source tree at {root} to build a wheel from",
                          hint="give a wheel with --wheel FILE (pip wheel --no-deps toymachine)")
    with tempfile.TemporaryDirectory(prefix="toym-wheel-") as tmp:
        src, out = Path(tmp) / "src", Path(tmp) / "out"  # a copy: the build writes nothing into the tree
        skip = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")
        src.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE", "setup.cfg", "setup.py"):
            if (root / name).is_file():
                shutil.copy2(root / name, src / name)
        for package in ("toymachine", "kernels_gpu"):
            if (root / package).is_dir():
                shutil.copytree(root / package, src / package, ignore=skip)
        env = dict(os.environ, SOURCE_DATE_EPOCH=str(WHEEL_EPOCH))  # the wheel's dates fixed: the same bytes
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                               "-w", str(out), str(src)], capture_output=True, text=True, env=env)
        wheels = sorted(out.glob("toymachine-*.whl"))
        if proc.returncode != 0 or not wheels:
            raise ConfigError("pip could not build the toymachine wheel: " + (proc.stderr.strip()[-500:] or "no wheel"),
                              hint="build one with `pip wheel --no-deps .` and pass it with --wheel FILE")
        return wheels[0].name, wheels[0].read_bytes()


def _entry(name: str, data: bytes | str, mode: int) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # fixed: the same inputs give the same bytes
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info, data.encode("utf-8") if isinstance(data, str) else data


def autograder_zip(problem: str | os.PathLike, wheel: tuple[str, bytes]) -> bytes:
    """The upload for ``problem`` with ``wheel`` = (file name, bytes). The problem, the wheel and the
    machine files the problem names (at their paths relative to it) are data in the zip;
    ``autograder.json`` names them for the two fixed scripts."""
    path = Path(problem)
    if not _WHEEL_NAME.fullmatch(wheel[0]):
        raise ConfigError(f"'{wheel[0]}' is not a wheel's file name", loc=Location(wheel[0]),
                          hint="a wheel is named NAME-VERSION-PYTHON-ABI-PLATFORM.whl, as pip wheel writes it")
    variants = load_variants(path)  # a broken problem file fails here, not on Gradescope
    text = path.read_text(encoding="utf-8")
    config = json.dumps({"problem": path.name, "wheel": wheel[0]}, indent=2, sort_keys=True) + "\n"
    files = [_entry("setup.sh", SETUP_SH, 0o755), _entry("run_autograder", RUN_AUTOGRADER, 0o755),
             _entry(CONFIG_NAME, config, 0o644), _entry(path.name, text, 0o644), _entry(wheel[0], wheel[1], 0o644)]
    machines: dict[str, str] = {}
    for v in variants:
        if v.machine_file is None:
            continue
        relative = relative_to_folder(v.machine_file, path)
        if relative is None:  # only with --allow-outside, which the autograder never passes
            raise ConfigError(f"the machine file {v.machine_file} lies outside the problem's folder",
                              loc=Location(str(path)), hint="copy it beside the problem file")
        machines[relative] = v.machine_file
    reserved = {info.filename for info, _ in files}
    for relative in sorted(machines):
        if relative in reserved:
            raise ConfigError(f"the machine file is named {relative}, a name the autograder uses itself",
                              loc=Location(str(path)), hint="rename the machine file")
        files.append(_entry(relative, Path(machines[relative]).read_bytes(), 0o644))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for info, data in files:
            zf.writestr(info, data)
    return buf.getvalue()
