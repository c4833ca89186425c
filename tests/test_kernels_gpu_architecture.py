"""kernels_gpu's shape (kernels_gpu/ARCHITECTURE.md): no import cycles, data flows one way
(kernels -> host -> model -> bench -> the package's face), no module over 400 lines.

The same rules as tests/test_architecture.py (whose cycle finder this reuses), read the same
way with ``ast``: every relative or ``kernels_gpu.`` import, function-level ones included.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import ROOT
from test_architecture import MAX_LINES, _cycles

PACKAGE = ROOT / "kernels_gpu"
NAME = "kernels_gpu"

# Stages, lowest first: a module may import its own stage or a lower one, never a higher one.
STAGES = [
    {"kernels"},    # the @triton.jit code (forward, backward, shared tile helpers)
    {"host"},       # configs and the tuned table, launches, the public functions, the oracle
    {"model"},      # schedule and traffic, the time model, calibration, the memory probe
    {"bench"},      # benchmark, checks, tables, the alarm, host probe, verify-gpu
    {"__init__"},   # the package's public face
]
RANK = {name: i for i, stage in enumerate(STAGES) for name in stage}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == NAME)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                pkg = base[:len(base) - (node.level - 1)]
                target = ".".join(pkg + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != NAME:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
    return {m for m in found if m in modules and m != name}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@pytest.mark.slow
def test_the_graph_is_read(graph):
    assert "kernels_gpu.kernels.common" in graph["kernels_gpu.kernels.bwd"]
    assert "kernels_gpu.host.configs" in graph["kernels_gpu.model.schedule"]
    assert "kernels_gpu.host.flash_attn" in graph["kernels_gpu.bench.run"]


@pytest.mark.slow
def test_no_import_cycles(graph):
    assert _cycles(graph) == []


def test_every_module_has_a_stage():
    assert {_stage(m) for m in _modules()} <= set(RANK)


@pytest.mark.slow
def test_data_flows_one_way(graph):
    """The kernels import no host code, the host no model, the models no benchmark."""
    upward = [(a, b) for a, targets in graph.items() for b in targets
              if RANK[_stage(b)] > RANK[_stage(a)]]
    assert upward == []


def test_an_upward_import_would_be_seen():
    fake = {"kernels_gpu.kernels.fwd": {"kernels_gpu.bench.run"}, "kernels_gpu.bench.run": set()}
    assert [(a, b) for a, t in fake.items() for b in t
            if RANK[_stage(b)] > RANK[_stage(a)]] == [("kernels_gpu.kernels.fwd",
                                                        "kernels_gpu.bench.run")]


def test_no_module_is_over_400_lines():
    long = {_module_name(p): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_the_device_scripts_live_in_device():
    scripts = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.sh"))
    assert scripts and all(s.startswith("device/") for s in scripts)
