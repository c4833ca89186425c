"""Benchmark: how long ``toym`` takes to answer (start-up), against Python importing numpy.

Each command runs as a fresh process, ``--rounds`` times (default 10), the commands interleaved
round by round so that a busy machine slows all of them alike; the figure is the median wall
time, beside the median CPU time (user + system: it holds up better when other processes share
the cores). The baseline is ``python -c "import numpy"`` measured in the same rounds:

* ``toym run programs/c00.asm --no-steps -f json`` (7 instructions: all start-up);
* ``toym --help`` (lists every command; imports none of them).

``toym`` is this tree's (``python -m toymachine`` in the repository root). Bytecode is cached
as an installed package has it (a private ``PYTHONPYCACHEPREFIX``, written by a first, unmeasured
run): with ``PYTHONDONTWRITEBYTECODE`` every run would compile the package again.

Targets: ≤ 0.25 s and ≤ 1.4 × the numpy import, both commands.

Usage:  python benchmarks/bench_startup.py [--rounds 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOYM = [sys.executable, "-m", "toymachine"]
COMMANDS = {
    "numpy": ("python -c 'import numpy'", [sys.executable, "-c", "import numpy"]),
    "run": ("toym run programs/c00.asm --no-steps -f json", TOYM + ["run", "programs/c00.asm", "--no-steps", "-f", "json"]),
    "help": ("toym --help", TOYM + ["--help"]),
}
TARGET_S = 0.25
TARGET_RATIO = 1.4


def environment(cache_dir: str) -> dict:
    env = dict(os.environ, PYTHONPYCACHEPREFIX=cache_dir, COLUMNS="80")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _once(argv: list[str], env: dict) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(rounds: int = 10) -> dict:
    """{name: {"command", "wall", "cpu", "walls"}} — medians over ``rounds`` interleaved rounds."""
    with tempfile.TemporaryDirectory(prefix="toym-pyc-") as cache:
        env = environment(cache)
        for _, argv in COMMANDS.values():  # warm-up: bytecode written, files in the page cache
            _once(argv, env)
        walls: dict[str, list[float]] = {k: [] for k in COMMANDS}
        cpus: dict[str, list[float]] = {k: [] for k in COMMANDS}
        for _ in range(rounds):
            for name, (_, argv) in COMMANDS.items():
                w, c = _once(argv, env)
                walls[name].append(w)
                cpus[name].append(c)
    return {name: {"command": COMMANDS[name][0], "wall": statistics.median(walls[name]),
                   "cpu": statistics.median(cpus[name]), "walls": walls[name]} for name in COMMANDS}


def report(m: dict) -> str:
    base = m["numpy"]
    lines = [f"{'command':48s} {'wall (median)':>14s} {'÷ numpy':>8s} {'CPU (median)':>13s} {'÷ numpy':>8s}"]
    for row in m.values():
        lines.append(f"{row['command']:48s} {row['wall']:12.3f} s {row['wall'] / base['wall']:7.2f}× "
                     f"{row['cpu']:11.3f} s {row['cpu'] / base['cpu']:7.2f}×")
    ok = all(m[k]["wall"] <= TARGET_S and m[k]["wall"] <= TARGET_RATIO * base["wall"] for k in ("run", "help"))
    lines.append(f"targets (≤ {TARGET_S} s and ≤ {TARGET_RATIO}× numpy, wall): {'met' if ok else 'NOT met'}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json", default=None, help="also write the figures to FILE (the docs page generator reads it)")
    args = ap.parse_args()
    m = measure(args.rounds)
    print(report(m))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rounds": args.rounds, "commands": m}, fh, indent=1)


if __name__ == "__main__":
    main()
