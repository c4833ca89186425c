"""Scalar attention generator: numpy values for every variant, the seed's cost table, slots."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import ConfigError, MachineLimitError, parse, simulate
from toymachine.cli.vocabulary import flag_words
from toymachine.cost import attention_cost, attention_registers
from toymachine.gen.scalar.attention import VARIANTS, attention_program, resolve_attention


def recurrence(q, k, v, variant):
    """The online recurrence each variant runs, in numpy (seed 000 Problem 7; seed 003 breaks)."""
    n, d = q.shape
    out = np.zeros((n, d))
    for i in range(n):
        m, l_, num = -np.inf, 0.0, np.zeros(d)
        for j in range(n):
            x = q[i] @ k[j]
            if variant == "exact":
                new = max(m, x)
                c, p = np.exp(m - new), np.exp(x - new)
                l_, num, m = l_ * c + p, num * c + p * v[j], new
            elif variant == "no-rescale":
                m = max(m, x)
                p = np.exp(x - m)
                l_, num = l_ + p, num + p * v[j]
            else:
                p = np.exp(x)
                l_, num = l_ + p, num + p * v[j]
        out[i] = num / l_
    return out


def attention(q, k, v):
    s = q @ k.T
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


def run(n, d, order, slots=None, variant="exact", seed=0, registers=None):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(0, 1, (n, d)) for _ in range(3))
    program = attention_program(n, d, order, registers=registers, output_slots=slots, variant=variant,
                                with_data=False)
    used_slots, need = resolve_attention(n, d, order, registers, slots, variant)
    r = simulate(program, data={"q": q, "k": k, "v": v}, registers=registers or need, steps=False)
    return r, (q, k, v), used_slots


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 6), d=st.integers(1, 4), order=st.sampled_from(["inner", "outer"]),
       variant=st.sampled_from(VARIANTS), slot_fraction=st.floats(0, 1), seed=st.integers(0, 2**16))
def test_counts_equal_closed_form_and_values_equal_numpy(n, d, order, variant, slot_fraction, seed):
    slots = round(slot_fraction * n) if order == "outer" else None
    r, (q, k, v), used = run(n, d, order, slots, variant, seed)
    cost = attention_cost(n, d, order, used, variant)
    assert dict(r.ops) == dict(cost.ops) and r.registers_used == cost.registers
    assert r.registers_used == attention_registers(n, d, order, used, variant)
    np.testing.assert_allclose(np.array(r.memory["o"]), recurrence(q, k, v, variant), rtol=1e-12, atol=1e-12)
    if variant != "no-rescale":  # the exact recurrences are attention itself
        np.testing.assert_allclose(np.array(r.memory["o"]), attention(q, k, v), rtol=1e-10, atol=1e-12)


def test_no_rescale_is_wrong_and_no_max_overflows():
    """Seed 003's two breaks: no rescaling gives a finite wrong answer; no max overflows."""
    r, (q, k, v), _ = run(5, 2, "inner", variant="no-rescale", seed=1)
    assert np.max(np.abs(np.array(r.memory["o"]) - attention(q, k, v))) > 1e-3
    q = np.full((2, 1), 30.0)
    k = np.full((2, 1), 30.0)
    v = np.ones((2, 1))
    big = simulate(attention_program(2, 1, variant="no-max", with_data=False), data={"q": q, "k": k, "v": v})
    assert "overflow" in [a.kind for a in big.alarms]
    safe = simulate(attention_program(2, 1, with_data=False), data={"q": q, "k": k, "v": v})
    assert not safe.alarms and np.allclose(safe.memory["o"], 1.0)


@pytest.mark.parametrize("n,d", [(3, 2), (5, 1), (4, 3)])
def test_seed_cost_table_in_rows(n, d):
    """Q loads n vs n², KV loads n² vs n, O loads/stores n vs n² (seed 000 'Cost comparison')."""
    state = d + 2
    inner, _, _ = run(n, d, "inner")
    outer, _, _ = run(n, d, "outer", slots=0)
    # inner: q rows n·d + k, v rows n²·2d + state loads n·(d+2); stores n rows of d
    assert inner.dram_reads == n * d + n * n * 2 * d + n * state
    assert inner.dram_writes == n * d
    # outer: q rows n²·d + k, v rows n·2d + state loads n²·(d+2); n² − n state stores and n output rows
    assert outer.dram_reads == n * n * d + n * 2 * d + n * n * state
    assert outer.dram_writes == (n * n - n) * state + n * d
    table = {"inner": (n, n * n, n, n), "outer": (n * n, n, n * n, n * n)}
    for order in ("inner", "outer"):
        b = attention_cost(n, d, order, 0).breakdown
        assert (b["Q row loads"], b["KV row loads"], b["O row loads"], b["O row stores"]) == table[order]


@pytest.mark.parametrize("n,d", [(4, 2), (3, 1)])
def test_each_output_slot_saves_n_minus_1_loads_and_stores(n, d):
    state = d + 2
    runs = [run(n, d, "outer", slots=k)[0] for k in range(n + 1)]
    for fewer, more in zip(runs, runs[1:]):
        assert fewer.dram_writes - more.dram_writes == (n - 1) * state
        assert fewer.dram_reads - more.dram_reads == (n - 1) * state
    inner = run(n, d, "inner")[0]
    assert runs[-1].dram_writes == inner.dram_writes  # K = n stores each row once, as inner does


def test_registers_choose_the_slots_and_too_few_is_an_error():
    n, d = 4, 2
    base = attention_registers(n, d, "outer", 0)
    assert resolve_attention(n, d, "outer", registers=base)[0] == 0
    assert resolve_attention(n, d, "outer", registers=base + 2 * (d + 2))[0] == 2
    with pytest.raises(ConfigError) as exc:
        attention_program(n, d, "inner", registers=2 * d + 4)
    assert f"needs {2 * d + 5} registers" in exc.value.message and exc.value.key == "registers"
    assert exc.value.hint_in(flag_words).endswith(f"use --registers {2 * d + 5}")
    with pytest.raises(MachineLimitError):  # the program really needs them
        simulate(attention_program(n, d, "inner"), registers=2 * d + 4)


@pytest.mark.parametrize("kwargs,needle", [
    ({"order": "inner", "output_slots": 1}, "output_slots is for order = outer"),
    ({"order": "outer", "output_slots": 9}, "more than the n = 4"),
    ({"order": "sideways"}, "order must be one of"), ({"variant": "approx"}, "variant must be one of"),
    ({"d": 0}, "d must be at least 1"),
])
def test_bad_parameters(kwargs, needle):
    with pytest.raises(ConfigError) as exc:
        attention_program(4, kwargs.pop("d", 2), **kwargs)
    assert needle in exc.value.message


def test_header_and_round_trip():
    p = attention_program(3, 2, "outer", output_slots=1, seed=5)
    text = p.to_text()
    assert "KV loop outside" in text and "--output-slots 1" in text and "row_max = −inf" in text
    assert f"{attention_cost(3, 2, 'outer', 1).cycles()} cycles" in text
    assert parse(text) == p
