"""Many traces → a gradebook: every student's submission graded against their variant of a
problem, in this process or on worker processes, each within ``GradeLimits``.

``grade_submissions(SUBMISSIONS, PROBLEM)`` returns a ``Gradebook`` (one ``Entry`` per
student, sorted by ID, the same rows whatever ``jobs``); its renderers (``check.outputs``:
CSV, feedback pages, summary) never grade again. A submission that cannot be read, does not
assemble, runs out of time or breaks the grader is one failing entry with the reason.
"""

from __future__ import annotations

__all__ = ["Entry", "Gradebook", "grade_submissions", "grade_list", "read_problem_text", "grade_one", "grade_batch", "not_graded", "check_submission"]

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, Location, ToyMachineError
from .grader import check_trace
from .limits import GradeLimits, TimeLimitExceeded, time_limit
from .problem import Problem, load_problem, load_variants
from .report import Check, CheckReport
from .submissions import Submission, collect_submissions
from .variants import pick_variant


@dataclass(frozen=True)
class Entry:
    student: str
    source: str
    report: CheckReport
    reason: str = ""  # why it was not graded ("" when it ran)
    variant: int | None = None  # 0-based
    seconds: float = 0.0


@dataclass(frozen=True)
class Gradebook:
    title: str
    problem_file: str
    entries: tuple[Entry, ...]
    columns: tuple[str, ...]  # every check, in the problem's order (c[?][?] where variants name it apart)
    hidden: frozenset  # columns of hidden checks
    max_score: float
    variant_count: int = 0
    names: tuple = ()  # per variant: the check name of each column in that variant
    parameters: tuple = ()  # per variant: its parameters as text ("i = 0, j = 1")

    def entry(self, student: str) -> Entry:
        return next(e for e in self.entries if e.student == student)

    def cells(self, entry: Entry) -> list:
        """The entry's Check (or None: it did not run) in each column."""
        by_name = {c.name: c for c in entry.report.checks}
        names = self.names[entry.variant or 0] if self.names else self.columns
        return [by_name.get(n) for n in names]


def not_graded(problem: Problem, source: str, reason: str) -> CheckReport:
    """The report of a submission that never ran: one failing ``run`` check saying why."""
    return CheckReport(problem.title, problem.file, source,
                       (Check("run", "run", False, message=reason, max_points=problem.max_score),),
                       problem.trials, problem.seed, (), problem.max_score, problem.variant_label)


_CACHE: dict = {}  # (file, text, variant) → Problem, per process


def _problem(path: str, text: str, variant: int | None) -> Problem:
    key = (path, text, variant)
    if key not in _CACHE:
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[key] = load_problem(path, text, variant=variant)
    return _CACHE[key]


def grade_one(path: str, text: str, variant: int | None, sub: Submission, limits: GradeLimits) -> Entry:
    """Grade one submission (on a worker process: every argument pickles)."""
    problem = _problem(path, text, variant)
    start = time.perf_counter()
    report, reason = _graded(problem, sub, limits)
    if not reason and variant is not None and problem.variant_count > 1 \
            and not all(c.passed for c in report.checks if c.kind == "value"):
        report = _other_variant(path, text, problem, sub, report, limits)
    if sub.warnings:
        report = dataclasses.replace(report, notes=report.notes + sub.warnings)
    return Entry(sub.student, sub.source, report, reason, variant, time.perf_counter() - start)


def _other_variant(path: str, text: str, problem: Problem, sub: Submission, report: CheckReport,
                   limits: GradeLimits) -> CheckReport:
    """A trace whose values are wrong for the student's variant but right for another's: the
    report says so (the score stays what the student's own variant gives)."""
    for k in range(problem.variant_count):
        if k == problem.variant_index:
            continue
        other = _problem(path, text, k)
        graded, reason = _graded(other, sub, limits)
        values = [c for c in graded.checks if c.kind == "value"]
        if not reason and values and all(c.passed for c in values):
            note = (f"this trace solves {other.variant_label}, not yours ({problem.variant_label}): it computes "
                    f"another student's variant")
            return dataclasses.replace(report, notes=report.notes + (note,))
    return report


def grade_batch(path: str, text: str, items: list, limits: GradeLimits) -> list[Entry]:
    """``grade_one`` for each (variant, submission) of ``items``: one call per worker round trip."""
    return [grade_one(path, text, variant, sub, limits) for variant, sub in items]


def read_problem_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no such problem file: {path}", loc=Location(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read problem file {path}: {getattr(exc, 'strerror', None) or exc}",
                          loc=Location(path)) from None


def grade_submissions(submissions: str | os.PathLike, problem: str | os.PathLike, *, jobs: int = 1,
                      limits: GradeLimits | None = None,
                      progress: Callable[[int, int], None] | None = None) -> Gradebook:
    """Grade every submission under ``submissions`` (folder or zip) against ``problem``, within
    ``limits`` (by default the central table's values in force: ``GradeLimits.from_table()``)."""
    limits = GradeLimits.from_table() if limits is None else limits
    path = os.fspath(problem)
    text = read_problem_text(path)
    variants = load_variants(path, text)  # every variant checked before a student is graded
    subs = collect_submissions(submissions, variants[0].submission, limits)
    return grade_list(subs, path, text, variants, jobs=jobs, limits=limits, progress=progress)


