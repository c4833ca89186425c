"""Points in problem files (check.rules): per-check points, budget tiers, hidden checks,
allowed instructions; their validation (file:line:col); and variants (check.variants)."""

import collections
import math

import pytest
from conftest import PROGRAMS, ROOT

from toymachine.check import check_trace, load_problem
from toymachine.check.problem import load_variants
from toymachine.check.variants import pick_variant, substitute
from toymachine.errors import ConfigError

PROBLEMS = ROOT / "examples" / "problems"
BASE = """\
inputs:
  a: {shape: [2, 2]}
  b: {shape: [2, 2]}
expect:
  c: {value: a @ b, points: 6}
registers: 3
"""
MATMUL_25 = PROGRAMS / "matmul_inner_2x2.asm"  # 25 cycles, 13 LOADs, 3 registers


def load(text, path="p.yaml", **kw):
    return load_problem(path, text, **kw)


def error(text):
    with pytest.raises(ConfigError) as info:
        load(text)
    return info.value


@pytest.mark.parametrize("tiers, points", [("{25: 3, 28: 1}", 3), ("{20: 3, 25: 2, 30: 1}", 2),
                                           ("{20: 3, 24: 1}", 0), ("25", 1), ("{limit: 25, points: 4}", 4)])
def test_budget_tiers_give_the_best_tier_met(tiers, points):
    p = load(BASE + f"max_cycles: {tiers}\n")
    grade = check_trace(MATMUL_25, p)
    cycles = next(c for c in grade.checks if c.name == "cycles")
    assert cycles.points == points and cycles.figure == 25
    assert cycles.passed == (25 <= p.rules["cycles"].limit)  # passed = the tightest tier
    assert grade.score == 6 + points and grade.max_score == 6 + p.rules["cycles"].points


def test_budgets_earn_nothing_when_a_value_is_wrong():
    """An empty-ish trace is cheap, not good: budget and instruction points wait for the values."""
    p = load(BASE + "max_cycles: {25: 3}\nallowed_ops: [LOAD, STORE, MAC_Z, MAC]\n")
    cheap = "LOAD a[0][0], R0\nSTORE R0, c[0][0]\n"
    grade = check_trace(cheap, p)
    by = {c.name: c for c in grade.checks}
    assert by["cycles"].passed and by["instructions"].passed  # within budget, allowed instructions …
    assert grade.score == 0 and "no points: an expected array is wrong" in by["cycles"].message


def test_allowed_ops_names_what_else_the_trace_used():
    p = load(BASE.replace("registers: 3", "registers: 6") + "allowed_ops: {ops: [load, STORE, MAC], points: 2}\n")
    grade = check_trace(PROGRAMS / "matmul_outer_2x2.asm", p)  # uses MAC_Z too
    ops = next(c for c in grade.checks if c.name == "instructions")
    assert not ops.passed and ops.points == 0 and ops.max_points == 2 and ops.figure == 4
    assert ops.message == "uses MAC_Z (4×), which this problem does not allow (allowed: LOAD, STORE, MAC)"
    ok = check_trace(PROGRAMS / "matmul_outer_2x2.asm", load(BASE.replace("registers: 3", "registers: 6")
                                                              + "allowed_ops: [LOAD, STORE, MAC, MAC_Z]\n"))
    assert ok.passed and ok.score == ok.max_score == 7


def test_hidden_checks_count_and_are_marked():
    p = load(BASE + "max_loads: {limit: 13, points: 2, hidden: true}\n")
    grade = check_trace(MATMUL_25, p)
    loads = next(c for c in grade.checks if c.name == "loads")
    assert loads.hidden and loads.points == 2 and grade.score == 8
    assert grade.to_dict()["checks"][1]["hidden"] is True


def test_default_points_are_one_per_check():
    p = load_problem(ROOT / "tests" / "x.yaml", "inputs:\n  a: [1, 2]\nexpect:\n  c: a\nmax_cycles: 3\n")
    assert p.max_score == 2 and [r.points for r in p.rules.values()] == [1, 1]


@pytest.mark.parametrize("line, needle, token", [
    ("max_cycles: {25: 1, 28: 3}", "the looser limit 28 earns more points (3) than 25 (1)", "28"),
    ("max_cycles: {25: 1, hidden: maybe}", "'max_cycles: hidden' must be true or false", "maybe"),
    ("max_cycles: {limit: 25, points: -1}", "'max_cycles: points' must be a number ≥ 0", "-1"),
    ("max_cycles: {points: 3}", "'max_cycles' gives points but no limit", "{"),
    ("max_cycles: {25: 1, bonus: 2}", "unknown key 'bonus' in 'max_cycles'", "bonus"),
    ("max_loads: {2.5: 1}", "'max_loads' must be a whole number", "2.5"),
    ("allowed_ops: [LOAD, FROB]", "unknown instruction 'FROB' in 'allowed_ops'", "FROB"),
    ("allowed_ops: LOAD", "'allowed_ops' must be a list of instructions", "LOAD"),
    ("variants: []", "'variants' must be a non-empty list", "["),
])
def test_new_fields_are_validated_with_line_and_column(line, needle, token):
    err = error(BASE + line + "\n")
    col = line.index(token) + 1
    assert needle in err.message and err.loc.line == 7 and err.loc.col == col, (err.message, err.loc)
    assert "^" in err.render()


