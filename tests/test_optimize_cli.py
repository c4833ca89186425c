"""`toym optimize matmul|attention-tile` and `toym analyze`: options, formats, --emit, -o, exit codes."""

import json

import numpy as np
import pytest
from conftest import PROGRAMS

from toymachine import parse_file, resolve_machine, simulate

HUMAN = ["table", "markdown", "csv", "latex", "html", "html-fragment"]


def test_optimize_matmul_json_and_emit(toym, tmp_path):
    emitted = tmp_path / "best.asm"
    code, out, err = toym("optimize", "matmul", "--n", "2", "-r", "4", "-f", "json", "--emit", emitted)
    assert code == 0, err
    d = json.loads(out)
    assert (d["cycles"], d["lower_bound"], d["proven_optimal"]) == (22, 22, True)
    for key in ("program", "states_explored", "seconds"):
        assert key in d
    assert emitted.read_text() == d["program"]
    r = simulate(parse_file(str(emitted)), registers=4)
    assert r.cycles == 22
    np.testing.assert_array_equal(np.array(r.memory["c"]), np.array(r.memory["a"]) @ np.array(r.memory["b"]))
    code, out, _ = toym("run", emitted, "-r", "4", "--no-steps", "-f", "json")
    assert code == 0 and json.loads(out)["cycles"] == 22


@pytest.mark.parametrize("fmt", HUMAN)
def test_optimize_matmul_formats(toym, fmt):
    code, out, err = toym("optimize", "matmul", "--n", "2", "-r", "5", "-f", fmt)
    assert code == 0 and out, err
    if fmt == "table":
        assert "proven optimal" in out and "21" in out


def test_optimize_matmul_on_an_accumulator_machine(toym, tmp_path):
    emitted = tmp_path / "acc.asm"
    code, out, err = toym("optimize", "matmul", "--n", "2", "-r", "3", "-m", "toy2acc", "-f", "json", "--emit",
                          emitted)
    assert code == 0, err
    d = json.loads(out)
    assert d["mac_accumulator"] and d["cycles"] == 22 and d["proven_optimal"]
    r = simulate(parse_file(str(emitted)), resolve_machine("toy2acc").with_(registers=3))
    assert r.cycles == 22 and r.registers_used <= 3


@pytest.mark.slow
def test_optimize_matmul_time_limit_gives_the_gap(toym):
    code, out, _ = toym("optimize", "matmul", "--n", "4", "-r", "6", "--time-limit", "0.5", "-f", "json")
    d = json.loads(out)
    assert code == 0 and not d["proven_optimal"] and d["lower_bound"] < d["cycles"] and d["gap"] > 0


def test_optimize_matmul_writes_the_report_with_o(toym, tmp_path):
    path = tmp_path / "report.md"
    code, out, _ = toym("optimize", "matmul", "--n", "2", "-r", "3", "-f", "markdown", "-o", path)
    assert code == 0 and out == "" and "| cycles | 25 |" in path.read_text()


@pytest.mark.parametrize("args,needle", [(("-r", "2"), "at least 3 registers"),
                                         (("--time-limit", "0"), "--time-limit"),
                                         (("--n", "0"), "--n")])
def test_optimize_matmul_bad_input_exits_2(toym, args, needle):
    code, out, err = toym("optimize", "matmul", *args)
    assert code == 2 and needle in err and "Traceback" not in err


def test_optimize_matmul_json_error_object(toym):
    code, out, err = toym("optimize", "matmul", "-r", "2", "-f", "json")
    assert code == 2 and "error" in json.loads(out)


def test_optimize_attention_tile(toym, tmp_path):
    emitted = tmp_path / "win.asm"
    code, out, err = toym("optimize", "attention-tile", "--n", "64", "--d", "8", "--sram", "600", "-f", "json",
                          "--emit", emitted)
    assert code == 0, err
    d = json.loads(out)
    assert d["best"]["algo"] == "fa2" and d["verified"]["matches_closed_form"]
    assert d["ratio_to_bound"] == d["best"]["hbm_words"] / d["bound_n2d2_over_m"]
    r = simulate(parse_file(str(emitted)), resolve_machine("toy").with_(sram_words=600))
    assert (r.dram_reads, r.dram_writes) == (d["best"]["hbm_reads"], d["best"]["hbm_writes"])


