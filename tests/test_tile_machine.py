"""The tile machine (toymachine.sim.engines.tile): block LOAD/STORE, tile semantics against numpy, SRAM
accounting and its limit, errors with locations, numerical alarms, dtype rounding."""

import json

import numpy as np
import pytest

from toymachine import (
    AsmError,
    Machine,
    MachineLimitError,
    NumericsError,
    RuntimeFault,
    parse,
    simulate,
)
from toymachine.dtypes import get_dtype
from toymachine.sim.memory import random_block, random_value

A = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])  # 2×3
B = np.array([[2.0, 1.0, 0.0], [-1.0, 3.0, 2.0]])  # 2×3
DATA = {"a": A, "b": B, "v": np.array([10.0, 20.0])}


def run(body, **kw):
    text = ".array a[2][3]\n.array b[2][3]\n.array v[2]\n" + body
    return simulate(text, data=kw.pop("data", DATA), file="t.asm", **kw)


# -- semantics against numpy -------------------------------------------------------------
@pytest.mark.parametrize("line,expect", [
    ("MAC_Z T0, T1.T, T2", A @ B.T),
    ("MAC_Z T0.T, T1, T2", A.T @ B),
    ("MAC T0, T1.T, T3, T2", A @ B.T + np.array([[10.0], [20.0]])),  # accumulate a broadcast column
    ("SUB T0, T3, T2", A - np.array([[10.0], [20.0]])),  # (r,c) − (r,1): row broadcast
    ("DIV T0, T1, T2", A / B),
    ("MAX T0, T1, T2", np.maximum(A, B)),
    ("ROWMAX T0, T2", A.max(axis=1, keepdims=True)),
    ("ROWSUM T0, T2", A.sum(axis=1, keepdims=True)),
    ("EXP T0, T2", np.exp(A)),
    ("MOV T0.T, T2", A.T),
    ("FILL -inf, 2, 1, T2", np.full((2, 1), -np.inf)),
    ("MASK T0, 0, 0, T2", np.where(np.tril(np.ones((2, 3), bool)), A, -np.inf)),
    ("MASK T0, 5, 4, T2", np.where([[True, True, False], [True, True, True]], A, -np.inf)),
])
def test_tile_semantics_match_numpy(line, expect):
    r = run(f"LOAD a[0:2, :], T0\nLOAD b[:, 0:3], T1\nLOAD v[0:2], T3\n{line}\n")
    np.testing.assert_array_equal(r.registers["T2"], expect)


def test_a_vector_block_is_a_column_and_stores_back():
    r = run("LOAD v[0:2], T0\nLOAD a[1, 0:3], T1\nADD T0, T0, T0\nSTORE T0, v[0:2]\nSTORE T1, a[0, :]\n")
    assert np.asarray(r.registers["T0"]).shape == (2, 1) and np.asarray(r.registers["T1"]).shape == (3, 1)
    assert r.memory["v"] == [20.0, 40.0] and r.memory["a"][0] == A[1].tolist()


def test_log_and_word_operands_broadcast():
    r = run("LOAD a[0:2, 1:3], T0\nLOAD v[1:2], T1\nMUL T0, T0, T0\nLOG T0, T2\nLOAD v[0], R0\nMUL T0, R0, T3\n")
    sub = A[:, 1:3]
    np.testing.assert_array_equal(r.registers["T2"], np.log(sub * sub))
    np.testing.assert_array_equal(r.registers["T3"], sub * sub * 10.0)


def test_counts_flops_and_traffic():
    r = run("LOAD a[0:2, :], T0\nLOAD b[0:2, :], T1\nMAC_Z T0, T1.T, T2\nMAC T0, T1.T, T2, T2\n"
            "ROWSUM T2, T3\nEXP T2, T2\nSTORE T2, a[0:2, 0:2]\n")
    m = 2 * 2 * (2 * 3 - 1) + 2 * 2 * 2 * 3  # MAC_Z m·n·(2k−1), MAC 2mnk
    assert r.extra["flops"] == {"matmul": m, "other": 2 * (2 - 1) + 4}
    assert r.extra["sfu_ops"] == 4
    assert (r.dram_reads, r.dram_writes) == (12, 4)
    assert r.extra["tile_traffic"] == {"a": {"reads": 6, "writes": 4}, "b": {"reads": 6, "writes": 0}}
    assert r.ops == {"LOAD": 2, "STORE": 1, "MAC_Z": 1, "MAC": 1, "EXP": 1, "ROWSUM": 1}
    assert r.cycles == 7  # the seed's machine: every instruction 1 cycle


