"""A course from the LMS export to the LMS gradebook (check.lms, check.submissions, check.roster,
check.deadline, check.similarity, check.course, check.courseout, check.autograder): every LMS's
names read, rosters joined, import files byte for byte, copies clustered, deadlines applied,
variants independent of file names, assignments of several problems."""

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import course_class  # noqa: E402

from toymachine.check.course import grade_course, load_course_file  # noqa: E402
from toymachine.check.courseout import course_gradebook_csv, import_files  # noqa: E402
from toymachine.check.deadline import Deadline, penalty  # noqa: E402
from toymachine.check.lms import detect, parse_name  # noqa: E402
from toymachine.check.problem import load_problem, load_variants  # noqa: E402
from toymachine.check.similarity import canonical_form, find_clusters  # noqa: E402
from toymachine.check.submissions import collect_class  # noqa: E402
from toymachine.check.variants import pick_variant  # noqa: E402
from toymachine.errors import ConfigError  # noqa: E402

PROBLEMS = ROOT / "examples" / "problems"
P1 = PROBLEMS / "p1_c00.yaml"
MATMUL = (ROOT / "programs" / "matmul_outer_2x2.asm").read_text(encoding="utf-8")
POLICY = "due: 2026-12-01T23:59:00+00:00\nlate: {grace: 15m, per_day: 10, cutoff: 3d}\n"


def _problem_with_deadline(folder: Path) -> Path:
    path = folder / "hw1.yaml"
    text = P1.read_text(encoding="utf-8").replace("submission:", "#")
    text = "\n".join("title: HW1" if line.startswith("title:") else line for line in text.splitlines())
    path.write_text(text + "\n" + POLICY + "submission: c00.asm\n", encoding="utf-8")
    return path


def _rows(folder: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO((folder / "gradebook.csv").read_text(encoding="utf-8"))))


# --- names -------------------------------------------------------------------------------------

def test_each_lms_names_its_student_file_and_time():
    o = parse_name("canvas", "lovelaceada_LATE_12345_67890_hw3-1.asm", False)
    assert (o.student, o.name, o.file, o.late) == ("12345", "lovelaceada", "hw3-1.asm", True)
    assert parse_name("canvas", "lovelaceada_12345_67890_hw3.asm", False).late is False
    o = parse_name("moodle", "Ada Lovelace_4242_assignsubmission_file_", True)
    assert (o.student, o.name, o.file) == ("4242", "Ada Lovelace", None)
    o = parse_name("moodle", "Ada Lovelace_4242_assignsubmission_file_hw3.asm", False)
    assert (o.student, o.file) == ("4242", "hw3.asm")
    o = parse_name("blackboard", "HW_3_a_lovelace_attempt_2026-12-01-23-59-59_hw3.asm", False, prefix="HW_3_")
    assert (o.student, o.file, o.submitted) == ("a_lovelace", "hw3.asm", datetime(2026, 12, 1, 23, 59, 59))
    assert parse_name("blackboard", "HW3_jdoe_attempt_2026-12-01-23-59-59.txt", False).receipt
    o = parse_name("brightspace", "123-456 - Ada Lovelace - Dec 1, 2026 1159 PM - hw3.asm", False)
    assert (o.student, o.file, o.submitted) == ("Ada Lovelace", "hw3.asm", datetime(2026, 12, 1, 23, 59))
    assert parse_name("gradescope", "submission_12345", True).student == "12345"
    assert detect([("lovelaceada_12345_67890_hw3.asm", False), ("notes.txt", False)]) == "canvas"
    assert detect([("alice.asm", False)]) is None


def test_a_canvas_zip_reads_ids_late_flags_and_resubmitted_names_and_lists_unknown_names(tmp_path):
    students = course_class.make_class(12)
    data = course_class.canvas_export(students)
    path = tmp_path / "canvas.zip"
    buf = io.BytesIO(data)
    with zipfile.ZipFile(buf, "a") as zf:
        zf.writestr("stray.asm", "LOAD a[0][0], R0\n")
    path.write_bytes(buf.getvalue())
    export = collect_class(path, ["c00.asm"])
    assert export.lms == "canvas"
    assert export.unrecognised == ("stray.asm",)
    by_id = {h.student: h for h in export.handins}
    assert set(by_id) == {s.canvas_id for s in students} | {"stray"}
    for s in students:
        assert by_id[s.canvas_id].late == (s.submitted > course_class.DUE)
    subs = {x.student: x for x in export.submissions["c00.asm"]}
    assert all(subs[s.canvas_id].reason == "" or s.kind == "broken" for s in students)  # -1 copies found too
    forced = collect_class(path, ["c00.asm"], lms="moodle")  # forced: nothing reads as Moodle's, all listed
    assert forced.lms == "moodle" and len(forced.unrecognised) == 13


