"""Seed 003 on the GPU: peak memory and time of naive attention, a tiled PyTorch loop and the
bundled kernel, for N = 1K ... 32K, beside the tile machine's simulated HBM footprint.

    python -m kernels_gpu.bench --memory [--ns 1024,...,32768] [--out DIR]

Seed 003 (Chapter 8, "Flash Attention and tiled kernels"), Steps 1, 3, 5 and 7: fp16, B = 2,
H = 8, D = 64, no causal mask. For each implementation and N: `torch.cuda.
reset_peak_memory_stats()`, allocate q, k, v (randn), run the forward once, read
`max_memory_allocated()` (the seed's probe; an OutOfMemoryError is recorded as OOM), then time
it (CUDA events, median of repeats; the tiled loop, whose Python loop runs (N/64)^2 tile steps,
is timed once at N >= 8K).

    naive    seed 003's naive_attention: scores and weights are (B, H, N, N) tensors
    tiled    seed 003's tiled_attention (BR = BC = 64): online softmax over (B, H, 64, 64) tiles,
             a Python loop of PyTorch operations
    kernel   kernels_gpu.flash_attention_forward (one Triton launch; O and the fp32 lse)

Simulated footprint: the tile machine's HBM footprint for the same shapes
(`toymachine.cost.attention_tile_cost(...).hbm_footprint`, words of 2 bytes): the standard
algorithm 4Nd + 2N^2 + N words per head (Q, K, V, O, S, P, and the row statistic), FlashAttention-2
4Nd + N (seed 003's linear curve). The kernel's lse is fp32: N words of 4 bytes where the tile
machine counts 2, so its measured peak is B*H*N*2 bytes above the simulated one.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any

import torch

from toymachine.cost import attention_tile_cost

from ..host import flash_attn as fa
from .calibrate import events_ms

__all__ = ["naive_attention", "tiled_attention", "probe", "render", "plot", "NS", "SHAPE"]

NS = (1024, 2048, 4096, 8192, 16384, 32768)
SHAPE = {"batch": 2, "heads": 8, "dim": 64}  # seed 003, Step 1
IMPLS = ("naive", "tiled", "kernel")


def naive_attention(q, k, v):
    """Seed 003, Step 1 (verbatim): materialised (B, H, N, N) scores and weights."""
    d = q.shape[-1]
    scores = (q @ k.transpose(-2, -1)) / (d ** 0.5)  # (B, H, N, N)
    weights = torch.softmax(scores, dim=-1)           # (B, H, N, N)
    return weights @ v                                # (B, H, N, D)


def tiled_attention(q, k, v, BR=64, BC=64, causal=False):  # noqa: N803 - the seed's names
    """Seed 003, Step 3: online softmax over (B, H, BR, BC) score tiles. Verbatim but for one
    line: with causal=True, key tiles wholly above the diagonal are skipped. As the seed prints
    it, such a tile has every score -inf, m_tile = -inf and p = exp(-inf - (-inf)) = NaN, which
    poisons the row (tests/test_kernels_gpu_bench.py shows it); the kernels skip those tiles
    too. The memory probe runs it without the mask, as the seed's probe does."""
    B, H, N, D = q.shape
    scale = D ** -0.5
    out = torch.zeros_like(q)
    for i in range(0, N, BR):
        q_tile = q[:, :, i:i + BR, :]
        m = torch.full((B, H, q_tile.shape[2], 1), float("-inf"), device=q.device, dtype=q.dtype)
        l = torch.zeros((B, H, q_tile.shape[2], 1), device=q.device, dtype=q.dtype)  # noqa: E741
        o = torch.zeros_like(q_tile)
        for j in range(0, N, BC):
            if causal and j > i + q_tile.shape[2] - 1:  # the one change: no key visible
                break
            k_tile = k[:, :, j:j + BC, :]
            v_tile = v[:, :, j:j + BC, :]
            s = (q_tile @ k_tile.transpose(-2, -1)) * scale
            if causal:
                row_idx = torch.arange(i, i + q_tile.shape[2], device=q.device)[:, None]
                col_idx = torch.arange(j, j + k_tile.shape[2], device=q.device)[None, :]
                s = s.masked_fill(col_idx > row_idx, float("-inf"))
            m_tile = s.max(dim=-1, keepdim=True).values
            p = torch.exp(s - m_tile)
            l_tile = p.sum(dim=-1, keepdim=True)
            m_new = torch.maximum(m, m_tile)
            alpha = torch.exp(m - m_new)
            beta = torch.exp(m_tile - m_new)
            l = alpha * l + beta * l_tile  # noqa: E741
            o = alpha * o + beta * (p @ v_tile)
            m = m_new
        out[:, :, i:i + BR, :] = o / l
    return out


def _kernel(q, k, v):
    return fa.flash_attention_forward(q, k, v)[0]


RUN = {"naive": naive_attention, "tiled": tiled_attention, "kernel": _kernel}


def simulated_footprint_bytes(n: int, algo: str) -> int:
    """The tile machine's HBM footprint (words x 2 bytes) of seed 003's shape."""
    c = attention_tile_cost(n=n, d=SHAPE["dim"], algo=algo, batch=SHAPE["batch"],
                            heads=SHAPE["heads"], block_m=64, block_n=64)
    return c.hbm_footprint * 2


