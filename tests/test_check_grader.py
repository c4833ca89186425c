"""The grader: every problem set passes with its reference solution; wrong values, blown
budgets, hard-coded answers and traces that cannot run fail with the right message."""

import json

import numpy as np
import pytest
from conftest import PROGRAMS, ROOT

from toymachine.check import check_trace, load_problem
from toymachine.check.grader import draw_inputs
from toymachine.errors import ConfigError

PROBLEMS = sorted((ROOT / "examples" / "problems").glob("*.yaml"))


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_every_problem_passes_with_its_reference_solution(path):
    problem = load_problem(path)
    grade = check_trace(path.parent / problem.reference, problem)
    assert grade.passed, grade.render()
    kinds = [c.kind for c in grade.checks]
    assert kinds.count("value") == len(problem.expect)
    assert kinds.count("budget") == len(problem.budgets) + sum(len(v) for v in problem.array_budgets.values())


def problem(name):
    return ROOT / "examples" / "problems" / name


def test_a_wrong_value_fails_naming_the_first_differing_element():
    student = (PROGRAMS / "c00.asm").read_text().replace("MAC R0, R1, R2, R2", "MAC_Z R0, R1, R2")  # forgets a00·b00
    grade = check_trace(student, problem("p1_c00.yaml"))
    assert not grade.passed
    value = next(c for c in grade.checks if c.kind == "value")
    p = load_problem(problem("p1_c00.yaml"))
    draws = [draw_inputs(p, 0, t).values() for t in range(3)]
    (want, got), *_ = [((a @ b)[0, 0], a[0, 1] * b[1, 0]) for a, b in draws]
    assert value.first_difference == {"index": [0, 0], "got": got, "expected": want}
    assert value.message.startswith(f"c[0][0] is {got:.10g} where a @ b gives {want:.10g}")
    worst = max(abs(a[0, 0] * b[0, 0]) for a, b in draws)  # the missing term, largest over the draws
    assert value.figure == pytest.approx(worst) and value.limit == 1e-9 and value.trial == 0
    budgets = [c for c in grade.checks if c.kind == "budget"]
    assert all(c.passed for c in budgets)  # the same number of instructions


def test_the_first_difference_is_in_the_traces_coordinates():
    """A matmul that swaps c10 and c11: the first wrong cell is c[1][0]."""
    text = (PROGRAMS / "matmul_outer_2x2.asm").read_text()
    text = text.replace("STORE R4, c[1][0]", "STORE R4, c[9][9]").replace("STORE R5, c[1][1]", "STORE R5, c[1][0]")
    text = text.replace("STORE R4, c[9][9]", "STORE R4, c[1][1]")
    grade = check_trace(text, problem("p3_matmul_outer.yaml"))
    value = grade.checks[0]
    assert not value.passed and value.first_difference["index"] == [1, 0]


def test_a_blown_budget_fails_with_the_figure_and_the_limit():
    grade = check_trace(PROGRAMS / "matmul_inner_2x2.asm", problem("p3_matmul_outer.yaml"))
    by_name = {c.name: c for c in grade.checks}
    assert by_name["c"].passed
    assert not by_name["cycles"].passed and (by_name["cycles"].figure, by_name["cycles"].limit) == (25, 22)
    # the problem's tiers {22: 3, 25: 1}
    assert by_name["cycles"].message == "25 cycles: 3 over the budget of 22; 25 or fewer earns 1 of 3 points"
    assert (by_name["cycles"].points, by_name["loads"].points, grade.score, grade.max_score) == (1, 0, 7, 10)
    assert not by_name["loads"].passed and by_name["loads"].message == "13 LOAD instructions: 3 over the budget of 10"
    assert not grade.passed and "failed: 2 of 3 checks" in grade.render()


def test_per_array_traffic_tells_inner_from_outer():
    """Seed 000's table: the inner order reads K, V n² times, the outer order once."""
    inner_as_outer = check_trace(PROGRAMS / "attention_inner_3x2.asm", problem("attention_outer.yaml"))
    reads = {c.name: c for c in inner_as_outer.checks}
    assert (reads["reads k"].figure, reads["reads k"].limit, reads["reads k"].passed) == (18, 6, False)
    outer_as_inner = check_trace(PROGRAMS / "attention_outer_3x2.asm", problem("p7_attention_inner.yaml"))
    writes = {c.name: c for c in outer_as_inner.checks}  # the running state travels to DRAM and back
    assert (writes["DRAM writes"].figure, writes["DRAM writes"].passed) == (30, False)
    assert (writes["reads q"].figure, writes["reads q"].passed) == (18, False)
    fa1_as_fa2 = check_trace(PROGRAMS / "fa1_n5_d3.asm", problem("fa2_tile.yaml"))
    assert not fa1_as_fa2.passed and any(c.name == "L" and "never stores" in c.message for c in fa1_as_fa2.checks)


