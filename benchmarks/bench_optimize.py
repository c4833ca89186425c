"""Benchmark: provably optimal matmul schedules (``toymachine.optimize.optimize_matmul``).

For C = A·B with n = 2 (R = 3 … 8) and n = 3 (R = 3 … 13) it runs the search with a time limit
per register count (default 60 s, the issue's "within a minute each") and prints R → the least
cycles found, whether the search completed (proven optimal), the bound, the states expanded
and the seconds, beside the baseline measured in the same run: the cheaper of the
constructive inner/outer schedules (``toym gen matmul --schedule inner|outer``). For larger n
(``--large``) it prints the best found and the gap to the bound. ``--ablation`` times one
search with and without the symmetry reduction.

Usage:  python benchmarks/bench_optimize.py [--time-limit 60] [--n 2,3] [--large 4] [--ablation]
"""

from __future__ import annotations

import argparse
import time

from toymachine.cost import matmul_cost
from toymachine.optimize import optimize_matmul


def constructive(n: int, R: int) -> int:
    return min(matmul_cost(n, R, s).cycles() for s in ("inner", "outer"))


def table(n: int, registers, time_limit: float) -> None:
    print(f"\nC = A·B, n = {n} (time limit {time_limit:g} s per R)")
    print(f"{'R':>3} {'optimum':>8} {'proven':>7} {'bound':>6} {'LOADs':>6} {'states':>8} {'seconds':>8}"
          f" {'constructive':>13} {'saved':>6}")
    for R in registers:
        t = time.perf_counter()
        opt = optimize_matmul(n, R, time_limit=time_limit, with_data=False)
        wall = time.perf_counter() - t
        base = constructive(n, R)
        print(f"{R:>3} {opt.cycles:>8g} {'yes' if opt.proven_optimal else 'no':>7} {opt.lower_bound:>6g} "
              f"{opt.loads:>6} {opt.states_explored:>8} {wall:>8.2f} {base:>13} {base - opt.cycles:>6g}", flush=True)


def ablation(time_limit: float) -> None:
    print("\nsymmetry reduction (n = 3 as 2×3·3×3, R = 4; A* alone, no beam)")
    for sym in (False, True):
        t = time.perf_counter()
        opt = optimize_matmul(3, 4, m=2, k=3, symmetry=sym, beam_width=0, time_limit=time_limit, with_data=False)
        wall = time.perf_counter() - t
        print(f"  symmetry {'on ' if sym else 'off'}: {opt.cycles:g} cycles, proven {opt.proven_optimal}, "
              f"{opt.states_stored} states stored, {wall:.2f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--n", default="2,3", help="comma-separated sizes to tabulate (default 2,3)")
    ap.add_argument("--large", type=int, default=0, help="also n = this size at R = 4, 8, 12, 16: best found + gap")
    ap.add_argument("--ablation", action="store_true")
    args = ap.parse_args()
    for n in (int(x) for x in args.n.split(",")):
        table(n, range(3, {2: 9, 3: 14}.get(n, 2 * n * n + 2)), args.time_limit)
    if args.large:
        table(args.large, (4, 8, 12, 16), args.time_limit)
    if args.ablation:
        ablation(args.time_limit)


if __name__ == "__main__":
    main()