def test_moodles_two_layouts_give_the_same_submissions(tmp_path):
    students = course_class.make_class(20)
    got = []
    for folders in (True, False):
        path = tmp_path / f"moodle{folders}.zip"
        path.write_bytes(course_class.moodle_export(students, folders=folders))
        export = collect_class(path, ["c00.asm"])
        assert export.lms == "moodle" and not export.unrecognised
        got.append([(s.student, s.text) for s in export.submissions["c00.asm"]])
    assert got[0] == got[1]
    assert {sid for sid, _ in got[0]} == {s.moodle_id for s in students}


def test_blackboard_keeps_the_latest_attempt_and_its_time(tmp_path):
    students = course_class.make_class(14)
    path = tmp_path / "bb.zip"
    path.write_bytes(course_class.blackboard_export(students))
    export = collect_class(path, ["c00.asm"])
    assert export.lms == "blackboard" and not export.unrecognised
    handins = {h.student: h for h in export.handins}
    for s in students:
        assert handins[s.username].submitted == s.submitted
    subs = {x.student: x for x in export.submissions["c00.asm"]}
    assert subs[students[1].username].text == students[1].trace.decode()  # not the earlier "nonsense"


def test_a_gradescope_export_reads_its_metadata(tmp_path):
    export = tmp_path / "assignment_1_export"
    for k in range(2):
        (export / f"submission_{100 + k}").mkdir(parents=True)
        (export / f"submission_{100 + k}" / "c00.asm").write_text(course_class.c_trace(0, 0), encoding="utf-8")
    (export / "submission_metadata.yml").write_text(
        "submission_100:\n  :submitters:\n  - :name: Ada\n    :sid: ''\n    :email: ada@uni.edu\n"
        "  :created_at: 2026-12-01 23:58:01.123456789 -08:00\n"
        "submission_101:\n  :submitters:\n  - :name: Alan\n    :sid: '42'\n    :email: alan@uni.edu\n"
        "  :created_at: 2026-12-02 09:00:00.000000000 +00:00\n", encoding="utf-8")
    got = collect_class(tmp_path, ["c00.asm"])
    assert got.lms == "gradescope"
    h = {x.student: x for x in got.handins}
    assert set(h) == {"ada@uni.edu", "42"}
    assert h["ada@uni.edu"].submitted == datetime(2026, 12, 1, 23, 58, 1, 123456, tzinfo=timezone(timedelta(hours=-8)))
    assert h["42"].name == "Alan"


@pytest.mark.slow
def test_bytes_that_are_not_utf8_in_a_comment_cost_nothing_but_are_named(tmp_path):
    (tmp_path / "ada.asm").write_bytes(b"; \xe9crit par Ada\n" + course_class.c_trace(1, 1).encode())
    (tmp_path / "bob.asm").write_bytes(b"LOAD a[1][0], R\xe9\n")
    out = tmp_path / "out"
    grade = subprocess.run([sys.executable, "-m", "toymachine", "grade", str(tmp_path), "-p", str(P1), "--out",
                            str(out)], capture_output=True, text=True, env=_env())
    assert grade.returncode == 0, grade.stderr
    rows = {r["student"]: r for r in _rows(out)}
    variant = pick_variant("ada", 4, "p1_c00")
    if course_class.VARIANTS[variant] == (1, 1):
        assert rows["ada"]["status"] == "passed"
    assert rows["ada"]["reason"] == ""
    assert "not UTF-8 in the comments of line(s) 1" in (out / "feedback" / "ada.md").read_text(encoding="utf-8")
    assert "0xe9 at line 1, column 16" in rows["bob"]["reason"]


# --- one class, three LMSs -----------------------------------------------------------------------

