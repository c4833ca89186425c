"""A wheel's ``toym serve`` offers the same examples as a checkout: the bundled programs and problems
travel as the wheel's data files (pyproject's ``[tool.setuptools.data-files]``) and the installed
package finds them under its environment's prefix. Builds the wheel from a copy of this checkout's
sources (setuptools, no network; the copy keeps the build's ``build/`` out of the checkout), installs it with no dependencies into a fresh virtual environment that sees this
one's packages, and asks the *installed* copy — run from outside the checkout — for its listing,
an example's text and a graded check of a reference trace against a bundled problem."""

import json
import os
import shutil
import subprocess
import sys
import venv

import pytest
from conftest import PROGRAMS, ROOT

PROBLEMS = ROOT / "examples" / "problems"

pytest.importorskip("setuptools", minversion="70.1")  # the test extra asks for it
pytestmark = pytest.mark.slow  # a wheel build and a virtual environment

_PROBE = r"""
import json, sys
import toymachine
from toymachine.serve import examples, handlers
listing = examples.listing()
status, body, _ = handlers.check({"trace": open(sys.argv[1]).read(), "problem": sys.argv[2],
                                  "options": {"format": "json"}})
print(json.dumps({"package": toymachine.__file__, "roots": [str(r) for r in examples.roots()],
                  "programs": [p["name"] for p in listing["programs"]],
                  "problems": [p["name"] for p in listing["problems"]],
                  "c00": examples.example_text("programs", "c00"),
                  "status": status, "grade": json.loads(body)}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    skip = shutil.ignore_patterns("node_modules", "__pycache__", "results", "*.egg-info")
    for name in ("toymachine", "kernels_gpu", "programs", "examples/problems"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp / "dist"), str(src)], check=True, cwd=tmp, capture_output=True)
    (wheel,) = (tmp / "dist").glob("toymachine-*.whl")
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(tmp / "env")
    python = tmp / "env" / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--no-index", str(wheel)], check=True, capture_output=True)
    return tmp, python


def test_a_wheel_serves_the_bundled_programs_and_problems(installed):
    tmp, python = installed
    reference = (PROGRAMS / "c00.asm").read_text(encoding="utf-8")
    (tmp / "trace.asm").write_text(reference, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed copy, not a checkout on the path
    out = subprocess.run([str(python), "-c", _PROBE, str(tmp / "trace.asm"), "p1_c00"], cwd=tmp, env=env,
                         capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert str(ROOT) not in got["package"], "the probe must import the installed copy, not the checkout"
    assert not any(r == str(ROOT) for r in got["roots"])
    assert got["programs"] == sorted(p.stem for p in PROGRAMS.glob("*.asm"))
    assert got["problems"] == sorted(p.stem for p in PROBLEMS.glob("*.yaml"))
    assert got["c00"] == reference
    # the problem's reference (../../programs/c00.asm, relative to the installed problem) resolves:
    # the seed's own trace earns the whole score
    assert got["status"] == 200
    assert got["grade"]["score"] == got["grade"]["max_score"] > 0