def test_an_expectation_mapping_is_validated():
    err = error(BASE.replace("{value: a @ b, points: 6}", "{points: 6}"))
    assert "needs a value" in err.message and err.loc.line == 5
    err = error(BASE.replace("points: 6}", "points: 6, weight: 2}"))
    assert "unknown key 'weight'" in err.message and err.loc.line == 5


# -- variants -----------------------------------------------------------------------------------------
VARIANTS = """\
variants:
  - {n: 4, reads: 12, seed: 1}
  - {n: 6, reads: 18, seed: 2}
  - {n: 8, reads: 24, seed: 3}
title: "softmax of {n} values"
inputs:
  x: {shape: [{n}]}
expect:
  out: softmax(x)
max_dram_reads: {reads}
seed: {seed}
"""


def test_each_variant_substitutes_its_parameters():
    for k, (n, reads, seed) in enumerate([(4, 12, 1), (6, 18, 2), (8, 24, 3)]):
        p = load(VARIANTS, variant=k)
        assert p.title == f"softmax of {n} values" and p.inputs[0].shape == (n,)
        assert p.budgets == {"max_dram_reads": reads} and p.seed == seed
        assert p.variant == {"n": n, "reads": reads, "seed": seed} and p.variant_count == 3
        assert p.variant_label == f"variant {k + 1} of 3 (n = {n}, reads = {reads}, seed = {seed})"
    assert [p.variant_index for p in load_variants("p.yaml", VARIANTS)] == [0, 1, 2]


def test_a_student_always_gets_the_same_variant_and_students_spread():
    """sha256 of (problem stem, ID): the same on every run and machine (a pinned value), and
    1,200 IDs spread over 4 variants as a fair die would (chi-square, 3 degrees of freedom)."""
    assert pick_variant("alice", 4, "p1_c00") == 3 == pick_variant(" Alice ", 4, "p1_c00")
    assert [pick_variant(f"student{i}@uni.edu", 4, "p1_c00") for i in range(8)] == \
        [pick_variant(f"student{i}@uni.edu", 4, "p1_c00") for i in range(8)]
    counts = collections.Counter(pick_variant(f"s{i:05d}", 4, "p1_c00") for i in range(1200))
    assert set(counts) == {0, 1, 2, 3}
    chi2 = sum((n - 300) ** 2 / 300 for n in counts.values())
    assert chi2 < 16.27  # p = 0.001
    other = [pick_variant(f"s{i:05d}", 4, "p4_softmax_safe") for i in range(200)]  # per problem, not per ID
    assert other != [pick_variant(f"s{i:05d}", 4, "p1_c00") for i in range(200)]
    p = load_problem(PROBLEMS / "p1_c00.yaml", student="alice")
    assert p.variant_index == 3 and p.expect[0].target == "c[1][1]"


def test_substitution_touches_only_declared_placeholders():
    assert substitute("x: {shape: [{n}]}  # {m} {n}", {"n": 6}) == "x: {shape: [6]}  # {m} 6"
    assert substitute("t: {x}", {"x": 0.5}) == "t: 0.5"


def test_variant_errors_name_the_variant():
    bad = VARIANTS.replace("{n: 8, reads: 24, seed: 3}", "{n: 0, reads: 24, seed: 3}")
    load(bad, variant=0)  # the good ones still load
    with pytest.raises(ConfigError) as info:
        load_variants("p.yaml", bad)
    assert "[variant 3 of 3 (n = 0, reads = 24, seed = 3)]" in info.value.message and info.value.loc.line == 7
    err = error(VARIANTS.replace("{n: 6, reads: 18, seed: 2}", "{n: 6, reads: 18}"))
    assert "every variant needs the same parameters" in err.message and err.loc.line == 3
    with pytest.raises(ConfigError, match="there is no variant 4"):
        load(VARIANTS, variant=3)


def test_bundled_problems_have_points_statements_and_two_have_variants():
    files = sorted(PROBLEMS.glob("*.yaml"))
    with_variants = 0
    for path in files:
        for p in load_variants(path):
            assert p.statement and p.max_score > len(p.rules), path  # points beyond the default 1 each
            assert all(math.isfinite(r.points) for r in p.rules.values())
        with_variants += p.variant_count > 1
    assert with_variants >= 2
