"""The table of searched schedules behind `gen matmul --schedule best`: every entry runs and costs
what it claims, the quick ones are re-proven by the search, and the generator uses them."""

import numpy as np
import pytest

from toymachine import parse, resolve_machine, simulate
from toymachine.cost import matmul_cost, matmul_known_table
from toymachine.cost.matmul_known_table import KNOWN
from toymachine.gen import matmul_program
from toymachine.optimize import optimize_matmul
from toymachine.optimize.matmul_table import build_table

KNOWN_ACC = getattr(matmul_known_table, "KNOWN_ACC", {})

SHAPES = sorted({key[:3] for key in KNOWN})
QUICK = [key for key, row in sorted(KNOWN.items()) if row[2] and row[3] <= 0.5 and key[0] * key[1] * key[2] <= 12]


def constructive(m, n, k, R):
    return min(matmul_cost(n, R, s, m=m, k=k).cycles() for s in ("inner", "outer"))


@pytest.mark.parametrize("key", sorted(KNOWN))
def test_every_entry_is_consistent(key):
    m, n, k, R = key
    cycles, lower, proven, seconds, text = KNOWN[key]
    assert lower <= cycles and (not proven or lower == cycles)
    assert cycles <= constructive(m, n, k, R)
    assert lower >= m * k + k * n + 2 * m * n + m * n * (k - 1)  # every input once, every product, every store
    if text:
        rng = np.random.default_rng(sum(key))
        a, b = rng.integers(-4, 5, (m, k)).astype(float), rng.integers(-4, 5, (k, n)).astype(float)
        r = simulate(parse(text), registers=R, data={"a": a, "b": b}, steps=False)
        assert r.cycles == cycles
        np.testing.assert_array_equal(np.array(r.memory["c"]), a @ b)
    else:
        assert cycles == constructive(m, n, k, R)


@pytest.mark.parametrize("key", QUICK)
def test_quick_entries_are_re_proven(key):
    m, n, k, R = key
    opt = optimize_matmul(n, R, m=m, k=k, with_data=False)
    assert opt.proven_optimal and opt.cycles == KNOWN[key][0]


@pytest.mark.slow
def test_regenerating_a_shape_gives_the_same_entries():
    """The table is data the optimizer writes (python -m toymachine.optimize.matmul_table --write)."""
    fresh = build_table(shapes=[(2, 2, 2), (2, 3, 2)])
    for key, row in fresh.items():
        assert row[:3] + row[4:] == KNOWN[key][:3] + KNOWN[key][4:]
    fresh = build_table(shapes=[(2, 2, 2)], accumulator=True)
    for key, row in fresh.items():
        assert row[:3] + row[4:] == KNOWN_ACC[key][:3] + KNOWN_ACC[key][4:]


@pytest.mark.parametrize("key", sorted(KNOWN_ACC))
def test_accumulator_entries_run_on_an_accumulator_machine(key):
    m, n, k, R = key
    cycles, lower, proven, _, text = KNOWN_ACC[key]
    assert lower <= cycles and (not proven or lower == cycles)
    program = matmul_program(n, R, "best", m=m, k=k, mac_accumulator=True)
    r = simulate(program, resolve_machine("toy2acc").with_(registers=R), steps=False)
    cost = matmul_cost(n, R, "best", m=m, k=k, mac_accumulator=True)
    assert r.cycles == cycles == cost.cycles() and dict(r.ops) == dict(cost.ops)
    assert r.registers_used == cost.registers <= R
    a, b = (np.array(x.values) for x in program.arrays)
    np.testing.assert_array_equal(np.array(r.memory["c"]), a @ b)


@pytest.mark.parametrize("shape", SHAPES)
def test_gen_best_uses_the_table_and_its_cost_equals_the_simulator(shape):
    m, n, k = shape
    last = None
    for R in range(3, max(r for (*s, r) in KNOWN if tuple(s) == shape) + 2):
        program = matmul_program(n, R, "best", m=m, k=k)
        r = simulate(program, registers=R, steps=False)
        cost = matmul_cost(n, R, "best", m=m, k=k)
        assert dict(r.ops) == dict(cost.ops) and r.registers_used == cost.registers and r.cycles == cost.cycles()
        a, b = (np.array(x.values) for x in program.arrays)
        np.testing.assert_array_equal(np.array(r.memory["c"]), a @ b)
        known = KNOWN.get((m, n, k, R))
        if known is not None:
            assert r.cycles == known[0]  # the least cycles found, for every tabulated R
        assert last is None or r.cycles <= last
        last = r.cycles


def test_two_by_two_matmul_figures_are_the_proven_optima():
    assert [matmul_cost(2, R).cycles() for R in range(3, 9)] == [25, 22, 21, 20, 20, 20]
    assert all(KNOWN[(2, 2, 2, R)][2] for R in range(3, 7))
    header = matmul_program(2, 4).header
    assert any("proven optimal" in line for line in header)
