"""Benchmark: the step viewer (``--format html``) on long runs.

For each run it prints the simulation time with every step recorded (the baseline, measured
in the same process), the time to build the page (which replays at most 5,000 steps) and
the ratio, the page's size, and — where Chromium is installed — how the page responds in a
headless browser: load until its script is ready, jump from the first step to the last and
back (the slider's worst case: every step applied, then undone), and the mean of 200 single
steps (the → key).

Usage:  python benchmarks/bench_page.py [--no-browser]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from toymachine import resolve_machine, simulate  # noqa: E402
from toymachine.gen import matmul_program, softmax_program  # noqa: E402
from toymachine.gen.tile import attention_program  # noqa: E402
from toymachine.render.page import page_html  # noqa: E402


def runs():
    yield "online softmax, n = 2000 (scalar)", softmax_program(n=2000, algo="online", with_data=False), None
    yield "matmul 12×12, 6 registers (scalar)", matmul_program(n=12, registers=6, schedule="inner"), None
    yield ("FlashAttention-2, N = 256, d = 16, 16×16 blocks (tile)",
           attention_program(n=256, d=16, algo="fa2", block_m=16, block_n=16), "toysram-unbounded")
    yield "FA1, seed 001's walk (N = 5, d = 3, M = 59)", attention_program(
        n=5, d=3, algo="fa1", sram_words=59, sram_rule="paper", block_m=3, block_n=4, scale=1.0), "toysram-paper"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    chromium = None
    if not args.no_browser:
        from browser import find_chromium

        chromium = find_chromium()
    print(f"{'run':58} {'steps':>7} {'shown':>6} {'sim (s)':>8} {'page (s)':>8} {'÷ sim':>6} {'KiB':>7}"
          + (f" {'load ms':>8} {'0→N ms':>7} {'N→0 ms':>7} {'step ms':>8}" if chromium else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for name, program, machine in runs():
            mach = resolve_machine("toysram").with_(sram_words=None) if machine == "toysram-unbounded" \
                else resolve_machine(machine)
            t0 = time.perf_counter()
            result = simulate(program, mach, steps=True)
            t1 = time.perf_counter()
            page = page_html(result, program=program)
            t2 = time.perf_counter()
            shown = min(result.instructions, 5000)
            line = (f"{name:58} {result.instructions:>7,} {shown:>6,} {t1 - t0:>8.3f} {t2 - t1:>8.3f} "
                    f"{(t2 - t1) / (t1 - t0):>6.2f} {len(page.encode()) / 1024:>7.0f}")
            if chromium:
                from browser import Browser

                path = os.path.join(tmp, "page.html")
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(page)
                with Browser(chromium, timeout=120) as b:
                    t = time.perf_counter()
                    b.open("file://" + path)
                    load = time.perf_counter() - t
                    forward = b.eval("(() => { const t = performance.now(); toym.goTo(toym.steps);"
                                     " return performance.now() - t; })()")
                    back = b.eval("(() => { const t = performance.now(); toym.goTo(0);"
                                  " return performance.now() - t; })()")
                    t = time.perf_counter()
                    for _ in range(200):
                        b.key("ArrowRight", 39)
                    step = (time.perf_counter() - t) / 200
                    assert b.eval("toym.step()") == min(200, shown)
                line += f" {load * 1000:>8.0f} {forward:>7.0f} {back:>7.0f} {step * 1000:>8.2f}"
            print(line, flush=True)
    print("page: step_model + HTML for the first 5,000 steps; 'step ms' is a real key press round trip "
          "through the DevTools protocol (an upper bound on the page's own work)")


if __name__ == "__main__":
    main()
