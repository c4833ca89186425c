"""Batch grading (check.gradebook, check.submissions, check.bookout, check.feedback): the bundled
class of submissions gets the grades worked out by hand, hostile folders and zips become failing
rows with the reason, and every output is escaped and deterministic."""

import csv
import io
import os
import zipfile

import pytest
from conftest import PROGRAMS, ROOT

from toymachine.check import check_trace, load_problem
from toymachine.check.bookout import csv_cell, gradebook_csv, summary_markdown
from toymachine.check.feedback import feedback_html, feedback_markdown, md_escape
from toymachine.check.gradebook import grade_submissions
from toymachine.check.limits import GradeLimits
from toymachine.check.submissions import collect_submissions

PROBLEMS = ROOT / "examples" / "problems"
CLASS = ROOT / "examples" / "submissions" / "p1_c00"
P1 = PROBLEMS / "p1_c00.yaml"
P3 = PROBLEMS / "p3_matmul_outer.yaml"

# student → (variant, score, status, reason starts with): p1 is worth 6 (value) + 2 (cycles ≤ 7; 1 at ≤ 9)
# + 1 (loads ≤ 4) + 1 (stores ≤ 1) + 1 (only LOAD, STORE, MAC_Z, MAC) = 11
EXPECTED = {
    "alice": (4, 11, "passed", ""),  # right, 7 cycles
    "bob": (3, 6 + 1 + 0 + 0 + 1, "failed", ""),  # right, 9 cycles, 5 LOADs, 2 STOREs
    "carol": (1, 0, "failed", ""),  # wrong value: budgets earn nothing
    "dave": (2, 0, "failed", ""),  # alice's c11 handed in for his c01
    "erin": (1, 0, "failed", ""),  # hard-coded: right on the first draw only
    "frank": (3, 0, "failed", "error: unknown instruction 'LAOD'"),
    "grace": (4, 0, "failed", "error: machine has 3 registers (R0–R2); R3 is beyond them"),
    "heidi": (1, 6 + 1 + 1 + 1 + 0, "failed", ""),  # MUL + ADD: 8 cycles, not the MAC unit
    "ivan": (4, 0, "not graded", "empty submission"),
}


@pytest.fixture(scope="module")
def book():
    return grade_submissions(CLASS, P1)


def rows(text):
    return {r["student"]: r for r in csv.DictReader(io.StringIO(text))}


def test_the_class_gets_the_grades_worked_out_by_hand(book):
    table = rows(gradebook_csv(book))
    assert set(table) == set(EXPECTED)
    for student, (variant, score, status, reason) in EXPECTED.items():
        r = table[student]
        assert (int(r["variant"]), float(r["score"]), r["status"]) == (variant, score, status), student
        assert r["max_score"] == "11" and r["reason"].startswith(reason), (student, r["reason"])
    assert table["alice"]["parameters"] == "i = 1, j = 1"
    assert table["bob"]["cycles: figure"] == "9" and table["bob"]["cycles: points"] == "1"
    assert table["erin"]["c[?][?]: points"] == "0"


def test_each_students_grade_is_what_toym_check_gives_them(book):
    """The batch is check_trace per student on their variant: the same report."""
    for e in book.entries:
        if e.reason:
            continue
        alone = check_trace((CLASS / f"{e.student}.asm").read_text(), load_problem(P1, student=e.student),
                            name=e.source)
        assert alone.to_dict() == e.report.to_dict()


def test_the_hard_coded_answer_fails_on_another_draw(book):
    value = book.entry("erin").report.checks[0]
    assert not value.passed and "(trial 2 of 3)" in value.message


def test_parallel_grading_gives_the_same_gradebook(book):
    again = grade_submissions(CLASS, P1, jobs=2)
    assert gradebook_csv(again) == gradebook_csv(book)
    assert summary_markdown(again) == summary_markdown(book)


def test_summary_has_histogram_most_failed_and_costs(book):
    text = summary_markdown(book, "summary.png")
    assert "9 submission(s)" in text and "1 passed every check, 7 failed one or more, 1 not graded" in text
    assert "| 0 | 6 | ██████ |" in text and "| 11 | 1 | █ |" in text  # carol dave erin frank grace ivan; alice
    fails = text[text.index("## Most-failed checks"):text.index("## Cost of the runs")]
    assert "| c\\[?\\]\\[?\\] | 3 | 6 |" in fails  # carol, dave, erin: wrong values, of the 6 that ran
    assert "| run (the trace ran) | 3 | 9 |" in fails  # frank, grace, ivan
    cycles = [c.figure for e in book.entries for c in e.report.checks if c.name == "cycles"]
    assert sorted(cycles) == [2, 4, 7, 7, 8, 9]
    assert "| cycles (6 runs) | 2 | 4.75 | 7 | 7.75 | 9 |" in text  # numpy's linear quantiles of those six
    assert "| ivan | empty submission |" in text and "![scores and cycles](summary.png)" in text


