"""The CLI: exit codes, formats, errors without tracebacks, atomic output."""

import json
import os
import subprocess
import sys

import pytest
from conftest import PROGRAMS

JSON_KEYS = {"cycles", "instructions", "ops", "dram", "registers_used", "registers", "memory"}


def test_run_table_shows_steps_and_summary(toym):
    code, out, _ = toym("run", PROGRAMS / "c00.asm")
    assert code == 0
    assert "MAC_Z R0, R1, R2" in out and "cycles" in out and "DRAM reads" in out and "[[19]]" in out


def test_json_contract(toym):
    code, out, _ = toym("run", PROGRAMS / "matmul_outer_2x2.asm", "--format", "json")
    d = json.loads(out)
    assert code == 0 and JSON_KEYS <= set(d)
    assert set(d["dram"]) == {"reads", "writes", "read_bytes", "write_bytes"}
    assert d["cycles"] == 22 and d["ops"]["LOAD"] == 10 and d["registers"]["R5"] == 50
    assert d["dram"]["read_bytes"] == 40


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json", "latex", "html"])
def test_every_format_is_deterministic(toym, fmt):
    a = toym("run", PROGRAMS / "softmax_online.asm", "-f", fmt, "--symbolic")
    b = toym("run", PROGRAMS / "softmax_online.asm", "-f", fmt, "--symbolic")
    assert a == b and a[0] == 0 and a[1]


def test_csv_carries_every_section(toym):
    """One rectangular CSV: a `table` column names the section; steps, summary, counts, memory all arrive."""
    import csv
    import io

    code, out, _ = toym("run", PROGRAMS / "c00.asm", "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert out.splitlines()[0].startswith("table,Step,Instruction,R0,R1,R2,")
    assert {r["table"] for r in rows} == {"Steps", "Summary", "Instructions", "Memory"}
    steps = [r for r in rows if r["table"] == "Steps"]
    assert (steps[2]["Instruction"], steps[2]["R2"]) == ("MAC_Z R0, R1, R2", "5")
    summary = {(r["Metric"], r["Unit"]): r["Value"] for r in rows if r["table"] == "Summary"}
    assert summary[("cycles", "")] == "7"
    assert summary[("DRAM reads", "words")] == "4" and summary[("DRAM reads", "B")] == "16"  # numeric, units apart
    assert {r["Opcode"]: int(r["Count"]) for r in rows if r["table"] == "Instructions"} == {
        "LOAD": 4, "STORE": 1, "MAC_Z": 1, "MAC": 1}
    assert [(r["Array"], r["Contents"]) for r in rows if r["table"] == "Memory"] == [("c", "[[19]]")]


def test_stdin(toym):
    code, out, _ = toym("run", "-", "-f", "json", input=".data x = [2, 3]\nLOAD x[0], R0\nLOAD x[1], R1\nMUL R0, R1, R0\nSTORE R0, y[0]\n")
    assert code == 0 and json.loads(out)["memory"]["y"] == [6.0]


def test_no_steps_for_long_runs_unless_asked(toym, tmp_path):
    prog = tmp_path / "long.asm"
    prog.write_text("LOAD x[0], R0\n" + "ADD R0, R0, R1\n" * 300)
    _, out, _ = toym("run", prog)
    assert "Steps" not in out and "too many to show" in out
    _, out, _ = toym("run", prog, "--steps", "-f", "csv")
    assert sum(line.startswith("Steps,") for line in out.splitlines()) == 301


@pytest.mark.parametrize("text,needle,where", [
    ("LOAD x[0], R0\nFROB R0\n", "unknown instruction", "bad.asm:2:1"),
    ("ADD R0, R1, R2\n", "R0 is read before anything was written", "bad.asm:1:5"),
    (".data x = [1, 2]\nLOAD x[5], R0\n", "index 5 is outside 'x'", "bad.asm:2:6"),
    (".data x = [1, 2]\nLOAD x[0][0], R0\n", "has 1 dimension", "bad.asm:2:6"),
    ("LOAD x[0], R0\nLOAD x[1], R1\nLOAD x[2], R2\nLOAD x[3], R3\n", "machine has 3 registers", "bad.asm:4:12"),
])
def test_errors_exit_2_with_location(toym, tmp_path, text, needle, where):
    prog = tmp_path / "bad.asm"
    prog.write_text(text)
    code, out, err = toym("run", str(prog).replace(str(tmp_path) + os.sep, "") if False else prog, "-r", "3")
    assert code == 2 and out == ""
    assert needle in err and where.split(":", 1)[1] in err and "^" in err and "Traceback" not in err


def test_binary_and_non_utf8_files(toym, tmp_path):
    b = tmp_path / "bin.asm"
    b.write_bytes(b"LOAD x[0], R0\n\x00\x01\x02")
    code, _, err = toym("run", b)
    assert code == 2 and "binary" in err and ":2:1" in err
    u = tmp_path / "latin1.asm"
    u.write_bytes(b"LOAD x[0], R0 ; caf\xe9\n")
    code, _, err = toym("run", u)
    assert code == 2 and "not valid UTF-8" in err and ":1:20" in err


def test_missing_file_and_bad_machine(toym, tmp_path):
    code, _, err = toym("run", tmp_path / "nope.asm")
    assert code == 2 and "no such file" in err
    code, _, err = toym("run", PROGRAMS / "c00.asm", "--machine", "nonesuch")
    assert code == 2 and "no machine file or preset" in err and "toy3" in err


def test_output_file_written_atomically(toym, tmp_path):
    out = tmp_path / "r.json"
    code, stdout, _ = toym("run", PROGRAMS / "c00.asm", "-f", "json", "-o", out)
    assert code == 0 and stdout == "" and json.loads(out.read_text())["cycles"] == 7
    bad = tmp_path / "bad.asm"
    bad.write_text("LOAD x[0], R0\nBAD\n")
    out2 = tmp_path / "never.json"
    code, _, _ = toym("run", bad, "-o", out2)
    assert code == 2 and not out2.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".toym-")]


