"""The README stays true: every `toym …` command in its bash blocks runs as written."""

import os
import re
import shlex
import shutil


from conftest import ROOT


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = re.split(r"\s#\s", line)[0].strip()
            if line.startswith("toym "):
                commands.append(line)
    return commands


COMMANDS = readme_commands()


def test_readme_has_commands():
    assert len(COMMANDS) >= 20


def test_readme_commands_run_in_order(toym, tmp_path, monkeypatch):
    """Run in README order in one folder: a later command may read an earlier one's -o file."""
    have_plot = _importable("matplotlib")
    have_gpu = _importable("torch") and _importable("triton")
    for folder in ("programs", "examples"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    failures = []
    for command in COMMANDS:
        stages = [shlex.split(stage) for stage in command.split(" | ")]
        flat = [a for stage in stages for a in stage]
        if ("--plot" in flat and not have_plot) or (stages[0][1] == "verify-gpu" and not have_gpu):
            continue
        data = None
        for stage in stages:
            assert stage[0] == "toym", command
            code, out, err = toym(*stage[1:], input=data)
            if code != 0:
                failures.append((command, err[-1000:]))
                break
            data = out
    assert not failures, failures
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".toym-")]


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None
