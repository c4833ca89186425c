"""Benchmark: two (or more) trees of toymachine on the same traces, in the same run — before and after.

``bench_run.py`` measures this tree alone; a speed-up is only a figure when the baseline is measured
beside it, on the same machine at the same time (a shared machine's load moves every figure). Here
each tree (``--tree NAME=PATH``: a checkout, e.g. ``git worktree add /tmp/base <commit>``) runs
every shape's trace (``bench_run``'s writers) end to end (``toym run FILE --no-steps --format json``
in a fresh process, bytecode cached per tree) and in-process (``main()`` timed inside the process),
the trees interleaved round by round, beside the bare read+split loop measured in the same rounds.
Each figure is the minimum over the rounds (wall and CPU time apart), then the median over them; the
JSON outputs of the trees must be identical.

Usage:  python benchmarks/bench_compare.py --tree base=/tmp/base --tree now=. [--shapes softmax,mixed]
                                           [--rounds 3] [--instructions 3000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_run  # noqa: E402  (the writers, the bare loop, the two ways of running a trace)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", required=True, help="NAME=PATH of a checkout (twice or more)")
    ap.add_argument("--shapes", default=",".join(bench_run.WRITERS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--instructions", type=int, default=3_000_000)
    ap.add_argument("--keep", default=None, help="directory for the traces (default: a temp dir)")
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    shapes = args.shapes.split(",")
    tmp = args.keep or tempfile.mkdtemp(prefix="toym-compare-")
    os.makedirs(tmp, exist_ok=True)
    files = {}
    for shape in shapes:
        files[shape] = os.path.join(tmp, f"{shape}_{args.instructions}.asm")
        if not os.path.exists(files[shape]):
            bench_run.WRITERS[shape](files[shape], args.instructions)
    envs = {name: bench_run.environment(os.path.join(tmp, f"pycache_{name}")) for name in trees}
    tiny = os.path.join(tmp, "tiny.asm")
    with open(tiny, "w") as fh:
        fh.write(".array Q[2][2]\n.array O[2][2]\nLOAD x[0], R0\nLOAD Q[0:1, :], T0\nSTORE T0, O[0:1, :]\n")
    for name, root in trees.items():  # bytecode written before anything is timed (the run's modules too)
        for cmd in (["--help"], ["run", tiny, "--no-steps", "-f", "json", "-o", tiny + ".json"]):
            subprocess.run([sys.executable, "-m", "toymachine", *cmd], cwd=root, env=envs[name],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    best: dict = {}
    every: dict = {}  # (shape, tree) → each round's (wall, CPU, in-process wall, in-process CPU)
    bare: dict = {}
    for r in range(args.rounds):
        for shape in shapes:
            b = bare.setdefault(shape, [float("inf")] * 2)
            b[:] = map(min, b, bench_run.bare_loop(files[shape]))
            for name, root in trees.items():
                bench_run.ROOT = root
                out = os.path.join(tmp, f"{shape}_{name}.json")
                wall, cpu, _, result = bench_run.end_to_end(files[shape], out, envs[name])
                iwall, icpu, _, iresult = bench_run.in_process(bench_run._RUN, envs[name], files[shape], out + ".in")
                assert iresult == result, (shape, name)
                row = best.setdefault((shape, name), [float("inf")] * 4 + [result["instructions"], None])
                row[:4] = map(min, row[:4], (wall, cpu, iwall, icpu))
                row[5] = json.dumps(result, sort_keys=True)
                every.setdefault((shape, name), []).append((wall, cpu, iwall, icpu))
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    print(f"{'trace':10s} {'tree':8s} {'end to end':>10s} {'M/s':>5s} {'(CPU)':>6s} {'÷ bare':>7s} | "
          f"{'in-process':>10s} {'M/s':>5s} {'(CPU)':>6s} {'÷ bare':>7s}")
    for shape in shapes:
        bw, bc = bare[shape]
        for name in trees:
            w, c, iw, ic, n, _ = best[(shape, name)]
            print(f"{shape:10s} {name:8s} {w:9.3f}s {n / w / 1e6:5.2f} ({n / c / 1e6:4.2f}) {w / bw:6.2f}× | "
                  f"{iw:9.3f}s {n / iw / 1e6:5.2f} ({n / ic / 1e6:4.2f}) {ic / bc:6.2f}×")
        for name in trees:  # the median of the rounds too: one quiet round makes the minimum
            w, c, iw, ic = (statistics.median(f) for f in zip(*every[(shape, name)]))
            n = best[(shape, name)][4]
            print(f"{'':10s} {name:8s} median {w:6.3f}s {n / w / 1e6:5.2f} ({n / c / 1e6:4.2f}) {w / bw:6.2f}× | "
                  f"median {iw:6.3f}s {n / iw / 1e6:5.2f} ({n / ic / 1e6:4.2f}) {ic / bc:6.2f}×")
        same = len({best[(shape, name)][5] for name in trees}) == 1
        print(f"{'':10s} bare read+split {bw:.3f} s; the trees' JSON outputs identical: {same}")


if __name__ == "__main__":
    main()
