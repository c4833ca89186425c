"""Closed-form costs of the tile machine's attention programs (``toymachine.gen.tile``).

Every count here is a formula in the parameters (n, d, batch·heads, block sizes, causal,
algorithm, pass, variant) — sums over the Tr = ⌈n/Br⌉ query blocks at most, never a
simulation. The tests hold the simulator to them at random parameter points
(``tests/test_tile_cost.py``): HBM words read and written, per-array traffic, FLOPs, SRAM
peak and every instruction count.

Blocking notation (paper's): Tr = ⌈n/Br⌉ query blocks of r_i rows, Tc = ⌈n/Bc⌉ key blocks;
J_i key blocks and W_i keys query block i meets (causal: those at or before its last row); the
pair sums P = Σ J_i (pairs computed), PR = Σ r_i·J_i, PC = Σ W_i, PRC = Σ r_i·W_i (non-causal
Tr·Tc, n·Tc, Tr·n, n²) — ``blocks`` defines them with ``Blocks``.

HBM footprint (words the arrays occupy, per head): 4nd + n (fa2: Q K V O, L), 4nd + 2n (fa1),
4nd + 2n² + n (standard: S and P are n × n — seed 003's quadratic memory curve); backward
8nd + 2n (fa2), 8nd + 3n (fa1).

HBM words of one head (batch·heads heads; words = elements):

    standard forward  reads n·d + 2·Tr·n·d + 4n² (exact; 3n² of them the seed's 3-pass softmax
                      over S, n² the read of P) — no-max 3n²; writes 2n² + n·d + n   → Θ(n·d + n²)
    fa1 forward       reads 2·n·d + (2d + 2)·PR, writes (d + 2)·PR (O, l, m per pair;
                      no-max/no-rescale read no m: (2d + 1)·PR)                          → Θ(n²d²/M)
    fa2 forward       reads n·d + 2d·PC, writes n·d + n (O and the log-sum-exp L)
    backward          see ``backward.backward_words``: K and V once per pair (row
                      order) or per key block (col order), twice without the Dᵢ precomputation.
    backward, split   FlashAttention-2's kernels (st = 1 statistic, L; fa1 2, m and l):
                        preprocess  reads 2·n·d (O, dO)                      writes n (D)
                        dkdv        reads 2·n·d + (2d + st + 1)·PR           writes 2·n·d (dK, dV)
                                    (K, V once per key block; Q, dO, L, D once per pair)
                        dq          reads (2d + st + 1)·n + 2d·PC            writes n·d (dQ)
                                    (Q, dO, L, D once per query block; K, V once per pair)
                      in all (fa2) reads 4·n·d + (2d + 2)·(PR + n) + 2d·PC, writes 3·n·d + n;
                      non-causal, PR = n·Tc and PC = n·Tr. Matmul FLOPs per computed score:
                      dkdv 8d − 2 (Q·Kᵀ, Pᵀ·dO, dO·Vᵀ, dSᵀ·Q), dq 6d − 2 (Q·Kᵀ, dO·Vᵀ, dS·K):
                      7 products per pair where the row/col orders do 5 (10d − 2).

With Bc = ⌈M/4d⌉ (the paper's rule) FA1's reads are 2nd + (2d+2)·n·⌈n/Bc⌉ ≈ 8n²d²/M:
doubling M halves the dominant term (Theorem 2 of the FlashAttention paper).

Cycles follow from a machine by the one formula in ``Machine``: Σ instructions × issue
cycles + words·word_bytes/hbm_bytes_per_cycle + matmul/tensor + vector/vector + sfu/sfu.

This module holds the public API (``attention_tile_cost``, ``TileCost`` and the blocking
functions ``gen.tile`` uses) and assembles a program's cost; the parts: ``blocks``
(blocks, SRAM peak, fitting), ``counts`` (``TileCost``, the ``Tally``),
``forward`` and ``backward`` (the per-pass formulas).
"""

from __future__ import annotations

__all__ = ["Blocks", "TileCost", "SPLIT_PHASES", "paper_blocks", "attention_tile_cost", "sram_peak", "fit_blocks",
           "check_split"]

