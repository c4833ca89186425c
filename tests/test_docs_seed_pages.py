"""The two seed explanation pages run as the docs convention says: every `toym ` line of a
bash fence runs in page order (stages joined by ` | `) in a folder holding copies of programs/ and
examples/, and every `<!-- toym-output: ARGS -->` block equals what `toym ARGS` prints."""

from __future__ import annotations

import re
import shlex
import shutil

import pytest

from conftest import ROOT

PAGES = ["docs/explanation/tpu-model-vs-seed.md", "docs/explanation/seed001-walk.md"]


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_page_runs_and_its_outputs_are_current(page, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from toymachine.cli import app

    for d in ("programs", "examples"):
        shutil.copytree(ROOT / d, tmp_path / d)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def toym(args: str, stdin: str | None = None) -> str:
        res = runner.invoke(app, shlex.split(args), input=stdin, catch_exceptions=False)
        assert res.exit_code == 0, f"toym {args}: {res.stderr}"
        return res.stdout

    lines = (ROOT / page).read_text(encoding="utf-8").split("\n")
    in_bash, k = False, 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("```bash"):
            in_bash = True
        elif line.startswith("```"):
            in_bash = False
        elif in_bash and line.startswith("toym "):
            out = None
            for stage in line.split(" # ")[0].strip().split(" | "):
                out = toym(stage.strip()[5:], out)
        m = re.match(r"<!-- toym-output: (.*) -->$", line)
        if m:
            j = k + 2
            while not lines[j].startswith("```"):
                j += 1
            shown = [x.rstrip() for x in lines[k + 2:j]]
            assert [x.rstrip() for x in toym(m.group(1)).rstrip("\n").split("\n")] == shown, m.group(1)
            k = j
        k += 1
