"""The tick-level systolic array (``toymachine.sim.systolic``, seed 002 "How data flows through a
systolic array" / "Building a systolic array emulator") against numpy, the seed's formula and the
seed's (2, 3)·(3, 2) walk-through."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine.errors import DataError
from toymachine.render import FORMATS
from toymachine.render.systolic import render_systolic, systolic_report
from toymachine.sim.systolic import DATAFLOWS, TABLE_LIMIT, systolic_cycles, systolic_matmul

# The seed prints A @ B = [[4, 5], [10, 11]] for a (2, 3)·(3, 2) product, not A and B; these are
# the inputs that give it with A = [[1, 2, 3], [4, 5, 6]] (the only 0/1 matrix B that does).
SEED_A = [[1, 2, 3], [4, 5, 6]]
SEED_B = [[1, 0], [0, 1], [1, 1]]

# Seed 002, "The stagger": which A element enters each row at cycles 0..3 (then nothing).
SEED_STAGGER = [
    ["A[0,0]", "A[1,0]", "", ""],
    ["", "A[0,1]", "A[1,1]", ""],
    ["", "", "A[0,2]", "A[1,2]"],
]


def _sequential(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C = ((0 + a₀b₀) + a₁b₁) + …: the k-ordered sum a column of cells computes, each product and
    each sum rounded once (numpy's elementwise ops, no fused multiply-add)."""
    c = np.zeros((a.shape[0], b.shape[1]), dtype=np.result_type(a, b, np.int64))
    for k in range(a.shape[1]):
        c = c + a[:, k, None] * b[None, k, :]
    return c


# -- the seed's walk-through ---------------------------------------------------------------
def test_seed_walkthrough_values_and_ticks():
    run = systolic_matmul(SEED_A, SEED_B)
    assert run.c.tolist() == [[4, 5], [10, 11]]
    assert run.c.tolist() == (np.array(SEED_A) @ np.array(SEED_B)).tolist()
    assert run.ticks == 6  # the seed: "Total cycles: 6 (M+K+N-2+1 = 6)"
    assert run.cycles == 5 == run.busy_ticks
    assert run.macs == 2 * 3 * 2
    assert run.grid == (3, 2)


def test_seed_walkthrough_stagger_table():
    """The seed's stagger picture, cell for cell: A[m, k] enters row k at cycle m + k."""
    run = systolic_matmul(SEED_A, SEED_B)
    entering = [["" if run.cells[t, k, 0] < 0 else f"A[{run.cells[t, k, 0]},{k}]" for t in range(run.ticks)]
                for k in range(3)]
    assert [row[:4] for row in entering] == SEED_STAGGER
    assert all(cell == "" for row in entering for cell in row[4:])  # cycles 4, 5: nothing enters
    section = systolic_report(run).sections[0]
    assert [list(r[1:5]) for r in section.rows] == SEED_STAGGER


def test_seed_walkthrough_golden_cells():
    """Every cell at every tick (m of the A[m, row] it holds, − idle) and when each C[m, n] exits
    (the seed's docstring: at cycle m + K + n − 1)."""
    run = systolic_matmul(SEED_A, SEED_B)
    golden = [
        [[0, -1], [-1, -1], [-1, -1]],
        [[1, 0], [0, -1], [-1, -1]],
        [[-1, 1], [1, 0], [0, -1]],
        [[-1, -1], [-1, 1], [1, 0]],
        [[-1, -1], [-1, -1], [-1, 1]],
        [[-1, -1], [-1, -1], [-1, -1]],  # tick 5: the array is empty, the run ends
    ]
    assert run.cells.tolist() == golden
    assert run.exits.tolist() == [[0 + 3 + 0 - 1, 0 + 3 + 1 - 1], [1 + 3 + 0 - 1, 1 + 3 + 1 - 1]]
    assert list(run.busy_cells) == [1, 3, 4, 3, 1, 0]


def test_output_stationary_walkthrough():
    run = systolic_matmul(SEED_A, SEED_B, dataflow="output")
    assert run.c.tolist() == [[4, 5], [10, 11]]
    assert run.grid == (2, 2)  # M × N: C stays in the cells
    assert (run.ticks, run.busy_ticks, run.macs) == (6, 5, 12)
    assert run.exits.tolist() == [[2, 3], [3, 4]]  # C[i, j] complete at i + j + K − 1
    # cell (i, j) at tick t holds the pair of k = t − i − j
    for t in range(run.ticks):
        for i in range(2):
            for j in range(2):
                k = t - i - j
                assert run.cells[t, i, j] == (k if 0 <= k < 3 else -1)


# -- against numpy and the formula, every shape --------------------------------------------
shapes = st.tuples(st.integers(1, 16), st.integers(1, 16), st.integers(1, 16))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1), dataflow=st.sampled_from(DATAFLOWS))
def test_integers_equal_numpy_exactly(shape, seed, dataflow):
    m, k, n = shape
    rng = np.random.default_rng(seed)
    a = rng.integers(-1000, 1000, size=(m, k))
    b = rng.integers(-1000, 1000, size=(k, n))
    run = systolic_matmul(a, b, dataflow=dataflow)
    assert run.c.dtype == np.int64
    assert np.array_equal(run.c, a @ b)
    assert run.numpy_max_error == 0


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1), dataflow=st.sampled_from(DATAFLOWS))
def test_floats_equal_the_k_ordered_sum_bitwise(shape, seed, dataflow):
    """General floats: bit for bit the sum a column of cells computes (k order, no FMA); numpy's
    BLAS ``A @ B`` may add in another order, so against it only to rounding."""
    m, k, n = shape
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)) * 10.0 ** rng.integers(-3, 4)
    b = rng.standard_normal((k, n))
    run = systolic_matmul(a, b, dataflow=dataflow)
    ref = _sequential(a, b)
    assert run.c.dtype == np.float64
    assert np.array_equal(run.c.view(np.int64), ref.view(np.int64))
    np.testing.assert_allclose(run.c, a @ b, rtol=1e-12, atol=1e-12 * np.abs(a).max() * np.abs(b).max() * k)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1), dataflow=st.sampled_from(DATAFLOWS))
