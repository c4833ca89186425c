import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "programs"
GOLDEN = Path(__file__).resolve().parent / "golden"


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