def test_a_hard_coded_answer_fails_on_another_draw():
    """Copying trial 0's answer out of a .data array passes trial 0 only."""
    p = load_problem(problem("p2_matmul_inner.yaml"))
    a, b = draw_inputs(p, 0, 0).values()
    c = (a @ b).tolist()
    text = f".data answer = {c}\n" + "".join(
        f"LOAD answer[{i}][{j}], R0\nSTORE R0, c[{i}][{j}]\n" for i in range(2) for j in range(2))
    assert check_trace(text, p, trials=1).passed  # one draw cannot tell
    grade = check_trace(text, p)
    value = grade.checks[0]
    assert not value.passed and value.trial == 1 and "(trial 2 of 3)" in value.message


def test_an_answer_left_in_data_is_not_an_answer():
    text = ".data c = [[19, 22], [43, 50]]\n.data a = [[1, 2], [3, 4]]\nLOAD a[0][0], R0\n"
    grade = check_trace(text, problem("p2_matmul_inner.yaml"))
    assert grade.checks[0].message.startswith("the trace never stores to 'c'")


def test_cells_never_stored_are_named():
    text = ".data a = [[1, 2], [3, 4]]\nLOAD a[0][0], R0\nSTORE R0, c[1][1]\n"
    grade = check_trace(text, problem("p2_matmul_inner.yaml"))
    assert "c[0][0] was never stored (3 cell(s) of 'c' missing)" in grade.checks[0].message


def test_a_trace_that_cannot_run_fails_the_run_check():
    grade = check_trace(PROGRAMS / "matmul_outer_2x2.asm", problem("p2_matmul_inner.yaml"))  # needs 6 registers
    assert not grade.passed and [c.name for c in grade.checks] == ["run"]
    assert "machine has 3 registers (R0–R2)" in grade.checks[0].message and "^" in grade.checks[0].message
    grade = check_trace("LOAD a[0][0], R0\nFROB R0\n", problem("p2_matmul_inner.yaml"))
    assert "unknown instruction 'FROB'" in grade.checks[0].message


def test_json_contract():
    grade = check_trace(PROGRAMS / "matmul_inner_2x2.asm", problem("p3_matmul_outer.yaml"))
    d = json.loads(grade.render("json"))
    assert set(d) == {"problem", "problem_file", "trace", "passed", "score", "max_score", "trials", "seed", "checks"}
    assert d["passed"] is False and d["trials"] == 3 and (d["score"], d["max_score"]) == (7, 10)
    cycles = next(c for c in d["checks"] if c["name"] == "cycles")
    assert cycles == {"name": "cycles", "kind": "budget", "passed": False, "figure": 25, "limit": 22,
                      "message": "25 cycles: 3 over the budget of 22; 25 or fewer earns 1 of 3 points", "points": 1, "max_points": 3}
    again = check_trace(PROGRAMS / "matmul_inner_2x2.asm", problem("p3_matmul_outer.yaml"))
    assert again.render("json") == grade.render("json")  # deterministic
    for fmt in ("table", "markdown", "csv", "html", "latex"):
        assert "cycles" in grade.render(fmt)


def test_seed_and_trials_override_the_problem():
    g = check_trace(PROGRAMS / "softmax_online.asm", problem("p5_softmax_online.yaml"), seed=11, trials=5)
    assert g.passed and (g.seed, g.trials) == (11, 5) and "over 5 trial(s)" in g.checks[0].message
    with pytest.raises(ConfigError, match="trials must be a whole number ≥ 1"):
        check_trace(PROGRAMS / "softmax_online.asm", problem("p5_softmax_online.yaml"), trials=0)
    with pytest.raises(ConfigError, match="seed must be a whole number ≥ 0"):
        check_trace(PROGRAMS / "softmax_online.asm", problem("p5_softmax_online.yaml"), seed=-1)


def test_tolerance_is_relative_and_absolute():
    text = ".data a = [[1, 2], [3, 4]]\nLOAD a[0][0], R0\nSTORE R0, c[0][0]\n"
    p = "inputs:\n  a: [[1000000, 2], [3, 4]]\nexpect:\n  c[0][0]: a @ a - a @ a + a + {off}\ntolerance: 1e-6\n"
    tmp = ROOT / "examples" / "problems"
    near = load_problem(tmp / "tol.yaml", p.format(off=0.5))  # |diff| 0.5 ≤ 1e-6 · (1 + 1e6)
    far = load_problem(tmp / "tol.yaml", p.format(off=2))
    assert check_trace(text, near).passed and not check_trace(text, far).passed


def test_missing_trace_is_an_error():
    with pytest.raises(ConfigError, match="no such trace file"):
        check_trace(ROOT / "nonexistent.asm", problem("p1_c00.yaml"))


def test_reprs_for_notebooks():
    grade = check_trace(PROGRAMS / "c00.asm", problem("p1_c00.yaml"))
    assert "<table>" in grade._repr_html_() and "| c[0][0] | pass |" in grade._repr_markdown_()
    assert np.isfinite(grade.checks[0].figure)
