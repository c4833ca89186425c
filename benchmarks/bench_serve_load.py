"""Load test of ``toym serve``: is the playground still answerable behind a flood of slow sweeps?

Starts ``toym serve`` on a free loopback port, then, for each scenario, floods it with slow
``/api/sweep`` requests (each one runs until the worker deadline kills it) and, while the flood is
on, times a ``GET /api/meta`` and a one-line ``POST /api/run`` from another client. Clients are
told apart by their source address (127.0.0.2, 127.0.0.3, …: the loopback range only). Prints the
status counts of the flood, the latency of the two short requests, and the server's memory (its
process and its workers'). Bounded: a fixed number of requests, each with a timeout, and a cap on
the whole run; it stops by itself.

    python benchmarks/bench_serve_load.py                 # the current tree
    python benchmarks/bench_serve_load.py --flood 50 --cap 120
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOW_SWEEP = {"generator": "matmul", "params": {"n": "24", "registers": "3..66", "schedule": "inner"},
              "options": {"format": "json"}}
ONE_LINE_RUN = {"trace": "LOAD x[0], R0\n", "options": {"format": "json"}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port: int, method: str, path: str, body: dict | None, source: str, timeout: float) -> tuple[int, float]:
    """(status, seconds); status 0 for a timeout or a refused connection."""
    start = time.perf_counter()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        conn.request(method, path, body=data, headers=headers)
        status = conn.getresponse().status
        conn.close()
    except OSError:
        status = 0
    return status, time.perf_counter() - start


def rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` and its children (Linux /proc)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
            todo += [int(c) for c in children]
        except OSError:
            pass
    return total


def settle(port: int) -> None:
    """Wait (at most 60 s) until a one-line run answers at once: every worker has started, including
    the replacements of workers the last scenario's deadline killed."""
    deadline = time.time() + 60
    while time.time() < deadline:
        if all(request(port, "POST", "/api/run", ONE_LINE_RUN, "127.0.0.4", 10)[1] < 0.5 for _ in range(3)):
            return
        time.sleep(0.5)


def scenario(port: int, pid: int, flood: int, clients: int, timeout: float) -> dict:
    settle(port)
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def one(k: int) -> None:
        status, _ = request(port, "POST", "/api/sweep", SLOW_SWEEP, f"127.0.0.{10 + k % clients}", timeout)
        with lock:
            statuses[status] += 1

    threads = [threading.Thread(target=one, args=(k,), daemon=True) for k in range(flood)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(1.0)  # the flood is queued
    short: dict[str, tuple[int, float]] = {}
    probes = [threading.Thread(target=lambda: short.__setitem__("meta", request(
                  port, "GET", "/api/meta", None, "127.0.0.2", timeout)), daemon=True),
              threading.Thread(target=lambda: short.__setitem__("run", request(
                  port, "POST", "/api/run", ONE_LINE_RUN, "127.0.0.3", timeout)), daemon=True)]
    for p in probes:
        p.start()
    time.sleep(0.5)
    peak = rss_bytes(pid)
    for p in probes:
        p.join(timeout)
    meta_status, meta_s = short.get("meta", (0, timeout))
    run_status, run_s = short.get("run", (0, timeout))
    for t in threads:
        t.join(max(0.0, timeout - (time.perf_counter() - start)))
    return {"flood": flood, "clients": clients, "meta": (meta_status, meta_s), "run": (run_status, run_s),
            "flood_statuses": dict(sorted(statuses.items())), "flood_s": time.perf_counter() - start,
            "rss_mib": peak / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flood", type=int, default=50, help="slow sweeps sent at once (default 50)")
    parser.add_argument("--cap", type=float, default=150.0, help="seconds any request may take (default 150)")
    args = parser.parse_args()
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    server = subprocess.Popen([sys.executable, "-m", "toymachine", "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.time() + 60
        while request(port, "GET", "/", None, "127.0.0.1", 2)[0] != 200:
            if time.time() > deadline or server.poll() is not None:
                raise SystemExit("toym serve did not start")
            time.sleep(0.2)
        idle = rss_bytes(server.pid)
        print(f"toym serve on 127.0.0.1:{port}; idle memory {idle / 2**20:.0f} MiB (server and workers)")
        print("| flood | clients | GET /api/meta | one-line POST /api/run | flood's answers (status: count) "
              "| flood done | peak memory |")
        print("|---:|---:|---|---|---|---:|---:|")
        for clients in (1, args.flood):
            r = scenario(port, server.pid, args.flood, clients, args.cap)
            cell = lambda s: f"{s[0]} in {s[1]:.2f} s" if s[0] else f"no answer in {s[1]:.0f} s"  # noqa: E731
            print(f"| {r['flood']} | {r['clients']} | {cell(r['meta'])} | {cell(r['run'])} | "
                  f"{', '.join(f'{k}: {v}' for k, v in r['flood_statuses'].items())} | {r['flood_s']:.0f} s | "
                  f"{r['rss_mib']:.0f} MiB |")
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        err = server.stderr.read().decode(errors="replace") if server.stderr else ""
        tracebacks = err.count("Traceback")
        print(f"server log: {len(err.splitlines())} lines, {tracebacks} tracebacks")


if __name__ == "__main__":
    main()
