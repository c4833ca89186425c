"""Problem files: the format, and clear errors (file, line, column, caret, hint)."""

import numpy as np
import pytest
from conftest import ROOT

from toymachine.check import load_problem
from toymachine.check.grader import draw_inputs
from toymachine.errors import ConfigError
from toymachine.named_paths import NamedPathError

GOOD = """\
title: 2x2 matmul with 6 registers in at most 22 cycles
inputs:
  a: [[1, 2], [3, 4]]
  b: {shape: [2, 2]}
expect:
  c: a @ b
registers: 6
max_cycles: 22
tolerance: 1e-9
"""


def load(text, path="p.yaml"):
    return load_problem(path, text)


def error(text):
    with pytest.raises(ConfigError) as info:
        load(text)
    return info.value


def test_the_matmul_example_problem_loads():
    p = load(GOOD)
    assert p.title.startswith("2x2 matmul") and p.machine.registers == 6
    assert p.budgets == {"max_cycles": 22} and p.tolerance == 1e-9 and p.trials == 3
    a, b = p.inputs
    np.testing.assert_array_equal(a.value, [[1, 2], [3, 4]]) and b.shape == (2, 2) and b.random
    assert p.expect[0].array == "c" and p.expect[0].address is None


def test_random_inputs_are_deterministic_per_seed_and_trial():
    p = load(GOOD)
    t0, again, t1, other = draw_inputs(p, 0, 0), draw_inputs(p, 0, 0), draw_inputs(p, 0, 1), draw_inputs(p, 5, 0)
    np.testing.assert_array_equal(t0["b"], again["b"])
    assert not np.array_equal(t0["b"], t1["b"]) and not np.array_equal(t0["b"], other["b"])
    np.testing.assert_array_equal(t0["a"], t1["a"])  # a literal stays


def test_distributions():
    p = load("inputs:\n  u: {shape: [200], dist: uniform, low: -2, high: 3}\n"
             "  k: {shape: [200], dist: integers, low: -1, high: 1}\nexpect:\n  y: u + k\n")
    d = draw_inputs(p, 0, 0)
    assert d["u"].min() >= -2 and d["u"].max() < 3 and set(np.unique(d["k"])) == {-1.0, 0.0, 1.0}


def test_cell_and_block_targets():
    p = load("inputs:\n  a: {shape: [2, 2]}\nexpect:\n  c[0][1]: a @ a\n  'O[0:2, :]': a\n")
    assert str(p.expect[0].address) == "c[0][1]" and p.expect[1].array == "O"


