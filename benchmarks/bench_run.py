"""Benchmark: the simulator's speed and memory on long traces.

Each row runs one trace in a fresh process and prints instructions per second, the ratio to a
bare Python loop that only reads the same file and splits its lines (measured in the same run:
the figure to report), and the process's peak RSS:

* ``softmax``    ``toym gen softmax --n N --algo online --no-data``: every LOAD/STORE names a new
                 address (3 lines in 14 never seen before) — the hard case for a line cache;
* ``matmul``     an inner-product matmul (3 registers): addresses repeat n times;
* ``softmax×k``  the online softmax of 1000 elements, repeated: the trace grows, the DRAM it
                 touches does not (peak memory must stay flat);
* ``program``    the softmax trace as a generated ``Program`` through the Python API
                 (``simulate(softmax_program(...))``, no text round-trip; the generator's time is
                 not counted).

Every run is `toym run FILE --no-steps --format json` (or the API call) and its instruction count
is checked. Wall-clock figures are the ones to report on an idle machine; the CPU-time columns
(``time.process_time`` of the run and of the bare loop) hold up when other processes share the
cores. Memory grows with the DRAM cells a trace touches, not with its length: the last line
gives MB per million cells from the softmax traces' two sizes.

Usage:  python benchmarks/bench_run.py [--instructions 3000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

_RUN = ("import resource, sys, time\n"
        "from toymachine.cli import main\n"
        "sys.argv = ['toym', 'run', sys.argv[1], '--no-steps', '--format', 'json', '-o', sys.argv[2]]\n"
        "t, c = time.perf_counter(), time.process_time()\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write(f'{time.perf_counter() - t} {time.process_time() - c} "
        "{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n")
_PROGRAM = ("import json, resource, sys, time\n"
            "from toymachine import simulate\n"
            "from toymachine.gen import softmax_program\n"
            "p = softmax_program(n=int(sys.argv[1]), algo='online', with_data=False)\n"
            "t, c = time.perf_counter(), time.process_time()\n"
            "r = simulate(p, steps=False)\n"
            "wall, cpu = time.perf_counter() - t, time.process_time() - c\n"
            "open(sys.argv[2], 'w').write(json.dumps({'instructions': r.instructions}))\n"
            "sys.stderr.write(f'{wall} {cpu} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n")


def write_softmax(path: str, target: int) -> tuple[int, int]:
    """The generator's online softmax (14n − 4 instructions): (instructions, DRAM cells)."""
    n = max(2, (target + 4) // 14)
    subprocess.run([sys.executable, "-m", "toymachine", "gen", "softmax", "--n", str(n), "--algo", "online",
                    "--no-data", "-o", path], check=True)
    return 14 * n - 4, 2 * n


def write_matmul(path: str, target: int) -> tuple[int, int]:
    """C = A·B inner product, 3 registers: 3n³ + n² instructions, 3n² cells."""
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
    return count, 3 * n * n


def write_softmax_repeated(path: str, target: int) -> tuple[int, int]:
    """Online softmax over the same 1000 elements, again and again."""
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
    return repeats * len(block), 2 * n


def bare_loop(path: str) -> tuple[float, float]:
    """Read the file and split every line — the least any line-by-line reader does: (wall, CPU) s."""
    t, c = time.perf_counter(), time.process_time()
    words = 0
    with open(path) as fh:
        for line in fh:
            words += len(line.replace(",", " ").split())
    return time.perf_counter() - t, time.process_time() - c


def _measure(code: str, *args: str) -> tuple[float, float, float, dict]:
    """Wall time, CPU time, peak RSS (MiB) and JSON of one fresh process."""
    out = args[-1]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    wall, cpu, rss_kib = proc.stderr.strip().splitlines()[-1].split()
    with open(out) as fh:
        return float(wall), float(cpu), int(rss_kib) / 1024, json.load(fh)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instructions", type=int, default=3_000_000)
    ap.add_argument("--keep", default=None, help="directory for the generated traces (default: a temp dir)")
    args = ap.parse_args()
    tmp = args.keep or tempfile.mkdtemp(prefix="toym-bench-")
    os.makedirs(tmp, exist_ok=True)
    rows = []
    softmax_points = []
    for kind, writer in (("softmax", write_softmax), ("matmul", write_matmul), ("softmax×k", write_softmax_repeated)):
        for target in (args.instructions // 10, args.instructions):
            path = os.path.join(tmp, f"{kind}_{target}.asm")
            count, cells = writer(path, target)
            bare, bare_cpu = bare_loop(path)
            wall, cpu, rss, result = _measure(_RUN, path, path + ".json")
            assert result["instructions"] == count, (result["instructions"], count)
            rows.append((kind, count, wall, cpu, rss, bare, bare_cpu))
            if kind == "softmax":
                softmax_points.append((cells, rss))
                n = (count + 4) // 14
                pwall, pcpu, prss, presult = _measure(_PROGRAM, str(n), path + ".program.json")
                assert presult["instructions"] == count
                rows.append(("program", count, pwall, pcpu, prss, bare, bare_cpu))
            for row in rows[-2 if kind == "softmax" else -1:]:
                k, c, w, cp, r, b, bc = row
                print(f"{k:10s} {c:>11,d} instr  {w:7.2f} s ({cp:5.2f} s CPU)  {c / w / 1e6:5.2f} M instr/s  "
                      f"peak RSS {r:7.1f} MiB  bare read+split {b:6.2f} s  ratio {w / b:5.2f}× (CPU {cp / bc:5.2f}×)",
                      flush=True)
    print()
    print("| trace | instructions | time (s) | M instr/s | ÷ bare read+split | CPU time: M instr/s, ÷ bare | "
          "peak RSS (MiB) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind, count, wall, cpu, rss, bare, bare_cpu in rows:
        print(f"| {kind} | {count:,} | {wall:.2f} | {count / wall / 1e6:.2f} | {wall / bare:.2f}× | "
              f"{count / cpu / 1e6:.2f}, {cpu / bare_cpu:.2f}× | {rss:.1f} |")
    (c0, r0), (c1, r1) = softmax_points
    print(f"\nmemory: {(r1 - r0) / (c1 - c0) * 1e6:.0f} MB per million DRAM cells touched "
          f"(softmax: {c0:,} → {c1:,} cells, {r0:.0f} → {r1:.0f} MiB)")


if __name__ == "__main__":
    main()
