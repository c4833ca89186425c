"""Matmul generator: the seed's traces and figures, numpy values, closed forms, monotonicity."""

import numpy as np
import pytest
from conftest import PROGRAMS
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import ConfigError, MachineLimitError, parse, parse_file, simulate
from toymachine.cost import matmul_bound, matmul_cost, matmul_plan_cost
from toymachine.cost.matmul import matmul_plans, plan_matmul
from toymachine.gen.scalar.matmul import matmul_program


def run(program, registers, **data):
    """Simulate on a machine with exactly ``registers`` registers (the budget is enforced)."""
    return simulate(program, registers=registers, data=data or None, steps=False)


def instructions(program):
    return [str(i) for i in program.instrs]


def inputs(m, n, k, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(-4, 5, (m, k)).astype(float), rng.integers(-4, 5, (k, n)).astype(float)


def test_inner_r3_is_the_seeds_problem_2_trace():
    """n = 2, R = 3, inner: the seed's serpentine c00, c01, c11, c10 — instruction for instruction."""
    assert instructions(matmul_program(2, 3, "inner")) == instructions(parse_file(str(PROGRAMS / "matmul_inner_2x2.asm")))


def test_outer_r6_is_the_seeds_problem_3_trace():
    assert instructions(matmul_program(2, 6, "outer")) == instructions(parse_file(str(PROGRAMS / "matmul_outer_2x2.asm")))


@pytest.mark.parametrize("schedule,registers,cycles,loads", [("inner", 3, 25, 13), ("outer", 6, 22, 10)])
def test_seed_cost_table(schedule, registers, cycles, loads):
    r = run(matmul_program(2, registers, schedule), registers)
    assert (r.cycles, r.ops["LOAD"], r.registers_used) == (cycles, loads, registers)


def test_quiz_inner_product_with_six_registers_beats_three():
    """Seed quiz: with 6 registers the inner product keeps an A row and three B values —
    fewer loads than with 3 registers and than the 6-register outer product."""
    r6 = run(matmul_program(2, 6, "inner"), 6)
    r3 = run(matmul_program(2, 3, "inner"), 3)
    outer6 = run(matmul_program(2, 6, "outer"), 6)
    assert r6.ops["LOAD"] < outer6.ops["LOAD"] < r3.ops["LOAD"]
    assert r6.ops["LOAD"] >= matmul_bound(2, 6).reads  # never below every input read once


@settings(max_examples=150, deadline=None)
@given(m=st.integers(1, 6), n=st.integers(1, 6), k=st.integers(1, 6), registers=st.integers(3, 40),
       schedule=st.sampled_from(["inner", "outer", "best"]), seed=st.integers(0, 2**16))
@pytest.mark.slow
def test_simulated_counts_equal_closed_form_and_values_equal_numpy(m, n, k, registers, schedule, seed):
    program = matmul_program(n, registers, schedule, m=m, k=k, with_data=False)
    a, b = inputs(m, n, k, seed)
    r = run(program, registers, a=a, b=b)
    cost = matmul_cost(n, registers, schedule, m=m, k=k)
    assert dict(r.ops) == dict(cost.ops) and r.registers_used == cost.registers
    assert (r.dram_reads, r.dram_writes, r.cycles) == (cost.reads, cost.writes, cost.cycles())
    np.testing.assert_array_equal(np.array(r.memory["c"]), a @ b)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 4), n=st.integers(1, 4), k=st.integers(1, 4), registers=st.integers(3, 20))
def test_every_candidate_schedule_matches_its_formula(m, n, k, registers):
    """Not only the chosen plan: every inner/outer blocking the search considers."""
    from toymachine.gen.common import ProgramBuilder
    from toymachine.gen.scalar.matmul import _emit_inner, _emit_outer

    a, b = inputs(m, n, k, registers)
    for plan in matmul_plans(m, n, k, registers, "best"):
        builder = ProgramBuilder()
        (_emit_inner if plan.schedule == "inner" else _emit_outer)(builder, plan)
        r = run(builder.program([]), registers, a=a, b=b)
        cost = matmul_plan_cost(plan)
        assert dict(r.ops) == dict(cost.ops) and r.registers_used == cost.registers, plan
        np.testing.assert_array_equal(np.array(r.memory["c"]), a @ b)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 8), n=st.integers(1, 8), k=st.integers(1, 8), schedule=st.sampled_from(["inner", "outer", "best"]))