def test_feedback_hides_hidden_checks_and_escapes(tmp_path):
    problem = tmp_path / "p.yaml"
    problem.write_text(P3.read_text().replace("max_loads: {limit: 10, points: 1}",
                                              "max_loads: {limit: 10, points: 1, hidden: true}"))
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "x.asm").write_text((PROGRAMS / "matmul_inner_2x2.asm").read_text())
    evil = "FROB <script>alert(1)</script> | **bold** `x` <b>\n"
    (tmp_path / "subs" / "y.asm").write_text(evil)
    book = grade_submissions(tmp_path / "subs", problem)
    x = book.entry("x").report
    md, page = feedback_markdown(x, "x"), feedback_html(x, "x")
    assert "LOAD instructions: 13 > 10" not in md + page  # the hidden check's detail
    assert "| loads | hidden | ?/1 |" in md and "0 / 9 (and 1 points of hidden" not in md
    assert "**Score**: 7 / 9 (and 1 points of hidden checks, released later)" in md
    lecturer = rows(gradebook_csv(book))["x"]  # the lecturer's gradebook has the hidden figure
    assert (lecturer["loads: figure"], lecturer["loads: points"], lecturer["score"]) == ("13", "0", "7")
    y = book.entry("y").report
    md, page = feedback_markdown(y, "y"), feedback_html(y, "y")
    assert "<script>" not in page and "FROB &lt;script&gt;alert(1)&lt;/script&gt; | **bold** `x` &lt;b&gt;" in page
    assert "<script>" not in md.split("```")[0]  # escaped in the table; verbatim only inside the fence
    assert md.count("```") == 2 and "FROB <script>" in md.split("```")[1]


def test_markdown_escaping_and_fences():
    assert md_escape("a|b*c_<d>`e`") == "a\\|b\\*c\\_\\<d\\>\\`e\\`"
    from toymachine.check.feedback import _fence
    assert _fence("x ```` y") == "`````" and _fence("plain") == "```"


@pytest.mark.parametrize("text, cell", [("=1+2", "'=1+2"), ("+SUM(A1)", "'+SUM(A1)"), ("-2+3", "'-2+3"),
                                        ("@cmd", "'@cmd"), ("\tx", "'\tx"), ("\rx", "'\rx"), ("ok", "ok"),
                                        (-2.5, -2.5), (3.0, 3), (float("inf"), "inf")])
def test_csv_cells_cannot_be_formulas(text, cell):
    assert csv_cell(text) == cell


def test_csv_injection_through_ids_and_messages(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "@SUM(1+1).asm").write_text("=HYPERLINK(1)\n")
    (subs / "-x.asm").write_text("LOAD a[0][0], R0\n")
    book = grade_submissions(subs, P3)
    for row in csv.reader(io.StringIO(gradebook_csv(book))):
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), row


