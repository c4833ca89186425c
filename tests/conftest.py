"""Shared fixtures and the suite's tiers.

Markers (registered in pyproject.toml; ``--strict-markers`` makes any other an error):

* ``slow`` — takes a quarter of a second of CPU or more; ``python -m pytest -m "not slow"`` is the fast tier.
* ``browser`` (headless Chromium), ``latex`` (pdflatex / lualatex), ``docs`` (an ``mkdocs build`` of
  the site), ``fuzz`` (the property-based fuzz suite), ``interpreter`` (Triton kernels launched in
  its interpreter on a CPU): each implies ``slow`` (``pytest_collection_modifyitems`` below adds it).
* ``gpu`` — needs a CUDA GPU (sm_90 for the Gluon kernels); skips without one.

A test that builds a wheel, runs a notebook kernel, rebuilds the npm bundle or compiles kernels
offline is marked ``slow`` by hand, as is any other test of a quarter of a second or more. Module-wide marks go in
``pytestmark``. A ``browser`` or ``latex`` test skips where its tool is missing (``need_tool``),
except under ``TOYM_REQUIRE_TOOLS=1`` (CI, which installs every tool), where it fails.

Every run spreads over the cores (pytest-xdist; ``-n auto`` in pyproject.toml's addopts, ``-n 0`` for
one process): a build several tests read is made once for every worker (``built_once``); ``chromium``
is one browser per worker and ``browser`` a fresh page of it.
"""

import os
import sys

# Small matrices only: BLAS threads would just contend for this machine's two cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

# The suite keeps compiled bytecode between runs (in the git-ignored __pycache__ folders) even where
# PYTHONDONTWRITEBYTECODE is set: else every pytest-xdist worker compiles the package and rewrites
# every test module again, and every `python -m toymachine` a test starts compiles the package again,
# seconds of CPU each, every run.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

import fcntl  # noqa: E402
import shutil  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# Property tests draw the same examples in every run (CI reproduces a local run; a failure is not a
# matter of luck). TOYM_HYPOTHESIS=explore draws fresh examples each run, and keeps found failures
# in .hypothesis/ (benchmarks/fuzz_campaign.py runs the longer campaigns).
settings.register_profile("toym", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("explore" if os.environ.get("TOYM_HYPOTHESIS") == "explore" else "toym")

# Without a GPU, Triton kernels run in its interpreter; the variable must be set before
# triton is first imported (triton.language's own @jit helpers read it at import time).
if not os.path.exists("/dev/nvidia0") and not os.environ.get("CUDA_VISIBLE_DEVICES"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "programs"
GOLDEN = Path(__file__).resolve().parent / "golden"


def run_outcome(run):
    """What a run gave, for comparing two paths of the simulator: the result as JSON (no steps, no
    file name), or the error it raised — its kind, message, hint and place (line, column, length)."""
    from toymachine.errors import ToyMachineError

    try:
        d = run().to_dict(steps=False)
    except ToyMachineError as err:
        loc = getattr(err, "loc", None)
        return (type(err).__name__, str(err), getattr(err, "hint", None),
                None if loc is None else (loc.line, loc.col, loc.length))
    d["file"] = None
    return d


def program_machine(path) -> list[str]:
    """``["--machine", NAME]`` for a bundled program whose header says ``; machine: NAME`` (it needs
    that machine, e.g. the MAC accumulator's toy2acc), else ``[]``."""
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.startswith(";"):
            break
        key, _, value = line[1:].strip().partition(":")
        if key == "machine":
            return ["--machine", value.strip()]
    return []


def pytest_addoption(parser):
    parser.addoption("--regen-golden", action="store_true", default=False,
                     help="rewrite tests/golden/*.json from the current simulator (review the diff!)")


@pytest.fixture
def regen(request):
    return request.config.getoption("--regen-golden")


def cli_runner():
    """A function running the CLI in-process: ``call(*args, input=None)`` returns (exit_code, stdout, stderr)."""
    from typer.testing import CliRunner

    from toymachine.cli import app

    runner = CliRunner()

    def call(*args, input=None):
        res = runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)
        return res.exit_code, res.stdout, res.stderr

    return call


@pytest.fixture
def toym():
    """Run the CLI in-process: returns (exit_code, stdout, stderr)."""
    return cli_runner()


# -- tiers --------------------------------------------------------------------------------------------
SLOW_TOOLS = ("browser", "latex", "docs", "fuzz", "interpreter")
REQUIRE_TOOLS = os.environ.get("TOYM_REQUIRE_TOOLS") == "1"


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects on the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("slow") is None and any(item.get_closest_marker(m) for m in SLOW_TOOLS):
            item.add_marker(pytest.mark.slow)


def need_tool(found, what: str, install: str):
    """``found`` (a path, a flag) if the tool is there; else skip the test, or fail it under
    ``TOYM_REQUIRE_TOOLS=1``, where a missing tool means the suite did not run what it claims."""
    if found:
        return found
    if REQUIRE_TOOLS:
        pytest.fail(f"{what} is missing and TOYM_REQUIRE_TOOLS=1 requires it ({install})", pytrace=False)
    pytest.skip(f"{what} is not installed ({install})")


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures start anything
def pytest_runtest_setup(item):
    if item.get_closest_marker("browser") is not None:
        from browser import find_chromium

        need_tool(find_chromium(), "Chromium", "apt-get install -y chromium")
    if item.get_closest_marker("latex") is not None:
        need_tool(shutil.which("pdflatex"), "pdflatex", "apt-get install -y texlive-latex-base")


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder that ``build(folder)`` fills once per test run and every pytest-xdist worker shares:
    the first worker to ask builds it under a file lock, the others wait and reuse it. A failed build
    fails every test that asks for it, in every worker (the traceback is kept beside the folder).
    ``build`` does not skip: check for the tools it needs (``need_tool``) before asking."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    folder, done, failed = base / name, base / f"{name}.done", base / f"{name}.failed"
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not done.exists() and not failed.exists():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                try:
                    build(folder)
                except (Exception, pytest.fail.Exception):
                    failed.write_text(traceback.format_exc(), encoding="utf-8")
                    raise
                done.touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if failed.exists():
        pytest.fail(f"building {name} failed:\n{failed.read_text(encoding='utf-8')[-6000:]}", pytrace=False)
    return folder


@pytest.fixture(scope="session")
def page_runs(request, tmp_path_factory) -> Callable:
    """``run(page)``: a docs page's (or the README's) run, made once per test run and shared by every
    test and worker that reads it (tests/page_runs.py). Where a selected test compiles the pages'
    LaTeX (it asks for ``latex_fragments``) and a TeX engine is installed, each run also holds each
    reporting command's ``-f latex`` output."""
    from page_runs import page_run

    latex = bool(shutil.which("pdflatex") or shutil.which("lualatex")) and any(
        "latex_fragments" in getattr(item, "fixturenames", ()) for item in request.session.items)
    return lambda page: page_run(tmp_path_factory, page, latex)


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium for the test run (for each pytest-xdist worker); tests take pages of it."""
    from browser import Chromium, find_chromium

    with Chromium(need_tool(find_chromium(), "Chromium", "apt-get install -y chromium")) as process:
        yield process


@pytest.fixture
def browser(chromium):
    """A page of the run's Chromium in a fresh browser context (nothing kept from another test)."""
    with chromium.new_page() as page:
        yield page
