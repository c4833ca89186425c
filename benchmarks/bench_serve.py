"""Benchmark: ``toym serve``'s start-up, its API latency and the page's redraw after a keystroke.

1. Start-up: ``python -m toymachine serve --port 0`` until it listens (prints its URL), and
   until the first ``/api/run`` answers (the worker processes imported the simulator).
2. API latency on a 200-line trace (4 instructions × 50: LOAD, LOAD, ADD, STORE): the median
   of ``--repeat`` calls of ``POST /api/run`` (the CLI's JSON) and ``POST /api/live`` (JSON +
   the step viewer page), beside the baseline measured in this process: the same simulate +
   render done in-process (what the server cannot go below), and their ratio.
3. In the browser (where Chromium is installed): the page holds the trace; each of
   ``--repeat`` edits types one character at the end of a comment (a real key event); the
   time from that keystroke (a run starts at once unless one is in flight) to the moment the
   step viewer and every panel are redrawn (``playground.latencyMs``), median and worst, and
   its parts (waiting, the API call, the panels, the viewer).

Usage:  python benchmarks/bench_serve.py [--repeat 30] [--no-browser]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from toymachine.serve import handlers  # noqa: E402


def trace_200() -> str:
    values = ", ".join(str(i % 7 + 1) for i in range(101))
    lines = [f".data x = [{values}]"]
    for i in range(50):
        lines += [f"LOAD x[{i}], R0", f"LOAD x[{i + 1}], R1", "ADD R0, R1, R2", f"STORE R2, y[{i}]"]
    return "\n".join(lines[:1] + ["; 200-line benchmark trace"] + lines[1:]) + "\n"


def post(url: str, path: str, body: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    trace = trace_200()
    assert trace.count("\n") == 202  # .data, a comment, 200 instructions

    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "toymachine", "serve", "--port", "0"], cwd=ROOT, env=env,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"http://\S+", proc.stderr.readline()).group(0).rstrip("/")
        listening = time.perf_counter() - start
        status, _ = post(url, "/api/run", {"trace": "LOAD x[0], R0\n"})
        first = time.perf_counter() - start
        assert status == 200
        print(f"start-up: listening after {listening:.2f} s; first /api/run answered after {first:.2f} s")

        body = {"trace": trace}
        base_run = timed(lambda: handlers.run(body), args.repeat)
        base_live = timed(lambda: handlers.live(body), args.repeat)
        api_run = timed(lambda: post(url, "/api/run", body), args.repeat)
        api_live = timed(lambda: post(url, "/api/live", body), args.repeat)
        med = statistics.median
        print(f"\n200-line trace, median of {args.repeat} (ms)   in-process   over HTTP   ratio")
        print(f"  /api/run  (the CLI's JSON)          {med(base_run):9.1f}   {med(api_run):9.1f}   {med(api_run) / med(base_run):5.2f}")
        print(f"  /api/live (JSON + step viewer page) {med(base_live):9.1f}   {med(api_live):9.1f}   {med(api_live) / med(base_live):5.2f}")

        if not args.no_browser:
            from browser import Browser, find_chromium

            chromium = find_chromium()
            if chromium is None:
                print("\n(no chromium: browser redraw not measured)")
                return
            with Browser(chromium, timeout=90) as b:
                b.send("Page.enable")
                b.send("Page.navigate", url=url + "/")
                while not b.eval("!!(window.playground && window.playground.ready)"):
                    time.sleep(0.05)
                n = b.eval("playground.refreshes")
                b.eval(f"playground.editor.dispatch({{changes: {{from: 0, to: playground.editor.state.doc.length, "
                       f"insert: {json.dumps(trace)}}}}})")
                while b.eval("playground.refreshes") <= n:
                    time.sleep(0.02)
                end = trace.index("\n", trace.index("; 200-line"))
                lat, parts = [], []
                for i in range(args.repeat):
                    n = b.eval("playground.refreshes")
                    b.eval(f"playground.editor.focus(); playground.editor.dispatch({{selection: {{anchor: {end + i}}}}})")
                    b.send("Input.insertText", text="x")  # one keystroke
                    while b.eval("playground.refreshes") <= n:
                        time.sleep(0.005)
                    time.sleep(0.1)  # let a late second redraw (none expected) land before the next edit
                    lat.append(b.eval("playground.latencyMs"))
                    parts.append(b.eval("playground.timing"))
                cycles = b.eval("playground.result.cycles")
                assert cycles == 200, cycles
                print(f"\nbrowser: keystroke → step viewer + panels redrawn, {args.repeat} edits of the 200-line trace:"
                      f" median {med(lat):.0f} ms, worst {max(lat):.0f} ms")
                print("  median parts (ms): " + ", ".join(f"{k} {med(p[k] for p in parts):.0f}" for k in parts[0]))
    finally:
        proc.terminate()
        proc.wait(20)


if __name__ == "__main__":
    main()
