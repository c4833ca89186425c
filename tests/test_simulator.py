"""The scalar simulator: semantics against numpy/math, streaming, limits, faults."""

import io
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import MachineLimitError, RuntimeFault, parse, simulate
from toymachine.sim.memory import random_value


def test_every_alu_op_matches_python_math():
    x = [1.5, -0.25]
    src = ".data x = [1.5, -0.25]\nLOAD x[0], R0\nLOAD x[1], R1\n"
    want = {"MAX": max(x), "SUB": x[0] - x[1], "ADD": x[0] + x[1], "MUL": x[0] * x[1], "DIV": x[0] / x[1],
            "MAC_Z": x[0] * x[1]}
    for op, value in want.items():
        r = simulate(parse(src + f"{op} R0, R1, R2\n"))
        assert r.registers["R2"] == value, op
    r = simulate(parse(src + "EXP R1, R2\nMOV R0, R3\nMAC R0, R1, R0, R4\n"))
    assert r.registers["R2"] == math.exp(x[1]) and r.registers["R3"] == x[0]
    assert r.registers["R4"] == x[0] * x[1] + x[0]


def test_text_and_program_paths_agree():
    text = (".data x = [3, 1, 4, 1, 5]\n" + "".join(f"LOAD x[{i}], R0\nMAX R0, R1, R1\n" if i else "LOAD x[0], R1\n"
                                                      for i in range(5)) + "STORE R1, m[0]\n")
    a = simulate(parse(text)).to_dict()
    b = simulate(io.StringIO(text)).to_dict()
    a["file"] = b["file"] = None
    assert a == b and a["memory"]["m"] == [5.0]


def test_random_inputs_are_deterministic_and_seeded():
    text = "LOAD x[3], R0\nLOAD y[1][2], R1\nADD R0, R1, R2\nSTORE R2, z[0]\n"
    r1, r2, r3 = simulate(text), simulate(text), simulate(text, seed=1)
    assert r1.memory == r2.memory and r1.memory["x"] != r3.memory["x"]
    assert r1.registers["R0"] == random_value(0, "x", (3,))
    assert r1.memory["z"] == [random_value(0, "x", (3,)) + random_value(0, "y", (1, 2))]
    assert len(r1.memory["x"]) == 4 and np.array(r1.memory["y"]).shape == (2, 3)


def test_written_only_arrays_take_implied_shape_with_nulls():
    r = simulate(".data v = [7]\nLOAD v[0], R0\nSTORE R0, out[2][1]\n")
    assert r.memory["out"] == [[None, None], [None, None], [None, 7.0]]
    import json

    assert json.loads(json.dumps(r.to_dict()))["memory"]["out"][0] == [None, None]


def test_data_argument_overrides_inline_data():
    r = simulate(".data x = [1, 2]\nLOAD x[1], R0\nSTORE R0, y[0]\n", data={"x": [5, 6]})
    assert r.memory["y"] == [6.0]


def test_register_count_defaults_to_names_used():
    r = simulate("LOAD x[0], R0\nMOV R0, R7\n")
    assert r.registers_used == 2


def test_register_limit_names_the_register():
    with pytest.raises(MachineLimitError) as e:
        simulate("LOAD x[0], R0\nMOV R0, R3\n", registers=3, file="t.asm")
    assert "machine has 3 registers (R0–R2); R3 is beyond them" in e.value.message
    assert (e.value.loc.line, e.value.loc.col) == (2, 9) and (e.value.key, e.value.suggestion) == ("registers", 4)


def test_read_of_empty_register_is_a_fault():
    with pytest.raises(RuntimeFault) as e:
        simulate("LOAD x[0], R0\nADD R0, R1, R2\n", file="t.asm")
    assert "R1 is read before anything was written" in e.value.message and e.value.loc.col == 9
    for text in ("STORE R4, y[0]\n", "MOV R2, R3\n", "EXP R2, R3\n"):
        with pytest.raises(RuntimeFault):
            simulate(text)


def test_index_outside_given_shape():
    with pytest.raises(RuntimeFault) as e:
        simulate(".data x = [[1, 2], [3, 4]]\nLOAD x[1][2], R0\n", file="t.asm")
    assert "index 2 is outside 'x' (dimension 1 has size 2, valid 0..1)" in e.value.message


