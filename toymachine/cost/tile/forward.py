"""Closed-form costs of the tile machine's forward attention programs (``toymachine.cost.tile``;
the streams of ``gen.tile_forward``): standard attention (the FlashAttention paper's Algorithm
0; seed 003's quadratic memory curve), FlashAttention-1 and -2 (seed 004, Algorithms 1 and 2)
and seed 003's break-it variants. ``tally_forward`` adds one program's counts to a ``Tally``; ``forward_words`` is
its HBM formula as the header prints it.
"""

from __future__ import annotations

__all__ = ["tally_forward", "forward_words"]

from .blocks import Blocks
from .counts import Tally


def tally_forward(t: Tally, g: Blocks, s: dict, d: int, h: int, algo: str, variant: str, scaled: bool) -> None:
    """The forward pass of ``h`` heads (``s``: ``g``'s pair sums with N, Tr, Tc)."""
    {"standard": _standard_forward, "standard-3pass": _standard_3pass_forward, "fa1": _fa1_forward,
     "fa2": _fa2_forward}[algo](t, g, s, d, h, variant, scaled)


def forward_words(algo: str, variant: str, cross: bool = False) -> str:
    """The forward pass's HBM words per head (the header's formula; ``cross``: keys of length nk ≠ n)."""
    nk = "nk" if cross else "n"
    if algo == "fa2":
        return (f"reads n·d + 2·d·PC (Q once; K, V once per pair: non-causal n·d + 2·Tr·{nk}·d), writes n·d + n "
                f"(O, L)")
    if algo == "fa1":
        m = "2d + 2" if variant == "exact" else "2d + 1"
        w = "d + 1" if variant == "no-max" else "d + 2"
        return (f"reads 2·{nk}·d + ({m})·PR (K, V once; Q, O, l{', m' if variant == 'exact' else ''} per pair: "
                f"non-causal PR = n·Tc), writes ({w})·PR")
    sq = "n·nk" if cross else "n²"
    if algo == "standard":
        return f"reads n·d + 2·Tr·{nk}·d + 2·{sq} (S read once, P once: Algorithm 0), writes 2·{sq} + n·d + n"
    k = 4 if variant == "exact" else 3
    return f"reads n·d + 2·Tr·{nk}·d + {k}·{sq} (S read {k - 1}×, P once), writes 2·{sq} + n·d + n"


def _fa2_forward(t: Tally, g: Blocks, s: dict, d: int, h: int, variant: str, scaled: bool) -> None:
    n, tr, p, pr, pc, prc = s["N"], s["Tr"], s["P"], s["PR"], s["PC"], s["PRC"]
    t.load("Q", h * n * d, h * tr)
    t.op("FILL", h * tr * (2 if variant == "no-max" else 3))
    t.load("K", h * pc * d, h * p)
    t.load("V", h * pc * d, h * p)
    t.op("MAC_Z", h * p, elems=h * prc * (2 * d - 1), unit="mm", outputs=h * prc)
    if scaled:
        t.op("MUL", h * p, elems=h * prc)
    t.op("MASK", h * s["MP"])
    if variant == "exact":
        t.op("ROWMAX", h * p, elems=h * (prc - pr))
        t.op("MAX", h * p, elems=h * pr)
        t.op("SUB", 2 * h * p, elems=h * (prc + pr))
        t.op("EXP", 2 * h * p, elems=h * (prc + pr), unit="sfu")
        t.op("ROWSUM", h * p, elems=h * (prc - pr))
        t.op("MUL", 2 * h * p, elems=h * (pr + pr * d))
        t.op("ADD", h * p, elems=h * pr)
    elif variant == "no-rescale":
        t.op("ROWMAX", h * p, elems=h * (prc - pr))
        t.op("SUB", h * p, elems=h * prc)
        t.op("EXP", h * p, elems=h * prc, unit="sfu")
        t.op("ROWSUM", h * p, elems=h * (prc - pr))
        t.op("ADD", h * p, elems=h * pr)
    else:
        t.op("EXP", h * p, elems=h * prc, unit="sfu")
        t.op("ROWSUM", h * p, elems=h * (prc - pr))
        t.op("ADD", h * p, elems=h * pr)
    t.op("MAC", h * p, elems=h * 2 * prc * d, unit="mm")
    t.op("DIV", h * tr, elems=h * n * d)
    t.store("O", h * n * d, h * tr)
    t.op("LOG", h * tr, elems=h * n, unit="sfu")
    if variant != "no-max":
        t.op("ADD", h * tr, elems=h * n)
    t.store("L", h * n, h * tr)


