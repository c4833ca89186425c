"""Benchmark: the tick-level systolic array (``toymachine.sim.systolic``) against a cell-by-cell
Python emulator — seed 002's ``SystolicArray.tick`` design, one loop iteration per cell per tick —
measured in the same run, and against numpy's A @ B. Checks that all three give the same C.

The figure to report is the ratio cell-loop / vectorised at the sizes the cell loop can still run
(it does Python work per cell per tick: (M + K + N) · K · N iterations), and the vectorised
emulator's time for bigger sizes.

Usage:  python benchmarks/bench_systolic.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from toymachine.sim.systolic import systolic_matmul  # noqa: E402


def cell_loop(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """Weight-stationary, one Python iteration per cell per tick (the seed's emulator's shape)."""
    m, k = a.shape
    n = b.shape[1]
    act = [[None] * n for _ in range(k)]
    psum = [[0] * n for _ in range(k)]
    c = np.zeros((m, n), dtype=np.result_type(a, b))
    t = 0
    while t < m + k + n - 2:
        new_act = [[None] * n for _ in range(k)]
        new_psum = [[0] * n for _ in range(k)]
        for row in range(k):
            for col in range(n):
                if col == 0:
                    mi = t - row
                    x = a[mi, row] if 0 <= mi < m else None
                else:
                    x = act[row][col - 1]
                incoming = 0 if row == 0 else psum[row - 1][col]
                if x is None:
                    new_psum[row][col] = incoming
                    continue
                new_act[row][col] = x
                new_psum[row][col] = incoming + x * b[row, col]
                if row == k - 1:
                    c[t - row - col, col] = new_psum[row][col]
        act, psum = new_act, new_psum
        t += 1
    return c, t


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'M×K×N':>14} {'vectorised (s)':>15} {'cell loop (s)':>14} {'ratio':>8} {'numpy (s)':>10}  same C")
    for size, loop in ((16, True), (48, True), (128, False), (256, False), (512, False)):
        a = rng.integers(-9, 10, size=(size, size))
        b = rng.integers(-9, 10, size=(size, size))
        t_vec, run = best(lambda a=a, b=b: systolic_matmul(a, b, record=False), args.repeat)
        t_np, ref = best(lambda a=a, b=b: a @ b, args.repeat)
        same = np.array_equal(run.c, ref)
        if loop:
            t_loop, (c_loop, ticks) = best(lambda a=a, b=b: cell_loop(a, b), 1)
            same = same and np.array_equal(c_loop, ref) and ticks == run.busy_ticks
            print(f"{size}³".rjust(14) + f" {t_vec:>15.4f} {t_loop:>14.4f} {t_loop / t_vec:>7.1f}× "
                  f"{t_np:>10.5f}  {same}")
        else:
            print(f"{size}³".rjust(14) + f" {t_vec:>15.4f} {'—':>14} {'':>8} {t_np:>10.5f}  {same}")


if __name__ == "__main__":
    main()
