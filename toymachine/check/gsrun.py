"""What ``run_autograder`` runs on Gradescope: ``python -m toymachine.check.gsrun ROOT``.

Reads ``ROOT/source/autograder.json`` (the problems, their submission file names and
points), the student's e-mail address from ``ROOT/submission_metadata.json`` (their variant key,
as ``toym grade`` keys a roster's student), grades ``ROOT/submission`` against each problem and
writes ``ROOT/results/results.json``: one problem is ``check.gradescope``'s results as they are;
several are one result whose tests are every problem's checks (named ``problem: check``) and
whose score is the sum of each problem's score scaled to its points. Every name is data read
from those files; nothing is passed through a shell.
"""

from __future__ import annotations

__all__ = ["main", "results_for"]

import json
import os
import sys
from pathlib import Path


def _student(root: Path) -> str:
    try:
        with open(root / "submission_metadata.json", encoding="utf-8") as fh:
            user = (json.load(fh).get("users") or [{}])[0]
        return str(user.get("email") or user.get("sid") or user.get("id") or "")
    except Exception:  # no metadata (a local run): the first variant
        return ""


def results_for(root: Path) -> dict:
    from .gradebook import check_submission
    from .gradescope import gradescope_results
    from .problem import load_problem

    source = root / "source"
    manifest = json.loads((source / "autograder.json").read_text(encoding="utf-8"))
    student = _student(root) or None
    results = []
    for part in manifest["parts"]:
        problem_path = (source / part["problem"]).resolve()
        if os.path.commonpath([problem_path, source.resolve()]) != str(source.resolve()):
            raise SystemExit(2)
        problem = load_problem(problem_path, student=student)
        if part.get("submission"):
            import dataclasses

            problem = dataclasses.replace(problem, submission=part["submission"])
        report = check_submission(root / "submission", problem, student=student)
        results.append((part, problem, gradescope_results(report)))
    if manifest.get("single", True) and len(results) == 1:
        return results[0][2]
    tests, lines, score = [], [manifest.get("title", "")], 0.0
    for part, problem, r in results:
        scale = (part["points"] / (problem.max_score or 1)) if part.get("points") is not None else 1.0
        score += r["score"] * scale
        for t in r["tests"]:
            tests.append({**t, "name": f"{part['id']}: {t['name']}", "score": round(t["score"] * scale, 6),
                          "max_score": round(t["max_score"] * scale, 6)})
        lines.append(f"{part['id']} ({part['submission']}): " + r["output"])
    return {"score": round(score, 6), "output": "\n".join(lines), "output_format": "text", "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0] if args else "/autograder")
    results = results_for(root)
    out = root / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".part")
    tmp.write_text(json.dumps(results, indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
