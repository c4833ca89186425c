"""Benchmark: a 50-point sweep — matmul up to n = 16 and softmax up to n = 10⁵.

    python benchmarks/bench_sweep.py

Prints the wall time of each sweep (generate + simulate + closed form per point), the
instructions simulated, and the rate. The target is under a minute on a 2-core machine.
The same sweeps from the command line::

    toym sweep matmul --n 2,4,8,12,16 --registers 3..6,8,12,16
    toym sweep softmax --n 10..100000*10 --algo naive,safe,online
"""

from __future__ import annotations

import time

from toymachine.experiments.sweep import sweep

SWEEPS = (
    ("matmul", {"n": "2,4,8,12,16", "registers": "3..6,8,12,16"}),  # 35 points
    ("softmax", {"n": "10..100000*10", "algo": "naive,safe,online"}),  # 15 points
)


def main() -> None:
    total_points = total_instructions = 0
    total_seconds = 0.0
    print(f"{'generator':<10} {'points':>6} {'instructions':>13} {'seconds':>8} {'M instr/s':>10}  all = formula")
    for generator, grid in SWEEPS:
        start = time.perf_counter()
        rows = sweep(generator, grid)
        seconds = time.perf_counter() - start
        instructions = sum(sum(r.ops.values()) for r in rows)
        print(f"{generator:<10} {len(rows):>6} {instructions:>13,} {seconds:>8.2f} {instructions / seconds / 1e6:>10.2f}"
              f"  {all(r.matches for r in rows)}")
        total_points += len(rows)
        total_instructions += instructions
        total_seconds += seconds
    print(f"{'total':<10} {total_points:>6} {total_instructions:>13,} {total_seconds:>8.2f} "
          f"{total_instructions / total_seconds / 1e6:>10.2f}")


if __name__ == "__main__":
    main()