@pytest.mark.slow
def test_usage_error_exit_2(toym):
    code, _, _ = toym("run", PROGRAMS / "c00.asm", "--format", "yaml")
    assert code == 2


@pytest.mark.slow
def test_console_script_installed():
    """The `toym` entry point runs as a real process (no traceback on bad input)."""
    exe = [sys.executable, "-m", "toymachine"]
    ok = subprocess.run(exe + ["run", str(PROGRAMS / "c00.asm"), "-f", "json"], capture_output=True, text=True)
    assert ok.returncode == 0 and json.loads(ok.stdout)["cycles"] == 7
    bad = subprocess.run(exe + ["run", "-"], input="MAX R0\n", capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "<stdin>:1:1" in bad.stderr


def test_isa_command(toym):
    code, out, _ = toym("isa", "-f", "markdown")
    assert code == 0 and "MAC_Z Ra, Rb, Rd" in out


def test_big_arrays_are_summarised_in_tables_but_whole_in_json(toym, tmp_path):
    prog = tmp_path / "big.asm"
    prog.write_text("".join(f"LOAD x[{i}], R0\nSTORE R0, y[{i}]\n" for i in range(100)))
    _, out, _ = toym("run", prog, "-f", "markdown")
    row = next(line for line in out.splitlines() if line.startswith("| y |"))
    assert "(100) [" in row and "…" in row and row.count(",") == 6
    _, out, _ = toym("run", prog, "-f", "json")
    assert len(json.loads(out)["memory"]["y"]) == 100


def test_terminal_notes_are_plain_text_not_markup():
    from toymachine.render import Report, Section, render_report

    out = render_report(Report("t", (Section("S", ("a",), (("[x]",),)),), ("note [bold]kept[/bold]",)), "table")
    assert "[x]" in out and "note [bold]kept[/bold]" in out


def test_data_files_yaml_npy_npz(toym, tmp_path):
    import numpy as np

    prog = PROGRAMS / "softmax_safe.asm"
    x = np.array([3.0, -1.0, 0.5, 2.0, 0.0, 1.0])
    want = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    (tmp_path / "d.yaml").write_text("x: [3, -1, 0.5, 2, 0, 1]\n")
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "d.npz", x=x)
    for f in ("d.yaml", "x.npy", "d.npz"):
        code, out, err = toym("run", prog, "--data", tmp_path / f, "-f", "json")
        assert code == 0, err
        np.testing.assert_allclose(json.loads(out)["memory"]["out"], want, rtol=1e-15)


@pytest.mark.parametrize("content,needle", [
    ("x: [1, [2, 3]]\n", "not a rectangular list of numbers"),
    ("- 1\n- 2\n", "must map array names"),
    ("x: [1, 2\n", "not valid YAML"),
])
def test_bad_data_files_exit_2(toym, tmp_path, content, needle):
    (tmp_path / "d.yaml").write_text(content)
    code, out, err = toym("run", PROGRAMS / "softmax_safe.asm", "--data", tmp_path / "d.yaml")
    assert code == 2 and needle in err and "Traceback" not in err and out == ""


def test_data_shape_must_fit_the_program(toym, tmp_path):
    (tmp_path / "d.yaml").write_text("x: [1, 2]\n")
    code, _, err = toym("run", PROGRAMS / "softmax_safe.asm", "--data", tmp_path / "d.yaml")
    assert code == 2 and "index 2 is outside 'x'" in err