ERRORS = [
    ("title: t\nexpect:\n  c: a\ninput:\n  a: [1]\n", "unknown key 'input' in problem file", 4, 1, "did you mean 'inputs'"),
    ("inputs:\n  a: {shape: [2, -1]}\nexpect:\n  c: a\n", "shape of 'a' must be a list of positive", 2, 14, None),
    ("inputs:\n  a: {shape: [2], size: 3}\nexpect:\n  c: a\n", "unknown key 'size' in input 'a'", 2, 19, None),
    ("inputs:\n  a: {dist: normal}\nexpect:\n  c: a\n", "input 'a' needs a shape", 2, 6, None),
    ("inputs:\n  a: [[1, 2], [3]]\nexpect:\n  c: a\n", "not a rectangular array", 2, 6, None),
    ("inputs:\n  a: 3\nexpect:\n  c: a\n", "must be an array literal", 2, 6, None),
    ("inputs:\n  a: {shape: [2], dist: poisson}\nexpect:\n  c: a\n", "unknown distribution 'poisson'", 2, 25, None),
    ("inputs:\n  a: [1, 2]\nexpect:\n  c: a @ b\n", "unknown name 'b'", 4, 10, "names are the problem's inputs: a"),
    ("inputs:\n  a: [1, 2]\nexpect:\n  c: __import__('os')\n", "unknown function '__import__'", 4, 6, None),
    ("inputs:\n  a: [1, 2]\nexpect:\n  c: a.shape\n", "attribute access '.shape'", 4, 7, None),
    ("inputs:\n  a: [1, 2]\nexpect:\n  c: \"exp(a)[0]\"\n", "'[' is not part of", 4, 13, "indexing is not supported"),
    ("inputs:\n  a: [[1, 2]]\n  b: [[1, 2]]\nexpect:\n  c: a @ b\n", "cannot combine shapes (1, 2) and (1, 2)", 5, 8, None),
    ("inputs:\n  a: [1, 2]\n", "needs 'expect'", 0, 0, None),
    ("inputs:\n  a: [1, 2]\nexpect:\n  c[0: a\n", "not an array, cell or block address", 4, 3, None),
    ("inputs:\n  a: [1, 2]\nexpect:\n  c: a\nmax_cycles: -3\n", "'max_cycles' must be a number ≥ 0", 5, 13, None),
    ("inputs:\n  a: [1, 2]\nexpect:\n  c: a\nregisters: 2.5\n", "'registers' must be a whole number", 5, 12, None),
    ("inputs:\n  a: [1, 2]\nexpect:\n  c: a\nmachine: toy99\n", "no machine file or preset named 'toy99'", 5, 10, None),
    ("inputs:\n  a: [1, 2]\nexpect:\n  c: a\nmax_reads: 3\n", "'max_reads' (array: words) must be a mapping", 5, 12, None),
    ("inputs:\n  a: [1, 2]\nexpect:\n  c: a\n  c: a\ntrials: 0\n", "'trials' must be a whole number ≥ 1", 6, 9, None),
    ("expect: {c: a: b}\n", "not valid YAML", 1, 14, "quote an expression"),
    ("- a\n- b\n", "a problem file must be a mapping", 1, 1, None),
]


@pytest.mark.parametrize("text,message,line,col,hint", ERRORS, ids=[e[1][:40] for e in ERRORS])
def test_errors_name_file_line_and_column(text, message, line, col, hint):
    err = error(text)
    assert message in err.message
    assert (err.loc.file, err.loc.line, err.loc.col) == ("p.yaml", line, col)
    if hint:
        assert hint in (err.hint or "")
    rendered = err.render()
    assert rendered.startswith("error: ") and ("p.yaml" in rendered)
    if line:
        assert "^" in rendered  # the line, with a caret under the token


def test_caret_sits_under_the_offending_token():
    err = error("inputs:\n  a: [1, 2]\nexpect:\n  c: exp(a) + a.__class__\n")
    lines = err.render().splitlines()
    src, caret = lines[3], lines[4]
    col = src.index("exp(a) + a.__class__") + len("exp(a) + a")
    assert caret.index("^") == col and caret.count("^") == len(".__class__")


def test_tolerance_written_without_a_point_is_a_number():
    """YAML 1.1 reads 1e-9 as text; the loader reads it as the number it means."""
    assert load("inputs:\n  a: [1]\nexpect:\n  c: a\ntolerance: 1e-12\n").tolerance == 1e-12


def test_machine_file_relative_to_the_problem():
    text = "inputs:\n  a: [1]\nexpect:\n  c: a\nmachine: ../machines/slow_exp.yaml\n"
    p = load_problem(ROOT / "examples" / "problems" / "x.yaml", text, allow_outside=True)
    assert p.machine.name == "slow-exp" and p.machine.registers == 4
    # outside the problem's folder only when allowed (`machine: /etc/passwd` is refused)
    with pytest.raises(NamedPathError) as err:
        load_problem(ROOT / "examples" / "problems" / "x.yaml", text)
    assert err.value.reason == "outside" and err.value.loc.line == 5


def test_missing_problem_file():
    with pytest.raises(ConfigError, match="no such problem file"):
        load_problem("/nonexistent/p.yaml")


def test_every_example_problem_loads_and_names_a_reference():
    files = sorted((ROOT / "examples" / "problems").glob("*.yaml"))
    assert len(files) >= 11
    for f in files:
        p = load_problem(f)
        assert p.reference and (f.parent / p.reference).exists(), f.name
        assert p.description and p.title
