"""The package's shape (toymachine/ARCHITECTURE.md): no import cycles, data flows one way (a module never
imports a higher stage), no module over 400 lines, the block compiler entered through one door.

The import graph is read from the source with ``ast`` — every ``import``/``from … import`` in
a module, function-level ones included (a lazy import is still a dependency), except those under
``if TYPE_CHECKING:``. ``from A import b`` is an edge to ``A.b`` when that is a module, else to
``A``; a parent package's ``__init__`` running first is Python's business, not an edge.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "toymachine"
MAX_LINES = 400
COMPILER = "toymachine.sim.compiler"  # the block compiler (docs/explanation/speed-layer.md)
DOOR = "toymachine.sim.compiled"  # the one module outside it that imports it
SPEED_PAGE = ROOT / "docs" / "explanation" / "speed-layer.md"  # the page that explains the compiled path

# Stages, lowest first: a module may import its own stage or a lower one, never a higher one.
STAGES = [
    {"isa", "program", "errors", "dtypes", "params", "result", "limits", "yamlsafe", "named_paths"},  # declarations everything reads
    {"asm", "machine"},  # text → Program; the machine description
    {"sim", "cost"},  # simulate(Program, Machine) → Result; closed forms beside it
    {"gen", "render"},  # programs from parameters; Result → text
    {"optimize", "experiments", "check", "notebook"},  # searches, sweeps, graders built on the above
    {"api"},  # the Python API: what every front calls (runs, sweeps, checks)
    {"__init__"},  # the package's public face
    {"cli", "serve", "__main__"},  # the fronts, siblings: the command line, the web playground
]
RANK = {name: i for i, stage in enumerate(STAGES) for name in stage}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found: set[str] = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_node(other)
                continue
            visit_node(child)

    def visit_node(child):
        if isinstance(child, ast.Import):
            for alias in child.names:
                if alias.name.split(".")[0] == "toymachine":
                    found.add(alias.name)
        elif isinstance(child, ast.ImportFrom):
            if child.level:
                pkg = base[:len(base) - (child.level - 1)] if child.level > 1 else base
                target = ".".join(pkg + ([child.module] if child.module else []))
            else:
                target = child.module or ""
            if target.split(".")[0] != "toymachine":
                return
            for alias in child.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
        visit(child)

    visit(tree)
    return {m for m in found if m in modules and m != name}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_the_graph_is_read(graph):
    assert "toymachine.sim.loop" in graph["toymachine.sim.simulate"]
    assert "toymachine.sim.compiler.words" in graph["toymachine.sim.compiler.templates"]
    assert "toymachine.cost.matmul" in graph["toymachine.gen.scalar.matmul"]


def test_no_import_cycles(graph):
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_module_has_a_stage():
    assert {_stage(m) for m in _modules()} <= set(RANK)


def test_data_flows_one_way(graph):
    """A lower stage never imports a higher one (the generators do not call the CLI, the cost
    model does not import a generator, the simulator does not import the renderers …)."""
    upward = [(a, b) for a, targets in graph.items() for b in targets if RANK[_stage(b)] > RANK[_stage(a)]]
    assert upward == []


def test_no_module_is_over_400_lines():
    long = {_module_name(p): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def _in_compiler(module: str) -> bool:
    return module == COMPILER or module.startswith(COMPILER + ".")


def test_the_block_compiler_is_entered_through_its_door(graph):
    """Outside the block compiler, only the door imports it: every caller goes through ``CompiledPath``."""
    importers = {a for a, targets in graph.items() if not _in_compiler(a) and any(map(_in_compiler, targets))}
    assert importers == {DOOR}


def test_the_door_rule_is_read():
    assert not _in_compiler("toymachine.sim.compiled") and _in_compiler("toymachine.sim.compiler.lines")


def test_a_short_run_never_loads_the_block_compiler():
    """The door imports the block compiler with the first work it takes: a short program runs in the
    interpreter loop alone, and a long one loads it."""
    code = ("import io, sys\nfrom toymachine import simulate\n"
            "simulate(io.StringIO('.data a = [1, 2]\\nLOAD a[0], R0\\nLOAD a[1], R1\\nADD R0, R1, R2\\nSTORE R2, c[0]'))\n"
            "short = any(m.startswith('toymachine.sim.compiler') for m in sys.modules)\n"
            "text = 'LOAD x[0], R1\\n' + ''.join(f'LOAD x[{i}], R0\\nADD R0, R1, R1\\n' for i in range(20000))\n"
            "simulate(io.StringIO(text), steps=False)\n"
            "print(short, any(m.startswith('toymachine.sim.compiler') for m in sys.modules))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["False", "True"]


def test_the_speed_layer_page_names_what_the_code_has():
    """Every file the speed-layer page names exists, and every name it quotes is in ``sim/``'s code."""
    ticked = set(re.findall(r"`([^`\s]+)`", SPEED_PAGE.read_text(encoding="utf-8")))
    paths = {t for t in ticked if "/" in t}
    assert paths and [t for t in paths if not (PACKAGE / t).exists() and not (ROOT / t).exists()] == []
    source = "\n".join(p.read_text(encoding="utf-8") for p in (PACKAGE / "sim").rglob("*.py"))
    names = {part for t in ticked - paths if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", t) for part in t.split(".")}
    assert {"CompiledPath", "MIN_LINES", "Bail"} <= names
    assert sorted(n for n in names if not re.search(rf"\b{n}\b", source)) == []
