"""The suite's tiers (tests/conftest.py): the tool marks imply ``slow``, a missing tool skips a test
but fails it under ``TOYM_REQUIRE_TOOLS=1`` (CI), a shared build runs once and its failure reaches
every test that asks for it, and CI runs the README's test command."""

import re

import conftest
import pytest
from conftest import ROOT, SLOW_TOOLS, built_once, need_tool


def test_every_test_with_a_tool_mark_is_slow(request):
    items = request.session.items
    marked = [i for i in items if any(i.get_closest_marker(m) for m in SLOW_TOOLS)]
    assert [i.nodeid for i in marked if i.get_closest_marker("slow") is None] == []


def test_a_missing_tool_skips_locally_and_fails_where_required(monkeypatch):
    assert need_tool("/usr/bin/tool", "tool", "apt-get install tool") == "/usr/bin/tool"
    monkeypatch.setattr(conftest, "REQUIRE_TOOLS", False)
    with pytest.raises(pytest.skip.Exception, match="tool is not installed"):
        need_tool(None, "tool", "apt-get install tool")
    monkeypatch.setattr(conftest, "REQUIRE_TOOLS", True)
    with pytest.raises(pytest.fail.Exception, match="TOYM_REQUIRE_TOOLS=1"):
        need_tool(None, "tool", "apt-get install tool")


def test_a_shared_build_runs_once_and_its_failure_fails_every_asker(tmp_path_factory, request):
    name = f"shared-{request.node.name}"
    builds = []

    def build(folder):
        builds.append(folder)
        (folder / "out").write_text("built", encoding="utf-8")

    first = built_once(tmp_path_factory, name, build)
    assert built_once(tmp_path_factory, name, build) == first and len(builds) == 1
    assert (first / "out").read_text(encoding="utf-8") == "built"

    def broken(folder):
        raise RuntimeError("the build broke")

    with pytest.raises(RuntimeError, match="the build broke"):
        built_once(tmp_path_factory, name + "-broken", broken)
    with pytest.raises(pytest.fail.Exception, match="the build broke"):  # a later asker: no second try
        built_once(tmp_path_factory, name + "-broken", build)


def _quickstart() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quickstart\n\n```bash\n(.*?)```", readme, re.S)
    assert block, "README.md has no Quickstart bash block"
    return block.group(1).splitlines()


def test_ci_runs_the_readmes_test_command():
    commands = _quickstart()
    assert len(commands) == 2
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[1] in run, f".ci/run must run the README's test command: {commands[1]}"
    assert "export TOYM_REQUIRE_TOOLS=1" in run


def test_the_readme_shows_the_fast_tier():
    assert 'python -m pytest -m "not slow"' in (ROOT / "README.md").read_text(encoding="utf-8")
