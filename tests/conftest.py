import os

# Small matrices only: BLAS threads would just contend for this machine's two cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

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


@pytest.fixture
def toym():
    """Run the CLI in-process: returns (exit_code, stdout, stderr)."""
    from typer.testing import CliRunner

    from toymachine.cli import app

    runner = CliRunner()

    def call(*args, input=None):
        res = runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)
        return res.exit_code, res.stdout, res.stderr

    return call
