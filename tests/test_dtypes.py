"""Number formats: rounding matches numpy's IEEE casts; registers and stores round."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import simulate
from toymachine.dtypes import DTYPES


@pytest.mark.parametrize("name,np_type", [("fp32", np.float32), ("fp16", np.float16)])
def test_scalar_rounding_equals_numpy_cast(name, np_type):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(20000) * 10.0 ** rng.integers(-12, 8, 20000),
                        [65504.0, 65519.99, 65520.0, 1e-8, 2.98e-8, 5.96e-8, 3.4e38, 3.5e38]])
    d = DTYPES[name]
    with np.errstate(over="ignore"):
        want = x.astype(np_type).astype(np.float64)
    got = np.array([d.round_scalar(float(v)) for v in x])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(d.round_array(x), want)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_bf16_scalar_and_array_agree_and_have_8_significant_bits(v):
    d = DTYPES["bf16"]
    s = d.round_scalar(v)
    assert s == d.round_array(np.array([v]))[0] or (np.isnan(s))
    if s not in (0.0, float("inf"), float("-inf")) and abs(v) >= d.tiny:
        m, _ = np.frexp(s)
        assert (m * 2 ** 8) == int(m * 2 ** 8)  # 1 implicit + 7 fraction bits
        assert abs(s - v) <= abs(v) * 2.0 ** -8


def test_bf16_is_truncated_fp32_range():
    d = DTYPES["bf16"]
    assert d.round_scalar(1.0 + 2 ** -8) == 1.0  # tie → even
    assert d.round_scalar(1.0 + 3 * 2 ** -8) == 1.0 + 2 ** -6
    assert d.round_scalar(3.5e38) == float("inf") and d.max == pytest.approx(3.3895e38, rel=1e-4)


def test_registers_round_to_machine_dtype():
    text = ".data x = [0.1, 3]\nLOAD x[0], R0\nLOAD x[1], R1\nDIV R0, R1, R2\nSTORE R2, y[0]\n"
    r = simulate(text, dtype="fp16")
    want = float(np.float16(np.float16(0.1) / np.float16(3.0)))
    assert r.registers["R2"] == want and r.memory["y"] == [want] and r.memory["x"][0] == float(np.float16(0.1))
    assert simulate(text).registers["R2"] == 0.1 / 3
