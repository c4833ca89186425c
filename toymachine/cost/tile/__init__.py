"""Closed-form costs of the tile machine's attention programs (``toymachine.gen.tile``).

Every count here is a formula in the parameters (n queries, nk keys, d, batch·heads query heads
and batch·kv_heads key/value heads, block sizes, causal, algorithm, pass, variant) — sums over the Tr = ⌈n/Br⌉ query blocks at most, never a
simulation. The tests hold the simulator to them at random parameter points
(``tests/test_tile_cost.py``): HBM words read and written, per-array traffic, FLOPs, SRAM
peak and every instruction count.

Blocking notation (paper's): Tr = ⌈n/Br⌉ query blocks of r_i rows, Tc = ⌈n/Bc⌉ key blocks;
J_i key blocks and W_i keys query block i meets (causal: those at or before its last row); the
pair sums P = Σ J_i (pairs computed), PR = Σ r_i·J_i, PC = Σ W_i, PRC = Σ r_i·W_i (non-causal
Tr·Tc, n·Tc, Tr·n, n²) — ``blocks`` defines them with ``Blocks``.

HBM footprint (words the arrays occupy, per head): 4nd + n (fa2: Q K V O, L), 4nd + 2n (fa1),
4nd + 2n² + n (standard, standard-3pass: S and P are n × n — seed 003's quadratic memory curve); backward
8nd + 2n (fa2), 8nd + 3n (fa1).

With nk ≠ n the K/V terms below read nk for n (``forward_words``/``backward_words`` print them so);
with kv_heads < heads the column-order backward and the split dkdv launch read K, V and write dK,
dV once per key/value head (a group of heads/kv_heads query heads shares them); everything else is
per query head.

HBM words of one head (batch·heads heads; words = elements):

    standard forward  (Algorithm 0) reads n·d + 2·Tr·n·d + 2n² (S once, P once), writes
                      2n² + n·d + n                                                     → Θ(n·d + n²)
    standard-3pass    reads n·d + 2·Tr·n·d + 4n² (exact; 3n² of them the seed's 3-pass softmax
                      over S, n² the read of P) — no-max 3n²; writes 2n² + n·d + n
    fa1 forward       reads 2·n·d + (2d + 2)·PR, writes (d + 2)·PR (O, l, m per pair;
                      no-max/no-rescale read no m: (2d + 1)·PR)                          → Θ(n²d²/M)
    fa2 forward       reads n·d + 2d·PC, writes n·d + n (O and the log-sum-exp L)
    standard backward (Algorithm 3) reads 5·n² (P twice, dP once, dS twice) + (Tc + 1)·n·d (dO)
                      + 2·Tr·n·d (V, K) + Tc·n·d (Q), writes 2·n² + 3·n·d + n   → Θ(n·d + n²)
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

Dropout (``dropout`` p) adds DROPOUT instructions, r·c vector FLOPs each, and no HBM words (the
mask is remade on chip): one per computed pair in the forward; backward two per pair (P∘Z for
dV, (dO·Vᵀ)∘Z), three without the Dᵢ trick, split dkdv two and dq one; standard one per P block
(forward; backward also one per dP row block). ``sram_rule="paper"`` makes ``sram_peak`` count
only the registers holding blocks of HBM matrices (``blocks._paper_peak``).

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

__all__ = ["PASSES", "ORDERS", "VARIANTS", "default_order", "Blocks", "TileCost", "SPLIT_PHASES", "APART_PHASES", "KV_PHASES", "paper_blocks", "attention_tile_cost", "sram_peak", "fit_blocks",
           "check_split"]

from .backward import (
    backward_words,
    split_words,
    standard_backward_words,
    tally_backward,
    tally_split,
    tally_standard_backward,
)
from .blocks import (
    APART_PHASES,
    KV_PHASES,
    ORDERS,
    PASSES,
    SPLIT_PHASES,
    VARIANTS,
    Blocks,
    check_split,
    default_order,
    fit_blocks,
    paper_blocks,
    sram_peak,
)
from .counts import Tally, TileCost
from .eager import EAGER_REGISTERS, eager_footprint, eager_peak, eager_words, tally_eager
from .forward import forward_words, tally_forward
from .fused import fused_cost


def _rows_sums(g: Blocks) -> dict[str, int]:
    s = g.sums()
    s.update(N=g.n, NK=g.keys, Tr=g.tr, Tc=g.tc)
    return s


def attention_tile_cost(*, n: int, d: int, algo: str = "fa2", pass_: str = "forward", batch: int = 1, heads: int = 1,
                        causal: bool = False, block_m: int, block_n: int, variant: str = "exact",
                        precompute_d: bool = True, order: str | None = None, scale: float | None = None,
                        phase: str | None = None, nk: int | None = None, kv_heads: int | None = None,
                        dropout: float = 0.0, dropout_seed: int = 0, sram_rule: str = "exact",
                        block_rows: int | None = None) -> TileCost:
    """The closed-form cost of ``gen.tile.attention_program`` with these (resolved) blocks
    (``phase``: one launch of the split backward; ``nk``: keys, default n; ``kv_heads``: K/V
    heads, default ``heads``; ``dropout``: the drop probability — DROPOUT instructions, r·c FLOPs each;
    ``dropout_seed`` changes which elements drop, not what it costs; ``sram_rule``: how ``sram_peak``
    counts — exact, every tile, or paper, only blocks of HBM matrices; ``block_rows``: eager
    attention's row-wise kernels' rows R, default Br — ``cost.tile.eager``; ``order`` None: the
    algorithm's own, ``blocks.default_order``)."""
    order = default_order(algo, order)
    check_split(pass_, order, precompute_d, phase)
    if algo == "fused":  # S on chip, one block (cost.tile.fused)
        return fused_cost(n=n, d=d, batch=batch, heads=heads, causal=causal, variant=variant,
                          scaled=(d ** -0.5 if scale is None else scale) != 1.0)
    keys = n if nk is None else nk
    kvh = heads if kv_heads is None else kv_heads
    br, bc = min(block_m, n), min(block_n, keys)
    g = Blocks(n, br, bc, causal, None if keys == n else keys)
    s = _rows_sums(g)
    h, hk = batch * heads, batch * kvh
    scaled = (d ** -0.5 if scale is None else scale) != 1.0
    t = Tally()
    if scaled:
        t.op("FILL")  # the 1×1 scale tile, once per program
    if algo == "eager":
        return _eager_cost(t, g, d, h, pass_, scaled, bool(dropout), min(block_rows or br, n), s)
    if pass_ == "forward":
        tally_forward(t, g, s, d, h, algo, variant, scaled)
    elif algo == "standard":
        tally_standard_backward(t, s, d, h, scaled, hk)
    elif order == "split":
        for ph in (phase,) if phase else SPLIT_PHASES:
            tally_split(t, s, d, h, algo, scaled, ph, hk)
    else:
        tally_backward(t, g, s, d, h, algo, scaled, precompute_d, order, hk)
    if dropout:
        _tally_dropout(t, s, h, algo, pass_, precompute_d, order, phase)
    peak = sram_peak(algo=algo, pass_=pass_, d=d, br=br, bc=bc, variant=variant, scaled=scaled, heads=h,
                     precompute_d=precompute_d, order=order, n=n, phase=phase, nk=keys, kv_heads=hk,
                     dropout=bool(dropout), sram_rule=sram_rule)
    traffic = {a: (t.reads[a], t.writes[a]) for a in sorted(set(t.reads) | set(t.writes))}
    if pass_ == "forward":  # Q O and the row statistics per query head, K V per key/value head, standard's S and P
        footprint = h * (2 * n * d + (2 * n if algo == "fa1" else n) + (2 * n * keys if "standard" in algo else 0)) \
            + hk * 2 * keys * d
    elif algo == "standard":  # Q dO dQ, P dP dS and D per query head; K V dK dV per key/value head
        footprint = h * (3 * n * d + 3 * n * keys + n) + hk * 4 * keys * d
    else:  # Q O dO dQ and the statistics (L, or m and l) and D per query head; K V dK dV per key/value head
        footprint = h * (4 * n * d + (3 * n if algo == "fa1" else 2 * n)) + hk * 4 * keys * d
    return TileCost(ops=dict(t.ops), reads=sum(t.reads.values()), writes=sum(t.writes.values()), traffic=traffic,
                    flops_matmul=t.mm, flops_other=t.vec + t.sfu, sfu_ops=t.sfu, mac_z_outputs=t.mzo, sram_peak=peak,
                    registers=_registers(algo, pass_, variant, scaled, precompute_d, bc >= keys, order, phase)
                    + (1 if dropout and _holds_dropped_p(algo, pass_, order, phase) else 0),
                    hbm_footprint=footprint,
                    formula=_formula(algo, pass_, variant, precompute_d, order, phase, keys != n, kvh != heads),
                    breakdown=s)


def _eager_cost(t: Tally, g: Blocks, d: int, h: int, pass_: str, scaled: bool, dropout: bool, rows: int,
                s: dict) -> TileCost:
    """Eager attention's cost (``cost.tile.eager``): every op a kernel, every kernel a round trip."""
    tally_eager(t, g, d, h, pass_, scaled, dropout, rows)
    peak = eager_peak(pass_=pass_, n=g.n, nk=g.keys, d=d, br=g.br, bc=g.bc, rows=rows, heads=h, scaled=scaled,
                      dropout=dropout, causal=g.causal)
    traffic = {a: (t.reads[a], t.writes[a]) for a in sorted(set(t.reads) | set(t.writes))}
    return TileCost(ops=dict(t.ops), reads=sum(t.reads.values()), writes=sum(t.writes.values()), traffic=traffic,
                    flops_matmul=t.mm, flops_other=t.vec + t.sfu, sfu_ops=t.sfu, mac_z_outputs=t.mzo, sram_peak=peak,
                    registers=EAGER_REGISTERS + (1 if scaled else 0),
                    hbm_footprint=eager_footprint(g.n, g.keys, d, h, pass_, dropout),
                    formula=eager_words(pass_, scaled, g.causal, dropout), breakdown={**s, "R": rows})


def _tally_dropout(t: Tally, s: dict, h: int, algo: str, pass_: str, precompute_d: bool, order: str,
                   phase: str | None) -> None:
    """The DROPOUT instructions (one per block where the mask is applied; r·c FLOPs each): before
    P̃·V in the forward; backward (FlashAttention) on P for dV and on dO·Vᵀ — and once more per pair
    without the Dᵢ trick; standard: on each P block (O = PV, dV = Pᵀ·dO) and each dP row block."""
    pairs, prc, nn = s["P"], s["PRC"], s["N"] * s["NK"]
    if algo.startswith("standard"):
        every = s["Tr"] * s["Tc"]  # standard attention visits every block
        if pass_ == "forward":
            t.op("DROPOUT", h * every, elems=h * nn)
        else:
            t.op("DROPOUT", h * (every + s["Tr"]), elems=2 * h * nn)
        return
    if pass_ == "forward":
        per = 1
    elif order == "split":
        per = sum({"preprocess": 0, "dkdv": 2, "dq": 1, "dv": 1, "dk": 1}[ph]
                  for ph in ((phase,) if phase else SPLIT_PHASES))
    else:
        per = 2 if precompute_d else 3
    if per:
        t.op("DROPOUT", per * h * pairs, elems=per * h * prc)


def _holds_dropped_p(algo: str, pass_: str, order: str, phase: str | None) -> bool:
    """Does the program keep P∘Z in a register of its own (T13, for dV)?"""
    return pass_ == "backward" and algo in ("fa1", "fa2") and phase not in ("preprocess", "dq", "dk")


def _registers(algo: str, pass_: str, variant: str, scaled: bool, precompute_d: bool, one_key_block: bool,
               order: str = "row", phase: str | None = None) -> int:
    s = 1 if scaled else 0
    if pass_ == "forward":
        if algo == "fa2":
            return {"exact": 10, "no-max": 7, "no-rescale": 8}[variant] + s
        if algo == "fa1":
            return {"exact": 11, "no-max": 7, "no-rescale": 8}[variant] + s
        if algo == "standard":  # T0 T1 T3 T5 T9 (+ T6 m)
            return {"exact": 6, "no-max": 5}[variant] + s
        return {"exact": 7, "no-max": 6}[variant] + s - (1 if one_key_block else 0)
    if algo == "standard":  # T0 T1 T3 T4 T8
        return 5 + s
    stats = 2 if algo == "fa1" else 1
    if order == "split":  # T0 T5 T8 (preprocess); + T1 T2 T3 T4 T6 T10 (+T7) (dq, dk); + T11 (dkdv, all);
        # dv: T0 T5 T6 (T7) T1 T3 T11
        by_phase: dict[str | None, int] = {"preprocess": 3, "dq": 8 + stats, "dk": 8 + stats, "dv": 5 + stats}
        return by_phase.get(phase, 9 + stats) + s
    return 10 + stats + (0 if precompute_d else 1) + s


def _formula(algo, pass_, variant, precompute_d, order, phase=None, cross=False, grouped=False) -> str:
    if pass_ == "forward":
        words = forward_words(algo, variant, cross)
    elif algo == "standard":
        words = standard_backward_words(cross)
    elif order == "split":
        words = split_words(algo, phase, cross)
    else:
        words = backward_words(algo, precompute_d, order, cross)
    if grouped and pass_ == "backward" and (order == "col" or (order == "split" and phase in (None, "dkdv", "dv", "dk"))):
        words += " (K, V, dK, dV terms per key/value head: a group of query heads shares them)"
    return words
