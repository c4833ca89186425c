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

__all__ = ["autograder_zip", "build_wheel", "SETUP_SH", "run_autograder_script"]

import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..errors import ConfigError, Location
from .problem import load_variants

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v pip3 >/dev/null 2>&1; then
    apt-get install -y python3 python3-pip
fi
pip3 install ./{wheel} || pip3 install --break-system-packages ./{wheel}   # Ubuntu 24.04: PEP 668
"""


def run_autograder_script(problem_name: str) -> str:
    return f"""#!/usr/bin/env bash
# Gradescope runs this for every submission: grade /autograder/submission into
# /autograder/results/results.json (toym check --format gradescope). TOYM_AUTOGRADER_ROOT
# replaces /autograder (a test's temporary tree); TOYM_PYTHON the interpreter.
set -u
ROOT="${{TOYM_AUTOGRADER_ROOT:-/autograder}}"
PY="${{TOYM_PYTHON:-python3}}"
mkdir -p "$ROOT/results"
STUDENT=$("$PY" -c '
import json, sys
try:
    with open(sys.argv[1], encoding="utf-8") as fh:
        user = (json.load(fh).get("users") or [{{}}])[0]
    print(user.get("email") or user.get("sid") or user.get("id") or "")
except Exception:
    print("")
' "$ROOT/submission_metadata.json")
"$PY" -m toymachine check "$ROOT/submission" --problem "$ROOT/source/{problem_name}" \\
    --student "$STUDENT" --format gradescope -o "$ROOT/results/results.json"
status=$?
if [ "$status" -ge 2 ] || [ ! -s "$ROOT/results/results.json" ]; then
    printf '{{"score": 0, "output": "The autograder could not grade this submission (toym exit status %s); '\\
'please tell your lecturer.", "tests": []}}\\n' "$status" > "$ROOT/results/results.json"
fi
exit 0
"""


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
    """The upload for ``problem`` with ``wheel`` = (file name, bytes)."""
    path = Path(problem)
    variants = load_variants(path)  # a broken problem file fails here, not on Gradescope
    text = path.read_text(encoding="utf-8")
    files = [_entry("setup.sh", SETUP_SH.format(wheel=wheel[0]), 0o755),
             _entry("run_autograder", run_autograder_script(path.name), 0o755),
             _entry(path.name, text, 0o644), _entry(wheel[0], wheel[1], 0o644)]
    machines = set()
    for v in variants:
        node = v.locations.get("machine")
        name = node.source_line.split(":", 1)[1].split("#")[0].strip().strip("'\"") if node and node.source_line else ""
        candidate = path.parent / name
        if name and candidate.is_file():
            if "/" in name.replace("\\", "/") or name.startswith("."):
                raise ConfigError(f"the machine file {name} must sit next to the problem to be bundled",
                                  loc=Location(str(path)), hint="copy it beside the problem file")
            machines.add(name)
    files += [_entry(m, (path.parent / m).read_bytes(), 0o644) for m in sorted(machines)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for info, data in files:
            zf.writestr(info, data)
    return buf.getvalue()
