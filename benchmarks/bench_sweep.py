"""Benchmark: a 50-point sweep — matmul up to n = 16 and softmax up to n = 10⁵ — with one job and
with every core.

    python benchmarks/bench_sweep.py [--jobs N]

Prints, for each sweep and each number of jobs, the wall time (generate + simulate + closed form
per point), the instructions simulated and the rate, then the speed-up of N jobs over one
(measured in the same run) and whether the rows are identical. The same sweeps from the command
line::

    toym sweep matmul --n 2,4,8,12,16 --registers 3..6,8,12,16 --jobs 2
    toym sweep softmax --n 10..100000*10 --algo naive,safe,online --jobs 2
"""

from __future__ import annotations

import argparse
import time

from toymachine.experiments.parallel import default_jobs
from toymachine.experiments.sweep import sweep, sweep_report
from toymachine.render import render_report

SWEEPS = (
    ("matmul", {"n": "2,4,8,12,16", "registers": "3..6,8,12,16"}),  # 35 points
    ("softmax", {"n": "10..100000*10", "algo": "naive,safe,online"}),  # 15 points
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=default_jobs())
    args = ap.parse_args()
    print(f"{'generator':<10} {'jobs':>4} {'points':>6} {'instructions':>13} {'seconds':>8} {'M instr/s':>10}  "
          "all = formula")
    totals = {}
    same = True
    for jobs in (1, args.jobs):
        totals[jobs] = 0.0
        for generator, grid in SWEEPS:
            start = time.perf_counter()
            rows = sweep(generator, grid, jobs=jobs)
            seconds = time.perf_counter() - start
            totals[jobs] += seconds
            instructions = sum(sum(r.ops.values()) for r in rows)
            text = render_report(sweep_report(rows, generator), "json")
            if jobs == 1:
                totals[(generator, "text")] = text
            else:
                same = same and text == totals[(generator, "text")]
            print(f"{generator:<10} {jobs:>4} {len(rows):>6} {instructions:>13,} {seconds:>8.2f} "
                  f"{instructions / seconds / 1e6:>10.2f}  {all(r.matches for r in rows)}")
    print(f"\n50 points: {totals[1]:.2f} s with 1 job, {totals[args.jobs]:.2f} s with {args.jobs}: "
          f"speed-up {totals[1] / totals[args.jobs]:.2f}×; rows identical: {same}")


if __name__ == "__main__":
    main()
