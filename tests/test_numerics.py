"""Numerical alarms on the scalar machine: overflow, NaN, division by zero, underflow."""

import math

import numpy as np
import pytest

from toymachine import NumericsError, simulate


def kinds(r):
    return [a.kind for a in r.alarms]


def test_exp_overflow_in_fp16_is_the_first_alarm():
    # e^12 = 162754.8 > 65504 (fp16 max); e^11 = 59874 fits
    text = ".data x = [11, 12]\nLOAD x[0], R0\nEXP R0, R1\nLOAD x[1], R0\nEXP R0, R2\nADD R1, R2, R3\n"
    r = simulate(text, dtype="fp16")
    assert kinds(r) == ["overflow"]
    a = r.alarms[0]
    assert (a.step, a.line, a.instruction) == (4, 5, "EXP R0, R2") and a.operands == (12.0,)
    assert r.registers["R1"] == float(np.float16(math.exp(11))) and r.registers["R2"] == math.inf
    # inf + finite is not a new overflow: only the first step that made one counts
    assert simulate(text, dtype="fp64").alarms == ()


def test_multiplication_overflow_fp64():
    r = simulate(".data x = [1e200]\nLOAD x[0], R0\nMUL R0, R0, R1\n")
    assert kinds(r) == ["overflow"] and r.registers["R1"] == math.inf


def test_nan_from_inf_minus_inf_is_reported_once():
    text = (".data x = [1e200]\nLOAD x[0], R0\nMUL R0, R0, R1\nSUB R1, R1, R2\nSUB R1, R1, R3\n")
    r = simulate(text)
    assert kinds(r) == ["overflow", "nan"] and r.alarms[1].step == 3
    assert math.isnan(r.registers["R2"])


def test_division_by_zero():
    r = simulate(".data x = [1, 0]\nLOAD x[0], R0\nLOAD x[1], R1\nDIV R0, R1, R2\nDIV R1, R1, R3\n")
    assert kinds(r) == ["div-by-zero"] and r.alarms[0].step == 3
    assert r.registers["R2"] == math.inf and math.isnan(r.registers["R3"])


def test_underflow_is_counted_not_alarmed():
    r = simulate(".data x = [-800, -1]\nLOAD x[0], R0\nEXP R0, R1\nLOAD x[1], R0\nEXP R0, R2\n")
    assert r.alarms == () and r.underflows == 1 and r.first_underflow.step == 2
    # fp16: e^-20 = 2e-9 is below fp16's smallest subnormal (6e-8): underflows there only
    text = ".data x = [-20]\nLOAD x[0], R0\nEXP R0, R1\n"
    assert simulate(text, dtype="fp16").underflows == 1 and simulate(text).underflows == 0


def test_zero_results_that_are_exact_are_not_underflows():
    r = simulate(".data x = [3, 0]\nLOAD x[0], R0\nSUB R0, R0, R1\nLOAD x[1], R2\nMUL R0, R2, R3\n")
    assert r.underflows == 0 and r.registers["R1"] == 0.0


def test_strict_numerics_turns_the_first_alarm_into_an_error():
    with pytest.raises(NumericsError) as e:
        simulate(".data x = [12]\nLOAD x[0], R0\nEXP R0, R1\n", dtype="fp16", strict_numerics=True, file="t.asm")
    assert "overflow at step 2" in e.value.message and e.value.loc.line == 3


def test_alarms_in_json(toym, tmp_path):
    import json

    p = tmp_path / "o.asm"
    p.write_text(".data x = [12]\nLOAD x[0], R0\nEXP R0, R1\n")
    code, out, _ = toym("run", p, "--dtype", "fp16", "-f", "json")
    d = json.loads(out)
    assert code == 0 and d["alarms"][0]["kind"] == "overflow" and d["alarms"][0]["line"] == 3
    assert d["registers"]["R1"] == "inf" and d["dtype"] == "fp16"
    code, _, err = toym("run", p, "--dtype", "fp16", "--strict-numerics")
    assert code == 2 and "overflow" in err and "Traceback" not in err
