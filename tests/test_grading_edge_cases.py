"""Grading, handouts and the table commands on unusual and hostile inputs: any student name, unsafe zip
members, markup in statements and traces, hidden checks, problem files asking for unbounded work, and
the flags the systolic, TPU, times and bf16 tables must keep."""

import zipfile

import pytest
from conftest import ROOT

from toymachine.check import load_problem
from toymachine.check.gradebook import grade_submissions
from toymachine.check.submissions import collect_submissions

PROBLEMS = ROOT / "examples" / "problems"
P1 = PROBLEMS / "p1_c00.yaml"
ALICE = (ROOT / "examples" / "submissions" / "p1_c00" / "alice.asm").read_text(encoding="utf-8")


@pytest.mark.slow
def test_grade_and_student_option_give_the_same_variant_for_any_name(tmp_path):
    """toym grade names a file 'Jean Dupont.asm' Jean_Dupont; `--student "Jean Dupont"` (problem
    show, check, Gradescope) must pick the variant the gradebook grades against."""
    names = ["Jean Dupont", "o'brien@uni.edu", "Zoë Müller", " li wei "] + [f"student {k}" for k in range(12)]
    for name in names:
        (tmp_path / f"{name.strip()}.asm").write_text(ALICE, encoding="utf-8")
    book = grade_submissions(tmp_path, P1)
    assert len(book.entries) == len(names)
    by_file = {e.source: e.variant for e in book.entries}
    for name in names:
        assert by_file[f"{name.strip()}.asm"] == load_problem(P1, student=name).variant_index, name


def test_an_unsafe_zip_member_does_not_knock_out_the_real_submission(tmp_path):
    """A zip holding alice.asm and ../alice.asm: alice's real trace is graded; the unsafe member is
    the second row, with its own reason."""
    z = tmp_path / "class.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("alice.asm", ALICE)
        zf.writestr("../alice.asm", "junk")
    subs = collect_submissions(z)
    assert [s.student for s in subs] == ["alice", "alice~2"]
    assert subs[0].text == ALICE and subs[0].reason == ""
    assert subs[1].text is None and "unsafe path" in subs[1].reason and "second submission" in subs[1].reason


HOSTILE = """title: "hostile"
statement: |
  Hello <img src=x onerror=alert(1)> **bold <b>x</b>** and `a < b && c`; {tag} &amp;

  > a quote stays a quote
variants:
  - {tag: "<script>alert(2)</script>"}
inputs:
  a: {shape: [2, 2]}
  b: {shape: [2, 2]}
expect:
  c[0][0]: a @ b
"""


def test_the_markdown_handout_shows_raw_html_of_the_statement_as_text(tmp_path):
    """The statement (and a variant's values in it) never reach a Markdown renderer as tags: the
    HTML and LaTeX sheets escape them, and so does the Markdown sheet; **bold**, `code` and a
    blockquote stay Markdown."""
    import markdown  # mkdocs' renderer (the docs extra)

    from toymachine.check.handout import handout

    path = tmp_path / "hostile.yaml"
    path.write_text(HOSTILE, encoding="utf-8")
    md = handout(path, "markdown")
    assert "`a < b && c`" in md and "**bold &lt;b>x&lt;/b>**" in md
    html = markdown.markdown(md, extensions=["tables"])
    for tag in ("<img", "<script", "<b>"):
        assert tag not in html, tag
    assert "<code>a &lt; b &amp;&amp; c</code>" in html and "<blockquote>" in html
    assert "&amp;amp;" in html  # the text '&amp;' shows as written, as in the HTML sheet


HIDDEN_VALUE = """title: "c00, value hidden"
inputs:
  a: {shape: [2, 2]}
  b: {shape: [2, 2]}
expect:
  c[0][0]: {value: a @ b, points: 6, hidden: true}
registers: 3
max_cycles: {7: 2, 9: 1}
max_loads: 4
"""


def test_a_hidden_value_check_is_not_told_by_the_budgets_points(tmp_path):
    """Budgets earn points only when every value is right; with the value check hidden, a visible
    budget's points (or its 'no points: an expected array is wrong') would tell the hidden result.
    A right and a wrong trace of the same cost must look the same to the student."""
    import json

    from toymachine.check import check_trace
    from toymachine.check.feedback import feedback_html, feedback_markdown
    from toymachine.check.gradescope import gradescope_results

    path = tmp_path / "hidden.yaml"
    path.write_text(HIDDEN_VALUE, encoding="utf-8")
    problem = load_problem(path)
    right = (ROOT / "programs" / "c00.asm").read_text(encoding="utf-8")
    wrong = right.replace("b[1][0]", "b[1][1]")
    assert wrong != right
    reports = [check_trace(t, problem, name="s.asm") for t in (right, wrong)]
    assert [r.score for r in reports] == [6 + 2 + 1, 0]  # the lecturer's grade differs
    for render in (feedback_markdown, feedback_html):
        assert render(reports[0], "s") == render(reports[1], "s")

    def seen(report):
        d = gradescope_results(report)
        return d["output"], [t for t in d["tests"] if t["visibility"] == "visible"]

    assert seen(reports[0]) == seen(reports[1])
    assert all(t["visibility"] in ("hidden", "after_published") for t in gradescope_results(reports[1])["tests"])
    json.dumps(gradescope_results(reports[1]), allow_nan=False)


