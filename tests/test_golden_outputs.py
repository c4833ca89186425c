"""Every output of every bundled program, and of every README command, is pinned byte for byte.

Each case runs the CLI in-process in a fresh folder holding copies of programs/ and examples/ (so the
paths the outputs name are the same in any checkout) and is compared on its exit status, standard
output, standard error and every file it writes, through a SHA-256 digest stored in
``tests/golden/outputs.json`` (``pytest --regen-golden`` rewrites it: review why a digest moved).
A refactor that changes one byte a user sees fails here."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import GOLDEN, PROGRAMS, ROOT, program_machine

sys.path.insert(0, str(ROOT / "docs"))

from docgen.pages import run_command, steps  # noqa: E402

MANIFEST = GOLDEN / "outputs.json"
FORMATS = ("table", "markdown", "csv", "json", "latex", "html", "html-fragment")
PROGRAM_NAMES = sorted(p.name for p in PROGRAMS.glob("*.asm"))
# The one figure that is a measurement, not a result: the wall time a search took.
TIMED = re.compile(r"(?m)^( *seconds +)[0-9.]+$")


def program_commands(name: str) -> list[str]:
    """The command lines pinned for one bundled program: every ``--format``, and the symbolic table."""
    machine = " ".join(program_machine(PROGRAMS / name))
    base = f"run programs/{name}" + (f" {machine}" if machine else "")
    return [f"{base} --format {fmt}" for fmt in FORMATS] + [f"{base} --symbolic"]


def readme_commands() -> list[str]:
    """The README's command lines (without the leading ``toym``), in order."""
    return [s.text for s in steps((ROOT / "README.md").read_text(encoding="utf-8")) if s.kind == "command"]


@contextmanager
def fresh_folder(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "work"
    for sub in ("programs", "examples"):
        shutil.copytree(ROOT / sub, folder / sub)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(cwd)


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def outcome(toym: Callable, command: str, folder: Path, before: dict[str, bytes]) -> bytes:
    """What one command shows a user: exit status, stdout, stderr and the files it wrote or changed."""
    code, out, err = run_command(toym, command)
    out = TIMED.sub(r"\1<time>", out)
    parts = [f"$ toym {command}\nexit {code}\n--- stdout\n{out}--- stderr\n{err}".encode()]
    for path, data in files_under(folder).items():
        if before.get(path) != data:
            parts.append(f"--- file {path}\n".encode() + data)
    return b"".join(parts)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check(case: str, commands: list[str], toym: Callable, tmp_path: Path, regen: bool) -> None:
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8")) if MANIFEST.exists() else {}
    got: dict[str, str] = {}
    with fresh_folder(tmp_path) as folder:
        for command in commands:
            before = files_under(folder)
            data = outcome(toym, command, folder, before)
            got[command] = digest(data)
            if not regen and manifest.get(case, {}).get(command) != got[command]:
                shown = data.decode(errors="replace")[:1500]
                pytest.fail(f"output of `toym {command}` differs from its golden digest:\n{shown}")
    if regen:
        manifest[case] = got
        MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert manifest.get(case) == got


@pytest.mark.slow
@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_program_outputs_are_pinned(name: str, toym: Callable, tmp_path: Path, regen: bool) -> None:
    check(name, program_commands(name), toym, tmp_path, regen)


@pytest.mark.slow
def test_readme_outputs_are_pinned(toym: Callable, tmp_path: Path, regen: bool) -> None:
    check("README.md", readme_commands(), toym, tmp_path, regen)


def test_every_program_and_readme_command_has_a_digest() -> None:
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    assert sorted(manifest) == sorted([*PROGRAM_NAMES, "README.md"])
    for name in PROGRAM_NAMES:
        assert sorted(manifest[name]) == sorted(program_commands(name))
    assert sorted(manifest["README.md"]) == sorted(readme_commands())
