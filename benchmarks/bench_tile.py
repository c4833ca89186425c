"""Benchmark: the tile machine against plain numpy running the same tiling.

Simulates FlashAttention-2's forward pass (``toymachine.gen.tile``, N = 4096, d = 64,
Br = Bc = 64, one head, fp64) and times it beside ``numpy_fa2`` below — the same loops,
the same numpy operations per block pair, no simulator — on the same inputs, then checks
that both give the same O and L. The figure to report is the ratio simulator / numpy
(the target: at most 1.5). Generating the program is timed separately; the simulator's
time includes everything ``simulate`` does (compiling, running, building the Result).

Usage:  python benchmarks/bench_tile.py [--n 4096] [--d 64] [--block 64] [--repeat 5]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from toymachine import simulate
from toymachine.gen.tile import attention_program


def numpy_fa2(q: np.ndarray, k: np.ndarray, v: np.ndarray, br: int, bc: int) -> tuple[np.ndarray, np.ndarray]:
    """FlashAttention-2 forward in plain numpy, the tiling the generated program runs."""
    n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    o_out, lse = np.empty_like(q), np.empty(n)
    for i in range(0, n, br):
        qi = q[i:i + br]  # (Br, d)
        r = qi.shape[0]
        o = np.zeros((r, d))
        l_ = np.zeros((r, 1))
        m = np.full((r, 1), -np.inf)
        for j in range(0, n, bc):
            kj, vj = k[j:j + bc], v[j:j + bc]  # (Bc, d)
            s = qi @ kj.T  # (Br, Bc)
            s = s * scale
            m_new = np.maximum(m, s.max(axis=1, keepdims=True))
            p = np.exp(s - m_new)
            alpha = np.exp(m - m_new)
            l_ = l_ * alpha + p.sum(axis=1, keepdims=True)
            o = o * alpha
            o = p @ vj + o
            m = m_new
        o_out[i:i + br] = o / l_
        lse[i:i + br] = (m + np.log(l_))[:, 0]
    return o_out, lse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n, d, b = args.n, args.d, args.block
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((n, d)) for _ in range(3))

    t = time.perf_counter()
    program = attention_program(n=n, d=d, algo="fa2", block_m=b, block_n=b)
    gen_s = time.perf_counter() - t

    sim_times, np_times = [], []
    for _ in range(args.repeat):  # interleaved, best of each
        t = time.perf_counter()
        o_ref, lse_ref = numpy_fa2(q, k, v, b, b)
        np_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        result = simulate(program, data={"Q": q, "K": k, "V": v}, steps=False)
        sim_times.append(time.perf_counter() - t)
    err = max(np.abs(result.array("O") - o_ref).max(), np.abs(result.array("L") - lse_ref).max())
    sim_s, np_s = min(sim_times), min(np_times)
    print(f"FlashAttention-2 forward, N = {n}, d = {d}, Br = Bc = {b}, one head, fp64: "
          f"{len(program)} instructions, {(n // b) ** 2} block pairs")
    print(f"generate program   {gen_s:8.3f} s")
    print(f"numpy (same tiling){np_s:8.3f} s   (best of {args.repeat})")
    print(f"simulate           {sim_s:8.3f} s   (best of {args.repeat}; {len(program) / sim_s / 1e3:.0f} k instr/s)")
    print(f"ratio simulate / numpy = {sim_s / np_s:.2f}   max |difference| in O, L = {err:.1e}")
    print(f"simulated: {result.dram_reads:,} HBM words read, {result.dram_writes:,} written, "
          f"SRAM peak {result.extra['sram_peak']:,} words, {result.extra['flops']['matmul']:,} matmul FLOPs")


if __name__ == "__main__":
    main()
