"""The files a ``CourseBook`` writes beside each other: ``gradebook.csv`` (one row per student:
roster columns, each problem or each check, score, late penalty, final score), the LMS import
files (``canvas_import.csv``, ``moodle_import.csv``), ``similarity.csv`` and the course sections
of ``summary.md`` (the export's layout and the names it could not read, the roster join, the
late hand-ins, the clusters of similar traces). Every cell passes ``bookout.csv_cell``.
"""

from __future__ import annotations

__all__ = ["course_gradebook_csv", "course_summary", "course_similarity_csv", "import_files"]

import csv
import io

from .bookout import _num, csv_cell, summary_markdown
from .course import CourseBook, Row
from .feedback import md_escape
from .roster import Student, canvas_import_csv, moodle_import_csv
from .similarity import similarity_csv

_LMS_TITLES = {"canvas": "Canvas", "moodle": "Moodle", "blackboard": "Blackboard", "brightspace": "Brightspace",
               "gradescope": "Gradescope"}


def _when(row: Row) -> str:
    return row.submitted.isoformat() if row.submitted is not None else ""


def course_gradebook_csv(cb: CourseBook) -> str:
    """One row per student (sorted by id)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = ["student", "name", "sis_user_id", "login", "section", "submitted", "late"]
    book = cb.books[0]
    if cb.single:
        header += ["variant", "parameters"]
    else:
        header += [f"{p.id} (of {_num(m)})" for p, m in zip(cb.assignment.parts, cb.part_max, strict=True)]
    header += ["score", "max_score", "late_penalty", "final_score", "status", "reason"]
    if cb.single:
        for name in book.columns:
            header += [f"{name}: points", f"{name}: figure"]
    w.writerow([csv_cell(h) for h in header])
    entries = {e.student: e for e in book.entries}
    for row in cb.rows:
        r = row.roster or Student("")
        cells: list = [row.student, row.name, r.sis_id, r.login or r.email, r.section, _when(row), row.lateness.note]
        e = entries.get(row.student)
        if cb.single:
            cells += ["" if e is None or e.variant is None else e.variant + 1,
                      book.parameters[e.variant] if e is not None and e.variant is not None and book.parameters else ""]
        else:
            cells += ["" if s is None else s for s in row.scores]
        cells += [row.score, cb.max_score, row.penalty, row.final, row.status, row.reason]
        if cb.single and e is not None:
            for c in book.cells(e):
                cells += [c.points if c else 0, c.figure if c else None]
        w.writerow([csv_cell(v) for v in cells])
    return buf.getvalue()


def course_similarity_csv(cb: CourseBook) -> str:
    if cb.single:
        return similarity_csv(list(cb.clusters[0]) if cb.clusters else [])
    out = ["problem," + similarity_csv([]).rstrip("\n")]
    for part, clusters in zip(cb.assignment.parts, cb.clusters, strict=True):
        for line in similarity_csv(list(clusters)).splitlines()[1:]:
            out.append(f"{csv_cell(part.id)},{line}")
    return "\n".join(out) + "\n"


def import_files(cb: CourseBook) -> dict[str, str]:
    """File name → text of each LMS import file the export or the roster calls for: Canvas's
    (a Canvas export or roster), Moodle's (a Moodle roster). The grade is the final score; a
    roster student without a submission gets a blank (the LMS keeps what it has)."""
    out = {}
    by_student = {row.roster.key: row for row in cb.rows if row.roster is not None}
    if cb.roster is not None:
        grades = [(s, by_student[s.key].final if s.key in by_student else "") for s in cb.roster.students]
    else:
        grades = [(Student(row.student, row.name), row.final) for row in cb.rows]
    kind = cb.roster.kind if cb.roster is not None else cb.export.lms
    title = cb.assignment.title
    if kind == "canvas" or (cb.roster is None and cb.export.lms == "canvas"):
        out["canvas_import.csv"] = canvas_import_csv(cb.roster if kind == "canvas" else None, title, cb.max_score,
                                                     grades)
    if kind in ("moodle", "moodle-worksheet"):
        out["moodle_import.csv"] = moodle_import_csv(cb.roster, title, grades)
    return out


def course_summary(cb: CourseBook) -> str:
    """summary.md: the problem's summary (one problem) or a table per problem, then the course sections."""
    if cb.single:
        out = summary_markdown(cb.books[0], None).rstrip("\n").split("\n")
    else:
        rows = cb.rows
        out = [f"# Gradebook: {md_escape(cb.assignment.title)}", "",
               f"{len(rows)} student(s), {len(cb.assignment.parts)} problems, out of {_num(cb.max_score)}.", "",
               "| problem | file | points | mean | passed | not graded |", "|---|---|---:|---:|---:|---:|"]
        for part, book, most in zip(cb.assignment.parts, cb.books, cb.part_max, strict=True):
            scores = [e.report.score * most / (e.report.max_score or 1) for e in book.entries]
            mean = sum(scores) / len(scores) if scores else 0
            out.append(f"| {md_escape(part.id)} | {md_escape(part.submission or '')} | {_num(most)} | {_num(round(mean, 3))} | "
                       f"{sum(e.report.passed for e in book.entries)} | {sum(1 for e in book.entries if e.reason)} |")
    lms = cb.export.lms
    out += ["", "## Export", "", f"{len(cb.export.handins)} hand-in(s), read as "
            + (f"a {_LMS_TITLES[lms]} export" if lms else "plain names (the file's or folder's name is the id)") + "."]
    if cb.export.unrecognised:
        out.append(f"{len(cb.export.unrecognised)} name(s) not in {_LMS_TITLES.get(lms, lms)}'s form (the stem is "
                   "the id): " + ", ".join(f"`{md_escape(n)}`" for n in cb.export.unrecognised[:20])
                   + (" …" if len(cb.export.unrecognised) > 20 else ""))
    if cb.roster is not None and cb.joined is not None:
        j = cb.joined
        out += ["", "## Roster", "", f"{len(j.matched)} of {len(cb.roster.students)} roster student(s) handed in "
                f"(`{md_escape(cb.roster.path)}`, {cb.roster.kind})."]
        if j.missing:
            out.append(f"Without a submission ({len(j.missing)}): "
                       + ", ".join(md_escape(s.name or s.key) for s in j.missing) + ".")
        if j.unknown:
            out.append(f"Submissions without a roster student ({len(j.unknown)}): "
                       + ", ".join(md_escape(s) for s in j.unknown) + ".")
    deadline = cb.assignment.deadline
    late = [r for r in cb.rows if r.lateness.note]
    if deadline is not None or late:
        out += ["", "## Late", ""]
        if deadline is not None:
            out.append(md_escape(deadline.describe()) + ".")
        if late:
            out += ["", "| student | submitted | late | penalty |", "|---|---|---|---:|"]
            out += [f"| {md_escape(r.student)} | {md_escape(_when(r))} | {md_escape(r.lateness.note)} | {_num(r.penalty)} |"
                    for r in late]
        else:
            out.append("No hand-in was late.")
    out += ["", "## Similar traces", "", "Clusters of traces that are the same up to comments, spacing, register "
            "names and the order of independent instructions (`similarity.csv` lists the pairs). Scores are not "
            "changed: a TA decides."]
    any_cluster = False
    for part, clusters in zip(cb.assignment.parts, cb.clusters, strict=True):
        for k, c in enumerate(clusters, 1):
            if not any_cluster:
                out += ["", "| problem | cluster | students | similarity | kind |", "|---|---:|---|---:|---|"]
                any_cluster = True
            shown = ", ".join(md_escape(s) for s in c.students[:12]) + (f" … ({len(c.students)})"
                                                                        if len(c.students) > 12 else "")
            out.append(f"| {md_escape(part.id)} | {k} | {shown} | {c.similarity:.2f} | {c.kind} |")
    if not any_cluster:
        out += ["", "No two traces are alike."]
    return "\n".join(out) + "\n"