def _fa1_forward(t: Tally, g: Blocks, s: dict, d: int, h: int, variant: str, scaled: bool) -> None:
    nk, tc, p, pr, prc = s["NK"], s["Tc"], s["P"], s["PR"], s["PRC"]
    t.load("K", h * nk * d, h * tc)
    t.load("V", h * nk * d, h * tc)
    t.load("Q", h * pr * d, h * p)
    t.load("O", h * pr * d, h * p)
    t.load("l", h * pr, h * p)
    if variant == "exact":
        t.load("m", h * pr, h * p)
    t.op("MAC_Z", h * p, elems=h * prc * (2 * d - 1), unit="mm", outputs=h * prc)
    if scaled:
        t.op("MUL", h * p, elems=h * prc)
    t.op("MASK", h * s["MP"])
    if variant == "exact":
        t.op("ROWMAX", h * p, elems=h * (prc - pr))
        if g.causal:  # the safe shift max(rowmax, m): a row the mask empties gets P̃ = 0, not NaN
            t.op("MAX", h * p, elems=h * pr)
        t.op("SUB", h * p, elems=h * prc)
        t.op("EXP", h * p, elems=h * prc, unit="sfu")
        t.op("ROWSUM", h * p, elems=h * (prc - pr))
        t.op("MAX", h * p, elems=h * pr)
        t.op("SUB", 2 * h * p, elems=2 * h * pr)
        t.op("EXP", 2 * h * p, elems=2 * h * pr, unit="sfu")
        t.op("MUL", 3 * h * p, elems=h * (2 * pr + pr * d))
        t.op("MUL", h * p, elems=h * pr * d)
        t.op("ADD", 2 * h * p, elems=h * (pr + pr * d))
        t.op("MAC_Z", h * p, elems=h * d * (2 * prc - pr), unit="mm", outputs=h * pr * d)  # P̃·V: r·d·(2c − 1) per pair
    else:
        if variant == "no-rescale":
            t.op("ROWMAX", h * p, elems=h * (prc - pr))
            t.op("SUB", h * p, elems=h * prc)
        t.op("EXP", h * p, elems=h * prc, unit="sfu")
        t.op("ROWSUM", h * p, elems=h * (prc - pr))
        t.op("ADD", h * p, elems=h * pr)
        t.op("MUL", h * p, elems=h * pr * d)
        t.op("MAC", h * p, elems=h * 2 * prc * d, unit="mm")
    t.op("DIV", h * p, elems=h * pr * d)
    t.store("O", h * pr * d, h * p)
    t.store("l", h * pr, h * p)
    if variant != "no-max":
        t.store("m", h * pr, h * p)


def _standard_scores(t: Tally, g: Blocks, s: dict, d: int, h: int, scaled: bool) -> None:
    """Step 1 of standard attention: S = τ·Q·Kᵀ by blocks, every block (masked or not) stored."""
    n, nk, tr, tc = s["N"], s["NK"], s["Tr"], s["Tc"]
    pairs = tr * tc
    t.load("Q", h * n * d, h * tr)
    t.load("K", h * tr * nk * d, h * pairs)
    t.op("MAC_Z", h * pairs, elems=h * n * nk * (2 * d - 1), unit="mm", outputs=h * n * nk)
    if scaled:
        t.op("MUL", h * pairs, elems=h * n * nk)
    t.op("MASK", h * g.masked_key_blocks())
    t.store("S", h * n * nk, h * pairs)


