"""Welford variance generator: numpy's sample variance, the closed form, one pass."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import ConfigError, simulate
from toymachine.cost import VARIANCE_REGISTERS, variance_cost
from toymachine.gen.scalar.variance import variance_program


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 60), seed=st.integers(0, 2**16), shift=st.sampled_from([0.0, 1e6]))
def test_values_equal_numpy_and_counts_equal_closed_form(n, seed, shift):
    """Shifted data is where the one-pass textbook formula Σx² − n·x̄² fails; Welford does not."""
    x = np.random.default_rng(seed).normal(shift, 1.0, n)
    r = simulate(variance_program(n, with_data=False), data={"x": x}, registers=VARIANCE_REGISTERS, steps=False)
    cost = variance_cost(n)
    assert dict(r.ops) == dict(cost.ops) and r.registers_used == cost.registers == VARIANCE_REGISTERS
    assert r.dram_reads == n  # one pass
    np.testing.assert_allclose(r.memory["variance"][0], np.var(x, ddof=1), rtol=1e-9)
    np.testing.assert_allclose(r.memory["mean"][0], np.mean(x), rtol=1e-12)


def test_with_data_program_is_self_contained():
    p = variance_program(5, seed=1)
    x = np.array(p.arrays[0].values)
    r = simulate(p)
    assert r.memory["variance"][0] == pytest.approx(np.var(x, ddof=1))
    assert "6 registers" in p.to_text() and f"{variance_cost(5).cycles()} cycles" in p.to_text()


@pytest.mark.parametrize("n", [1, 0])
def test_sample_variance_needs_two_values(n):
    with pytest.raises(ConfigError) as exc:
        variance_program(n)
    assert "at least 2" in exc.value.message and "n − 1" in exc.value.hint
