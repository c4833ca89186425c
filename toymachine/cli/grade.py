"""``toym grade SUBMISSIONS --problem FILE --out DIR``: a class's submissions → a gradebook
(``toymachine.check.course``), feedback per student, a summary, the similar traces and the
LMS import files, written into DIR. FILE is a problem or an assignment of several problems.

Exit status: 0 the gradebook was written (whatever the students scored), 2 an error (the
problem file, SUBMISSIONS missing or not a folder/zip, the roster, DIR not writable, usage).
"""

from __future__ import annotations

__all__ = ["grade_command", "write_gradebook", "write_course"]

import os

import typer

from ..errors import ConfigError, Location
from .common import guard, progress_bar, progress_option, show_progress, write_output


def write_gradebook(book, out: str) -> list[str]:
    """Write DIR/gradebook.csv, DIR/feedback/<id>.md and .html, DIR/summary.md (and summary.png)."""
    from ..check.bookout import gradebook_csv, summary_markdown

    written = _feedback(book, out)
    write_output(gradebook_csv(book), os.path.join(out, "gradebook.csv"))
    png = _png(book, out)
    write_output(summary_markdown(book, png), os.path.join(out, "summary.md"))
    return written


def _feedback(book, out: str) -> list[str]:
    from ..check.feedback import feedback_html, feedback_markdown

    feedback = os.path.join(out, "feedback")
    try:
        os.makedirs(feedback, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {feedback}: {exc.strerror}", loc=Location(out)) from None
    written = []
    for e in book.entries:
        for ext, render in (("md", feedback_markdown), ("html", feedback_html)):
            path = os.path.join(feedback, f"{e.student}.{ext}")
            write_output(render(e.report, e.student), path)
            written.append(path)
    return written


def _png(book, out: str) -> str | None:
    from ..check.bookout import summary_png

    png = summary_png(book)
    if png is None:
        return None
    tmp = os.path.join(out, ".summary.png.part")  # written whole, then renamed into place
    with open(tmp, "wb") as fh:
        fh.write(png)
    os.replace(tmp, os.path.join(out, "summary.png"))
    return "summary.png"


def write_course(cb, out: str) -> list[str]:
    """Everything of a ``CourseBook`` under DIR: gradebook.csv, summary.md, similarity.csv, the LMS
    import files; the feedback of a problem in DIR/feedback/ (one problem) or DIR/<problem id>/
    (an assignment: each with its own gradebook.csv and summary.md)."""
    from ..check.bookout import summary_markdown
    from ..check.courseout import (
        course_gradebook_csv,
        course_similarity_csv,
        course_summary,
        import_files,
    )

    written = []
    if cb.single:
        written += _feedback(cb.books[0], out)
        png = _png(cb.books[0], out)
        summary = course_summary(cb) + (f"\n![scores and cycles]({png})\n" if png else "")
    else:
        for part, book in zip(cb.assignment.parts, cb.books, strict=True):
            sub = os.path.join(out, part.id)
            written += write_gradebook(book, sub)
            write_output(summary_markdown(book, None), os.path.join(sub, "summary.md"))
        summary = course_summary(cb)
    files = {"gradebook.csv": course_gradebook_csv(cb), "similarity.csv": course_similarity_csv(cb),
             **import_files(cb), "summary.md": summary}
    for name, text in files.items():
        write_output(text, os.path.join(out, name))
        written.append(os.path.join(out, name))
    return written


def grade_command(
    submissions: str = typer.Argument(..., help="A folder of id.asm files, a folder of student folders, or an LMS "
                                                "export (zip or folder: Canvas, Moodle, Blackboard, Brightspace, "
                                                "Gradescope)."),
    problem: str = typer.Option(..., "--problem", "-p", help="Problem file (YAML; with variants, each student gets "
                                                             "theirs), or an assignment file listing several."),
    out: str = typer.Option(..., "--out", help="Folder for gradebook.csv, feedback/, summary.md, similarity.csv and "
                                               "the LMS import files."),
    roster: str | None = typer.Option(None, "--roster", help="The class list: a Canvas or Moodle gradebook export, "
                                                                "or a CSV with an id column."),
    lms: str | None = typer.Option(None, "--lms", help="Read the names as this LMS writes them: canvas, moodle, "
                                                          "blackboard, brightspace, gradescope (default: detected)."),
    times: str | None = typer.Option(None, "--times", help="CSV of submission times (student, submitted) for "
                                                              "the late policy."),
    similarity: bool = typer.Option(True, "--similarity/--no-similarity", help="Find clusters of similar traces "
                                                                              "(scores never change)."),
    jobs: int | None = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes (default: every core; the "
                                       "gradebook is the same for any number)."),
    time_limit: float | None = typer.Option(None, "--time-limit", min=0.001, help="Seconds one submission may take "
                                               "to grade (default 10)."),
    max_instructions: int | None = typer.Option(None, "--max-instructions", min=1, help="Lines one trace may have "
                                                   "(default 200,000)."),
    progress: bool | None = progress_option(),
) -> None:
    """Grade every submission in SUBMISSIONS against the problem (or each problem of an assignment):
    one row per student in DIR/gradebook.csv, what each student sees in DIR/feedback/, the class at
    a glance in DIR/summary.md, similar traces in DIR/similarity.csv, and the file the LMS imports."""
    import dataclasses

    from ..check.course import grade_course
    from ..check.limits import GradeLimits
    from ..check.lms import LMS_NAMES
    from ..experiments.parallel import default_jobs

    with guard():
        if lms is not None and lms not in LMS_NAMES:
            raise ConfigError(f"unknown LMS {lms!r} for --lms", hint=f"choose one of {', '.join(LMS_NAMES)}")
        limits = GradeLimits.from_table()  # TOYM_MAX_GRADE_… lift a row; a flag wins over its variable
        if time_limit is not None:
            limits = dataclasses.replace(limits, seconds=time_limit)
        if max_instructions is not None:
            limits = dataclasses.replace(limits, max_instructions=max_instructions)
        with progress_bar("grade", show_progress(progress)) as update:
            cb = grade_course(submissions, problem, roster=roster, times=times, lms=lms, jobs=jobs or default_jobs(),
                              limits=limits, similarity=similarity, progress=update)
        write_course(cb, out)
        rows = cb.rows
        graded = sum(1 for r in rows if r.status != "not graded")
        passed = sum(1 for r in rows if r.status == "passed")
        typer.echo(f"{len(rows)} submission(s): {passed} passed every check, {graded - passed} failed one "
                   f"or more, {len(rows) - graded} not graded; wrote {out}/gradebook.csv, "
                   f"{out}/feedback/, {out}/summary.md")
        extra = [f"read as a {cb.export.lms} export"] if cb.export.lms else []
        if cb.export.unrecognised:
            extra.append(f"{len(cb.export.unrecognised)} name(s) not recognised (see summary.md)")
        if cb.joined is not None:
            extra.append(f"roster: {len(cb.joined.matched)} matched, {len(cb.joined.missing)} without a submission, "
                         f"{len(cb.joined.unknown)} not on it")
        late = sum(1 for r in rows if r.penalty)
        if late:
            extra.append(f"{late} late penalty(ies)")
        flagged = sum(1 for cs in cb.clusters for c in cs if c.flagged)
        if flagged:
            extra.append(f"{flagged} cluster(s) of similar traces (similarity.csv)")
        if extra:
            typer.echo("; ".join(extra))
