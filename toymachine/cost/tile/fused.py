"""Closed-form cost of fused standard attention (``toymachine.gen.tile.fused``): the score matrix
kept on chip, one matmul each for S = τ·Q·Kᵀ and O = P·V (seed 002: XLA's fused standard attention,
whose (n, n) scores stay in VMEM; the seed's ``standard_causal_attention``).

Per head: LOAD Q, K, V whole; MAC_Z S (n, d)·(d, n); MUL τ (scaled); MASK (causal); ROWMAX, SUB,
EXP, ROWSUM, DIV over the (n, n) scores (no-max: EXP, ROWSUM, DIV); MAC_Z O = P·V; STORE O; LOG,
ADD (exact) for L = m + log l; STORE L. HBM per head: reads 3·n·d, writes n·d + n — the least any
program moves. On chip the whole (n, n) S: peak n² + 2·n·d + 2·n (+1 for τ; no-max n² + 2·n·d + n),
with K's register reused for V and Q's for O once they are dead.
"""

from __future__ import annotations

__all__ = ["fused_cost", "fused_sram_peak", "FUSED_WORDS"]

from .counts import Tally, TileCost

FUSED_WORDS = "reads 3·n·d (Q, K, V once), writes n·d + n (O, L); S = τQKᵀ (n × n) stays on chip"


def fused_sram_peak(*, n: int, d: int, variant: str = "exact", scaled: bool = True) -> int:
    """Words on chip at the peak: S (n²) beside K/V and Q/O (n·d each) and the row statistics."""
    stats = 2 if variant == "exact" else 1  # m and l (or l)
    return n * n + 2 * n * d + stats * n + (1 if scaled else 0)


def fused_cost(*, n: int, d: int, batch: int = 1, heads: int = 1, causal: bool = False, variant: str = "exact",
               scaled: bool = True) -> TileCost:
    """Everything the fused program costs (module docstring), for ``batch·heads`` heads."""
    h = batch * heads
    exact = variant == "exact"
    t = Tally()
    if scaled:
        t.op("FILL")
    for array in ("Q", "K", "V"):
        t.load(array, h * n * d, h)
    t.op("MAC_Z", h, elems=h * n * n * (2 * d - 1), unit="mm", outputs=h * n * n)
    if scaled:
        t.op("MUL", h, elems=h * n * n)
    if causal and n > 1:  # one key after one query at least
        t.op("MASK", h)
    if exact:
        t.op("ROWMAX", h, elems=h * (n * n - n))
        t.op("SUB", h, elems=h * n * n)
    t.op("EXP", h, elems=h * n * n, unit="sfu")
    t.op("ROWSUM", h, elems=h * (n * n - n))
    t.op("DIV", h, elems=h * n * n)
    t.op("MAC_Z", h, elems=h * n * d * (2 * n - 1), unit="mm", outputs=h * n * d)
    t.store("O", h * n * d, h)
    t.op("LOG", h, elems=h * n, unit="sfu")
    if exact:
        t.op("ADD", h, elems=h * n)
    t.store("L", h * n, h)
    traffic = {a: (t.reads[a], t.writes[a]) for a in sorted(set(t.reads) | set(t.writes))}
    registers = 4 + (1 if exact else 0) + (1 if scaled else 0)  # T0 (Q, O) T1 (K, V) T3 (S, P) T5 (l, L), T6 m, τ
    return TileCost(ops=dict(t.ops), reads=sum(t.reads.values()), writes=sum(t.writes.values()), traffic=traffic,
                    flops_matmul=t.mm, flops_other=t.vec + t.sfu, sfu_ops=t.sfu, mac_z_outputs=t.mzo,
                    sram_peak=fused_sram_peak(n=n, d=d, variant=variant, scaled=scaled), registers=registers,
                    hbm_footprint=h * (4 * n * d + n), formula=FUSED_WORDS,
                    breakdown={"P": h, "PR": h * n, "PC": h * n, "PRC": h * n * n, "MP": h if causal else 0,
                               "N": n, "Tr": 1, "Tc": 1})
