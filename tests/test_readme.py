"""The README stays true: every `toym …` command in its bash blocks runs as written, in order, in one
folder holding copies of programs/ and examples/ (a later command may read an earlier one's -o file),
and every `<!-- toym-output -->`/`<!-- toym-error -->` block is what the command shown directly above it
prints — the same rules as the docs pages (docs/docgen/pages.py; tests/test_docs.py runs those). The
README runs once per test run (tests/page_runs.py), for this test and tests/test_latex.py."""

import os
import re
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "docs"))

from docgen.pages import normalise, steps  # noqa: E402

README = ROOT / "README.md"


def readme_commands() -> list[str]:
    """The README's `toym` command lines (without the leading `toym `: `run programs/c00.asm`)."""
    return ["toym " + s.text for s in steps(README.read_text(encoding="utf-8")) if s.kind == "command"]


COMMANDS = readme_commands()


def test_readme_has_commands():
    assert len(COMMANDS) >= 8


def test_readme_is_a_front_page():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


@pytest.mark.slow
def test_readme_commands_run_in_order(page_runs):
    failures = []
    for step, code, out, err in page_runs(README).results:
        want = 0 if step.kind == "command" else step.exit_status
        if code != want:
            failures.append((step.text, code, err[-1000:]))
        elif step.kind == "error" and normalise(err) != normalise(step.expected):
            failures.append((step.text, "stderr differs", err))
        elif step.kind == "output" and normalise(out) != normalise(step.expected):
            failures.append((step.text, "stdout differs", out))
    assert not failures, failures
    assert not [p for p in os.listdir(".") if p.startswith(".toym-")]


def test_readme_links_lead_somewhere():
    """Every relative link and image of the front page (into docs/, examples/) names a file that exists."""
    text = README.read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)\s#]+)", text) if "://" not in t]
    assert len(targets) >= 10
    assert [t for t in targets if not (ROOT / t).exists()] == []