def _problem_error(tmp_path, text):
    import pytest

    from toymachine.errors import ConfigError

    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_problem(path)
    return exc.value


def test_a_problem_file_cannot_ask_for_unbounded_work(tmp_path):
    """A problem file is input too: a 10¹⁰-element input, an expression that broadcasts to 10¹²
    elements, or 10⁹ trials is an error at its line, before any allocation or run (they were a
    MemoryError traceback and a `toym check` that never ended)."""
    inputs = "inputs:\n  a: {shape: [%s]}\n  b: {shape: [%s]}\nexpect:\n  c: %s\n"
    err = _problem_error(tmp_path, "title: t\n" + inputs % ("100000, 100000", "2", "a"))
    assert "10,000,000,000 elements" in err.message and err.loc.line == 3
    err = _problem_error(tmp_path, "title: t\n" + inputs % ("1000000, 1", "1, 1000000", "a + b"))
    assert "too big to evaluate" in err.message and err.loc.line == 6
    err = _problem_error(tmp_path, "title: t\n" + inputs % ("2", "2", "a") + "trials: 1000000000\n")
    assert "'trials' must be at most 1,000" in err.message and err.loc.line == 7
    ok = tmp_path / "ok.yaml"  # the bounds leave real problems alone: a matmul within them loads
    ok.write_text("title: t\n" + inputs % ("64, 64", "64, 64", "a @ b") + "trials: 1000\n", encoding="utf-8")
    assert load_problem(ok).trials == 1000


def test_grading_never_builds_every_cell_of_a_huge_array(monkeypatch, tmp_path):
    """A student's `LOAD x[4000][4000], R0` implies a 16-million-cell array (within the array limit); the grader asked every
    array for its nested lists to learn shapes (minutes, then memory). Only the arrays a check
    names are read, and shapes come without their cells."""
    from toymachine.check import check_trace
    from toymachine.sim import memory

    original = memory.Array.to_nested

    def guarded(self, *args, **kwargs):
        assert self.name != "x", "the grader built every cell of x"
        return original(self, *args, **kwargs)

    monkeypatch.setattr(memory.Array, "to_nested", guarded)
    path = tmp_path / "p.yaml"  # a per-array budget: its array's shape is still read
    path.write_text("title: t\ninputs:\n  a: {shape: [2, 2]}\nexpect:\n  c: a\nmax_reads: {a: 4}\n",
                    encoding="utf-8")
    trace = "LOAD x[4000][4000], R0\nLOAD a[0][0], R1\nLOAD a[1][1], R1\nSTORE R0, c[0][0]\n"
    report = check_trace(trace, load_problem(path), name="huge.asm")
    reads = next(c for c in report.checks if c.name == "reads a")
    assert reads.figure == 2 and reads.passed and not report.passed


def test_a_trace_that_does_not_run_shows_the_points_it_lost():
    """`toym check` printed 'run FAIL 0/0' above 'score: 0 / 11': the run check is worth the
    whole score, as on Gradescope (one failing test worth everything) — in the table and the JSON."""
    from toymachine.check import check_trace

    frank = (ROOT / "examples" / "submissions" / "p1_c00" / "frank.asm").read_text(encoding="utf-8")
    report = check_trace(frank, load_problem(P1, student="frank"), name="frank.asm")
    (run,) = report.checks
    assert run.kind == "run" and (run.points, run.max_points) == (0, 11) == (report.score, report.max_score)
    assert " 0/11 " in report.render("table")
    grades = grade_submissions(ROOT / "examples" / "submissions" / "p1_c00", P1)
    ivan = grades.entry("ivan").report  # empty: not graded
    assert [(c.kind, c.points, c.max_points) for c in ivan.checks] == [("run", 0, 11)]


def test_markdown_reports_show_a_traces_tags_as_text(tmp_path):
    """`toym check -f markdown` quotes the student's faulty line in the error; a line holding
    <script> reached the Markdown as a tag (and so the lecturer's rendered page). The same for a
    problem's title in `toym problem list -f markdown`."""
    import markdown

    from toymachine.check import check_trace
    from toymachine.render import render_report
    from toymachine.render.report import Report, Section

    trace = "LAOD a[0][0], R0 ; <script>alert(1)</script>\n"
    md = check_trace(trace, load_problem(P1), name="<img src=x onerror=alert(2)>.asm").render("markdown")
    html = markdown.markdown(md, extensions=["tables"])
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html
    section = Section("<b>title</b>", ("file", "title"), (("p.yaml", "<i>x</i> | y"),))
    html = markdown.markdown(render_report(Report("t", (section,), ("<u>note</u>",)), "markdown"),
                             extensions=["tables"])
    assert "<b>" not in html and "<i>" not in html and "<u>" not in html and "| y" in html


