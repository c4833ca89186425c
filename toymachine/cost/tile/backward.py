"""Closed-form costs of the tile machine's backward attention programs (``toymachine.cost.tile``;
the streams of ``gen.tile_backward``): FlashAttention's backward (seed 004, Algorithm 4; seed
000's draft and its Dᵢ trick) in the row and column orders, and the split order's three
launches as the FlashAttention-2 kernels run them (``kernels_gpu``). ``tally_backward`` and
``tally_split`` add one program's counts to a ``Tally``; ``backward_words`` and
``split_words`` are their HBM formulas as the header prints them.
"""

from __future__ import annotations

__all__ = ["tally_backward", "tally_split", "tally_standard_backward", "backward_words", "split_words",
           "standard_backward_words"]

from .blocks import KV_PHASES, SPLIT_PHASES, Blocks
from .counts import Tally


def tally_backward(t: Tally, g: Blocks, s: dict, d: int, h: int, algo: str, scaled: bool, precompute_d: bool,
                   order: str, hk: int | None = None) -> None:
    """The row- or column-order backward of ``h`` query heads and ``hk`` key/value heads
    (``gen.tile.backward.emit_backward``; column order: K_j, V_j, dK_j, dV_j once per key/value
    head, the query heads of its group inside)."""
    hk = h if hk is None else hk
    n, nk, tr, tc, p, pr, pc, prc = s["N"], s["NK"], s["Tr"], s["Tc"], s["P"], s["PR"], s["PC"], s["PRC"]
    stats = ("m", "l") if algo == "fa1" else ("L",)
    if precompute_d:  # D_i = rowsum(dO_i ∘ O_i), one pass over dO and O
        t.load("dO", h * n * d, h * tr)
        t.load("O", h * n * d, h * tr)
        t.op("MUL", h * tr, elems=h * n * d)
        t.op("ROWSUM", h * tr, elems=h * n * (d - 1))
        t.store("D", h * n, h * tr)

    def recompute_p(times: int, rows_pairs: int) -> None:
        """S = τ·Q·Kᵀ, masked; P = exp(S − L) (fa1: exp(S − m)/l) — over ``times`` pairs."""
        t.op("MAC_Z", h * times, elems=h * prc * (2 * d - 1), unit="mm", outputs=h * prc)
        if scaled:
            t.op("MUL", h * times, elems=h * prc)
        t.op("MASK", h * s["MP"])
        t.op("SUB", h * times, elems=h * prc)
        t.op("EXP", h * times, elems=h * prc, unit="sfu")
        if algo == "fa1":
            t.op("DIV", h * times, elems=h * prc)

    def d_contribution() -> None:
        """dP = dO·Vᵀ; D += rowsum(P∘dP)."""
        t.op("MAC_Z", h * p, elems=h * prc * (2 * d - 1), unit="mm", outputs=h * prc)
        t.op("MUL", h * p, elems=h * prc)
        t.op("ROWSUM", h * p, elems=h * (prc - pr))
        t.op("ADD", h * p, elems=h * pr)

    def gradients() -> None:
        """dV += Pᵀ·dO; dP = dO·Vᵀ; dS = P∘(dP − D)·τ; dQ += dS·K; dK += dSᵀ·Q."""
        t.op("MAC", h * p, elems=h * 2 * prc * d, unit="mm")  # dV
        t.op("MAC_Z", h * p, elems=h * prc * (2 * d - 1), unit="mm", outputs=h * prc)  # dP
        t.op("SUB", h * p, elems=h * prc)
        t.op("MUL", h * p, elems=h * prc)
        if scaled:
            t.op("MUL", h * p, elems=h * prc)
        t.op("MAC", 2 * h * p, elems=h * 4 * prc * d, unit="mm")  # dQ, dK

    if order == "col":
        passes = 1 if precompute_d else 2
        t.load("K", passes * hk * nk * d, passes * hk * tc)
        t.load("V", passes * hk * nk * d, passes * hk * tc)
        t.load("Q", passes * h * pr * d, passes * h * p)
        t.load("dO", passes * h * pr * d, passes * h * p)
        for st in stats:
            t.load(st, passes * h * pr, passes * h * p)
        t.load("D", passes * h * pr, passes * h * p)
        if not precompute_d:  # pass 1: D accumulated in HBM
            recompute_p(p, pr)
            d_contribution()
            t.store("D", h * pr, h * p)
        t.op("FILL", 2 * hk * tc)
        t.load("dQ", h * pr * d, h * p)
        recompute_p(p, pr)
        gradients()
        t.store("dQ", h * pr * d, h * p)
        t.store("dK", hk * nk * d, hk * tc)
        t.store("dV", hk * nk * d, hk * tc)
        return
    passes = 1 if precompute_d else 2
    t.load("Q", h * n * d, h * tr)
    t.load("dO", h * n * d, h * tr)
    for st in stats:
        t.load(st, h * n, h * tr)
    if precompute_d:
        t.load("D", h * n, h * tr)
    else:
        t.op("FILL", h * tr)
    t.op("FILL", h * tr)
    t.load("K", passes * h * pc * d, passes * h * p)
    t.load("V", passes * h * pc * d, passes * h * p)
    if not precompute_d:
        recompute_p(p, pr)
        d_contribution()
    recompute_p(p, pr)
    t.load("dV", h * pc * d, h * p)
    t.load("dK", h * pc * d, h * p)
    gradients()
    t.store("dV", h * pc * d, h * p)
    t.store("dK", h * pc * d, h * p)
    t.store("dQ", h * n * d, h * tr)