def _standard_pv(t: Tally, s: dict, d: int, h: int) -> None:
    """The last step of standard attention: O = P·V by blocks."""
    n, nk, tr, tc = s["N"], s["NK"], s["Tr"], s["Tc"]
    pairs = tr * tc
    t.load("P", h * n * nk, h * pairs)
    t.load("V", h * tr * nk * d, h * pairs)
    # MAC_Z for a row block's first key block, MAC after: Σ_i r·d·(2·Σ_j c_j − 1) = Nq·d·(2Nk − 1)
    t.op("MAC_Z", h * tr, elems=h * n * d * (2 * nk - 1), unit="mm", outputs=h * n * d)
    t.op("MAC", h * (pairs - tr))
    t.store("O", h * n * d, h * tr)


def _standard_forward(t: Tally, g: Blocks, s: dict, d: int, h: int, variant: str, scaled: bool) -> None:
    """Algorithm 0: S stored; each row block of S read once, P = softmax written once; O = PV."""
    n, nk, tr = s["N"], s["NK"], s["Tr"]
    _standard_scores(t, g, s, d, h, scaled)
    nn = n * nk
    t.load("S", h * nn, h * tr)
    if variant == "exact":
        t.op("ROWMAX", h * tr, elems=h * (nn - n))
        t.op("SUB", h * tr, elems=h * nn)
    t.op("EXP", h * tr, elems=h * nn, unit="sfu")
    t.op("ROWSUM", h * tr, elems=h * (nn - n))
    t.op("DIV", h * tr, elems=h * nn)
    t.store("P", h * nn, h * tr)
    t.op("LOG", h * tr, elems=h * n, unit="sfu")
    if variant == "exact":
        t.op("ADD", h * tr, elems=h * n)
    t.store("L", h * n, h * tr)
    _standard_pv(t, s, d, h)


def _standard_3pass_forward(t: Tally, g: Blocks, s: dict, d: int, h: int, variant: str, scaled: bool) -> None:
    """The 3-pass variant: S read once per softmax pass (max, sum, normalise; no-max: 2 passes)."""
    n, nk, tr, tc = s["N"], s["NK"], s["Tr"], s["Tc"]
    pairs = tr * tc  # standard attention computes every block, masked or not
    nn = n * nk  # S and P are Nq × Nk
    _standard_scores(t, g, s, d, h, scaled)
    # 2. P = softmax(S) row block by row block: the seed's safe softmax, one pass per statistic
    rowred = nn - n * tc  # Σ r·(c − 1) over all blocks
    if variant == "exact":
        t.load("S", h * nn, h * pairs)  # pass 1: the row max
        t.op("ROWMAX", h * pairs, elems=h * rowred)
        t.op("MAX", h * (pairs - tr), elems=h * n * (tc - 1))
    t.load("S", h * nn, h * pairs)  # pass 2: the row sum
    if variant == "exact":
        t.op("SUB", h * pairs, elems=h * nn)
    t.op("EXP", h * pairs, elems=h * nn, unit="sfu")
    t.op("ROWSUM", h * pairs, elems=h * rowred)
    t.op("ADD", h * (pairs - tr), elems=h * n * (tc - 1))
    t.op("LOG", h * tr, elems=h * n, unit="sfu")  # L = m + log l
    if variant == "exact":
        t.op("ADD", h * tr, elems=h * n)
    t.store("L", h * n, h * tr)
    t.load("S", h * nn, h * pairs)  # pass 3: normalise and store P
    if variant == "exact":
        t.op("SUB", h * pairs, elems=h * nn)
    t.op("EXP", h * pairs, elems=h * nn, unit="sfu")
    t.op("DIV", h * pairs, elems=h * nn)
    t.store("P", h * nn, h * pairs)
    _standard_pv(t, s, d, h)
