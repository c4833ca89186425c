"""A course's grading run: an LMS export, a problem or an assignment, a roster → a ``CourseBook``.

An **assignment** file lists several problems, the file each student hands in for each, and
what each is worth; its due date and late policy cover them all::

    title: Homework 3
    id: hw3
    due: 2026-12-01T23:59:00-05:00
    late: {grace: 15m, per_day: 10, cutoff: 3d}
    problems:
      - {problem: p1_c00.yaml, submission: c00.asm, points: 11}
      - {problem: p3_matmul_outer.yaml, submission: matmul.asm, points: 10}
      - {problem: p4_softmax_safe.yaml, submission: softmax.asm}    # points: the problem's own

Every path an assignment names must lie inside the assignment's folder. A problem file on its
own is a one-problem assignment (its ``due:`` and ``late:`` apply).

``grade_course`` reads the export (``check.submissions``: its LMS names), joins the roster
(``check.roster``), picks each student's variants from their variant key, grades every
problem (``check.gradebook``), applies the late policy to the total (``check.deadline``: the
penalty is its own column; the score stays what the checks give) and finds copies
(``check.similarity``, reported, never deducted).
"""

from __future__ import annotations

__all__ = ["Part", "Assignment", "load_course_file", "grade_course", "CourseBook", "Row", "load_times",
           "ASSIGNMENT_KEYS", "PART_KEYS"]

import csv
import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import yaml

from .. import yamlsafe
from ..errors import ConfigError, Location
from .deadline import Deadline, Lateness, parse_deadline, parse_time, penalty
from .gradebook import Gradebook, grade_list, read_problem_text
from .limits import GradeLimits
from .problem import Problem, load_variants
from .readers import read_size
from .roster import Join, Roster, Student, join, load_roster, variant_key
from .similarity import Cluster, find_clusters
from .submissions import ClassExport, collect_class
from .yamlsrc import Source, mapping, number, value_of

ASSIGNMENT_KEYS = ("title", "id", "problems", "due", "late", "statement")
PART_KEYS = ("problem", "submission", "points", "id")


@dataclass(frozen=True)
class Part:
    id: str  # the gradebook column
    problem: str  # path
    submission: str | None  # the file each student hands in for it
    points: float | None  # what the part is worth in the total (None: the problem's own score)


@dataclass(frozen=True)
class Assignment:
    title: str
    id: str
    file: str
    parts: tuple[Part, ...]
    deadline: Deadline | None = None
    statement: str = ""
    single: bool = True  # a problem file on its own


def _inside(src: Source, node, folder: str, name: str) -> str:
    """``name`` (relative) resolved inside ``folder``, or an error at ``node``."""
    if not isinstance(name, str) or not name or os.path.isabs(name) or "\\" in name:
        raise src.error(f"'problem' must be a path relative to the assignment's folder, got {name!r}", node)
    path = os.path.join(folder, name)
    real, base = os.path.realpath(path), os.path.realpath(folder)
    if os.path.commonpath([real, base]) != base:
        raise src.error(f"{name} lies outside the assignment's folder", node,
                        hint="keep the problems beside (or below) the assignment file")
    if not os.path.isfile(path):
        raise src.error(f"no such problem file: {name}", node, hint="paths are relative to the assignment file")
    return path


