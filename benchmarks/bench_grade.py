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

``--course`` measures a term's run instead: a generated 300-student class
(``course_class.py``) exported as Canvas does (a zip named ``lastnamefirstname_id_…``, late
flags, resubmitted ``-1`` names), with Canvas's roster, a late policy and ``--times``, graded
and written whole (``grade_course`` + ``write_course``: roster join, variants, the late penalty,
the similarity clusters, the gradebook, feedback, summary and Canvas import file) with ``--jobs
1``. The baseline in the same run is the same grading without the course around it
(``grade_submissions`` on the same traces in a plain folder, outputs written). The target is
≥ 100 submissions/s after start-up. ``--similarity`` times ``find_clusters`` alone on classes of
growing size (distinct traces): its time per trace stays flat (linear in the class), where
comparing every pair would grow with the class.

Usage:  python benchmarks/bench_grade.py [--students 400] [--jobs 2] [--repeat 3]
        python benchmarks/bench_grade.py --course [--students 300] [--repeat 3]
        python benchmarks/bench_grade.py --similarity
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


def course(students: int, repeat: int) -> None:
    """A Canvas export with roster, late policy and similarity, against plain grading of the same traces."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import course_class

    from toymachine.check.course import grade_course
    from toymachine.cli.grade import write_course, write_gradebook

    klass = course_class.make_class(students)
    with tempfile.TemporaryDirectory(prefix="toym-bench-course-") as tmp:
        root = Path(tmp)
        problem = root / "hw1.yaml"
        problem.write_text(PROBLEM.read_text(encoding="utf-8") + "due: 2026-12-01T23:59:00+00:00\n"
                           "late: {grace: 15m, per_day: 10, cutoff: 3d}\n", encoding="utf-8")
        (root / "canvas.zip").write_bytes(course_class.canvas_export(klass))
        (root / "roster.csv").write_text(course_class.canvas_roster(klass), encoding="utf-8")
        (root / "times.csv").write_text(course_class.times_csv(klass), encoding="utf-8")
        plain = root / "plain"
        plain.mkdir()
        for s in klass:
            (plain / f"{s.email}.asm").write_bytes(s.trace)

        def baseline():
            write_gradebook(grade_submissions(plain, problem, jobs=1), str(root / "base"))

        def term():
            cb = grade_course(root / "canvas.zip", problem, roster=str(root / "roster.csv"),
                              times=str(root / "times.csv"), jobs=1)
            write_course(cb, str(root / "out"))
            return cb

        cb = term()  # warm: imports and the problem's variants loaded once, as after start-up
        baseline()
        (w_base, c_base), (w_term, c_term) = best_both(baseline, repeat), best_both(term, repeat)
        clusters = sum(len(c) for c in cb.clusters)
        print(f"{students} students, Canvas zip + roster + late policy + similarity, --jobs 1, "
              f"{os.cpu_count()} CPUs visible (best of {repeat}; CPU: this process's time, what a loaded "
              f"machine does not inflate)")
        print(f"{'what':<58} {'wall s':>7} {'subs/s':>7} {'CPU s':>7} {'subs/s':>7} {'× baseline (CPU)':>17}")
        for label, w, c in (("baseline: grade_submissions + write_gradebook, plain folder", w_base, c_base),
                            ("grade_course + write_course (the term)", w_term, c_term)):
            print(f"{label:<58} {w:>7.3f} {students / w:>7.1f} {c:>7.3f} {students / c:>7.1f} {c_base / c:>17.2f}")
        print(f"({len(cb.rows)} rows, {sum(1 for r in cb.rows if r.penalty)} late penalties, {clusters} clusters, "
              f"roster: {len(cb.joined.matched)} matched)")


def similarity_scaling() -> None:
    """find_clusters on n distinct traces: seconds per trace at growing n."""
    import random

    from toymachine.check.similarity import find_clusters

    rng = random.Random(3)
    ops = ["LOAD a[{}][{}], R{}", "LOAD b[{}][{}], R{}"]

    def trace() -> str:
        lines = [rng.choice(ops).format(rng.randrange(4), rng.randrange(4), rng.randrange(6)) for _ in range(12)]
        lines += [f"MAC R{rng.randrange(6)}, R{rng.randrange(6)}, R{rng.randrange(6)}, R{rng.randrange(6)}"
                  for _ in range(8)]
        return "\n".join(lines + [f"STORE R{rng.randrange(6)}, c[{k}][0]" for k in range(2)]) + "\n"

    print(f"{'traces':>8} {'wall s':>8} {'CPU s':>8} {'CPU ms/trace':>13} {'clusters':>9}")
    for n in (250, 500, 1000, 2000, 4000):
        traces = {f"s{k}": trace() for k in range(n)}
        w, c = time.perf_counter(), time.process_time()
        clusters = find_clusters(traces)
        w, c = time.perf_counter() - w, time.process_time() - c
        print(f"{n:>8} {w:>8.3f} {c:>8.3f} {1000 * c / n:>13.3f} {len(clusters):>9}")


def best_both(fn, repeat: int) -> tuple[float, float]:
    """(the least wall time, the least CPU time of this process) over ``repeat`` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--course", action="store_true", help="a 300-student Canvas export with roster and late policy")
    ap.add_argument("--similarity", action="store_true", help="how find_clusters scales with the class")
    args = ap.parse_args()
    if args.course:
        course(args.students or 300, args.repeat)
        return
    if args.similarity:
        similarity_scaling()
        return
    args.students = args.students or 400
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