def grade_list(subs: list[Submission] | tuple, path: str, text: str, variants: list[Problem], *,
               keys: dict[str, str] | None = None, jobs: int = 1, limits: GradeLimits | None = None,
               progress: Callable[[int, int], None] | None = None) -> Gradebook:
    """Grade ``subs`` against the problem at ``path`` (its ``text`` and loaded ``variants``); a
    student's variant hangs on ``keys[student]`` (default: the student id)."""
    limits = GradeLimits.from_table() if limits is None else limits
    from ..experiments.parallel import run_points

    count = variants[0].variant_count
    keys = keys or {}
    items = [(pick_variant(keys.get(s.student, s.student), count, variants[0].id) if count else None, s)
             for s in subs]
    # a worker grades a batch per call: one trace takes about a millisecond, a round trip to a worker as long
    size = 1 if jobs <= 1 else max(1, min(32, len(items) // (4 * jobs)))
    batches = [(path, text, items[k:k + size], limits) for k in range(0, len(items), size)]
    done = [0]

    def counted(finished: int, total: int) -> None:
        done[0] = min(len(items), finished * size)
        if progress:
            progress(done[0], len(items))

    results = run_points(grade_batch, batches, jobs=jobs, on_point=counted if progress else None) if batches else []
    entries = [e for batch in results for e in batch]
    columns, names, hidden = _columns(variants)
    title = _pattern({v.title for v in variants})
    return Gradebook(title, path, tuple(entries), columns, hidden,
                     max(v.max_score for v in variants), count, names,
                     tuple(", ".join(f"{k} = {x}" for k, x in v.variant.items()) for v in variants))


def _pattern(names: set[str]) -> str:
    """One column name for a check the variants name apart: c[0][1], c[1][0] → c[?][?]."""
    if len(names) == 1:
        return next(iter(names))
    if len({len(n) for n in names}) == 1:
        return "".join(chars[0] if len(set(chars)) == 1 else "?" for chars in zip(*sorted(names)))
    return " | ".join(sorted(names))


def _columns(variants: list[Problem]) -> tuple[tuple[str, ...], tuple, frozenset]:
    """Columns of the gradebook: the variants' checks position by position (the same problem with
    other numbers has the same checks in the same order), else every name once."""
    per_variant = [tuple(v.rules) for v in variants]
    if len({len(n) for n in per_variant}) == 1:
        columns = tuple(_pattern({n[k] for n in per_variant}) for k in range(len(per_variant[0])))
        hidden = frozenset(columns[k] for v in variants for k, rule in enumerate(v.rules.values()) if rule.hidden)
        return columns, tuple(per_variant), hidden
    union: list[str] = []
    for n in per_variant:
        union += [name for name in n if name not in union]
    hidden = frozenset(name for v in variants for name, rule in v.rules.items() if rule.hidden)
    return tuple(union), tuple(tuple(union) for _ in variants), hidden


def check_submission(path: str | os.PathLike, problem: Problem, *, limits: GradeLimits | None = None,
                     student: str | None = None, **options) -> CheckReport:
    """One student's hand-in (a folder such as Gradescope's /autograder/submission, or a file)
    graded within ``limits``: whatever is wrong with it is a failing report, never an error.
    ``options`` go to ``check_trace`` (seed, trials, machine)."""
    from .readers import read_file, read_student_folder

    limits = GradeLimits.from_table() if limits is None else limits
    path = os.fspath(path)
    if os.path.isdir(path):
        sub = read_student_folder(path, problem.submission, limits, student)
    else:
        text, reason, warnings = read_file(path, limits)
        sub = Submission(student or "student", path, text, reason, warnings)
    return _graded(problem, sub, limits, options)[0]


def _graded(problem: Problem, sub: Submission, limits: GradeLimits, options: dict | None = None) -> tuple:
    if sub.text is None:
        return not_graded(problem, sub.source, sub.reason), sub.reason
    reason = ""
    try:
        with time_limit(limits.seconds):
            report = check_trace(sub.text, problem, name=sub.source, **(options or {}))
    except TimeLimitExceeded as exc:
        reason = f"{exc} (grading stopped)"
    except ToyMachineError as exc:
        reason = exc.render()
    except RecursionError:
        reason = "the trace is too deeply nested to grade"
    except MemoryError:
        reason = "the trace needs more memory than the grader allows"
    except Exception as exc:  # a grader bug must not cost the rest of the class their grades
        reason = f"internal error while grading: {type(exc).__name__}: {exc}"
    if reason:
        report = not_graded(problem, sub.source, reason)
    return report, reason
