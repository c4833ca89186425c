"""A grade a student understands: every row of `toym check` says in words what was measured, against
what, and why it passed or failed; a variant says what it is; a problem's title states its budgets."""

import re

import pytest
from conftest import PROGRAMS, ROOT

from toymachine.check import check_trace, load_problem
from toymachine.check.grader import draw_inputs

PROBLEMS = ROOT / "examples" / "problems"
WRONG_C00 = "LOAD a[0][0], R0\nLOAD b[0][1], R1\nMAC_Z R0, R1, R2\nLOAD a[0][1], R0\nLOAD b[1][0], R1\n" \
            "MAC R0, R1, R2, R2\nSTORE R2, c[0][0]\n"


def _rows(table: str) -> dict[str, str]:
    """The table's rows by check name: the text after the result and points columns."""
    rows = {}
    for line in table.splitlines():
        m = re.match(r"^ (\S+(?: \S+)?)\s+(pass|FAIL)\s+\S+/\S+\s+(.*)$", line)
        if m:
            rows[m.group(1)] = m.group(3)
    return rows


def test_the_table_has_no_bare_figures():
    grade = check_trace(PROGRAMS / "matmul_inner_2x2.asm", PROBLEMS / "p3_matmul_outer.yaml")
    header = grade.render("table").splitlines()[1].split()
    assert "figure" not in header and "limit" not in header


def test_a_budget_row_names_the_figure_the_budget_and_the_excess():
    grade = check_trace(PROGRAMS / "matmul_inner_2x2.asm", PROBLEMS / "p3_matmul_outer.yaml")
    rows = _rows(grade.render("table"))
    for check in grade.checks:
        if check.kind != "budget":
            continue
        text = rows[check.name]
        assert f"{check.figure:g}" in text and f"budget of {check.limit:g}" in text
        over = check.figure - check.limit
        assert (f"{over:g} over" in text) == (not check.passed) and ("within" in text) == check.passed


def test_a_forbidden_instruction_is_named():
    p = PROBLEMS / "p1_c00.yaml"
    allowed = load_problem(p).allowed_ops
    grade = check_trace("LOAD a[0][0], R0\nLOAD b[0][0], R1\nMUL R0, R1, R2\nLOAD a[0][1], R0\nLOAD b[1][0], R1\n"
                        "MAC R0, R1, R2, R2\nSTORE R2, c[0][0]\n", p)
    ops = next(c for c in grade.checks if c.kind == "ops")
    assert "MUL" not in allowed and not ops.passed
    text = _rows(grade.render("table"))["instructions"]
    assert "MUL (1×)" in text and "not allow" in text and ", ".join(allowed) in text
    ok = next(c for c in check_trace(PROGRAMS / "c00.asm", p).checks if c.kind == "ops")
    assert ok.passed and ", ".join(allowed) in ok.message and "0" not in ok.message


def test_a_wrong_value_gives_got_expected_and_the_difference_of_one_trial():
    p = PROBLEMS / "p1_c00.yaml"
    grade = check_trace(WRONG_C00, p)
    value = next(c for c in grade.checks if c.kind == "value")
    a, b = draw_inputs(load_problem(p), 0, 0).values()  # trial 1: the first that fails
    got, want = a[0, 0] * b[0, 1] + a[0, 1] * b[1, 0], (a @ b)[0, 0]
    text = _rows(grade.render("table"))["c[0][0]"]
    assert f"{got:.10g}" in text and f"{want:.10g}" in text and f"off by {abs(got - want):.3g}" in text
    assert "trial 1 of 3" in text and f"{value.figure:.5g}" not in text  # one trial's numbers, not the worst of all


def test_a_variant_is_explained_where_it_appears():
    table = check_trace(PROGRAMS / "c00.asm", PROBLEMS / "p1_c00.yaml").render("table")
    line = next(x for x in table.splitlines() if x.startswith("variant 1 of 4"))
    assert "--student" in line and "versions" in line


@pytest.mark.parametrize("path", sorted(PROBLEMS.glob("*.yaml")), ids=lambda p: p.stem)
def test_a_title_states_the_budgets_it_grades(path):
    """`N registers` in a title is the problem machine's register count, and `N cycles` the cycle budget
    that earns full points."""
    problem = load_problem(path)
    for n in re.findall(r"(\d+) registers", problem.title):
        assert int(n) == problem.machine.registers, problem.title
    cycles = re.findall(r"(\d+) cycles", problem.title)
    if cycles:
        assert int(cycles[0]) == problem.rules["cycles"].limit, problem.title