# -- hostile submissions: one failing row each, never an aborted batch --------------------------------
def _zip(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, *mode in members:
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if mode:
                info.external_attr = mode[0] << 16
            zf.writestr(info, data)


def test_a_zip_as_an_lms_exports_it(tmp_path):
    good = (PROGRAMS / "matmul_outer_2x2.asm").read_bytes()
    archive = tmp_path / "export.zip"
    _zip(archive, [
        ("hw3/alice/matmul.asm", good), ("hw3/alice/notes.txt", b"hi"),  # a folder per student
        ("hw3/bob.asm", (PROGRAMS / "matmul_inner_2x2.asm").read_bytes()),  # a file per student
        ("hw3/../../evil.asm", good),  # zip-slip
        ("hw3/bomb.asm", b"LOAD a[0][0], R0\n" + b" " * 5_000_000),  # inflates 1000:1 and past max_bytes
        ("hw3/link.asm", b"/etc/passwd", 0o120777),  # a symbolic link
        ("hw3/bin.asm", b"\x7fELF\x00\x01"), ("hw3/latin1.asm", "LOAD x[0], R0 ; café\nSTORE R0, café[0]\n".encode("latin-1")),
        ("hw3/empty.asm", b""), ("hw3/__MACOSX/._bob.asm", b"junk"), ("hw3/carol/a.asm", good),
        ("hw3/carol/b.asm", good),  # two traces, the problem names none
    ])
    subs = {s.student: s for s in collect_submissions(archive)}
    assert subs["alice"].text is not None and subs["alice"].source == "hw3/alice/matmul.asm"
    assert subs["bob"].text is not None
    assert "unsafe path" in subs["evil"].reason
    assert "too large" in subs["bomb"].reason
    assert "symbolic link" in subs["link"].reason
    assert "binary" in subs["bin"].reason
    assert "not UTF-8" in subs["latin1"].reason and "0xe9 at line 2, column 14" in subs["latin1"].reason
    assert subs["empty"].reason == "empty submission"
    assert "several .asm files" in subs["carol"].reason
    assert "._bob" not in subs and "__MACOSX" not in subs
    book = grade_submissions(archive, P3)
    assert book.entry("alice").report.passed and book.entry("bob").report.score == 6 + 1
    assert sum(1 for e in book.entries if e.reason) == 7
    assert not (tmp_path / "evil.asm").exists() and not (ROOT / "evil.asm").exists()


def test_a_zip_bomb_is_refused_by_its_ratio(tmp_path):
    archive = tmp_path / "bomb.zip"
    _zip(archive, [("x.asm", b"; " + b"A" * 900_000 + b"\n")])
    limits = GradeLimits(max_ratio=100)
    (sub,) = collect_submissions(archive, limits=limits)
    assert "zip bomb" in sub.reason


def test_a_folder_of_folders_and_the_problems_file_name(tmp_path):
    problem = tmp_path / "p.yaml"
    problem.write_text(P3.read_text() + "submission: matmul.asm\n")
    for who, name in (("ann", "matmul.asm"), ("ben", "other.asm")):
        (tmp_path / "subs" / who).mkdir(parents=True)
        (tmp_path / "subs" / who / name).write_text((PROGRAMS / "matmul_outer_2x2.asm").read_text())
    os.symlink("/etc", tmp_path / "subs" / "cat")
    os.mkfifo(tmp_path / "subs" / "fifo.asm")  # reading it would block: never opened
    (tmp_path / "subs" / "big.asm").write_text("LOAD a[0][0], R0\n" * 100)
    book = grade_submissions(tmp_path / "subs", problem, limits=GradeLimits(max_instructions=50))
    assert book.entry("ann").report.passed
    assert book.entry("ben").reason == "no matmul.asm in the submission (found: other.asm)"
    assert book.entry("cat").reason == "a symbolic link: not followed"
    assert book.entry("fifo").reason == "not a regular file"
    assert book.entry("big").reason.startswith("too long: 101 lines")


def test_time_limit_stops_a_long_run(tmp_path):
    (tmp_path / "subs").mkdir()
    lines = "".join(f"LOAD x[{i}], R0\nEXP R0, R0\nSTORE R0, y[{i}]\n" for i in range(60_000))
    (tmp_path / "subs" / "slow.asm").write_text(lines)
    problem = tmp_path / "p.yaml"
    problem.write_text("inputs:\n  x: {shape: [60000]}\nexpect:\n  y: exp(x)\ntrials: 50\n")
    book = grade_submissions(tmp_path / "subs", problem, limits=GradeLimits(seconds=0.2, max_bytes=10_000_000))
    assert book.entry("slow").reason.startswith("time limit of 0.2 s exceeded")


def test_a_bad_batch_is_an_error_not_a_row(tmp_path):
    from toymachine.errors import ConfigError

    with pytest.raises(ConfigError, match="no such folder or zip"):
        grade_submissions(tmp_path / "missing", P1)
    (tmp_path / "notzip.zip").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(ConfigError, match="neither a folder nor a zip"):
        grade_submissions(tmp_path / "notzip.zip", P1)


def test_two_submissions_for_one_id_are_both_rows(tmp_path):
    subs = tmp_path / "subs"
    (subs / "Alice").mkdir(parents=True)
    (subs / "Alice" / "m.asm").write_text((PROGRAMS / "matmul_outer_2x2.asm").read_text())
    (subs / "alice.asm").write_text((PROGRAMS / "matmul_outer_2x2.asm").read_text())
    got = {s.student: s for s in collect_submissions(subs)}
    assert set(got) == {"Alice", "alice~2"} and got["alice~2"].reason == "a second submission for alice"


def test_time_limit_interrupts_only_toyms_own_code():
    """The alarm raises where toym's code (or a block it generated) runs, never inside other code —
    the interpreter formatting an unraisable exception, a library's finalizer — where it would be
    swallowed or escape; it fires again every 50 ms until it lands in toym's code."""
    import time

    from toymachine.check.limits import TimeLimitExceeded, time_limit
    from toymachine.sim import simulate

    with time_limit(0.05):
        start = time.perf_counter()
        while time.perf_counter() - start < 0.3:  # this test's own frames: not interrupted
            pass
    trace = "".join(f"LOAD x[{i}], R0\nEXP R0, R0\nSTORE R0, y[{i}]\n" for i in range(200_000))
    with pytest.raises(TimeLimitExceeded):
        with time_limit(0.05):
            simulate(trace)