def _one(impl: str, n: int, log) -> dict:
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    row: dict[str, Any] = {"impl": impl, "n": n, "baseline_bytes": torch.cuda.memory_allocated()}
    try:
        q = torch.randn(SHAPE["batch"], SHAPE["heads"], n, SHAPE["dim"], device="cuda",
                        dtype=torch.float16)
        k, v = torch.randn_like(q), torch.randn_like(q)
        row["inputs_bytes"] = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        out = RUN[impl](q, k, v)
        torch.cuda.synchronize()
        first_s = time.perf_counter() - t0
        row["peak_bytes"] = torch.cuda.max_memory_allocated()
        del out
        if impl == "tiled" and n >= 8192:  # (N/64)^2 Python steps: time the one run we made
            row["ms"], row["timing"] = first_s * 1e3, "one run (wall clock)"
        else:
            reps = 3 if impl == "tiled" else 10
            row["ms"] = events_ms(lambda: RUN[impl](q, k, v), reps, warmup=1)
            row["timing"] = f"median of {reps} (CUDA events)"
    except torch.cuda.OutOfMemoryError:
        row["peak_bytes"], row["oom"] = None, True
    finally:
        # free before the next probe (after an out-of-memory error some were never made)
        q = k = v = out = None  # type: ignore[assignment]  # noqa: F841
        torch.cuda.empty_cache()
    log(f"memory probe {impl:6s} N={n:6d}: "
        + ("OOM" if row.get("oom") else f"peak {row['peak_bytes'] / 1e9:.3f} GB, "
           f"{row['ms']:.3f} ms"))
    return row


def probe(ns=NS, impls=IMPLS, tiled_max_n: int = 32768, log=print) -> dict:
    """Measured rows (one per impl and N; the tiled Python loop only up to tiled_max_n: its
    (N/64)^2 steps take ~2 min at 64K) and the simulated footprints, as a dict."""
    rows = [_one(impl, n, log) for n in ns for impl in impls
            if impl != "tiled" or n <= tiled_max_n]
    sim = {n: {"standard": simulated_footprint_bytes(n, "standard"),
               "fa2": simulated_footprint_bytes(n, "fa2")} for n in ns}
    props = torch.cuda.get_device_properties(0)
    return {"shape": {**SHAPE, "dtype": "fp16"}, "gpu": torch.cuda.get_device_name(0),
            "gpu_memory_bytes": props.total_memory, "rows": rows,
            "simulated_bytes": {str(n): v for n, v in sim.items()}}


def _gb(x) -> str:
    return "OOM" if x is None else f"{x / 1e9:.3f}"


def peak_above_baseline(row: dict):
    """The probe's own peak: max_memory_allocated minus what was allocated before it started
    (e.g. cuBLAS's 32 MiB workspace, left by an earlier matmul); None for OOM."""
    if row.get("peak_bytes") is None:
        return None
    return row["peak_bytes"] - row.get("baseline_bytes", 0)


def render(res: dict) -> str:
    """The markdown table: measured peak (GB = 1e9 B, above what was allocated before the
    probe) and time beside the simulated footprint."""
    by = {(r["impl"], r["n"]): r for r in res["rows"]}
    ns = sorted({r["n"] for r in res["rows"]})
    lines = ["| N | naive peak GB | simulated standard GB | tiled peak GB | kernel peak GB | "
             "simulated FA2 GB | naive ms | tiled ms | kernel ms |", "|" + "---|" * 9]
    for n in ns:
        sim = res["simulated_bytes"][str(n)]
        cells = [str(n)]
        for impl, simk in (("naive", "standard"), ("tiled", None), ("kernel", "fa2")):
            r = by.get((impl, n), {})
            cells.append(_gb(peak_above_baseline(r)) if r else "-")
            if simk:
                cells.append(_gb(sim[simk]))
        for impl in IMPLS:
            r = by.get((impl, n), {})
            cells.append("OOM" if r.get("oom") else f"{r['ms']:.2f}" if "ms" in r else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(res: dict, path: str) -> str | None:
    """Seed 003's "single most important picture": peak memory against N, log scale, measured
    (solid) and simulated (dashed); and the times. None when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    ns = sorted({r["n"] for r in res["rows"]})
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4), dpi=90)
    for impl, style in (("naive", "o-"), ("tiled", "s-"), ("kernel", "^-")):
        pts = [(r["n"], peak_above_baseline(r) / 1e9) for r in res["rows"]
               if r["impl"] == impl and r.get("peak_bytes")]
        if pts:
            ax.plot(*zip(*pts), style, label=f"{impl} (measured)")
        tms = [(r["n"], r["ms"]) for r in res["rows"] if r["impl"] == impl and "ms" in r]
        if tms:
            ax2.plot(*zip(*tms), style, label=impl)
    for algo, label in (("standard", "standard (simulated)"), ("fa2", "FlashAttention-2 "
                                                                       "(simulated)")):
        ax.plot(ns, [res["simulated_bytes"][str(n)][algo] / 1e9 for n in ns], "k--" if
                algo == "standard" else "k:", label=label)
    ax.axhline(res["gpu_memory_bytes"] / 1e9, color="r", lw=0.8, label="GPU memory")
    for a, title, unit in ((ax, "peak memory", "GB"), (ax2, "forward time", "ms")):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("N")
        a.set_ylabel(unit)
        a.set_title(f"{title}, fp16 B 2 H 8 D 64")
        a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def write(res: dict, out: str, env: dict) -> None:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "memory.json"), "w") as f:
        json.dump({"env": env, **res}, f, indent=1)
    md = (f"GPU: {env.get('gpu')}, {env.get('date')}, torch {env.get('torch')}; seed 003's "
          f"shape (fp16, B 2, H 8, D 64, not causal)\n\n{render(res)}\n")
    with open(os.path.join(out, "memory.md"), "w") as f:
        f.write(md)
    print(md, flush=True)
    png = plot(res, os.path.join(out, "memory.png"))
    print(f"plot: {png}" if png else "plot: matplotlib not installed (the 'plot' extra)")
