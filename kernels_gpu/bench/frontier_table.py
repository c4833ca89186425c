"""The frontier grid as the performance page shows it: for each head dim, ours / SDPA-flash speed-up
(forward / backward) by causal × H_kv rows and N columns, the N_q != N_k points, and a summary
(minimum and median against flash and cuDNN), from the bench's JSON (one or more files: a point
measured twice keeps the later file's row).

    python -m kernels_gpu.bench.frontier_table kernels_gpu/data/frontier_*_h100.json
"""
from __future__ import annotations

import argparse
import json
import statistics

__all__ = ["load", "render", "render_cudnn"]


def load(paths: list[str]) -> list[dict]:
    """The rows of every file, keyed by point; later files replace earlier rows."""
    rows: dict[tuple, dict] = {}
    for path in paths:
        with open(path) as f:
            for r in json.load(f)["rows"]:
                key = (r["d"], r["n"], r.get("nk", r["n"]), r["heads"], r["heads_kv"],
                       bool(r["causal"]), r["dtype"])
                rows[key] = r
    return list(rows.values())


def _x(r: dict, other: str, pass_: str) -> float:
    return r[other][f"{pass_}_ms"] / r["ours"][f"{pass_}_ms"]


def _summary(rows: list[dict]) -> str:
    parts = []
    for other in ("flash", "cudnn"):
        for pass_ in ("fwd", "bwd"):
            xs = [_x(r, other, pass_) for r in rows]
            parts.append(f"{pass_} × {other} {min(xs):.2f} – {max(xs):.2f} "
                         f"(median {statistics.median(xs):.2f})")
    below = sum(1 for r in rows for p in ("fwd", "bwd") if _x(r, "flash", p) < 1.0)
    return (f"{len(rows)} points: " + "; ".join(parts)
            + f"; **{below} below 1.0 × flash**")


def render(rows: list[dict]) -> str:
    out = []
    for d in sorted({r["d"] for r in rows}):
        sq = [r for r in rows if r["d"] == d and r.get("nk", r["n"]) == r["n"]]
        if not sq:
            continue
        ns = sorted({r["n"] for r in sq})
        out += [f"**d {d}** — ours / SDPA-flash speed-up, forward / backward (H "
                f"{sq[0]['heads']}, B·N = {sq[0]['batch'] * sq[0]['n']} tokens a head):", "",
                "| causal | H_kv | " + " | ".join(f"N {n}" for n in ns) + " |",
                "|---|---|" + "---|" * len(ns)]
        for causal in (False, True):
            for kv in sorted({r["heads_kv"] for r in sq}, reverse=True):
                cells = {r["n"]: r for r in sq if bool(r["causal"]) == causal
                         and r["heads_kv"] == kv}
                if cells:
                    out.append(f"| {'yes' if causal else 'no'} | {kv} | " + " | ".join(
                        f"{_x(cells[n], 'flash', 'fwd'):.2f} / {_x(cells[n], 'flash', 'bwd'):.2f}"
                        if n in cells else "–" for n in ns) + " |")
        out += ["", _summary(sq), ""]
    cross = [r for r in rows if r.get("nk", r["n"]) != r["n"]]
    if cross:
        out += ["**N_q ≠ N_k** (causal bottom-right) — ours / flash and ours / cuDNN:", "",
                "| d | N_q / N_k | causal | H_kv | fwd × flash | bwd × flash | fwd × cuDNN | "
                "bwd × cuDNN |", "|---|---|---|---|---|---|---|---|"]
        for r in sorted(cross, key=lambda r: (r["d"], r["causal"], -r["heads_kv"], r["n"])):
            out.append(f"| {r['d']} | {r['n']}/{r['nk']} | {'yes' if r['causal'] else 'no'} | "
                       f"{r['heads_kv']} | " + " | ".join(
                           f"{_x(r, o, p):.2f}" for o in ("flash", "cudnn")
                           for p in ("fwd", "bwd")) + " |")
        out += ["", _summary(cross), ""]
    out.append("All points: " + _summary(rows))
    return "\n".join(out) + "\n"


def render_cudnn(rows: list[dict]) -> str:
    """Ours / SDPA-cuDNN, forward / backward, for the square points: one row per (d, causal,
    H_kv), N across; and each head dim's summary against cuDNN."""
    sq = [r for r in rows if r.get("nk", r["n"]) == r["n"]]
    ns = sorted({r["n"] for r in sq})
    out = ["| d | causal | H_kv | " + " | ".join(f"N {n}" for n in ns) + " |",
           "|---|---|---|" + "---|" * len(ns)]
    for d in sorted({r["d"] for r in sq}):
        for causal in (False, True):
            for kv in sorted({r["heads_kv"] for r in sq if r["d"] == d}, reverse=True):
                cells = {r["n"]: r for r in sq if r["d"] == d and bool(r["causal"]) == causal
                         and r["heads_kv"] == kv}
                if cells:
                    out.append(f"| {d} | {'yes' if causal else 'no'} | {kv} | " + " | ".join(
                        f"{_x(cells[n], 'cudnn', 'fwd'):.2f} / {_x(cells[n], 'cudnn', 'bwd'):.2f}"
                        if n in cells else "–" for n in ns) + " |")
    out.append("")
    for d in sorted({r["d"] for r in sq}):
        pts = [r for r in sq if r["d"] == d]
        parts = []
        for pass_ in ("fwd", "bwd"):
            xs = [_x(r, "cudnn", pass_) for r in pts]
            at_least = sum(x >= 1.0 for x in xs)
            parts.append(f"{pass_} {min(xs):.2f} – {max(xs):.2f} (median "
                         f"{statistics.median(xs):.2f}, {at_least} of {len(xs)} ≥ 1.0)")
        out.append(f"* d {d} × cuDNN: " + "; ".join(parts))
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    print(render(load(ap.parse_args(argv).files)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