def test_block_address_is_an_error_on_scalar_values():
    with pytest.raises(Exception) as e:
        simulate("LOAD Q[0:4, :], R0\n")
    assert "block" in str(e.value) or "tile" in str(e.value) or "shape" in str(e.value)


def test_costs_follow_machine_cycles():
    from toymachine import Machine

    m = Machine(cycles={"LOAD": 10, "EXP": 4})
    r = simulate(".data x = [0]\nLOAD x[0], R0\nEXP R0, R1\nSTORE R1, y[0]\n", m)
    assert r.cycles == 10 + 4 + 1 and r.instructions == 3


def test_steps_kept_only_when_short_or_asked():
    text = "LOAD x[0], R0\n" + "MOV R0, R1\n" * 250
    assert simulate(text).steps is None or simulate(text).steps_dropped
    assert len(simulate(text, steps=True).steps) == 251
    assert simulate(text, steps=False).steps in (None, ())
    assert len(simulate("LOAD x[0], R0\n").steps) == 1


def test_step_rows_hold_registers_after_each_step():
    r = simulate(".data a = [2, 3]\nLOAD a[0], R0\nLOAD a[1], R1\nMUL R0, R1, R0\n")
    assert [s.registers for s in r.steps] == [(2.0, None), (2.0, 3.0), (6.0, 3.0)]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=12))
def test_generated_online_softmax_matches_numpy(xs):
    """Online softmax written out for random inputs equals numpy's softmax."""
    n = len(xs)
    lines = [f".data x = [{', '.join(repr(v) for v in xs)}]", "LOAD x[0], R0", "MOV R0, R1", "SUB R0, R1, R0",
             "EXP R0, R0", "MOV R0, R2"]
    for i in range(1, n):
        lines += [f"LOAD x[{i}], R0", "MOV R1, R3", "MAX R1, R0, R1", "SUB R3, R1, R3", "SUB R0, R1, R0",
                  "EXP R3, R3", "EXP R0, R0", "MUL R2, R3, R2", "ADD R2, R0, R2"]
    for i in range(n):
        lines += [f"LOAD x[{i}], R0", "SUB R0, R1, R0", "EXP R0, R0", "DIV R0, R2, R0", f"STORE R0, out[{i}]"]
    r = simulate("\n".join(lines) + "\n")
    x = np.array(xs)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(r.memory["out"], e / e.sum(), rtol=1e-12, atol=1e-300)
    assert (r.dram_reads, r.dram_writes) == (2 * n, n)


def test_streams_lines_without_holding_them():
    """A generator of lines is consumed lazily: the simulator never needs len()."""
    def lines():
        yield "LOAD x[0], R0\n"
        for _ in range(10_000):
            yield "ADD R0, R0, R1\n"
    r = simulate(lines(), steps=False)
    assert r.instructions == 10_001 and r.steps in (None, ())


def test_word_access_after_an_array_goes_dense_reads_the_dense_copy():
    """A block LOAD makes an array dense; later word accesses whose lines look like earlier
    ones (the LOAD/STORE template cache) must see the dense copy, streamed or not."""
    text = (".data x = [[1, 2], [3, 4]]\n.data v = [10]\nLOAD x[0][0], R0\nLOAD x[0:2, :], T0\n"
            "LOAD v[0], R1\nSTORE R1, x[0][1]\nLOAD x[0][1], R0\nSTORE R0, y[0]\n")
    for source in (text, io.StringIO(text)):
        r = simulate(source)
        assert r.memory["y"] == [10.0] and r.memory["x"] == [[1.0, 10.0], [3.0, 4.0]]


def test_initial_values_in_runs_equal_the_per_cell_hash():
    """An array's never-written cells read their deterministic random value; the runs they are
    made in (a 1-D array's long runs, a row's shorter ones) never change a value: the run boundaries
    and rows longer than a run give what ``random_value`` gives for that one cell."""
    from toymachine.sim.memory import Array, random_value

    a = Array("w", None, seed=3)
    for idx in [(0,), (4095,), (4096,), (9000,), (0, 5), (7, 255), (7, 256), (2, 1000), (1, 3, 600)]:
        assert a.initial(idx) == random_value(3, "w", idx), idx