def test_exact_floats_equal_numpy_exactly(shape, seed, dataflow):
    """Floats whose products and sums are exact (small dyadic numbers): equal to numpy's A @ B."""
    m, k, n = shape
    rng = np.random.default_rng(seed)
    a = rng.integers(-64, 64, size=(m, k)) / 8.0
    b = rng.integers(-64, 64, size=(k, n)) / 4.0
    assert np.array_equal(systolic_matmul(a, b, dataflow=dataflow).c, a @ b)


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_ticks_and_cycles_every_small_shape(dataflow):
    """For every shape up to 7³: busy ticks = M+K+N−2 (counted, not assumed), ticks = that + 1,
    MACs = M·K·N, the weight-stationary cells hold A[t−k−n, k] as the stagger says."""
    for m in range(1, 8):
        for k in range(1, 8):
            for n in range(1, 8):
                run = systolic_matmul(np.ones((m, k), int), np.ones((k, n), int), dataflow=dataflow)
                assert run.busy_ticks == systolic_cycles(m, k, n) == m + k + n - 2 == run.cycles
                assert run.ticks == run.cycles + 1
                assert run.macs == m * k * n == sum(run.busy_cells)
                assert run.busy_cells[-1] == 0 and all(run.busy_cells[:-1])
                rows, cols = run.grid
                assert run.utilization == pytest.approx(m * k * n / (run.cycles * rows * cols))
                if dataflow == "weight":
                    t, r, c = np.indices(run.cells.shape)
                    want = t - r - c
                    assert np.array_equal(run.cells, np.where((want >= 0) & (want < m), want, -1))
                    mi, ni = np.indices((m, n))
                    assert np.array_equal(run.exits, mi + k - 1 + ni)


@settings(max_examples=15, deadline=None)
@given(m=st.integers(1, 60), k=st.integers(1, 60), n=st.integers(1, 60))
def test_ticks_formula_larger_shapes(m, k, n):
    run = systolic_matmul(np.ones((m, k)), np.ones((k, n)))
    assert (run.busy_ticks, run.ticks) == (m + k + n - 2, m + k + n - 1)


def test_big_run_keeps_no_table():
    rng = np.random.default_rng(1)
    a, b = rng.integers(-9, 9, size=(70, 40)), rng.integers(-9, 9, size=(40, 50))
    run = systolic_matmul(a, b)
    assert run.cells is None
    assert np.array_equal(run.c, a @ b)
    assert "cells" not in run.to_dict()
    assert TABLE_LIMIT == 16
    assert systolic_matmul(np.ones((16, 16)), np.ones((16, 16))).cells is not None


def test_non_finite_weights_stay_in_their_column():
    """An inf in B reaches only the dot products that use it; idle cells add nothing."""
    a = np.array([[1.0, 0.0], [0.0, 1.0]])
    b = np.array([[np.inf, 1.0], [2.0, 3.0]])
    for dataflow in DATAFLOWS:
        with np.errstate(invalid="ignore"):
            ref = _sequential(a, b)
        c = systolic_matmul(a, b, dataflow=dataflow).c
        assert np.array_equal(c, ref, equal_nan=True)
        assert c[0, 1] == 1.0 and c[1, 1] == 3.0


# -- errors and output ---------------------------------------------------------------------
@pytest.mark.parametrize("a, b, words", [
    ([[1, 2]], [[1, 2]], "inner dimensions differ"),
    ([1, 2], [[1], [2]], "A must be a non-empty matrix"),
    ([[1]], np.zeros((1, 0)), "B must be a non-empty matrix"),
    ([["x"]], [[1]], "real numbers"),
])
def test_bad_operands(a, b, words):
    with pytest.raises(DataError, match=words):
        systolic_matmul(a, b)


def test_bad_dataflow():
    with pytest.raises(DataError, match="weight, output"):
        systolic_matmul([[1]], [[1]], dataflow="row")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_deterministically(fmt):
    run = systolic_matmul(SEED_A, SEED_B)
    out = render_systolic(run, fmt)
    assert out == render_systolic(systolic_matmul(SEED_A, SEED_B), fmt)
    assert out.strip()


def test_json_contract():
    d = json.loads(render_systolic(systolic_matmul(SEED_A, SEED_B), "json"))
    assert d["a"] == SEED_A and d["b"] == SEED_B and d["c"] == [[4, 5], [10, 11]]
    assert (d["cycles"], d["ticks"], d["busy_ticks"], d["macs"]) == (5, 6, 5, 12)
    assert d["utilization"] == pytest.approx(12 / (5 * 6))
    assert d["exits"] == [[2, 3], [3, 4]]
    assert d["cells"][1] == [[1, 0], [0, None], [None, None]]
    assert d["array"] == {"rows": 3, "cols": 2} and d["dataflow"] == "weight"
    floats = json.loads(render_systolic(systolic_matmul([[0.5]], [[np.inf]]), "json"))
    assert floats["c"] == [["inf"]]


def test_report_summary_says_how_ticks_relate_to_cycles():
    text = render_systolic(systolic_matmul(SEED_A, SEED_B), "markdown")
    assert "| cycles | 5 (M+K+N−2) |" in text
    assert "| ticks | 6 (cycles + 1" in text
    assert "| C[1,1] | 11 | 4 |" in text