def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.mark.slow
def test_canvas_moodle_and_blackboard_exports_of_one_class_give_the_same_grades(tmp_path):
    students = course_class.make_class(60)
    problem = _problem_with_deadline(tmp_path)
    runs = {"canvas": (course_class.canvas_export(students), course_class.canvas_roster(students)),
            "moodle": (course_class.moodle_export(students), course_class.moodle_roster(students)),
            "blackboard": (course_class.blackboard_export(students), course_class.plain_roster(students))}
    (tmp_path / "times.csv").write_text(course_class.times_csv(students), encoding="utf-8")
    grades = {}
    for lms, (data, roster) in runs.items():
        (tmp_path / f"{lms}.zip").write_bytes(data)
        (tmp_path / f"{lms}.csv").write_text(roster, encoding="utf-8")
        times = str(tmp_path / "times.csv") if lms != "blackboard" else None  # only Blackboard's names carry the time
        cb = grade_course(tmp_path / f"{lms}.zip", problem, roster=str(tmp_path / f"{lms}.csv"), times=times)
        assert cb.export.lms == lms and not cb.export.unrecognised
        assert not cb.joined.missing and not cb.joined.unknown
        grades[lms] = {r.roster.email: (r.score, r.penalty, r.final, r.status) for r in cb.rows}
    assert grades["canvas"] == grades["moodle"] == grades["blackboard"]
    assert len(grades["canvas"]) == 60
    # the grades are the ones each student's own variant gives: a good trace passes, another's fails
    by_email = {s.email: s for s in students}
    for email, (score, lost, final, _) in grades["canvas"].items():
        kind = by_email[email].kind
        if kind in ("good", "latin1"):
            assert score == 11
        if kind in ("other", "broken"):
            assert score == 0
        assert final == pytest.approx(score - lost)
    # the late policy: 10% per started day after a 15-minute grace, the whole score past 3 days
    due = datetime(2026, 12, 1, 23, 59, tzinfo=timezone.utc)
    for s in students:
        late = (s.submitted.replace(tzinfo=timezone.utc) - due).total_seconds()
        score = grades["moodle"][s.email][0]
        want = 0 if late <= 900 else score if late > 3 * 86400 else score * min(100, 10 * -(-late // 86400)) / 100
        assert grades["blackboard"][s.email][1] == pytest.approx(want)


@pytest.mark.slow
def test_the_lms_import_files_have_the_documented_headers_byte_for_byte(tmp_path):
    students = course_class.make_class(5)
    problem = _problem_with_deadline(tmp_path)
    (tmp_path / "canvas.zip").write_bytes(course_class.canvas_export(students))
    (tmp_path / "roster.csv").write_text(course_class.canvas_roster(students), encoding="utf-8")
    cb = grade_course(tmp_path / "canvas.zip", problem, roster=str(tmp_path / "roster.csv"))
    canvas = import_files(cb)["canvas_import.csv"]
    # Canvas's gradebook import: the five identity columns, then the assignment as the export names it
    # ("Title (assignment id)"), then the Points Possible row Canvas's own export writes
    assert canvas.startswith("Student,ID,SIS User ID,SIS Login ID,Section,HW1 (777)\n    Points Possible,,,,,11\n")
    first = students[0]
    row = next(r for r in canvas.splitlines() if f",{first.canvas_id}," in r)
    final = next(r.final for r in cb.rows if r.student == first.canvas_id)
    assert row == f'"{first.last}, {first.first}",{first.canvas_id},{first.sis_id},{first.email},CS101-01,' \
                  f"{int(final) if float(final).is_integer() else final}"
    assert "Test Student" not in canvas
    (tmp_path / "moodle.zip").write_bytes(course_class.moodle_export(students))
    (tmp_path / "moodle.csv").write_text(course_class.moodle_roster(students), encoding="utf-8")
    cb = grade_course(tmp_path / "moodle.zip", problem, roster=str(tmp_path / "moodle.csv"))
    moodle = import_files(cb)["moodle_import.csv"]
    # Moodle's grade import takes its grader export's format: its identity columns, quoted where PHP's
    # fputcsv quotes (a space), and the grade item's column
    assert moodle.startswith('"First name","Last name","ID number",Institution,Department,"Email address",'
                             '"Assignment: HW1"\n')
    assert moodle.splitlines()[1].startswith(f"{first.first},{first.last},{first.sis_id},Uni,CS,{first.email},")


def test_roster_cells_cannot_become_spreadsheet_formulas(tmp_path):
    students = course_class.make_class(2)
    roster = course_class.canvas_roster(students).replace(f"{students[0].last}, {students[0].first}", "=HYPERLINK(1)")
    (tmp_path / "roster.csv").write_text(roster, encoding="utf-8")
    (tmp_path / "c.zip").write_bytes(course_class.canvas_export(students))
    cb = grade_course(tmp_path / "c.zip", _problem_with_deadline(tmp_path), roster=str(tmp_path / "roster.csv"))
    assert "'=HYPERLINK(1)" in import_files(cb)["canvas_import.csv"]
    assert "\n=" not in course_gradebook_csv(cb) and ",=" not in course_gradebook_csv(cb)


def test_the_roster_join_lists_both_sides_leftovers(tmp_path):
    students = course_class.make_class(6)
    (tmp_path / "roster.csv").write_text(course_class.canvas_roster(students[:5]), encoding="utf-8")
    (tmp_path / "c.zip").write_bytes(course_class.canvas_export(students[1:]))
    cb = grade_course(tmp_path / "c.zip", P1, roster=str(tmp_path / "roster.csv"))
    assert [s.key for s in cb.joined.missing] == [students[0].canvas_id]
    assert cb.joined.unknown == (students[5].canvas_id,)


def test_a_roster_without_an_id_column_is_a_located_error(tmp_path, toym):
    (tmp_path / "roster.csv").write_text("who,where\nada,here\n", encoding="utf-8")
    code, out, err = toym("grade", str(ROOT / "examples" / "submissions" / "p1_c00"), "-p", str(P1), "--out",
                          str(tmp_path / "out"), "--roster", str(tmp_path / "roster.csv"))
    assert code == 2 and "no id column" in err and "roster.csv:1:1" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "gradebook.csv").exists()


# --- deadlines -----------------------------------------------------------------------------------

def test_the_late_penalty_is_grace_then_a_rate_per_started_period_then_the_cutoff():
    due = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)
    d = Deadline(due, timedelta(minutes=15), timedelta(days=1), 10.0, timedelta(days=3))
    assert penalty(d, due + timedelta(minutes=14)).percent == 0
    assert penalty(d, due + timedelta(minutes=16)).percent == 10
    assert penalty(d, due + timedelta(days=1, seconds=1)).percent == 20
    assert penalty(d, due + timedelta(days=3, seconds=1)).percent == 100
    assert penalty(d, datetime(2026, 12, 1, 13)).percent == 10  # no zone: the due date's
    assert penalty(d, None, flagged=True).percent == 10 and "unknown time" in penalty(d, None, True).note
    hourly = Deadline(due, timedelta(0), timedelta(hours=1), 2.5)
    assert penalty(hourly, due + timedelta(hours=7, minutes=1)).percent == 20