from .backward import backward_words, split_words, tally_backward, tally_split
from .blocks import SPLIT_PHASES, Blocks, check_split, fit_blocks, paper_blocks, sram_peak
from .counts import Tally, TileCost
from .forward import forward_words, tally_forward
from .fused import fused_cost


def _rows_sums(g: Blocks) -> dict[str, int]:
    s = g.sums()
    s.update(N=g.n, Tr=g.tr, Tc=g.tc)
    return s


def attention_tile_cost(*, n: int, d: int, algo: str = "fa2", pass_: str = "forward", batch: int = 1, heads: int = 1,
                        causal: bool = False, block_m: int, block_n: int, variant: str = "exact",
                        precompute_d: bool = True, order: str = "row", scale: float | None = None,
                        phase: str | None = None) -> TileCost:
    """The closed-form cost of ``gen.tile.attention_program`` with these (resolved) blocks
    (``phase``: one launch of the split backward)."""
    check_split(pass_, order, precompute_d, phase)
    if algo == "fused":  # S on chip, one block (cost.tile.fused)
        return fused_cost(n=n, d=d, batch=batch, heads=heads, causal=causal, variant=variant,
                          scaled=(d ** -0.5 if scale is None else scale) != 1.0)
    br, bc = min(block_m, n), min(block_n, n)
    g = Blocks(n, br, bc, causal)
    s = _rows_sums(g)
    h = batch * heads
    scaled = (d ** -0.5 if scale is None else scale) != 1.0
    t = Tally()
    if scaled:
        t.op("FILL")  # the 1×1 scale tile, once per program
    if pass_ == "forward":
        tally_forward(t, g, s, d, h, algo, variant, scaled)
    elif order == "split":
        for ph in (phase,) if phase else SPLIT_PHASES:
            tally_split(t, s, d, h, algo, scaled, ph)
    else:
        tally_backward(t, g, s, d, h, algo, scaled, precompute_d, order)
    peak = sram_peak(algo=algo, pass_=pass_, d=d, br=br, bc=bc, variant=variant, scaled=scaled, heads=h,
                     precompute_d=precompute_d, order=order, n=n, phase=phase)
    traffic = {a: (t.reads[a], t.writes[a]) for a in sorted(set(t.reads) | set(t.writes))}
    if pass_ == "forward":  # Q K V O, the row statistics, and standard attention's S and P
        footprint = 4 * n * d + {"fa2": n, "fa1": 2 * n, "standard": n + 2 * n * n}[algo]
    else:  # Q K V O dO dQ dK dV, the statistics (L, or m and l) and D
        footprint = 8 * n * d + (3 * n if algo == "fa1" else 2 * n)
    return TileCost(ops=dict(t.ops), reads=sum(t.reads.values()), writes=sum(t.writes.values()), traffic=traffic,
                    flops_matmul=t.mm, flops_other=t.vec + t.sfu, sfu_ops=t.sfu, sram_peak=peak,
                    registers=_registers(algo, pass_, variant, scaled, precompute_d, bc >= n, order, phase),
                    hbm_footprint=h * footprint,
                    formula=_formula(algo, pass_, variant, precompute_d, order, phase), breakdown=s)


def _registers(algo: str, pass_: str, variant: str, scaled: bool, precompute_d: bool, one_key_block: bool,
               order: str = "row", phase: str | None = None) -> int:
    s = 1 if scaled else 0
    if pass_ == "forward":
        if algo == "fa2":
            return {"exact": 10, "no-max": 7, "no-rescale": 8}[variant] + s
        if algo == "fa1":
            return {"exact": 11, "no-max": 7, "no-rescale": 8}[variant] + s
        return {"exact": 7, "no-max": 6}[variant] + s - (1 if one_key_block else 0)
    stats = 2 if algo == "fa1" else 1
    if order == "split":  # T0 T5 T8 (preprocess); + T1 T2 T3 T4 T6 T10 (+T7) (dq); + T11 (dkdv, all)
        return {"preprocess": 3, "dq": 8 + stats}.get(phase, 9 + stats) + s
    return 10 + stats + (0 if precompute_d else 1) + s


def _formula(algo, pass_, variant, precompute_d, order, phase=None) -> str:
    if pass_ == "forward":
        return forward_words(algo, variant)
    if order == "split":
        return split_words(algo, phase)
    return backward_words(algo, precompute_d, order)
