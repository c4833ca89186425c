"""Softmax generator: the seed's traces, numpy values, closed forms, the seed's pass counts."""

import numpy as np
import pytest
from conftest import PROGRAMS
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import ConfigError, parse_file, simulate
from toymachine.cost import softmax_bound, softmax_cost
from toymachine.gen.scalar.softmax import ALGOS, softmax_program


def reference(x):
    e = np.exp(x - x.max())
    return e / e.sum()


@pytest.mark.parametrize("algo,asm", [("safe", "softmax_safe.asm"), ("online", "softmax_online.asm")])
def test_n6_is_the_seeds_trace(algo, asm):
    seed = parse_file(str(PROGRAMS / asm))
    assert [str(i) for i in softmax_program(6, algo).instrs] == [str(i) for i in seed.instrs]


@pytest.mark.parametrize("algo,passes,registers", [("naive", 2, 2), ("safe", 3, 3), ("online", 2, 4)])
def test_seed_reads_and_writes(algo, passes, registers):
    """Safe: 3n reads; online: 2n reads (one pass fewer for one register more); n writes."""
    n = 9
    r = simulate(softmax_program(n, algo, with_data=False), registers=registers, steps=False)
    assert (r.dram_reads, r.dram_writes, r.registers_used) == (passes * n, n, registers)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), algo=st.sampled_from(ALGOS), seed=st.integers(0, 2**16))
def test_counts_equal_closed_form_and_values_equal_numpy(n, algo, seed):
    x = np.random.default_rng(seed).normal(0, 3, n)
    r = simulate(softmax_program(n, algo, with_data=False), data={"x": x}, steps=False)
    cost = softmax_cost(n, algo)
    assert dict(r.ops) == dict(cost.ops) and r.registers_used == cost.registers and r.cycles == cost.cycles()
    np.testing.assert_allclose(r.memory["out"], reference(x), rtol=1e-12, atol=1e-300)


def test_naive_overflows_where_safe_and_online_do_not():
    x = np.array([1.0, 800.0, 2.0])
    naive = simulate(softmax_program(3, "naive", with_data=False), data={"x": x})
    assert [a.kind for a in naive.alarms][:1] == ["overflow"]
    for algo in ("safe", "online"):
        r = simulate(softmax_program(3, algo, with_data=False), data={"x": x})
        assert not r.alarms
        np.testing.assert_allclose(r.memory["out"], reference(x))


def test_bound_is_compulsory_traffic():
    b = softmax_bound(10)
    assert (b.reads, b.writes, b.traffic) == (10, 10, 20)
    assert softmax_cost(10, "online").reads + softmax_cost(10, "online").writes > b.traffic


def test_header_and_data():
    p = softmax_program(4, "safe", seed=2)
    text = p.to_text()
    assert "safe softmax, 3 passes" in text and "toym gen softmax --n 4 --algo safe --seed 2" in text
    assert f"= {softmax_cost(4, 'safe').cycles()} cycles" in text
    assert p.arrays[0].name == "x" and len(p.arrays[0].values) == 4
    # --no-data declares the input (.array x[4]): random values on purpose, so no "never given" warning
    assert [(a.name, a.shape, a.values) for a in softmax_program(4, "safe", with_data=False).arrays] == [("x", (4,), None)]


@pytest.mark.parametrize("kwargs", [{"n": 0}, {"n": 3, "algo": "fast"}])
def test_bad_parameters(kwargs):
    with pytest.raises(ConfigError):
        softmax_program(**kwargs)