def load_course_file(path: str | os.PathLike) -> Assignment:
    """An assignment file, or a problem file as a one-problem assignment."""
    path = os.fspath(path)
    try:
        text = yamlsafe.read_text(path, "assignment file")
    except FileNotFoundError:
        raise ConfigError(f"no such problem or assignment file: {path}", loc=Location(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", loc=Location(path)) from None
    root = yamlsafe.compose(text, path, "assignment file")
    src = Source(path, text)
    keys = {k.value: (k, v) for k, v in root.value} if isinstance(root, yaml.MappingNode) else {}
    if "problems" not in keys:
        variants = load_variants(path, text)
        p = variants[0]
        return Assignment(p.title, p.id, path, (Part(p.id, path, p.submission, None),), p.deadline,
                          p.statement, single=True)
    spec = {}
    for knode, vnode in mapping(src, root, "an assignment file"):
        if knode.value not in ASSIGNMENT_KEYS:
            raise src.error(f"unknown key '{knode.value}' in an assignment file", knode,
                            hint=f"keys are: {', '.join(ASSIGNMENT_KEYS)}")
        spec[knode.value] = vnode
    folder = os.path.dirname(os.path.abspath(path))
    node = spec["problems"]
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise src.error("'problems' must be a list: - {problem: FILE, submission: NAME, points: N}", node)
    parts: list[Part] = []
    for item in node.value:
        opts = {}
        for k, v in mapping(src, item, "each entry of 'problems'"):
            if k.value not in PART_KEYS:
                raise src.error(f"unknown key '{k.value}' in a problem entry", k, hint=f"keys are: {', '.join(PART_KEYS)}")
            opts[k.value] = v
        if "problem" not in opts:
            raise src.error("each entry of 'problems' needs 'problem: FILE'", item)
        file = _inside(src, opts["problem"], folder, value_of(opts["problem"]))
        variants = load_variants(file)
        submission = value_of(opts["submission"]) if "submission" in opts else variants[0].submission
        if submission is None and len(node.value) > 1:
            raise src.error("with several problems, each needs the file its students hand in", item,
                            hint="add submission: NAME.asm (or submission: in the problem file)")
        if submission is not None and (not isinstance(submission, str) or not submission or "/" in submission
                                       or "\\" in submission or submission.startswith(".")):
            raise src.error(f"'submission' must be a file name (no folders), got {submission!r}",
                            opts.get("submission", item), hint="e.g. submission: matmul.asm")
        if any(p.submission == submission for p in parts):
            raise src.error(f"two problems take the same file {submission}", opts.get("submission", item))
        pid = str(value_of(opts["id"])) if "id" in opts else os.path.splitext(submission or variants[0].id)[0]
        if any(p.id == pid for p in parts):
            raise src.error(f"two problems have the id {pid!r}", opts.get("id", item), hint="give each an id:")
        points = number(src, opts["points"], "points") if "points" in opts else None
        parts.append(Part(pid, file, submission, points))
    title = str(value_of(spec["title"])) if "title" in spec else os.path.splitext(os.path.basename(path))[0]
    aid = str(value_of(spec["id"])) if "id" in spec else title
    statement = str(value_of(spec["statement"]) or "") if "statement" in spec else ""
    return Assignment(title, aid, path, tuple(parts), parse_deadline(src, spec.get("due"), spec.get("late")),
                      statement, single=False)


def load_times(path: str) -> dict[str, datetime]:
    """``--times FILE``: a CSV with a ``student`` (or ``id``) column and a ``submitted`` column (ISO 8601)."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read(20_000_001)
    except OSError as exc:
        raise ConfigError(f"cannot read the times file {path}: {exc.strerror}", loc=Location(path)) from None
    rows = list(csv.reader(io.StringIO(text)))
    header = [h.strip().lower() for h in (rows[0] if rows else [])]
    who = next((c for c in ("student", "id", "login", "email") if c in header), None)
    if who is None or "submitted" not in header:
        raise ConfigError("the times file needs a 'student' column and a 'submitted' column", loc=Location(path, 1),
                          hint="student,submitted\\nalice,2026-12-02T08:00:00+00:00")
    out = {}
    for n, r in enumerate(rows[1:], 2):
        if not any(c.strip() for c in r):
            continue
        k, t = header.index(who), header.index("submitted")
        when = parse_time(r[t]) if t < len(r) else None
        if when is None:
            raise ConfigError(f"row {n}: {r[t] if t < len(r) else ''!r} is not an ISO 8601 time",
                              loc=Location(path, n), hint="e.g. 2026-12-02T08:00:00+00:00")
        out[r[k].strip().casefold()] = when
    return out


@dataclass(frozen=True)
class Row:
    student: str
    name: str
    roster: Student | None
    submitted: datetime | None
    late: bool  # the LMS flagged it
    lateness: Lateness
    scores: tuple[float | None, ...]  # per part, in the part's points (None: nothing handed in for it)
    score: float
    penalty: float
    final: float
    status: str
    reason: str = ""


@dataclass(frozen=True)
class CourseBook:
    assignment: Assignment
    export: ClassExport
    books: tuple[Gradebook, ...]  # per part
    rows: tuple[Row, ...]
    part_max: tuple[float, ...]
    max_score: float
    roster: Roster | None = None
    joined: Join | None = None
    clusters: tuple[tuple[Cluster, ...], ...] = ()  # per part
    problems: tuple[Problem, ...] = field(default=())  # first variant of each part

    @property
    def single(self) -> bool:
        return self.assignment.single


def _round(x: float) -> float:
    return round(x, 6)


def grade_course(submissions: str | os.PathLike, file: str | os.PathLike, *, roster: str | None = None,
                 times: str | None = None, lms: str | None = None, jobs: int = 1, limits: GradeLimits | None = None,
                 similarity: bool = True, progress: Callable[[int, int], None] | None = None) -> CourseBook:
    """Grade the export ``submissions`` against the problem or assignment ``file``."""
    limits = GradeLimits.from_table() if limits is None else limits
    assignment = load_course_file(file)
    texts = [read_problem_text(p.problem) for p in assignment.parts]
    variants = [load_variants(p.problem, t) for p, t in zip(assignment.parts, texts, strict=True)]
    export = collect_class(submissions, [p.submission for p in assignment.parts], limits, lms)
    the_roster = load_roster(roster) if roster else None
    joined = join(the_roster, [(h.student, h.name) for h in export.handins]) if the_roster else None
    matched = joined.matched if joined else {}
    keys = {h.student: variant_key(h.student, matched.get(h.student)) for h in export.handins}
    stamped = load_times(times) if times else {}
    books = []
    total_items = len(export.handins) * len(assignment.parts)
    for k, (part, text, vs) in enumerate(zip(assignment.parts, texts, variants, strict=True)):
        def step(done: int, total: int, k: int = k) -> None:
            if progress:
                progress(k * len(export.handins) + done, total_items)

        books.append(grade_list(export.submissions[part.submission], part.problem, text, vs, keys=keys, jobs=jobs,
                                limits=limits, progress=step if progress else None))
    part_max = tuple(p.points if p.points is not None else vs[0].max_score
                     for p, vs in zip(assignment.parts, variants, strict=True))
    rows = []
    for h in export.handins:
        roster_student = matched.get(h.student)
        when = h.submitted
        for name in (h.student, roster_student.login if roster_student else "", roster_student.email
                     if roster_student else ""):
            if name and name.casefold() in stamped:
                when = stamped[name.casefold()]
                break
        late = penalty(assignment.deadline, when, h.late)
        scores: list[float | None] = []
        reasons: list[str] = []
        statuses: list[str] = []
        for part, book, most in zip(assignment.parts, books, part_max, strict=True):
            entry = next((e for e in book.entries if e.student == h.student), None)
            if entry is None:
                scores.append(None)
                continue
            own = entry.report.max_score or 1
            scores.append(_round(entry.report.score * most / own))
            if entry.reason:
                reasons.append((f"{part.id}: " if not assignment.single else "") + entry.reason.splitlines()[0])
            statuses.append("not graded" if entry.reason else "passed" if entry.report.passed else "failed")
        score = _round(sum(s for s in scores if s is not None))
        lost = _round(score * late.percent / 100)
        status = ("not graded" if statuses and all(s == "not graded" for s in statuses)
                  else "passed" if statuses and all(s == "passed" for s in statuses) else "failed")
        rows.append(Row(h.student, (roster_student.name if roster_student else "") or h.name, roster_student, when,
                        h.late, late, tuple(scores), score, lost, _round(score - lost), status, "; ".join(reasons)))
    clusters: list[tuple[Cluster, ...]] = []
    problems = tuple(vs[0] for vs in variants)
    for part, problem in zip(assignment.parts, problems, strict=True):
        if not similarity:
            clusters.append(())
            continue
        traces = {s.student: s.text for s in export.submissions[part.submission] if s.text is not None}
        reference = None
        if problem.reference:
            ref = os.path.join(os.path.dirname(os.path.abspath(part.problem)), problem.reference)
            try:
                with open(ref, encoding="utf-8") as fh:
                    reference = fh.read(read_size(limits.max_bytes))
            except OSError:
                reference = None
        clusters.append(tuple(find_clusters(traces, reference=reference)))
    return CourseBook(assignment, export, tuple(books), tuple(rows), part_max, _round(sum(part_max)), the_roster,
                      joined, tuple(clusters), problems)