def test_more_registers_never_cost_more(m, n, k, schedule):
    cycles = [matmul_cost(n, r, schedule, m=m, k=k).cycles() for r in range(3, 40)]
    assert all(later <= earlier for earlier, later in zip(cycles, cycles[1:]))


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 8), n=st.integers(1, 8), k=st.integers(1, 8), registers=st.integers(3, 40))
def test_best_is_the_cheaper_family_and_respects_the_bound(m, n, k, registers):
    """best: the cheaper family, or a searched schedule cheaper still (shapes up to 3×3·3×3)."""
    from toymachine.cost.matmul_known import best_known

    best = matmul_cost(n, registers, "best", m=m, k=k)
    inner = matmul_cost(n, registers, "inner", m=m, k=k)
    outer = matmul_cost(n, registers, "outer", m=m, k=k)
    constructive = min(inner.reads, outer.reads)
    searched = best_known(m, n, k, registers, min(inner.cycles(), outer.cycles()))
    assert best.reads == (constructive if searched is None else searched.ops["LOAD"])
    assert best.reads <= constructive
    bound = matmul_bound(n, registers, m=m, k=k)
    assert best.reads >= bound.reads and best.reads + best.writes >= bound.traffic


def test_enough_registers_reach_compulsory_traffic():
    """With room for a whole A row and all of B, every input is read exactly once."""
    n = 3
    cost = matmul_cost(n, n + n * n + 1, "inner")
    assert cost.reads == 2 * n * n


def test_program_fits_the_register_budget_it_was_given():
    program = matmul_program(4, 5, "best")
    with pytest.raises(MachineLimitError):
        simulate(program, registers=4)


@pytest.mark.parametrize("registers", [1, 2])
def test_fewer_than_three_registers_is_a_clear_error(registers):
    with pytest.raises(ConfigError) as exc:
        matmul_program(2, registers)
    assert "at least 3 registers" in exc.value.message and "partial sum" in exc.value.hint


@pytest.mark.parametrize("kwargs,key", [({"n": 0}, "n"), ({"n": 2, "m": 0}, "m"), ({"n": 2, "k": -1}, "k"),
                                        ({"n": 2, "schedule": "diagonal"}, "schedule")])
def test_bad_parameters(kwargs, key):
    kwargs.setdefault("registers", 3)
    with pytest.raises(ConfigError) as exc:
        matmul_program(**kwargs)
    assert exc.value.key == key and exc.value.message.startswith(f"{key} must be")


def test_header_states_parameters_and_cost_and_text_round_trips():
    program = matmul_program(3, 5, "outer", m=2, k=4, seed=3)
    text = program.to_text()
    cost = matmul_cost(3, 5, "outer", m=2, k=4)
    assert text.startswith("; C = A·B on a 5-register toy machine")
    assert "--m 2 --n 3 --k 4 --registers 5 --schedule outer" in text
    assert f"= {cost.cycles()} cycles" in text and f"{cost.reads} LOAD" in text
    assert parse(text) == program
    assert matmul_program(3, 5, "outer", m=2, k=4, seed=3).to_text() == text  # deterministic
    assert matmul_program(3, 5, "outer", m=2, k=4, seed=4).to_text() != text  # the seed picks the data


def test_with_data_values_are_the_seeds_integers():
    program = matmul_program(2, 3)
    a = np.array(program.arrays[0].values)
    assert a.shape == (2, 2) and np.all(a == np.round(a)) and np.all(np.abs(a) <= 4)
    r = simulate(program)
    np.testing.assert_array_equal(np.array(r.memory["c"]), a @ np.array(program.arrays[1].values))


def test_plan_orientation_follows_the_shape():
    """A tall C (m ≫ n) is cheaper walked column by column: the plan transposes."""
    assert plan_matmul(n=1, m=8, k=4, registers=6, schedule="inner").orientation == "cols"
    assert plan_matmul(n=8, m=1, k=4, registers=6, schedule="inner").orientation == "rows"