def tally_split(t: Tally, s: dict, d: int, h: int, algo: str, scaled: bool, phase: str,
                hk: int | None = None) -> None:
    """One launch of the split backward (``gen.tile.backward.emit_split_phase``), all heads (dkdv:
    once per key/value head, its group of query heads inside). dv / dk: the dkdv launch as two,
    one accumulator each (dv: Q·Kᵀ and Pᵀ·dO, no V, no D; dk: without Pᵀ·dO)."""
    hk = h if hk is None else hk
    n, nk, tr, tc, p, pr, pc, prc = s["N"], s["NK"], s["Tr"], s["Tc"], s["P"], s["PR"], s["PC"], s["PRC"]
    stats = ("m", "l") if algo == "fa1" else ("L",)
    if phase == "preprocess":  # D_i = rowsum(dO_i ∘ O_i)
        t.load("dO", h * n * d, h * tr)
        t.load("O", h * n * d, h * tr)
        t.op("MUL", h * tr, elems=h * n * d)
        t.op("ROWSUM", h * tr, elems=h * n * (d - 1))
        t.store("D", h * n, h * tr)
        return
    kv = phase in KV_PHASES
    held, held_blocks = ((("K",) if phase == "dv" else ("K", "V")), tc) if kv else (("Q", "dO"), tr)
    hh, held_rows = (hk, nk) if kv else (h, n)  # the heads and rows of the held blocks
    for a in held:  # once per program: Nk·d (K, V) or Nq·d (Q, dO) words each
        t.load(a, hh * held_rows * d, hh * held_blocks)
    if kv:  # Q_i, dO_i, the statistics and D_i once per pair
        t.op("FILL", (2 if phase == "dkdv" else 1) * hk * tc)
        t.load("Q", h * pr * d, h * p)
        t.load("dO", h * pr * d, h * p)
        for st in stats:
            t.load(st, h * pr, h * p)
        if phase != "dv":
            t.load("D", h * pr, h * p)
    else:  # the statistics and D once per query block; K_j, V_j once per pair
        for st in stats:
            t.load(st, h * n, h * tr)
        t.load("D", h * n, h * tr)
        t.op("FILL", h * tr)
        t.load("K", h * pc * d, h * p)
        t.load("V", h * pc * d, h * p)
    # P = e^(τ·Q·Kᵀ − L) (fa1: e^(S − m)/l), masked; dS/τ = P∘(dO·Vᵀ − D)
    k = 1 if phase == "dv" else 2  # Q·Kᵀ (and dO·Vᵀ)
    t.op("MAC_Z", k * h * p, elems=k * h * prc * (2 * d - 1), unit="mm", outputs=k * h * prc)
    if scaled:
        t.op("MUL", h * p, elems=h * prc)
    t.op("MASK", h * s["MP"])
    t.op("SUB", k * h * p, elems=k * h * prc)
    t.op("EXP", h * p, elems=h * prc, unit="sfu")
    if algo == "fa1":
        t.op("DIV", h * p, elems=h * prc)
    if phase != "dv":
        t.op("MUL", h * p, elems=h * prc)
    products = 2 if phase == "dkdv" else 1  # dV += Pᵀ·dO and dK += dSᵀ·Q, or one of them, or dQ += dS·K
    t.op("MAC", products * h * p, elems=products * h * 2 * prc * d, unit="mm")
    if scaled and phase != "dv":  # τ on the accumulator (dK, dQ), once per program
        t.op("MUL", hh * held_blocks, elems=hh * held_rows * d)
    if kv:
        if phase != "dv":
            t.store("dK", hk * nk * d, hk * tc)
        if phase != "dk":
            t.store("dV", hk * nk * d, hk * tc)
    else:
        t.store("dQ", h * n * d, h * tr)


def split_words(algo: str, phase: str | None, cross: bool = False) -> str:
    """The split backward's HBM words per head (``phase``: one launch's; ``cross``: keys nk ≠ n)."""
    st = "m, l" if algo == "fa1" else "L"
    k = "2d + 3" if algo == "fa1" else "2d + 2"
    nk = "nk" if cross else "n"
    words = {"preprocess": "preprocess reads 2·n·d (O, dO), writes n (D)",
             "dkdv": f"dkdv reads 2·{nk}·d + ({k})·PR (K, V once per key block; Q, dO, {st}, D per pair), "
                     f"writes 2·{nk}·d (dK, dV once)",
             "dq": f"dq reads ({k})·n + 2d·PC (Q, dO, {st}, D once per query block; K, V per pair), writes n·d "
                   f"(dQ once)",
             "dv": f"dv reads {nk}·d + ({'2d + 2' if algo == 'fa1' else '2d + 1'})·PR (K once per key block; "
                   f"Q, dO, {st} per pair), writes {nk}·d "
                   f"(dV once)",
             "dk": f"dk reads 2·{nk}·d + ({k})·PR (K, V once per key block; Q, dO, {st}, D per pair), writes "
                   f"{nk}·d (dK once)"}
    if phase:
        return words[phase]
    return "; ".join(words[p] for p in SPLIT_PHASES) + " — nothing read-modify-written"