@pytest.mark.parametrize("fmt", HUMAN + ["json"])
def test_optimize_attention_tile_table_over_m(toym, fmt):
    code, out, err = toym("optimize", "attention-tile", "--n", "64", "--d", "8", "--sram", "600..4800*2", "-f", fmt)
    assert code == 0 and out, err
    if fmt == "json":
        rows = json.loads(out)["rows"]
        assert [r["sram_words"] for r in rows] == [600, 600, 1200, 1200, 2400, 2400, 4800, 4800]
        assert any(r["paper_optimal"] for r in rows) and not all(r["paper_optimal"] for r in rows)


def test_optimize_attention_tile_backward_order(toym):
    code, out, err = toym("optimize", "attention-tile", "--n", "12", "--d", "2", "--sram", "200", "--pass", "backward",
                          "--order", "outer", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["best"]["order"] == "col"  # outer ≡ col: the key/value loop outside


@pytest.mark.parametrize("args,needle", [(("--sram", "20"), "--sram"),
                                         (("--sram", "600", "--order", "row"), "--pass backward"),
                                         (("--sram", "600,1200", "--emit", "x.asm"), "one --sram")])
def test_optimize_attention_tile_bad_input_exits_2(toym, args, needle):
    code, out, err = toym("optimize", "attention-tile", "--n", "64", "--d", "8", *args)
    assert code == 2 and needle in err


def test_analyze(toym):
    code, out, err = toym("analyze", str(PROGRAMS / "matmul_outer_2x2.asm"))
    assert code == 0, err
    assert "line 14 reloads b[0][0], which an optimal allocation would have kept in a register since line 9" in out
    code, out, _ = toym("analyze", str(PROGRAMS / "matmul_outer_2x2.asm"), "-f", "json")
    d = json.loads(out)
    assert d["optimal_allocation"]["loads"] == 8 and [r["line"] for r in d["redundant_loads"]] == [14, 24]


@pytest.mark.parametrize("fmt", HUMAN)
def test_analyze_formats_and_stdin(toym, fmt):
    text = (PROGRAMS / "matmul_inner_2x2.asm").read_text()
    code, out, err = toym("analyze", "-", "-f", fmt, input=text)
    assert code == 0 and out, err


def test_analyze_with_fewer_registers(toym):
    code, out, _ = toym("analyze", str(PROGRAMS / "matmul_outer_2x2.asm"), "-r", "3", "-f", "json")
    d = json.loads(out)
    assert code == 0 and d["registers"] == 3 and d["optimal_allocation"]["min_loads"] > 8


@pytest.mark.parametrize("args,needle", [(("nothere.asm",), "no such file"),
                                         ((str(PROGRAMS / "matmul_inner_2x2.asm"), "-r", "2"), "--registers 3")])
def test_analyze_bad_input_exits_2(toym, args, needle):
    code, out, err = toym("analyze", *args)
    assert code == 2 and needle in err and "Traceback" not in err


def test_analyze_emit_writes_the_reallocated_trace(toym, tmp_path):
    emitted = tmp_path / "outer8.asm"
    code, out, err = toym("analyze", str(PROGRAMS / "matmul_outer_2x2.asm"), "--emit", emitted, "-f", "json")
    assert code == 0, err
    r = simulate(parse_file(str(emitted)), registers=6)
    seed = simulate(parse_file(str(PROGRAMS / "matmul_outer_2x2.asm")), registers=6)
    assert r.cycles == json.loads(out)["optimal_allocation"]["cycles"] == 20
    assert r.memory["c"] == seed.memory["c"]


def test_output_to_a_device_writes_into_it_and_leaves_it_a_device(toym):
    """-o /dev/null must not replace the device with a regular file (the atomic write renames onto
    the path: as root that turned /dev/null into a file)."""
    import os
    import stat

    code, out, err = toym("optimize", "matmul", "--n", "2", "-r", "3", "-o", os.devnull, "--emit", os.devnull)
    assert code == 0, err
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
