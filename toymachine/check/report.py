"""A grade: one ``Check`` per expected array and per budget, and how to show it.

``CheckReport.to_dict()`` is the JSON contract (``toym check --format json``)::

    {"problem": title, "problem_file": path, "trace": path, "passed": bool,
     "trials": K, "seed": s,
     "checks": [{"name": "c", "kind": "value", "passed": false, "figure": 0.5,
                 "limit": 1e-09, "message": "...", "trial": 1,
                 "first_difference": {"index": [0, 1], "got": 22.5, "expected": 22.0}}, …]}

``kind`` is ``run`` (the trace assembled and ran), ``value`` (an expected array; figure =
largest |trace − expected| over the trials, limit = the tolerance) or ``budget`` (figure
= what the run used, limit = the budget).
"""

from __future__ import annotations

__all__ = ["Check", "CheckReport", "NO_POINTS"]

import json
import math
from dataclasses import dataclass, field

from ..render import Report, Section, render_report
from ..render.cells import sig

NO_POINTS = " (no points: an expected array is wrong)"  # a budget's message when a value check failed


def _json_number(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


@dataclass(frozen=True)
class Check:
    name: str
    kind: str  # run | value | budget
    passed: bool
    figure: float | int | None = None
    limit: float | int | None = None
    message: str = ""
    trial: int | None = None  # the first failing trial (0-based), for value checks
    first_difference: dict | None = None  # {"index": [...], "got": x, "expected": y}
    points: float = 0  # earned (check.rules: budgets and instructions only when the values are right)
    max_points: float = 0
    hidden: bool = False  # details for the lecturer only
    no_points: bool = False  # a budget or instruction check met, unpaid because a value check failed

    @property
    def text(self) -> str:
        """The message as a report shows it: with why it earned no points, if a value is wrong."""
        return self.message + NO_POINTS if self.no_points else self.message

    def to_dict(self) -> dict:
        d = {"name": self.name, "kind": self.kind, "passed": self.passed, "figure": _json_number(self.figure),
             "limit": _json_number(self.limit), "message": self.text, "points": self.points,
             "max_points": self.max_points}
        if self.hidden:
            d["hidden"] = True
        if self.trial is not None:
            d["trial"] = self.trial
        if self.first_difference is not None:
            d["first_difference"] = {k: _json_number(v) if not isinstance(v, list) else v
                                     for k, v in self.first_difference.items()}
        return d


@dataclass(frozen=True)
class CheckReport:
    problem: str
    problem_file: str
    trace: str
    checks: tuple[Check, ...]
    trials: int
    seed: int
    notes: tuple[str, ...] = field(default=())
    max_score: float = 0  # the problem's (every check's points), also when the trace did not run
    variant: str | None = None  # "variant 2 of 3 (n = 8)"
    metrics: dict = field(default_factory=dict)  # cycles, dram_reads, … of the run (largest over the trials)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def score(self) -> float:
        return sum(c.points for c in self.checks)

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if not c.passed)

    def to_dict(self) -> dict:
        return {"problem": self.problem, "problem_file": self.problem_file, "trace": self.trace,
                "passed": self.passed, "score": _whole(self.score), "max_score": _whole(self.max_score),
                **({"variant": self.variant} if self.variant else {}),
                "trials": self.trials, "seed": self.seed, "checks": [c.to_dict() for c in self.checks]}

    def report(self) -> Report:
        rows = tuple((c.name, "pass" if c.passed else "FAIL", f"{_figure(c.points)}/{_figure(c.max_points)}",
                      c.text) for c in self.checks)
        verdict = (f"passed: all {len(self.checks)} checks" if self.passed
                   else f"failed: {len(self.failed)} of {len(self.checks)} checks")
        notes: tuple[str, ...] = (f"{self.trace} against {self.problem_file}: {verdict} ({self.trials} trial(s), seed {self.seed})",
                 f"score: {_figure(self.score)} / {_figure(self.max_score)}")
        if self.variant:
            notes += (f"{self.variant}: the problem comes in versions with other parameters; toym check --student ID "
                      "grades a student's own (the first without it)",)
        section = Section(self.problem, ("check", "result", "points", "what was measured, against what"), rows,
                          align=("l", "l", "r", "l"))
        return Report(self.problem, (section,), notes + self.notes)

    def render(self, fmt: str = "table") -> str:
        """The grade as text: ``json`` (``to_dict``) or any table format."""
        if fmt == "json":
            return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        return render_report(self.report(), fmt)

    def _repr_html_(self) -> str:
        return self.render("html-fragment")

    def _repr_markdown_(self) -> str:
        return self.render("markdown")


def _whole(x):
    return int(x) if isinstance(x, float) and x.is_integer() else x


def _figure(x) -> str:
    if x is None:
        return ""
    return sig(x) if not isinstance(x, str) else x
