"""``toym grade SUBMISSIONS --problem FILE --out DIR``: a class's submissions → a gradebook
(``toymachine.check.gradebook``), feedback per student and a summary, written into DIR.

Exit status: 0 the gradebook was written (whatever the students scored), 2 an error (the
problem file, SUBMISSIONS missing or not a folder/zip, DIR not writable, usage).
"""

from __future__ import annotations

__all__ = ["grade_command", "write_gradebook"]

import os
from typing import Optional

import typer

from ..errors import ConfigError, Location
from .common import guard, progress_bar, progress_option, show_progress, write_output


def write_gradebook(book, out: str) -> list[str]:
    """Write DIR/gradebook.csv, DIR/feedback/<id>.md and .html, DIR/summary.md (and summary.png)."""
    from ..check.bookout import gradebook_csv, summary_markdown, summary_png
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
    write_output(gradebook_csv(book), os.path.join(out, "gradebook.csv"))
    png = summary_png(book)
    if png is not None:
        tmp = os.path.join(out, ".summary.png.part")  # written whole, then renamed into place
        with open(tmp, "wb") as fh:
            fh.write(png)
        os.replace(tmp, os.path.join(out, "summary.png"))
    write_output(summary_markdown(book, "summary.png" if png is not None else None), os.path.join(out, "summary.md"))
    return written


def grade_command(
    submissions: str = typer.Argument(..., help="A folder of id.asm files, a folder of student folders, or an LMS zip."),
    problem: str = typer.Option(..., "--problem", "-p", help="Problem file (YAML); with variants, each student gets theirs."),
    out: str = typer.Option(..., "--out", help="Folder for gradebook.csv, feedback/<id>.md|.html and summary.md."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes (default: every core; the "
                                       "gradebook is the same for any number)."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", min=0.001, help="Seconds one submission may take "
                                               "to grade (default 10)."),
    max_instructions: Optional[int] = typer.Option(None, "--max-instructions", min=1, help="Lines one trace may have "
                                                   "(default 200,000)."),
    progress: Optional[bool] = progress_option(),
) -> None:
    """Grade every submission in SUBMISSIONS against the problem: one row per student in
    DIR/gradebook.csv, what each student sees in DIR/feedback/, the class at a glance in DIR/summary.md."""
    import dataclasses

    from ..check.gradebook import grade_submissions
    from ..check.limits import GradeLimits
    from ..experiments.parallel import default_jobs

    with guard():
        limits = GradeLimits.from_table()  # TOYM_MAX_GRADE_… lift a row; a flag wins over its variable
        if time_limit is not None:
            limits = dataclasses.replace(limits, seconds=time_limit)
        if max_instructions is not None:
            limits = dataclasses.replace(limits, max_instructions=max_instructions)
        with progress_bar("grade", show_progress(progress)) as update:
            book = grade_submissions(submissions, problem, jobs=jobs or default_jobs(), limits=limits,
                                     progress=update)
        write_gradebook(book, out)
        graded = sum(1 for e in book.entries if not e.reason)
        passed = sum(1 for e in book.entries if e.report.passed)
        typer.echo(f"{len(book.entries)} submission(s): {passed} passed every check, {graded - passed} failed one "
                   f"or more, {len(book.entries) - graded} not graded; wrote {out}/gradebook.csv, "
                   f"{out}/feedback/, {out}/summary.md")
