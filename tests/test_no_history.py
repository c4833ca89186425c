"""The project says what its code does and why, never how or when it was made.

Code, comments, docstrings, tests and docs are read by someone who takes the project over: a line
that speaks of a work session, an issue number, a lent GPU, device time, the date of a run or "the
old …" tells them about a moment, not about the code. History lives in git and in CHANGELOG.md.

Every tracked text file is scanned (one case per top-level folder, so each folder's state shows
apart); data records (JSON, CSV: stored measurements carry the date they were taken), the built
playground bundle and CHANGELOG.md are not prose and are left out. ``ALLOWED`` names the few
legitimate uses of a flagged word, each with its reason."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest
from conftest import ROOT

NARRATION = {
    "a work session": re.compile(r"\bsessions?\b", re.I),
    # (not the cost model's "issue 163 + HBM 125": cycles to issue the instructions)
    "an issue number": re.compile(r"\bissues?[ -]#?\d+(?!\d)(?! *[+=])|\bitems? \d+\b", re.I),
    "a wave of work": re.compile(r"\bwaves? \d+\b", re.I),
    "lending or device time": re.compile(r"\blent\b|\bdevice time\b", re.I),
    "the date of a run": re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b"),
    "an ordinal sitting": re.compile(r"\b(first|second|third|fourth|fifth|sixth|2nd|3rd|4th|5th) (sitting|round of work)\b",
                                     re.I),
    "the old version": re.compile(r"\bthe old\b(?! (max|maximum|running|scale|tile|l\b|m\b|sum|row))", re.I),
}

# (path glob, pattern over the line, why it is not narration)
ALLOWED: list[tuple[str, re.Pattern[str], str]] = [
    ("tests/test_limits.py", re.compile(r"2024-01-01"), "a YAML timestamp the safe loader must keep a string"),
    ("tests/test_fuzz.py", re.compile(r"2024-01-01"), "a YAML timestamp among the fuzzed scalars"),
    ("toymachine/cli/common.py", re.compile(r"the old spelling goes in the next release"),
     "the note a deprecated option prints to its user"),
    ("tests/test_kernels_gpu_*.py", re.compile(r'"20\d\d-\d\d-\d\d \d\d:\d\d UTC"'),
     "a stored measurement row's date field: an input of the code under test"),
    ("tests/*.py", re.compile(r'scope="session"|request\.session|\b(test|pytest) session\b|\bper session\b'
                              r"|\bfor the session\b|\bthe session's (folder|Chromium)"),
     "pytest's test session (a fixture's scope), not a sitting of work"),
    ("tests/test_course.py", re.compile(r":created_at: 20\d\d-\d\d-\d\d \d\d:\d\d"),
     "a submission time in Gradescope's export metadata: an input of the code under test"),
    ("tests/*.py", re.compile(r'scope="session"|\brequest\.session\b'),
     "pytest's session scope and object: one test run, not a sitting of work"),
]

TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ini", ".sh", ".asm", ".tex", ".html",
                 ".css", ".js", ".mjs", ".ts", ".ipynb", ""}
LEFT_OUT = {"CHANGELOG.md", "tests/test_no_history.py"}
BUNDLES = ("toymachine/serve/static/",)  # built (minified) JavaScript: not written by hand


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def prose_files(files: Iterable[str]) -> list[str]:
    return [p for p in files if Path(p).suffix in TEXT_SUFFIXES and p not in LEFT_OUT
            and not p.startswith(BUNDLES) and not p.startswith(".git/") and (ROOT / p).is_file()]


def folder_of(path: str) -> str:
    return path.split("/", 1)[0] if "/" in path else "(root files)"


def allowed(path: str, line: str) -> bool:
    return any(Path(path).match(glob) and pattern.search(line) for glob, pattern, _ in ALLOWED)


def narration_in(paths: Iterable[str]) -> list[str]:
    found = []
    for path in paths:
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for what, pattern in NARRATION.items():
                if pattern.search(line) and not allowed(path, line):
                    found.append(f"{path}:{number}: {what}: {line.strip()[:120]}")
    return found


FILES = prose_files(tracked_files())
FOLDERS = sorted({folder_of(p) for p in FILES})


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_narration_in(folder: str) -> None:
    found = narration_in(p for p in FILES if folder_of(p) == folder)
    assert not found, f"{len(found)} line(s) narrate history:\n" + "\n".join(found[:60])


@pytest.mark.parametrize("line, what", [
    ("measured in the fifth session on a lent H100", "a work session"),
    ("the fix of issue 21", "an issue number"),
    ("issue 5: the sweep", "an issue number"),
    ("(issue-21 header)", "an issue number"),
    ("wave 2 adds the page", "a wave of work"),
    ("26.1 min of device time", "lending or device time"),
    ("run on 2026-11-25", "the date of a run"),
    ("the old `--format html` table", "the old version"),
])
def test_each_pattern_finds_its_narration(line: str, what: str) -> None:
    assert NARRATION[what].search(line)


@pytest.mark.parametrize("line", [
    "save the old max before the rescale",   # an algorithm's running value, not history
    "the session cookie",                     # not flagged by 'the old'; 'session' is (no web sessions here)
])
def test_algorithmic_old_is_not_history(line: str) -> None:
    assert not NARRATION["the old version"].search(line)


def test_the_scan_reads_the_project() -> None:
    assert {"toymachine", "tests", "benchmarks", "docs", "(root files)"} <= set(FOLDERS)
    assert "README.md" in FILES and "toymachine/sim/loop.py" in FILES and "CHANGELOG.md" not in FILES