def test_run_refuses_a_student_without_a_problem(toym):
    """`toym run TRACE --student bob` ran the trace on the default machine, as if bob's variant had
    been applied; --student means a variant of --problem."""
    code, out, err = toym("run", ROOT / "programs" / "c00.asm", "--student", "bob")
    assert code == 2 and "no --problem is given" in err and "Traceback" not in err and out == ""
    code, out, _ = toym("run", ROOT / "examples" / "submissions" / "p1_c00" / "alice.asm", "--problem", P1,
                        "--student", "alice")
    assert code == 0 and "STORE R2, c[1][1]" in out  # with --problem, --student still picks the variant


def test_systolic_bounds_the_emulators_work(toym):
    """`toym systolic --m 100000 --k 100000 --n 100000` was a MemoryError traceback (numpy asked
    for 74.5 GiB of inputs); the emulator's work is bounded before anything is drawn."""
    code, _, err = toym("systolic", "--m", 100000, "--k", 100000, "--n", 100000)
    assert code == 2 and "10,000,000,000 elements" in err and "Traceback" not in err
    code, _, err = toym("systolic", "--m", 4000, "--k", 1000, "--n", 1000)  # 6·10⁹ cell-ticks
    assert code == 2 and "cell-ticks" in err
    code, out, _ = toym("systolic", "--m", 3, "--k", 2, "--n", 2, "-f", "json")
    assert code == 0 and '"cycles": 5' in out  # M + K + N − 2


def test_tpu_table_bounds_the_program_before_generating_it(toym):
    """`toym tpu-table --d 100000` and `--n 8192 --block-m 1` (33 million tiles) ran for minutes;
    they are errors that say what the table simulates, and the hint's block size is accepted."""
    code, _, err = toym("tpu-table", "--d", 100000)
    assert code == 2 and "--d 100000 is more than this table simulates (1024)" in err
    code, _, err = toym("tpu-table", "--n", 2048, "--block-m", 8)
    assert code == 2 and "32,896 tiles" in err and "use --block-m ≥ 15" in err
    from toymachine.experiments.tpu import MAX_TILES, _blocks_for

    for tiles in (1, 2, 3, 36, 9999, MAX_TILES):
        t = _blocks_for(tiles)
        assert t * (t + 1) // 2 <= tiles < (t + 1) * (t + 2) // 2


def test_the_times_table_does_not_drop_d_or_block_m(toym):
    """`toym tpu-table --table times --d 100000` printed the d = 64 table as if --d had been used."""
    for flag, value in (("--d", 128), ("--block-m", 64)):
        code, out, err = toym("tpu-table", "--table", "times", "--machine", "tpu-v5e", flag, value)
        assert code == 2 and out == "" and "it takes no --d or --block-m" in err


def test_the_bf16_table_does_not_drop_break_it_flags(toym):
    """`toym numerics --table bf16 --n 100000000` printed seed 002's three shapes as if --n applied."""
    code, out, err = toym("numerics", "--table", "bf16", "--n", 100, "--d", 32)
    assert code == 2 and out == "" and "it takes no --n, --d" in err


@pytest.mark.slow
def test_the_autograder_zip_is_the_same_bytes_each_build():
    """Generated files are deterministic: the wheel inside autograder.zip carried the build's
    clock in its dist-info dates, so two builds of one problem differed."""
    import time

    from toymachine.check.autograder import autograder_zip, build_wheel

    first = build_wheel()
    time.sleep(2.1)  # zip dates have a 2-second resolution: a later build would show in them
    second = build_wheel()
    assert first == second
    assert autograder_zip(P1, first) == autograder_zip(P1, second)


def test_a_zip_of_one_students_folder_keeps_the_students_id(tmp_path):
    """A zip holding only alice/matmul.asm (the problem's submission file) is alice's folder, not a
    wrapper folder around a student called 'matmul'; a wrapper around folders is still unwrapped."""
    one = tmp_path / "one.zip"
    with zipfile.ZipFile(one, "w") as zf:
        zf.writestr("alice/matmul.asm", ALICE)
    assert [(s.student, s.reason) for s in collect_submissions(one, "matmul.asm")] == [("alice", "")]
    wrapped = tmp_path / "wrapped.zip"
    with zipfile.ZipFile(wrapped, "w") as zf:
        zf.writestr("export/alice/matmul.asm", ALICE)
        zf.writestr("export/bob/matmul.asm", ALICE)
    assert [s.student for s in collect_submissions(wrapped, "matmul.asm")] == ["alice", "bob"]