def backward_words(algo: str, precompute_d: bool, order: str, cross: bool = False) -> str:
    """The row/col-order backward's HBM words per head (``cross``: keys of length nk ≠ n)."""
    st = "2" if algo == "fa1" else "1"
    nk = "nk" if cross else "n"
    pre = "; D pre-pass reads 2·n·d, writes n" if precompute_d else ""
    if order == "col":
        if precompute_d:
            return (f"reads 2·{nk}·d + (3d + {st} + 1)·PR (K, V once per key block; Q, dO, dQ, stats, D per pair), "
                    f"writes d·PR + 2·{nk}·d (dQ per pair, dK, dV once){pre}")
        return (f"pass 1 (D): reads 2·{nk}·d + (2d + {st} + 1)·PR, writes PR; pass 2: reads 2·{nk}·d + "
                f"(3d + {st} + 1)·PR, writes d·PR + 2·{nk}·d — K and V read twice")
    if precompute_d:
        return (f"reads (2d + {st} + 1)·n + 4d·PC (K, V, dK, dV per pair), writes 2d·PC + n·d{pre}")
    return f"reads (2d + {st})·n + 6d·PC (K, V twice per pair; dK, dV once), writes 2d·PC + n·d"


def tally_standard_backward(t: Tally, s: dict, d: int, h: int, scaled: bool, hk: int | None = None) -> None:
    """Algorithm 3 (``gen.tile.backward.emit_standard_backward``), ``h`` query heads, ``hk`` K/V heads:
    every block computed (P is 0 where the causal mask hid a key), P, dP, dS in HBM."""
    hk = h if hk is None else hk
    n, nk, tr, tc = s["N"], s["NK"], s["Tr"], s["Tc"]
    pairs, nn, group = tr * tc, n * nk, h // hk
    # 1. dV = Pᵀ·dO: per K/V head and key block, MAC_Z on the first (head, query block), MAC after
    t.load("P", h * nn, h * pairs)
    t.load("dO", h * tc * n * d, h * pairs)
    t.op("MAC_Z", hk * tc, elems=hk * nk * d * (2 * group * n - 1), unit="mm", outputs=hk * nk * d)
    t.op("MAC", h * pairs - hk * tc)
    t.store("dV", hk * nk * d, hk * tc)
    # 2. dP = dO·Vᵀ, written
    t.load("dO", h * n * d, h * tr)
    t.load("V", h * tr * nk * d, h * pairs)
    t.op("MAC_Z", h * pairs, elems=h * nn * (2 * d - 1), unit="mm", outputs=h * nn)
    t.store("dP", h * nn, h * pairs)
    # 3. row blocks of P and dP read once: D = rowsum(P∘dP), dS = P∘dP − P∘D (×τ), written
    t.load("P", h * nn, h * tr)
    t.load("dP", h * nn, h * tr)
    t.op("MUL", 2 * h * tr, elems=2 * h * nn)
    t.op("ROWSUM", h * tr, elems=h * (nn - n))
    t.store("D", h * n, h * tr)
    t.op("SUB", h * tr, elems=h * nn)
    if scaled:
        t.op("MUL", h * tr, elems=h * nn)
    t.store("dS", h * nn, h * tr)
    # 4. dQ = dS·K
    t.load("dS", h * nn, h * pairs)
    t.load("K", h * tr * nk * d, h * pairs)
    t.op("MAC_Z", h * tr, elems=h * n * d * (2 * nk - 1), unit="mm", outputs=h * n * d)
    t.op("MAC", h * (pairs - tr))
    t.store("dQ", h * n * d, h * tr)
    # 5. dK = dSᵀ·Q
    t.load("dS", h * nn, h * pairs)
    t.load("Q", h * tc * n * d, h * pairs)
    t.op("MAC_Z", hk * tc, elems=hk * nk * d * (2 * group * n - 1), unit="mm", outputs=hk * nk * d)
    t.op("MAC", h * pairs - hk * tc)
    t.store("dK", hk * nk * d, hk * tc)


def standard_backward_words(cross: bool = False) -> str:
    """Algorithm 3's HBM words per head."""
    nk, sq = ("nk", "n·nk") if cross else ("n", "n²")
    return (f"reads 5·{sq} (P twice, dP once, dS twice) + (Tc + 1)·n·d (dO) + 2·Tr·{nk}·d (V, K) + Tc·n·d (Q), "
            f"writes 2·{sq} (dP, dS) + n·d + 2·{nk}·d + n (dQ, dK, dV, D) → Θ(n·d + n²)")