def test_scalar_flops_are_the_1x1x1_case():
    r = simulate(".data x = [2, 3]\nLOAD x[0], R0\nLOAD x[1], R1\nMAC_Z R0, R1, R2\nMAC R0, R1, R2, R2\n"
                 "EXP R2, R3\nMOV R3, R0\n", Machine(sram_words=100))
    assert r.extra["flops"] == {"matmul": 1 + 2, "other": 1} and r.extra["sram_peak"] == 4


def test_scalar_results_keep_their_shape_on_the_seeds_machine():
    r = simulate(".data x = [2, 3]\nLOAD x[0], R0\nLOAD x[1], R1\nADD R0, R1, R2\nSTORE R2, y[0]\n")
    assert "sram_peak" not in r.to_dict() and "ROWMAX" not in r.to_dict()["machine"]["cycles"]


# -- SRAM accounting ---------------------------------------------------------------------
def test_sram_counts_live_tiles_and_overwriting_frees():
    r = run("LOAD a[0:2, :], T0\n"  # 6
            "LOAD b[0:2, :], T1\n"  # 12
            "MAC_Z T0, T1.T, T2\n"  # 16
            "ROWMAX T0, T0\n"  # T0 6 → 2: 12
            "LOAD v[0:2], T1\n"  # T1 6 → 2: 8
            "FILL 0, 3, 3, T3\n"  # 17 → the peak
            "LOAD v[0], R0\n")  # one word, named for the whole run
    assert r.extra["sram_peak"] == 17 + 1


@pytest.mark.parametrize("cap,ok", [(18, True), (17, False)])
def test_sram_limit_names_instruction_and_sizes(cap, ok):
    body = "LOAD a[0:2, :], T0\nLOAD b[0:2, :], T1\nMAC_Z T0, T1.T, T2\nROWMAX T0, T0\nLOAD v[0:2], T1\n" \
           "FILL 0, 3, 3, T3\nLOAD v[0], R0\n"
    if ok:
        assert run(body, machine=Machine(sram_words=cap)).extra["sram_peak"] == cap
        return
    with pytest.raises(MachineLimitError) as e:
        run(body, machine=Machine(sram_words=cap))
    err = e.value
    assert (err.loc.file, err.loc.line, err.loc.col) == ("t.asm", 9, 15)  # the FILL's destination, T3
    assert "FILL" in err.message and "3×3" in err.message and "sram_words = 17" in err.message
    assert "18" in err.message and "T2 2×2 = 4" in err.message and "sram_words" in err.hint
    assert "^^" in err.render()


def test_r_registers_count_against_sram():
    with pytest.raises(MachineLimitError, match="sram_words = 2"):
        simulate("LOAD x[0], R0\nLOAD x[1], R1\nLOAD x[2], R2\n", Machine(sram_words=2))


def test_t_registers_are_not_bounded_by_the_register_count():
    r = run("LOAD a[0:2, :], T0\nLOAD b[0:2, :], T5\nLOAD v[0], R0\n", registers=1)
    assert r.registers_used == 3


# -- errors, with locations --------------------------------------------------------------
@pytest.mark.parametrize("body,cls,needle,line,col", [
    ("LOAD a[0:2, :], R0\n", AsmError, "R0 holds one word", 4, 17),
    ("LOAD a[0][1], T0\n", AsmError, "T0 holds a tile", 4, 6),
    ("LOAD a[0:3, :], T0\n", RuntimeFault, "outside 'a'", 4, 6),
    ("LOAD a[1:1, :], T0\n", RuntimeFault, "is empty", 4, 6),
    ("LOAD a[0:2], T0\n", RuntimeFault, "2 dimensions", 4, 6),
    ("LOAD w[0:2], T0\n", RuntimeFault, "no declared shape", 4, 6),
    ("LOAD a[0:2, :], T0\nADD T0, T1, T2\n", RuntimeFault, "T1 is read before", 5, 9),
    ("LOAD a[0:2, :], T0\nMAC_Z T0, T0, T1\n", RuntimeFault, "inner dimensions differ", 5, 1),
    ("LOAD a[0:2, :], T0\nSTORE T0, a[0:1, :]\n", RuntimeFault, "2×3 tile but 'a[0:1, :]' is 1×3", 5, 11),
    ("LOAD a[0:2, :], T0\nROWMAX T0, R1\n", AsmError, "R1 holds one word", 5, 12),
    ("LOAD a[0][0], R0\nMAC_Z R0, T0, T1\n", AsmError, "needs tile operands", 5, 7),
    ("LOAD a[0][0], R0\nADD R0.T, R0, R1\n", AsmError, "no transpose", 5, 5),
    ("ROWSUM R0, R1\n", AsmError, "R1 holds one word", 4, 12),
    ("FILL 0, 2.5, 1, T0\n", AsmError, "whole number of rows", 4, 9),
    ("LOAD a[0:2, :], T0\nMASK T0, -1, 0, T1\n", AsmError, "non-negative", 5, 10),
])
def test_tile_errors_name_line_and_column(body, cls, needle, line, col):
    with pytest.raises(cls) as e:
        run(body)
    assert needle in e.value.message, e.value.message
    assert (e.value.loc.line, e.value.loc.col) == (line, col), e.value.render()
    assert e.value.hint and "^" in e.value.render()