def test_a_late_policy_without_a_due_date_is_a_located_error(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text(P1.read_text(encoding="utf-8") + "late: {per_day: 10}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_problem(bad)
    assert "'late' needs a 'due'" in exc.value.message and exc.value.loc.line > 1


# --- variants ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_renaming_a_problem_file_moves_no_variant(tmp_path):
    for name in ("p1_c00.yaml", "p4_softmax_safe.yaml"):
        copy = tmp_path / ("hw3_" + name)
        shutil.copyfile(PROBLEMS / name, copy)
        for k in range(40):
            student = f"student{k}@uni.edu"
            assert load_problem(copy, student=student).variant_index == \
                load_problem(PROBLEMS / name, student=student).variant_index
    # without an id, the title as written is the problem's id: a renamed copy still agrees
    text = P1.read_text(encoding="utf-8").replace("id: p1_c00", "")
    (tmp_path / "a.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(text, encoding="utf-8")
    picks = [[load_problem(tmp_path / f, student=f"s{k}").variant_index for k in range(40)] for f in ("a.yaml", "b.yaml")]
    assert picks[0] == picks[1] and len(set(picks[0])) > 1
    assert load_variants(tmp_path / "a.yaml")[0].id.startswith("Problem 1: c{i}{j} = ")


@pytest.mark.slow
def test_a_trace_of_another_students_variant_says_so_in_the_feedback(tmp_path, toym):
    out = tmp_path / "out"
    code, _, err = toym("grade", str(ROOT / "examples" / "submissions" / "p1_c00"), "-p", str(P1), "--out", str(out))
    assert code == 0, err
    dave = (out / "feedback" / "dave.md").read_text(encoding="utf-8")
    assert "this trace solves variant 4 of 4" in dave and "not yours (variant 2 of 4" in dave
    assert next(r for r in _rows(out) if r["student"] == "dave")["score"] == "0"  # the score is not changed


# --- similarity ----------------------------------------------------------------------------------

def _renamed(text: str) -> str:
    mapping = {"R0": "R5", "R1": "R3", "R2": "R0", "R3": "R1", "R4": "R2", "R5": "R4"}
    import re

    return re.sub(r"\bR[0-5]\b", lambda m: mapping[m.group(0)], text)


def test_copies_with_renamed_registers_and_reordered_instructions_are_clustered():
    lines = MATMUL.splitlines()
    code = [ln for ln in lines if ln and not ln.startswith((";", "."))]
    swapped = code[:]
    swapped[-1], swapped[-2] = swapped[-2], swapped[-1]  # two independent STOREs
    renamed = _renamed("\n".join(swapped)) + "\n; my own work\n"
    assert canonical_form(MATMUL) == canonical_form(renamed)
    inner = (ROOT / "programs" / "matmul_inner_2x2.asm").read_text(encoding="utf-8")
    near = "\n".join(code[:-1] + ["LOAD a[0][0], R0", code[-1]]) + "\n"  # one extra instruction
    traces = {"ada": MATMUL, "bob": renamed, "cy": inner, "dee": near}
    clusters = find_clusters(traces)
    assert len(clusters) == 1
    assert clusters[0].students == ("ada", "bob", "dee")
    assert 0.8 <= clusters[0].similarity < 1


@pytest.mark.slow
def test_similarity_never_changes_a_score_and_is_in_the_summary(tmp_path, toym):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada.asm").write_text(MATMUL, encoding="utf-8")
    (subs / "bob.asm").write_text(_renamed(MATMUL), encoding="utf-8")
    (subs / "cy.asm").write_text((ROOT / "programs" / "matmul_inner_2x2.asm").read_text(encoding="utf-8"))
    for flag in ("--similarity", "--no-similarity"):
        out = tmp_path / flag
        code, stdout, err = toym("grade", str(subs), "-p", str(PROBLEMS / "p3_matmul_outer.yaml"), "--out", str(out),
                                 flag)
        assert code == 0, err
        scores = {r["student"]: r["score"] for r in _rows(out)}
        assert scores == {"ada": "10", "bob": "10", "cy": "7"}
    summary = (tmp_path / "--similarity" / "summary.md").read_text(encoding="utf-8")
    assert "| p3_matmul_outer" not in summary or "ada, bob" in summary
    pairs = list(csv.DictReader(io.StringIO((tmp_path / "--similarity" / "similarity.csv").read_text())))
    assert [(p["student_a"], p["student_b"], p["similarity"]) for p in pairs] == [("ada", "bob", "1")]


def test_copies_across_variants_are_still_clustered():
    a = course_class.c_trace(0, 0) + "".join(f"LOAD a[0][{k % 2}], R{k % 3}\n" for k in range(6))
    b = _renamed(a.replace("LOAD a[0][0], R0\nLOAD b[0][0], R1", "LOAD b[0][0], R1\nLOAD a[0][0], R0"))
    assert find_clusters({"x": a, "y": b})[0].students == ("x", "y")


# --- assignments ---------------------------------------------------------------------------------

ASSIGNMENT = """title: Homework 1
id: hw1
due: 2026-12-01T23:59:00+00:00
late: {per_day: 10}
problems:
  - {problem: p1_c00.yaml, submission: c00.asm, points: 11}
  - {problem: p3_matmul_outer.yaml, submission: matmul.asm, points: 20}
  - {problem: p5_softmax_online.yaml, submission: softmax.asm}
"""


def _assignment(tmp_path: Path) -> Path:
    folder = tmp_path / "course"
    folder.mkdir()
    for name in ("p1_c00.yaml", "p3_matmul_outer.yaml", "p5_softmax_online.yaml"):
        shutil.copyfile(PROBLEMS / name, folder / name)
    (folder / "hw1.yaml").write_text(ASSIGNMENT, encoding="utf-8")
    return folder / "hw1.yaml"


@pytest.mark.slow
def test_a_three_problem_assignment_gives_one_gradebook_with_a_column_per_problem(tmp_path, toym):
    hw = _assignment(tmp_path)
    subs = tmp_path / "subs"
    softmax = (ROOT / "programs" / "softmax_online.asm")
    for student in ("ada", "bob"):
        (subs / student).mkdir(parents=True)
        i, j = course_class.VARIANTS[pick_variant(student, 4, "p1_c00")]
        (subs / student / "c00.asm").write_text(course_class.c_trace(i, j), encoding="utf-8")
        (subs / student / "matmul.asm").write_text(MATMUL if student == "ada" else "LOAD a[0][0], R0\n")
        if softmax.exists():
            (subs / student / "softmax.asm").write_text(softmax.read_text(encoding="utf-8"))
    out = tmp_path / "out"
    code, stdout, err = toym("grade", str(subs), "-p", str(hw), "--out", str(out))
    assert code == 0, err
    rows = {r["student"]: r for r in _rows(out)}
    assert list(rows["ada"])[7:10] == ["c00 (of 11)", "matmul (of 20)", "softmax (of 10)"]
    assert rows["ada"]["c00 (of 11)"] == "11" and rows["ada"]["matmul (of 20)"] == "20"
    assert rows["bob"]["matmul (of 20)"] == "0" and rows["ada"]["max_score"] == "41"
    assert float(rows["ada"]["score"]) == sum(float(rows["ada"][c]) for c in list(rows["ada"])[7:10])
    for part in ("c00", "matmul", "softmax"):
        assert (out / part / "gradebook.csv").is_file() and (out / part / "feedback" / "ada.md").is_file()
    code, sheet, err = toym("problem", "show", str(hw), "--student", "ada")
    assert code == 0 and "| c00 | c00.asm (11 points) |" in sheet and sheet.count("## Hand in") == 3


@pytest.mark.slow
def test_a_three_problem_assignment_gives_one_autograder_zip_that_grades_all_three(tmp_path, toym):
    hw = _assignment(tmp_path)
    archive = tmp_path / "autograder.zip"
    wheel = tmp_path / "toymachine-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"a stand-in: the test runs the source tree")
    code, out, err = toym("autograder", str(hw), "-o", str(archive), "--wheel", str(wheel))
    assert code == 0, err
    root = tmp_path / "autograder"
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        zf.extractall(root / "source")
    assert {"p1_c00.yaml", "p3_matmul_outer.yaml", "p5_softmax_online.yaml", "autograder.json"} <= set(names)
    run = (root / "source" / "run_autograder").read_text()
    assert "p1_c00" not in run and "yaml" not in run  # names are data, never pasted into the script
    sub = root / "submission"
    sub.mkdir()
    i, j = course_class.VARIANTS[pick_variant("ada@uni.edu", 4, "p1_c00")]
    (sub / "c00.asm").write_text(course_class.c_trace(i, j))
    (sub / "matmul.asm").write_text(MATMUL)
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "ada@uni.edu"}]}))
    os.chmod(root / "source" / "run_autograder", 0o755)
    env = dict(_env(), TOYM_AUTOGRADER_ROOT=str(root), TOYM_PYTHON=sys.executable)
    proc = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    by_part: dict[str, float] = {}
    for t in results["tests"]:
        part = t["name"].split(":", 1)[0]
        by_part[part] = by_part.get(part, 0) + t["score"]
    assert by_part["c00"] == 11 and by_part["matmul"] == 20 and by_part["softmax"] == 0
    assert results["score"] == 31


