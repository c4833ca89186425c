"""Benchmark: the simulator's speed and memory on long traces, end to end and in-process.

Each trace shape is written once, then run as users run it — ``toym run FILE --no-steps --format
json`` in a fresh process, start-up and output included (``end to end``: the process's wall and
CPU time, its peak RSS) — and in-process (``main()`` timed inside the process, without
start-up), against a bare Python loop that only reads the same file and splits its lines
(measured in the same run: the ratio to report):

* ``softmax``    ``toym gen softmax --n N --algo online --no-data``: every LOAD/STORE names a new
                 address (3 lines in 14 never seen before) — the hard case for a line cache;
* ``softmax×k``  the online softmax of 1000 elements, repeated: the same blocks again and again
                 (the DRAM it touches stays put: peak memory must stay flat);
* ``matmul``     an inner-product matmul (3 registers): addresses repeat n times;
* ``mixed``      the online softmax with a tile block (LOAD, MUL, STORE of a 2×4 tile) after every
                 third element: 1 instruction in 10 is a tile instruction (its 64 rows wrap around:
                 32 distinct tile blocks);
* ``mixed-new``  the same with enough rows that every tile LOAD/STORE line is new;
* ``program``    the softmax trace as a generated ``Program`` through the Python API
                 (``simulate(softmax_program(...))``, no text round-trip; the generator's time is
                 not counted).

Every run's instruction count is checked. Wall-clock figures are the ones to report on an idle
machine; the CPU-time figures (user + system) hold up when other processes share the cores.
Memory grows with the DRAM cells a trace touches, not with its length: the last line gives MB per
million cells from the softmax traces' two sizes. ``toym`` is this tree's (``python -m
toymachine``), with its bytecode cached as an installed package has it.

Usage:  python benchmarks/bench_run.py [--instructions 3000000] [--rounds 3] [--keep DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_RUN = ("import resource, sys, time\n"
        "from toymachine.cli import main\n"
        "args = ['run', sys.argv[1], '--no-steps', '--format', 'json', '-o', sys.argv[2]]\n"
        "t, c = time.perf_counter(), time.process_time()\n"
        "try:\n    main(args)\nexcept SystemExit:\n    pass\n"
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
SHAPES = {
    "softmax": "online softmax, new address on most LOAD/STORE lines",
    "softmax×k": "online softmax of 1000 elements, repeated",
    "matmul": "matmul, inner product (operands repeat)",
    "mixed": "online softmax + a 2×4 tile block every 3rd element (1 in 10 tile)",
    "mixed-new": "mixed, every tile LOAD/STORE line new (no tile line repeats)",
    "program": "the softmax as a generated Program (Python API, no text)",
}
TARGET = 3.0  # M instructions/s end to end: the throughput the simulator holds
ROUNDS = 3  # each figure is the median of this many runs (a shared machine's load moves single runs)


def write_softmax(path: str, target: int) -> tuple[int, int]:
    """The generator's online softmax (14n − 4 instructions): (instructions, DRAM cells)."""
    n = max(2, (target + 4) // 14)
    subprocess.run([sys.executable, "-m", "toymachine", "gen", "softmax", "--n", str(n), "--algo", "online",
                    "--no-data", "-o", path], check=True, cwd=ROOT)
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


def _softmax_step(i: int) -> list[str]:
    return [f"LOAD x[{i}], R0\n", "MOV R1, R3\n", "MAX R1, R0, R1\n", "SUB R3, R1, R3\n", "SUB R0, R1, R0\n",
            "EXP R3, R3\n", "EXP R0, R0\n", "MUL R2, R3, R2\n", "ADD R2, R0, R2\n"]


_SOFTMAX_HEAD = ["LOAD x[0], R0\n", "MOV R0, R1\n", "SUB R0, R1, R0\n", "EXP R0, R0\n", "MOV R0, R2\n"]


def write_softmax_repeated(path: str, target: int) -> tuple[int, int]:
    """Online softmax over the same 1000 elements, again and again."""
    n = 1000
    block = list(_SOFTMAX_HEAD)
    for i in range(1, n):
        block += _softmax_step(i)
    for i in range(n):
        block += [f"LOAD x[{i}], R0\n", "SUB R0, R1, R0\n", "EXP R0, R0\n", "DIV R0, R2, R0\n", f"STORE R0, out[{i}]\n"]
    repeats = max(1, target // len(block))
    with open(path, "w") as fh:
        for _ in range(repeats):
            fh.writelines(block)
    return repeats * len(block), 2 * n


def write_mixed(path: str, target: int, rows: int = 64) -> tuple[int, int]:
    """The online softmax's first pass over new addresses, with a tile block after every third
    element (LOAD a 2×4 block of Q into T0, MUL, STORE it to O): 3 tile instructions in 30.
    With 64 rows the tile lines wrap around (32 distinct blocks)."""
    count, i, buf = len(_SOFTMAX_HEAD), 1, [f".array Q[{rows}][4]\n", f".array O[{rows}][4]\n"] + _SOFTMAX_HEAD
    with open(path, "w") as fh:
        while count < target:
            buf += _softmax_step(i)
            count += 9
            if i % 3 == 0:
                r = (i // 3 * 2) % rows
                buf += [f"LOAD Q[{r}:{r + 2}, :], T0\n", "MUL T0, T0, T1\n", f"STORE T1, O[{r}:{r + 2}, :]\n"]
                count += 3
            i += 1
            if len(buf) > 100_000:
                fh.writelines(buf)
                buf = []
        fh.writelines(buf)
    return count, i + 2 * rows * 4


def write_mixed_new_tiles(path: str, target: int) -> tuple[int, int]:
    """``mixed`` with enough rows that no tile LOAD/STORE line repeats (every tile address new)."""
    return write_mixed(path, target, rows=2 * (target // 30) + 64)


WRITERS = {"softmax": write_softmax, "softmax×k": write_softmax_repeated, "matmul": write_matmul, "mixed": write_mixed,
           "mixed-new": write_mixed_new_tiles}


def bare_loop(path: str) -> tuple[float, float]:
    """Read the file and split every line — the least any line-by-line reader does: (wall, CPU) s."""
    t, c = time.perf_counter(), time.process_time()
    words = 0
    with open(path) as fh:
        for line in fh:
            words += len(line.replace(",", " ").split())
    return time.perf_counter() - t, time.process_time() - c


def environment(cache_dir: str) -> dict:
    """Bytecode cached as an installed package has it (see bench_startup)."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=cache_dir)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def end_to_end(path: str, out: str, env: dict) -> tuple[float, float, float, dict]:
    """``toym run FILE --no-steps --format json`` as a user runs it: the process's wall time, CPU
    time (user + system), peak RSS (MiB) and its JSON."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "toymachine", "run", path, "--no-steps", "--format", "json",
                             "-o", out], cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, proc.returncode
    with open(out) as fh:
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, json.load(fh)


def in_process(code: str, env: dict, *args: str) -> tuple[float, float, float, dict]:
    """Wall time, CPU time, peak RSS (MiB) and JSON of the run inside one fresh process."""
    out = args[-1]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True,
                          cwd=ROOT, env=env)
    wall, cpu, rss_kib = proc.stderr.strip().splitlines()[-1].split()
    with open(out) as fh:
        return float(wall), float(cpu), int(rss_kib) / 1024, json.load(fh)


def measure(instructions: int, tmp: str, log=print, rounds: int = ROUNDS) -> dict:
    """Every shape at a tenth of ``instructions`` and at full size; each figure the median of ``rounds``."""
    rows, softmax_points = [], []
    cache = os.path.join(tmp, "pycache")
    env = environment(cache)
    subprocess.run([sys.executable, "-m", "toymachine", "--help"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                   check=True)  # bytecode written before anything is timed
    for kind, writer in WRITERS.items():
        for target in (instructions // 10, instructions):
            path = os.path.join(tmp, f"{kind}_{target}.asm")
            count, cells = writer(path, target)
            figures = []
            for _ in range(rounds):  # bare loop, end to end, in-process: one round after another
                bare, bare_cpu = bare_loop(path)
                wall, cpu, rss, result = end_to_end(path, path + ".json", env)
                assert result["instructions"] == count, (kind, result["instructions"], count)
                iwall, icpu, _, iresult = in_process(_RUN, env, path, path + ".in.json")
                assert iresult == result
                figures.append((bare, bare_cpu, wall, cpu, rss, iwall, icpu))
            bare, bare_cpu, wall, cpu, rss, iwall, icpu = (statistics.median(f) for f in zip(*figures))
            row = dict(shape=kind, instructions=count, wall=wall, cpu=cpu, rss=rss, bare=bare, bare_cpu=bare_cpu,
                       in_wall=iwall, in_cpu=icpu, size=target == instructions)
            rows.append(row)
            log(_line(row))
            if kind == "softmax":
                softmax_points.append((cells, rss))
                if target == instructions:
                    n = (count + 4) // 14
                    runs = [in_process(_PROGRAM, env, str(n), path + ".program.json") for _ in range(rounds)]
                    assert all(r[3]["instructions"] == count for r in runs)
                    pwall, pcpu, prss = (statistics.median(r[i] for r in runs) for i in range(3))
                    prow = dict(shape="program", instructions=count, wall=None, cpu=None, rss=prss, bare=bare,
                                bare_cpu=bare_cpu, in_wall=pwall, in_cpu=pcpu, size=True)
                    rows.append(prow)
                    log(_line(prow))
    (c0, r0), (c1, r1) = softmax_points
    return {"instructions": instructions, "rounds": rounds, "rows": rows,
            "memory": {"mb_per_million_cells": (r1 - r0) / (c1 - c0) * 1e6, "cells": [c0, c1], "rss": [r0, r1]}}


def _line(r: dict) -> str:
    c = r["instructions"]
    e2e = (f"end to end {r['wall']:6.2f} s {c / r['wall'] / 1e6:5.2f} M/s (CPU {c / r['cpu'] / 1e6:5.2f} M/s)  "
           f"÷ bare {r['wall'] / r['bare']:5.2f}× (CPU {r['cpu'] / r['bare_cpu']:5.2f}×)  " if r["wall"] else " " * 86)
    return (f"{r['shape']:10s} {c:>11,d} instr  {e2e}in-process {c / r['in_wall'] / 1e6:5.2f} M/s "
            f"(CPU {c / r['in_cpu'] / 1e6:5.2f}, ÷ bare {r['in_cpu'] / r['bare_cpu']:4.2f}×)  peak RSS {r['rss']:6.1f} MiB")


def table(m: dict) -> str:
    """The Markdown table of the full-size rows."""
    out = ["| trace | instructions | end to end: M instr/s (CPU) | ÷ bare read+split (CPU) | in-process: M instr/s "
           "(CPU), ÷ bare (CPU) | peak RSS (MiB) |", "|---|---:|---:|---:|---:|---:|"]
    for r in m["rows"]:
        if not r["size"]:
            continue
        c = r["instructions"]
        e2e = f"{c / r['wall'] / 1e6:.2f} ({c / r['cpu'] / 1e6:.2f})" if r["wall"] else "—"
        ratio = f"{r['wall'] / r['bare']:.2f}× ({r['cpu'] / r['bare_cpu']:.2f}×)" if r["wall"] else "—"
        out.append(f"| {SHAPES[r['shape']]} | {c:,} | {e2e} | {ratio} | {c / r['in_wall'] / 1e6:.2f} "
                   f"({c / r['in_cpu'] / 1e6:.2f}), {r['in_cpu'] / r['bare_cpu']:.2f}× | {r['rss']:.0f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instructions", type=int, default=3_000_000)
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="runs per figure, the median reported")
    ap.add_argument("--keep", default=None, help="directory for the generated traces (default: a temp dir)")
    ap.add_argument("--json", default=None, help="also write the figures to FILE (the docs page generator reads it)")
    args = ap.parse_args()
    tmp = args.keep or tempfile.mkdtemp(prefix="toym-bench-")
    os.makedirs(tmp, exist_ok=True)
    m = measure(args.instructions, tmp, log=lambda s: print(s, flush=True), rounds=args.rounds)
    print()
    print(table(m))
    mem = m["memory"]
    print(f"\nmemory: {mem['mb_per_million_cells']:.0f} MB per million DRAM cells touched "
          f"(softmax: {mem['cells'][0]:,} → {mem['cells'][1]:,} cells, {mem['rss'][0]:.0f} → {mem['rss'][1]:.0f} MiB)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(m, fh, indent=1)


if __name__ == "__main__":
    main()