def test_symbolic_mode_refuses_tiles():
    with pytest.raises(AsmError, match="no symbolic semantics"):
        run("LOAD a[0:2, :], T0\n", symbolic=True)


def test_cli_tile_error_exit_2_without_traceback(toym, tmp_path):
    prog = tmp_path / "t.asm"
    prog.write_text(".array a[2][2]\nLOAD a[0:2, :], T0\nLOAD a[0:2, :], T1\nFILL 0, 4, 4, T2\n")
    machine = tmp_path / "m.yaml"
    machine.write_text("sram_words: 20\n")
    code, out, err = toym("run", prog, "--machine", machine)
    assert code == 2 and "SRAM overflow" in err and "t.asm:4:15" in err and "Traceback" not in err


# -- data: random inputs are the scalar machine's, mixed word/block access ----------------
def test_random_inputs_equal_the_scalar_machines():
    r = simulate(".array q[3][5]\nLOAD q[0:3, 1:4], T0\nLOAD q[2][4], R0\n", seed=7)
    np.testing.assert_array_equal(r.registers["T0"], random_block(7, "q", (3, 5))[:, 1:4])
    assert r.registers["R0"] == random_value(7, "q", (2, 4))


def test_word_and_block_access_to_one_array_agree_in_program_and_text_mode():
    text = (".array x[2][2]\nLOAD x[0][1], R0\nSTORE R0, x[1][0]\nLOAD x[0:2, :], T0\nMUL T0, T0, T0\n"
            "STORE T0, x[0:2, :]\nLOAD x[1][1], R1\nSTORE R1, y[0]\n")
    want = random_block(0, "x", (2, 2))
    want[1, 0] = want[0, 1]
    want = want * want
    for r in (simulate(parse(text)), simulate(iter(text.splitlines(True)))):
        np.testing.assert_array_equal(r.array("x"), want)
        assert r.memory["y"] == [want[1, 1]]