def test_an_assignment_naming_a_file_outside_its_folder_is_refused(tmp_path):
    hw = _assignment(tmp_path)
    hw.write_text(ASSIGNMENT.replace("problem: p1_c00.yaml", "problem: ../../etc/p.yaml"), encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_course_file(hw)
    assert "outside the assignment's folder" in exc.value.message and exc.value.loc.line == 6


def test_every_handout_format_names_the_file_to_submit(tmp_path, toym):
    problem = tmp_path / "p.yaml"
    problem.write_text(P1.read_text(encoding="utf-8") + "submission: matmul3.asm\n", encoding="utf-8")
    for fmt in ("markdown", "html", "latex"):
        code, out, err = toym("problem", "show", str(problem), "-f", fmt)
        assert code == 0 and "matmul3.asm" in out, (fmt, err)


# --- the autograder from a plain install ---------------------------------------------------------

@pytest.mark.slow
def test_the_autograder_builds_in_a_fresh_venv_after_a_plain_pip_install(tmp_path):
    """The quickstart's first command's shape — a venv, then ``pip install`` of the repository —
    and nothing else: ``toym autograder`` makes its wheel without pip wheel or bdist_wheel."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "__pycache__", "site", "*.egg-info", "build",
                                                            "kernels_gpu", "tests", "docs", "benchmarks"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(src)], check=True, env=env, timeout=900)
    out = tmp_path / "autograder.zip"
    proc = subprocess.run([str(venv / "bin" / "toym"), "autograder", str(P1), "-o", str(out)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(out) as zf:
        requirements = zf.read("requirements.txt").decode()
        wheel_name = next(n for n in zf.namelist() if n.endswith(".whl"))
        wheel = zipfile.ZipFile(io.BytesIO(zf.read(wheel_name)))
    versions = subprocess.run([str(py), "-c", "import numpy, yaml; print(numpy.__version__, yaml.__version__)"],
                              capture_output=True, text=True, env=env).stdout.split()
    assert f"numpy=={versions[0]}" in requirements and f"PyYAML=={versions[1]}" in requirements
    assert "toymachine/check/grader.py" in wheel.namelist()
    record = wheel.read(f"{wheel_name.split('-py3')[0]}.dist-info/RECORD").decode()
    assert "toymachine/check/grader.py,sha256=" in record


def test_a_brightspace_export_keeps_each_students_latest_file_and_ignores_its_index(tmp_path):
    folder = tmp_path / "d2l"
    folder.mkdir()
    (folder / "index.html").write_text("<html></html>")
    (folder / "111-222 - Ada Lovelace - Dec 1, 2026 1101 PM - c00.asm").write_text("nonsense\n")
    (folder / "111-223 - Ada Lovelace - Dec 1, 2026 1158 PM - c00.asm").write_text(course_class.c_trace(0, 0))
    (folder / "111-224 - Alan Turing - Dec 2, 2026 0105 AM - c00.asm").write_text(course_class.c_trace(1, 0))
    export = collect_class(folder, ["c00.asm"])
    assert export.lms == "brightspace" and not export.unrecognised
    subs = {s.student: s for s in export.submissions["c00.asm"]}
    assert set(subs) == {"Ada_Lovelace", "Alan_Turing"}
    assert subs["Ada_Lovelace"].text == course_class.c_trace(0, 0)
    times = {h.student: h.submitted for h in export.handins}
    assert times["Alan_Turing"] == datetime(2026, 12, 2, 1, 5)


def test_moodles_grading_worksheet_is_a_roster_keyed_on_the_participant_number(tmp_path):
    from toymachine.check.roster import join, load_roster

    students = course_class.make_class(3)
    (tmp_path / "w.csv").write_text(
        'Identifier,"Full name","Email address",Status,Grade,"Maximum Grade"\n'
        + "".join(f"Participant {s.moodle_id},{s.name},{s.email},Submitted,,11\n" for s in students[:2]))
    roster = load_roster(tmp_path / "w.csv")
    assert roster.kind == "moodle-worksheet"
    got = join(roster, [(s.moodle_id, s.name) for s in students])
    assert {k: v.email for k, v in got.matched.items()} == {s.moodle_id: s.email for s in students[:2]}
    assert got.unknown == (students[2].moodle_id,)


@pytest.mark.slow
def test_the_similarity_check_compares_far_fewer_pairs_than_the_class_has(monkeypatch):
    """MinHash buckets: n distinct traces cost about n comparisons, not n²/2."""
    import random

    from toymachine.check import similarity

    calls = []
    real = similarity.jaccard
    monkeypatch.setattr(similarity, "jaccard", lambda a, b: calls.append(1) or real(a, b))
    rng = random.Random(5)

    def trace() -> str:
        lines = [f"LOAD {rng.choice('ab')}[{rng.randrange(4)}][{rng.randrange(4)}], R{rng.randrange(6)}"
                 for _ in range(12)]
        lines += [f"MAC R{rng.randrange(6)}, R{rng.randrange(6)}, R{rng.randrange(6)}, R{rng.randrange(6)}"
                  for _ in range(8)]
        return "\n".join(lines) + "\nSTORE R0, c[0][0]\n"

    n = 400
    traces = {f"s{k}": trace() for k in range(n)}
    traces["copy"] = _renamed(traces["s7"])
    clusters = similarity.find_clusters(traces)
    assert [c.students for c in clusters] == [("copy", "s7")]
    assert len(calls) < n  # every pair would be n (n + 1) / 2 = 80,200
