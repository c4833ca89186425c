"""The course commands: `toym grade`, `toym problem show/list` (handouts in three formats),
`toym run --problem`, `toym check --student`; exit codes and errors."""

import csv
import subprocess

import pytest
from conftest import PROGRAMS, ROOT

from toymachine.check import load_problem
from toymachine.check.handout import handout

PROBLEMS = ROOT / "examples" / "problems"
CLASS = ROOT / "examples" / "submissions" / "p1_c00"
P1 = PROBLEMS / "p1_c00.yaml"


@pytest.mark.slow
def test_grade_writes_gradebook_feedback_and_summary(toym, tmp_path):
    out = tmp_path / "out"
    code, stdout, err = toym("grade", CLASS, "--problem", P1, "--out", out)
    assert code == 0, err
    assert "9 submission(s): 1 passed every check, 7 failed one or more, 1 not graded" in stdout
    rows = list(csv.DictReader((out / "gradebook.csv").open(encoding="utf-8")))
    assert [r["student"] for r in rows] == sorted(p.stem for p in CLASS.glob("*.asm"))
    for student in ("alice", "ivan"):
        assert (out / "feedback" / f"{student}.md").is_file() and (out / "feedback" / f"{student}.html").is_file()
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("# Gradebook: Problem 1:")
    if (out / "summary.png").exists():  # matplotlib installed
        assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "summary.png" in summary
    first = (out / "gradebook.csv").read_bytes()
    code, _, _ = toym("grade", CLASS, "-p", P1, "--out", out, "--jobs", "1")
    assert code == 0 and (out / "gradebook.csv").read_bytes() == first  # the same bytes for any --jobs


def test_grade_errors_exit_2(toym, tmp_path):
    code, _, err = toym("grade", tmp_path / "nope", "-p", P1, "--out", tmp_path / "o")
    assert code == 2 and "no such folder or zip" in err and "Traceback" not in err
    bad = tmp_path / "bad.yaml"
    bad.write_text(P1.read_text().replace("{i: 1, j: 1}", "{i: 5, j: 1}"))
    code, _, err = toym("grade", CLASS, "-p", bad, "--out", tmp_path / "o")
    assert code == 2 and "[variant 4 of 4 (i = 5, j = 1)]" in err and not (tmp_path / "o").exists()


def test_check_with_student_picks_the_variant(toym):
    code, out, _ = toym("check", CLASS / "alice.asm", "-p", P1, "--student", "alice")
    assert code == 0 and "score: 11 / 11" in out and "variant 4 of 4 (i = 1, j = 1)" in out
    code, out, _ = toym("check", CLASS / "alice.asm", "-p", P1, "--student", "dave")  # dave's is c01
    assert code == 1 and "c[0][1] was never stored" in out and "score: 0 / 11" in out


def test_run_with_problem_uses_its_machine_and_inputs(toym):
    code, out, err = toym("run", PROGRAMS / "matmul_outer_2x2.asm", "--problem", PROBLEMS / "p2_matmul_inner.yaml")
    assert code == 2 and "machine has 3 registers (R0–R2); R3 is beyond them" in err
    assert "--registers" not in err and "gives 3 registers" in err  # a hint toym run --problem can follow
    code, out, _ = toym("run", PROGRAMS / "c00.asm", "-p", P1, "--no-steps", "-f", "json")
    import json

    from toymachine.check.grader import draw_inputs

    d = json.loads(out)
    problem = load_problem(P1)
    a, b = draw_inputs(problem, problem.seed, 0).values()
    assert code == 0 and d["memory"]["c"][0][0] == pytest.approx((a @ b)[0, 0])  # the problem's inputs
    code, _, err = toym("run", PROGRAMS / "c00.asm", "-p", P1, "--machine", "toy6")
    assert code == 2 and "leave out --machine and --data" in err


def test_check_hints_name_the_exercises_machine_not_a_flag(toym):
    code, out, _ = toym("check", PROGRAMS / "matmul_outer_2x2.asm", "-p", PROBLEMS / "p2_matmul_inner.yaml")
    assert code == 1 and "--registers" not in out and "the exercise's machine has 3 registers" in out


def test_problem_list(toym):
    code, out, _ = toym("problem", "list", PROBLEMS, "-f", "csv")
    rows = list(csv.DictReader(out.splitlines()))
    assert code == 0 and [r["file"] for r in rows] == sorted(p.name for p in PROBLEMS.glob("*.yaml"))
    p1 = next(r for r in rows if r["file"] == "p1_c00.yaml")
    assert (p1["points"], p1["variants"], p1["machine"]) == ("11", "4", "toy")
    assert all(not r["title"].startswith("error") for r in rows)


@pytest.mark.parametrize("fmt", ["markdown", "html", "latex"])
def test_problem_show_renders_the_students_sheet(toym, fmt):
    code, out, _ = toym("problem", "show", P1, "--student", "alice", "-f", fmt)
    assert code == 0
    for needle in ("variant 4 of 4", "c11", "Machine", "Inputs", "Grading", "11 points"):
        assert needle in out, (fmt, needle)
    assert ("R0–R2" if fmt != "latex" else "R0--R2") in out
    assert out == handout(load_problem(P1, student="alice"), fmt)  # the library's, byte for byte


def test_handouts_escape_the_statement(tmp_path):
    problem = tmp_path / "p.yaml"
    problem.write_text('statement: "<script>x</script> 100% & $5 \\\\ **bold** `code` #1 ~_^{}"\n'
                       "inputs:\n  a: [1, 2]\nexpect:\n  c: a\n")
    p = load_problem(problem)
    page = handout(p, "html")
    assert "<script>" not in page and "&lt;script&gt;" in page and "<strong>bold</strong>" in page
    tex = handout(p, "latex")
    assert r"100\% \& \$5 \textbackslash{} \textbf{bold} \texttt{code} \#1 \textasciitilde{}\_\textasciicircum{}\{\}" \
        in tex


@pytest.mark.latex
def test_every_bundled_handout_compiles(tmp_path):
    body = []
    for k, path in enumerate(sorted(PROBLEMS.glob("*.yaml"))):
        (tmp_path / f"h{k}.tex").write_text(handout(load_problem(path), "latex"), encoding="utf-8")
        body.append(f"\\input{{h{k}}}\\clearpage")
    (tmp_path / "all.tex").write_text("\\documentclass{article}\n\\begin{document}\n" + "\n".join(body)
                                      + "\n\\end{document}\n", encoding="utf-8")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "all.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, errors="replace")
    log = (tmp_path / "all.log").read_text(errors="replace")
    assert proc.returncode == 0 and not [line for line in log.splitlines() if line.startswith("!")], log[-2000:]
    assert "Missing character" not in log


def test_problem_errors_exit_2(toym, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("inputs:\n  a: [1, 2]\nexpect:\n  c: a\nmax_cycles: {5: 1, 9: 2}\n")
    code, out, err = toym("problem", "show", bad)
    assert code == 2 and out == "" and f"{bad}:5:20" in err and "earns more points" in err
    code, _, err = toym("problem", "list", tmp_path / "missing")
    assert code == 2 and "no such folder" in err
    code, out, _ = toym("problem", "list", tmp_path, "-f", "csv")  # a broken file is listed, not fatal
    assert code == 0 and "bad.yaml,error: 'max_cycles': the looser limit 9" in out