@pytest.mark.parametrize("steps", [False, True])
def test_a_store_never_changes_a_loaded_register(steps):
    text = (".array x[2][2]\nLOAD x[0:2, :], T0\nMOV T0.T, T1\nFILL 5, 2, 2, T2\nSTORE T2, x[0:2, :]\n"
            "LOAD x[0:1, :], T3\nLOAD x[1][1], R0\nSTORE R0, x[0][0]\n")
    r = simulate(text, data={"x": [[1.0, 2.0], [3.0, 4.0]]}, steps=steps)
    np.testing.assert_array_equal(r.registers["T0"], [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(r.registers["T1"], [[1.0, 3.0], [2.0, 4.0]])
    np.testing.assert_array_equal(r.registers["T3"], [[5.0, 5.0]])
    assert r.memory["x"] == [[5.0, 5.0], [5.0, 5.0]]
    if steps:
        t0 = r.register_names.index("T0")
        assert [np.asarray(s.registers[t0]).tolist() for s in r.steps][-1] == [[1.0, 2.0], [3.0, 4.0]]


def test_outputs_never_written_stay_null():
    r = simulate(".array o[2][2]\nFILL 1, 1, 2, T0\nSTORE T0, o[1:2, :]\n")
    assert r.memory["o"] == [[None, None], [1.0, 1.0]]
    assert np.isnan(r.array("o")[0]).all()


def test_data_shape_must_match_the_declaration():
    from toymachine import DataError

    with pytest.raises(DataError, match=r"shape \(3,\)"):
        simulate(".array v[2]\nLOAD v[0:2], T0\n", data={"v": [1.0, 2.0, 3.0]})


# -- numerics ------------------------------------------------------------------------------
def test_overflow_nan_and_division_alarms_point_at_the_element():
    data = {"x": np.array([[1.0, 800.0], [0.0, 2.0]])}
    r = simulate(".array x[2][2]\nLOAD x[0:2, :], T0\nEXP T0, T1\nSUB T1, T1, T2\nFILL 0, 2, 2, T3\n"
                 "DIV T0, T3, T4\n", data=data)
    kinds = {a.kind: a for a in r.alarms}
    assert set(kinds) == {"overflow", "nan", "div-by-zero"}
    assert kinds["overflow"].instruction == "EXP T0, T1 @[0, 1]" and kinds["overflow"].operands == (800.0,)
    assert kinds["nan"].instruction.startswith("SUB T1, T1, T2 @[0, 1]")
    assert kinds["div-by-zero"].step == 5 and kinds["div-by-zero"].line == 6


def test_first_alarm_of_a_kind_only_and_strict_mode():
    text = ".array x[1][2]\nLOAD x[0:1, :], T0\nEXP T0, T1\nEXP T0, T2\n"
    r = simulate(text, data={"x": [[1000.0, 1.0]]})
    assert [a.kind for a in r.alarms] == ["overflow"]
    with pytest.raises(NumericsError, match="overflow at step 2"):
        simulate(text, data={"x": [[1000.0, 1.0]]}, strict_numerics=True)


def test_underflow_elements_are_counted():
    r = simulate(".array x[1][3]\nLOAD x[0:1, :], T0\nEXP T0, T1\n", data={"x": [[-800.0, -900.0, 0.0]]})
    assert r.underflows == 2 and not r.alarms and r.first_underflow.instruction == "EXP T0, T1 @[0, 0]"


def test_masked_scores_raise_no_alarm():
    r = simulate(".array x[2][2]\nLOAD x[0:2, :], T0\nMASK T0, 0, 0, T0\nROWMAX T0, T1\nSUB T0, T1, T0\n"
                 "EXP T0, T0\n", data={"x": np.ones((2, 2))})
    assert not r.alarms and r.underflows == 0


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_every_tile_write_rounds_to_the_dtype(dtype):
    dt = get_dtype(dtype)
    x = np.array([[0.1, 1 / 3], [2.0 / 7, 1e-3]])
    r = simulate(".array x[2][2]\nLOAD x[0:2, :], T0\nEXP T0, T1\nMAC_Z T1, T0, T2\n", data={"x": x}, dtype=dtype)
    x = dt.round_array(x)
    t1 = dt.round_array(np.exp(x))
    np.testing.assert_array_equal(r.registers["T0"], x)
    np.testing.assert_array_equal(r.registers["T1"], t1)
    np.testing.assert_array_equal(r.registers["T2"], dt.round_array(t1 @ x))


def test_rounding_overflow_and_underflow_raise_alarms_in_fp16():
    r = simulate(".array x[1][2]\nLOAD x[0:1, :], T0\nMUL T0, T0, T1\n", data={"x": [[300.0, 1e-4]]}, dtype="fp16")
    assert [a.kind for a in r.alarms] == ["overflow"] and r.underflows == 1
    assert np.isinf(r.registers["T1"][0][0]) and r.registers["T1"][0][1] == 0.0


# -- the result contract ---------------------------------------------------------------------
def test_json_carries_tile_keys_and_is_deterministic(toym, tmp_path):
    from toymachine.gen.tile import attention_program

    prog = tmp_path / "fa2.asm"
    prog.write_text(attention_program(n=32, d=8, block_m=16, block_n=8).to_text())
    outs = [toym("run", prog, "--machine", "h100", "-f", "json", "--no-steps") for _ in range(2)]
    assert outs[0] == outs[1] and outs[0][0] == 0
    d = json.loads(outs[0][1])
    assert {"sram_peak", "flops", "time_s", "roofline", "cycle_breakdown", "tile_traffic"} <= set(d)
    assert set(d["dram"]) == {"reads", "writes", "read_bytes", "write_bytes"}
    assert d["dram"]["read_bytes"] == 2 * d["dram"]["reads"] and d["dtype"] == "fp16"
    assert d["time_s"] == max(d["roofline"]["hbm_s"], d["roofline"]["compute_s"]) > 0
    assert d["machine"]["sram_words"] == 116736


@pytest.mark.parametrize("steps", [False, True])
def test_tile_error_lines_with_and_without_step_rows(steps):
    """A tile program without step rows runs in loop.execute_engines: its counts, steps and error
    lines are the general loop's."""
    from toymachine.gen.tile import attention_program

    program = attention_program(n=64, d=16, algo="fa2", block_m=16, block_n=16)
    got = simulate(program, steps=steps).to_dict(steps=False)
    want = simulate(program.to_text(), steps=True).to_dict(steps=False)
    got["file"] = want["file"] = None
    assert got == want
    text = "LOAD Q[0:4, :], T0\nLOAD K[0:4, :], T1\nMAC_Z T0, T1.T, T2\nROWMAX T2, T3\nMAC_Z T0, T1, T4\n"
    data = {"Q": np.ones((4, 3)), "K": np.ones((4, 2))}
    with pytest.raises(RuntimeFault, match="inner dimensions differ") as exc:
        simulate(parse(text), data=data, steps=steps)
    assert exc.value.loc.line == 3
