"""Benchmark: batch grading throughput (``toym grade``; ``toymachine.check.gradebook``).

A class of N seed-size submissions (default 400: the nine traces of
``examples/submissions/p1_c00`` — good, slow, wrong, copied, hard-coded, broken, over the
register limit, other instructions, empty — handed in under N student IDs, so every variant
of Problem 1 occurs) is graded against ``examples/problems/p1_c00.yaml`` (3 random trials
each) with ``--jobs 1`` and ``--jobs J``, and the gradebook's outputs are written. The
baseline, measured in the same run, is ``check_trace`` called in a loop on the same texts in
this process (what ``toym check`` does per trace, minus start-up): the batch's ratio to it is
what reading, limits, variants, workers and outputs cost. The target is ≥ 50 submissions/s on
2 cores.

Usage:  python benchmarks/bench_grade.py [--students 400] [--jobs 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from toymachine.check import check_trace, load_problem
from toymachine.check.gradebook import grade_submissions

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "examples" / "problems" / "p1_c00.yaml"
CLASS = ROOT / "examples" / "submissions" / "p1_c00"


def make_class(folder: Path, students: int) -> list[tuple[str, str]]:
    traces = sorted(CLASS.glob("*.asm"))
    out = []
    for k in range(students):
        src = traces[k % len(traces)]
        student = f"s{k:05d}"
        shutil.copyfile(src, folder / f"{student}.asm")
        out.append((student, src.read_text(encoding="utf-8")))
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=400)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from toymachine.cli.grade import write_gradebook

    with tempfile.TemporaryDirectory(prefix="toym-bench-grade-") as tmp:
        subs = Path(tmp) / "subs"
        subs.mkdir()
        texts = make_class(subs, args.students)
        problems = {}

        def baseline():
            for student, text in texts:
                if student not in problems:
                    problems[student] = load_problem(PROBLEM, student=student)
                check_trace(text, problems[student], name=student)

        baseline()  # warm: problems loaded once per student (the batch loads each variant once per worker)
        t_base = best(baseline, args.repeat)
        n = args.students
        print(f"{n} submissions of Problem 1 (4 variants, 3 trials each), {os.cpu_count()} CPUs visible")
        print(f"{'what':<44} {'seconds':>8} {'subs/s':>8} {'× baseline':>11}")
        print(f"{'baseline: check_trace loop, in process':<44} {t_base:>8.3f} {n / t_base:>8.1f} {1.0:>11.2f}")
        book = None
        for jobs in sorted({1, args.jobs}):
            def run(jobs=jobs):
                nonlocal book
                book = grade_submissions(subs, PROBLEM, jobs=jobs)
            t = best(run, args.repeat)
            print(f"{f'grade_submissions --jobs {jobs}':<44} {t:>8.3f} {n / t:>8.1f} {t_base / t:>11.2f}")
            out = Path(tmp) / f"out{jobs}"

            def write(out=out):
                write_gradebook(book, str(out))
            t_w = best(write, args.repeat)
            t_all = t + t_w
            print(f"{f'  + writing the outputs (--jobs {jobs})':<44} {t_all:>8.3f} {n / t_all:>8.1f} "
                  f"{t_base / t_all:>11.2f}")


if __name__ == "__main__":
    main()
