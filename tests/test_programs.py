"""The seed's traces (programs/) against the seed's figures, numpy, and golden results."""

import json

import numpy as np
import pytest
from conftest import GOLDEN, PROGRAMS

from toymachine import parse_file, resolve_machine, simulate
from toymachine.render import render

A = np.array([[1.0, 2.0], [3.0, 4.0]])
B = np.array([[5.0, 6.0], [7.0, 8.0]])
X = np.arange(1.0, 7.0)


def run(name, **kw):
    """Run a bundled program on the machine its header names (``; machine: NAME``), else the default."""
    program = parse_file(str(PROGRAMS / name))
    machine = next((line.split(":", 1)[1].strip() for line in program.header if line.startswith("machine:")), None)
    return simulate(program, resolve_machine(machine), **kw)


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_c00_costs_seven_cycles():
    r = run("c00.asm")
    assert r.cycles == 7
    assert r.ops == {"LOAD": 4, "STORE": 1, "MAC_Z": 1, "MAC": 1}
    assert (r.dram_reads, r.dram_writes, r.registers_used) == (4, 1, 3)
    assert r.memory["c"][0][0] == (A @ B)[0, 0]


def test_c00_with_the_mac_accumulator_needs_two_registers():
    r = run("c00_acc.asm")
    assert r.cycles == 7 and r.registers_used == 2 and r.register_names[-1] == "ACC"
    assert r.memory["c"][0][0] == (A @ B)[0, 0]


def test_inner_product_matmul_25_cycles_13_loads():
    r = run("matmul_inner_2x2.asm")
    assert r.cycles == 25 and r.ops["LOAD"] == 13 and r.registers_used == 3
    np.testing.assert_array_equal(np.array(r.memory["c"]), A @ B)


def test_outer_product_matmul_22_cycles_10_loads():
    r = run("matmul_outer_2x2.asm")
    assert r.cycles == 22 and r.ops["LOAD"] == 10 and r.registers_used == 6
    assert r.ops["MAC"] + r.ops["MAC_Z"] == 8 and r.ops["STORE"] == 4
    np.testing.assert_array_equal(np.array(r.memory["c"]), A @ B)


def test_safe_softmax_3n_reads_n_writes():
    r = run("softmax_safe.asm")
    n = len(X)
    assert (r.dram_reads, r.dram_writes, r.registers_used) == (3 * n, n, 3)
    np.testing.assert_allclose(r.memory["out"], softmax(X), rtol=0, atol=1e-15)


def test_online_softmax_2n_reads_n_writes():
    r = run("softmax_online.asm")
    n = len(X)
    assert (r.dram_reads, r.dram_writes, r.registers_used) == (2 * n, n, 4)
    np.testing.assert_allclose(r.memory["out"], softmax(X), rtol=0, atol=1e-15)


def test_seed_001_softmax_figures():
    """Seed 001 prints softmax([1..6]) = 0.0043 … 0.6337 and o = a·v = 5.4329."""
    out = np.array(run("softmax_online.asm").memory["out"])
    assert [round(v, 4) for v in out] == [0.0043, 0.0116, 0.0315, 0.0858, 0.2331, 0.6337]
    assert round(float(out @ X), 4) == 5.4329


def test_symbolic_c00_matches_seed_table():
    """The seed's Problem 1 table: a₀₀ … a₀₀b₀₀, and c₀₀ once the sum is complete."""
    r = run("c00.asm", symbolic=True)
    md = render(r, "markdown")
    rows = [line for line in md.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert rows[2] == "| 3 | MAC_Z R0, R1, R2 | a₀₀ | b₀₀ | a₀₀·b₀₀ |"
    assert rows[5] == "| 6 | MAC R0, R1, R2, R2 | a₀₁ | b₁₀ | c₀₀ |"


def test_symbolic_safe_softmax_uses_m():
    r = run("softmax_safe.asm", symbolic=True)
    md = render(r, "markdown")
    assert "| 14 | EXP R0, R0 | e^(x₀−m) | m |  |" in md


PROGRAM_FILES = sorted(p.name for p in PROGRAMS.glob("*.asm"))


@pytest.mark.parametrize("name", PROGRAM_FILES)
def test_golden(name, regen):
    """Every bundled program's JSON result is pinned (regenerate with --regen-golden)."""
    got = json.loads(render(run(name), "json"))
    got["file"] = name
    path = GOLDEN / (name.replace(".asm", ".json"))
    if regen or not path.exists():
        if not regen:
            pytest.fail(f"no golden result for {name}; run pytest --regen-golden and review it")
        path.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n")
    want = json.loads(path.read_text())
    assert got == want


@pytest.mark.parametrize("name", PROGRAM_FILES)
def test_header_states_cost(name):
    text = (PROGRAMS / name).read_text()
    header = [l for l in text.splitlines() if l.startswith(";")][:4]
    assert any("Cost" in l for l in header), "every program's header says what it costs"


def test_symbolic_constants_have_no_leaves():
    """A fill value loaded in symbolic mode is a constant node (row_max = −inf in the scalar
    attention): naming a max over it must not look for inputs inside the number (the LaTeX
    renderer names such maxima in programs/attention_inner_3x2.asm --symbolic)."""
    from toymachine.sim.symbolic import const, leaf

    assert const(float("-inf")).leaves() == frozenset()
    r = run("attention_inner_3x2.asm", symbolic=True)
    assert render(r, "latex").count("\\begin{tabular}") >= 2  # the tables render, no traceback
    assert leaf("q", (0, 0)).leaves() == frozenset([leaf("q", (0, 0))])
