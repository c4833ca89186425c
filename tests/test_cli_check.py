"""`toym check` (exit 0 pass, 1 fail, 2 error) and `toym run --format html | html-fragment`."""

import json
import re

from conftest import PROGRAMS, ROOT

PROBLEMS = ROOT / "examples" / "problems"


def test_check_passes_with_exit_0(toym):
    code, out, err = toym("check", PROGRAMS / "matmul_outer_2x2.asm", "--problem", PROBLEMS / "p3_matmul_outer.yaml")
    assert code == 0 and err == "" and "passed: all 3 checks" in out


def test_check_fails_with_exit_1_naming_figure_and_limit(toym):
    code, out, _ = toym("check", PROGRAMS / "matmul_inner_2x2.asm", "-p", PROBLEMS / "p3_matmul_outer.yaml")
    assert code == 1 and "25 cycles: 3 over the budget of 22" in out and "13 LOAD instructions: 3 over the budget of 10" in out


def test_check_json_and_output_file(toym, tmp_path):
    path = tmp_path / "grade.json"
    code, out, _ = toym("check", PROGRAMS / "matmul_inner_2x2.asm", "-p", PROBLEMS / "p3_matmul_outer.yaml",
                        "-f", "json", "-o", path, "--seed", "4", "--trials", "2")
    d = json.loads(path.read_text())
    assert code == 1 and out == "" and d["passed"] is False and (d["seed"], d["trials"]) == (4, 2)
    assert [c["name"] for c in d["checks"]] == ["c", "cycles", "loads"]


def test_check_reads_standard_input(toym):
    text = (PROGRAMS / "c00.asm").read_text().rstrip("\n")  # no final newline: still text, not a path
    code, out, _ = toym("check", "-", "-p", PROBLEMS / "p1_c00.yaml", "-f", "json", input=text)
    d = json.loads(out)
    assert code == 0 and d["trace"] == "<stdin>" and d["passed"] is True


def test_a_wrong_value_exits_1_with_the_first_difference(toym):
    student = "LOAD a[0][0], R0\nLOAD b[0][0], R1\nMAC_Z R0, R1, R2\nSTORE R2, c[0][0]\n"
    code, out, _ = toym("check", "-", "-p", PROBLEMS / "p1_c00.yaml", input=student)
    assert code == 1 and re.search(r"c\[0\]\[0\] is [-\d.e]+ where a @ b gives [-\d.e]+: off by", out)


def test_errors_exit_2(toym, tmp_path):
    code, _, err = toym("check", "missing.asm", "-p", PROBLEMS / "p1_c00.yaml")
    assert code == 2 and "no such trace file: missing.asm" in err
    bad = tmp_path / "bad.yaml"
    for expr, needle in [("__import__('os').system('x')", "unknown function '__import__'"),
                         ("a.__class__", "attribute access '.__class__'"), ("a[0]", "'[' is not part of"),
                         ("a ** 2", "'**' is not part of"), ("exec", "unknown name 'exec'")]:
        bad.write_text(f"inputs:\n  a: [1, 2]\nexpect:\n  c: \"{expr}\"\n")
        code, out, err = toym("check", PROGRAMS / "c00.asm", "-p", bad)
        assert code == 2 and needle in err and f"{bad}:4:" in err and "^" in err and out == "", expr
    bad.write_text("inputs:\n  a: {shape: [2, 0]}\nexpect:\n  c: a\n")
    code, _, err = toym("check", PROGRAMS / "c00.asm", "-p", bad)
    assert code == 2 and "shape of 'a' must be a list of positive whole numbers" in err
    code, _, err = toym("check", PROGRAMS / "c00.asm", "-p", PROBLEMS / "nope.yaml")
    assert code == 2 and "no such problem file" in err


def test_run_html_is_the_step_viewer_with_the_source(toym, tmp_path):
    page = tmp_path / "fa1.html"
    code, out, _ = toym("run", PROGRAMS / "fa1_n5_d3.asm", "--machine", "toysram-paper", "--format", "html", "-o", page)
    text = page.read_text()
    assert code == 0 and out == "" and text.startswith("<!DOCTYPE html>")
    assert 'max="104"' in text  # every step kept without --steps (the page keeps up to 5,000)
    assert "FlashAttention walk-through exactly (N = 5, d = 3, SRAM M = 59 words, Br = 3, Bc = 4" in text  # listed
    code, frag, _ = toym("run", PROGRAMS / "c00.asm", "--format", "html-fragment")
    assert code == 0 and frag.startswith('<div class="toym-report">') and "<script" not in frag


def test_run_html_of_standard_input_lists_the_steps(toym):
    code, out, _ = toym("run", "-", "-f", "html", input=(PROGRAMS / "c00.asm").read_text())
    assert code == 0 and 'max="7"' in out and "; accumulate into R2" not in out  # no source to list


def test_machine_overrides_the_problems(toym):
    args = ("check", PROGRAMS / "matmul_outer_2x2.asm", "-p", PROBLEMS / "p2_matmul_inner.yaml")
    code, out, _ = toym(*args)  # 6 registers named, the problem's machine has 3
    assert code == 1 and "machine has 3 registers" in out
    code, out, _ = toym(*args, "--machine", "toy6")
    assert code == 0 and "machine toy6 instead of the problem's toy" in out


def test_json_errors_for_scripts(toym, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("inputs:\n  a: [1]\nexpect:\n  c: a.T.shape\n")
    code, out, err = toym("check", PROGRAMS / "c00.asm", "-p", bad, "-f", "json")
    assert code == 2 and "attribute access '.shape'" in err and json.loads(out)["error"]["line"] == 4
