"""Fused standard attention: the (n, n) scores kept on chip (seed 002, "Standard causal attention":
XLA fuses ``standard_causal_attention`` into one kernel whose score matrix stays in VMEM; the
seed's TPU cycle model runs it as one matmul each for Q·Kᵀ and P·V).

``emit_fused`` emits one head: Q, K and V loaded whole; S = τ·Q·Kᵀ by one MAC_Z, causal-masked;
one softmax pass over S on chip (ROWMAX, SUB, EXP, ROWSUM, DIV — no HBM round trip, unlike
``algo standard``'s three passes over S in HBM); O = P·V by one MAC_Z; O and the log-sum-exp
L = m + log l stored. K's register takes V and Q's takes O once they are dead, so the peak is
S plus two (n, d) tiles and the row statistics. Cost in closed form: ``cost.tile.fused``.

``machine_blocks`` sizes a program for a machine (``attention_program(machine=…)``): fused
attention's one block is the whole sequence; on a machine with compute units (a TPU), standard
attention whose S fits on chip *is* the fused program (as XLA compiles the seed's
``standard_causal_attention``; where S does not fit, it stays in HBM, blocked); FlashAttention's
blocks match the machine's systolic array (Br = rows, Bc = cols of its MXU) where it has one; the
on-chip capacity bounds them all (``sram_words``, or ``vmem_bytes`` in words).
"""

from __future__ import annotations

__all__ = ["FUSED_REGS", "FUSED_TITLE", "emit_fused", "machine_blocks"]

from ...cost.tile import Blocks
from ...cost.tile.fused import fused_sram_peak
from ...errors import ConfigError, Opt
from .emit import Emitter, scores

FUSED_TITLE = "fused standard attention (S = τQKᵀ kept on chip, one matmul each for QKᵀ and PV)"
FUSED_REGS = "T0 Q → O (n×d) · T1 K → V (n×d) · T3 S → P (n×n) · T6 row max m · T5 row sum l → L (n×1)"


def emit_fused(e: Emitter, g: Blocks, d: int, pre: tuple, *, variant: str, scaled: bool, **_) -> None:
    """One head of fused standard attention (module docstring); ``g`` has one block of n rows."""
    t, n = e.t, g.n
    e.op("LOAD", e.block("Q", pre, 0, n, True), t(0))  # (n, d)
    e.op("LOAD", e.block("K", pre, 0, n, True), t(1))  # (n, d)
    scores(e, g, 0, 1, 3, 0, 0, n, scaled)  # S = τ·Q·Kᵀ (n, n), on chip; causal-masked
    if variant == "exact":
        e.op("ROWMAX", t(3), t(6))  # m (n, 1)
        e.op("SUB", t(3), t(6), t(3))
    e.op("EXP", t(3), t(3))  # e^(S − m)
    e.op("ROWSUM", t(3), t(5))  # l (n, 1)
    e.op("DIV", t(3), t(5), t(3))  # P = e^(S − m) / l
    e.op("LOAD", e.block("V", pre, 0, n, True), t(1))  # (n, d), into K's register (K is dead)
    e.op("MAC_Z", t(3), t(1), t(0))  # O = P·V (n, d), into Q's register
    e.op("STORE", t(0), e.block("O", pre, 0, n, True))
    e.op("LOG", t(5), t(5))
    if variant == "exact":
        e.op("ADD", t(6), t(5), t(5))  # L = m + log l
    e.op("STORE", t(5), e.block("L", pre, 0, n, False))


def machine_blocks(machine, *, n: int, d: int, algo: str, pass_: str = "forward", block_m: int | None,
                   block_n: int | None, sram_words: int | None, variant: str = "exact",
                   scale: float | None = None) -> tuple[str, int | None, int | None, int | None]:
    """(algo, block_m, block_n, sram_words) for ``machine`` (module docstring): given values win;
    fused is one n-row block (an error when S does not fit on chip); standard on a machine with
    units is fused when S fits; FlashAttention with an MXU takes MXU-sized blocks."""
    if machine is not None and sram_words is None:
        sram_words = machine.onchip_words
    scaled = (d ** -0.5 if scale is None else scale) != 1.0
    need = fused_sram_peak(n=n, d=d, variant=variant, scaled=scaled)
    if (algo == "standard" and pass_ == "forward" and machine is not None and machine.has_units
            and variant != "no-rescale" and block_m is None and block_n is None
            and (sram_words is None or need <= sram_words)):
        algo = "fused"
    if algo == "fused":
        block_m = block_n = n
        if sram_words is not None and need > sram_words:
            where = f"the machine's {machine.onchip_name}" if machine is not None else Opt("sram")
            raise ConfigError((f"fused attention keeps the {n}×{n} score matrix on chip: {need} words, but ", where,
                               f" holds {sram_words} words"), key="algo",
                              hint=("use a tiled algorithm (", Opt("algo", "fa2"), "), a smaller ", Opt("n"),
                                    ", or more on-chip memory"))
    if machine is None:
        return algo, block_m, block_n, sram_words
    mxu = getattr(machine, "mxu", None)
    if mxu is not None and algo in ("fa1", "fa2"):
        block_m = min(n, mxu.rows) if block_m is None else block_m
        block_n = min(n, mxu.cols) if block_n is None else block_n
    return algo, block_m, block_n, sram_words
