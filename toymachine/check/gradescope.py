"""A grade as Gradescope's ``results.json`` (the autograder specification: a top-level
``score``, ``output`` and ``tests[]`` of ``name``, ``score``, ``max_score``, ``status``,
``output`` and ``visibility``).

Every check is one test; a hidden check is a test of visibility ``hidden`` (instructors see
it, students never do); a budget whose points hang on a hidden value check is shown when the
grades are published (``after_published``), since its score would tell the hidden result. A
trace that did not run is one failing test worth the whole score, whose output is the located
error, so the student sees why. The top-level ``score`` is the whole grade, hidden checks
included: it is what lands in the gradebook, and Gradescope does not show a student the total
score of a result that has hidden tests (the specification's "Controlling Test Case
Visibility"), so it tells nothing the hidden tests keep back; the ``output`` a student sees
counts the visible checks only.
"""

from __future__ import annotations

__all__ = ["gradescope_results", "gradescope_json"]

import json
import math

from .feedback import student_message, visible_score, withheld
from .report import CheckReport


def _number(x) -> float | int:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return 0
    return int(x) if float(x).is_integer() else float(x)


def gradescope_results(report: CheckReport) -> dict:
    ran = any(c.kind != "run" for c in report.checks)
    tests = []
    for c in report.checks:
        max_points = c.max_points if ran else report.max_score
        tests.append({"name": c.name, "score": _number(c.points), "max_score": _number(max_points),
                      "status": "passed" if c.passed else "failed",
                      "output": student_message(report, c) or ("passed" if c.passed else ""),
                      "visibility": "hidden" if c.hidden else "after_published" if withheld(report, c) else "visible"})
    score, most, hidden = visible_score(report)
    lines = [f"{report.problem}: {_number(score)} / {_number(most)} on the visible checks"
             + (f" ({_number(hidden)} points of hidden checks are released later)" if hidden else "")]
    if report.variant:
        lines.append(f"Your {report.variant}.")
    lines += list(report.notes)
    return {"score": _number(report.score), "output": "\n".join(lines), "output_format": "text",
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def gradescope_json(report: CheckReport) -> str:
    return json.dumps(gradescope_results(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
