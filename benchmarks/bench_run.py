"""Benchmark: `toym run --no-steps --format json` on a ten-million-instruction trace.

Prints instructions per second and peak memory (RSS) of the simulator process, beside
the time a bare Python loop takes just to read and split the same file's lines (the
ratio simulator/bare is the figure to report), for two kinds of trace:

* ``matmul``  inner-product matmul (3 registers): addresses repeat, so most lines are
  seen before (the simulator's line cache hits);
* ``softmax`` online softmax (4 registers): every LOAD/STORE names a new element, so
  3 lines in 14 are new and must be parsed (through the LOAD/STORE template path);
* ``softmax×k`` the online softmax of 1000 elements repeated until the trace is long
  enough: the trace grows, the DRAM it touches stays the same.

A 1M-instruction run of each is measured too. Peak memory does not grow with the trace's
length: it grows with the DRAM the program touches (matmul's n² and softmax's n elements
grow with the trace here; softmax×k's do not, and its peak stays flat).

Usage:  python benchmarks/bench_run.py [--instructions 10000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def write_matmul(path: str, target: int) -> int:
    """C = A·B inner product, 3 registers: 3n³ + n² instructions."""
    n = 2
    while 3 * (n + 1) ** 3 + (n + 1) ** 2 <= target:
        n += 1
    count = 0
    with open(path, "w") as fh:
        for i in range(n):
            for j in range(n):
                lines = [f"LOAD a[{i}][0], R0\n", f"LOAD b[0][{j}], R1\n", "MAC_Z R0, R1, R2\n"]
                for k in range(1, n):
                    lines += [f"LOAD a[{i}][{k}], R0\n", f"LOAD b[{k}][{j}], R1\n", "MAC R0, R1, R2, R2\n"]
                lines.append(f"STORE R2, c[{i}][{j}]\n")
                fh.writelines(lines)
                count += len(lines)
    return count


def write_softmax(path: str, target: int) -> int:
    """Online softmax, 4 registers: 14n − 4 instructions."""
    n = max(2, (target + 4) // 14)
    count = 0
    with open(path, "w") as fh:
        fh.write("LOAD x[0], R0\nMOV R0, R1\nSUB R0, R1, R0\nEXP R0, R0\nMOV R0, R2\n")
        count += 5
        for i in range(1, n):
            fh.write(f"LOAD x[{i}], R0\nMOV R1, R3\nMAX R1, R0, R1\nSUB R3, R1, R3\nSUB R0, R1, R0\n"
                     "EXP R3, R3\nEXP R0, R0\nMUL R2, R3, R2\nADD R2, R0, R2\n")
            count += 9
        for i in range(n):
            fh.write(f"LOAD x[{i}], R0\nSUB R0, R1, R0\nEXP R0, R0\nDIV R0, R2, R0\nSTORE R0, out[{i}]\n")
            count += 5
    return count


def write_softmax_repeated(path: str, target: int) -> int:
    """Online softmax over the same 1000 elements, again and again: the trace grows, the
    DRAM it touches does not — so peak memory must not grow either."""
    n = 1000
    block = ["LOAD x[0], R0\n", "MOV R0, R1\n", "SUB R0, R1, R0\n", "EXP R0, R0\n", "MOV R0, R2\n"]
    for i in range(1, n):
        block += [f"LOAD x[{i}], R0\n", "MOV R1, R3\n", "MAX R1, R0, R1\n", "SUB R3, R1, R3\n", "SUB R0, R1, R0\n",
                  "EXP R3, R3\n", "EXP R0, R0\n", "MUL R2, R3, R2\n", "ADD R2, R0, R2\n"]
    for i in range(n):
        block += [f"LOAD x[{i}], R0\n", "SUB R0, R1, R0\n", "EXP R0, R0\n", "DIV R0, R2, R0\n", f"STORE R0, out[{i}]\n"]
    repeats = max(1, target // len(block))
    with open(path, "w") as fh:
        for _ in range(repeats):
            fh.writelines(block)
    return repeats * len(block)


def bare_loop(path: str) -> float:
    t = time.perf_counter()
    words = 0
    with open(path) as fh:
        for line in fh:
            words += len(line.replace(",", " ").split())
    return time.perf_counter() - t


def run_toym(path: str) -> tuple[float, float, dict]:
    """Wall time, peak RSS (MiB) of a fresh `toym run` process, and its JSON."""
    code = ("import resource, sys, time\n"
            "from toymachine.cli import main\n"
            "sys.argv = ['toym', 'run', sys.argv[1], '--no-steps', '--format', 'json', '-o', sys.argv[2]]\n"
            "t = time.perf_counter()\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write(f'{time.perf_counter() - t} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n")
    out = path + ".json"
    proc = subprocess.run([sys.executable, "-c", code, path, out], capture_output=True, text=True, check=True)
    wall, rss_kib = proc.stderr.strip().splitlines()[-1].split()
    with open(out) as fh:
        result = json.load(fh)
    return float(wall), int(rss_kib) / 1024, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instructions", type=int, default=10_000_000)
    ap.add_argument("--keep", default=None, help="directory for the generated traces (default: a temp dir)")
    args = ap.parse_args()
    tmp = args.keep or tempfile.mkdtemp(prefix="toym-bench-")
    rows = []
    for kind, writer in (("matmul", write_matmul), ("softmax", write_softmax),
                         ("softmax×k", write_softmax_repeated)):
        for target in (args.instructions // 10, args.instructions):
            path = os.path.join(tmp, f"{kind}_{target}.asm")
            count = writer(path, target)
            bare = bare_loop(path)
            wall, rss, result = run_toym(path)
            assert result["instructions"] == count, (result["instructions"], count)
            rows.append((kind, count, wall, count / wall, rss, bare, wall / bare))
            print(f"{kind:10s} {count:>11,d} instr  {wall:7.2f} s  {count / wall / 1e6:5.2f} M instr/s  "
                  f"peak RSS {rss:7.1f} MiB  bare read+split {bare:6.2f} s  ratio {wall / bare:5.2f}x", flush=True)
    print()
    print("| trace | instructions | time (s) | M instr/s | peak RSS (MiB) | bare read+split (s) | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind, count, wall, ips, rss, bare, ratio in rows:
        print(f"| {kind} | {count:,} | {wall:.2f} | {ips / 1e6:.2f} | {rss:.1f} | {bare:.2f} | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
