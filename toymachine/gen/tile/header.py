"""What a tiled attention program declares and says about itself (``toymachine.gen.tile``):
its arrays (HBM fills where FlashAttention's Algorithm 1 initialises them, seed 004; with
``with_data``, the inputs and — backward — a float64 forward's O and statistics) and the
header lines that state what it computes, its blocks, registers, SRAM peak and HBM cost
(``cost.tile``'s closed forms).
"""

from __future__ import annotations

__all__ = ["array_declarations", "program_header"]

import math

import numpy as np

from ...params import command_line
from ...program import ArrayDecl
from ...sim.memory import random_block
from .backward import BACKWARD_REGS, SPLIT_REGS, STANDARD_REGS
from .emit import TAU
from .forward import FORWARD_REGS
from .fused import FUSED_REGS, FUSED_TITLE
from .reference import attention_reference


def array_declarations(shapes: dict, algo: str, pass_: str, precompute_d: bool, order: str, with_data: bool,
                       seed: int, tau: float, causal: bool, n: int, d: int,
                       phase: str | None = None, dropout: float = 0.0, dropout_seed: int = 0) -> list[ArrayDecl]:
    """The program's ``ArrayDecl``s, in ``shapes`` order: values, a fill, or neither."""
    fills: dict[str, float] = {}
    if pass_ == "forward" and algo == "fa1":
        fills = {"O": 0.0, "l": 0.0, "m": -math.inf}  # Algorithm 1 initialises them in HBM
    if pass_ == "backward" and order != "split":  # split writes every output block once: no fills
        if order == "col":
            fills["dQ"] = 0.0
            if not precompute_d:
                fills["D"] = 0.0
        else:
            fills.update(dK=0.0, dV=0.0)
    inputs = ("Q", "K", "V") if pass_ == "forward" else ("Q", "K", "V", "dO")
    values: dict[str, np.ndarray] = {}
    if with_data:
        for name in inputs:
            values[name] = random_block(seed, name, shapes[name])
        if pass_ == "backward":
            ref = attention_reference(values["Q"], values["K"], values["V"], scale=tau, causal=causal,
                                      dropout=dropout, dropout_seed=dropout_seed)
            for name in ("O", "L", "m", "l", "P"):
                if name in shapes:
                    values[name] = ref[name]
            if phase in ("dkdv", "dq", "dk"):  # a launch alone reads D that its preprocess would have written
                values["D"] = (values["dO"] * ref["O"]).sum(axis=-1)
    decls = []
    for name, shape in shapes.items():
        if name in values:
            decls.append(ArrayDecl(name, shape, values=(values[name] + 0.0).tolist()))
        else:
            decls.append(ArrayDecl(name, shape, fill=fills.get(name)))
    return decls


def program_header(*, n, d, algo, pass_, batch, heads, causal, br, bc, how, sram_words, variant, precompute_d,
                   order, tau, scale, cost, g, with_data, seed, phase=None, nk=None, kv_heads=None, dropout=0.0,
                   dropout_seed=0, sram_rule="exact", sram_note=(), order_given=True) -> list[str]:
    """The header lines (``Program.header``): what the program computes and what it costs
    (``nk``/``kv_heads`` given: cross-attention / grouped-query lines)."""
    title = {"standard": "standard attention (Algorithm 0: S and P materialised in HBM, each written once and "
                         "read once)",
             "standard-3pass": "standard attention, 3-pass softmax (S and P materialised in HBM; S read 3× by the "
                               "seed's safe softmax over blocks)",
             "fa1": "FlashAttention-1 (Algorithm 1: K_j, V_j outer; O, l, m updated in HBM per block pair)",
             "fa2": "FlashAttention-2 (Q_i outer; O_i, l_i, m_i stay in SRAM; O and L written once)",
             "fused": FUSED_TITLE}[algo]
    if algo == "standard" and pass_ == "backward":
        title = "standard attention (Algorithm 3: P read from HBM; dP and dS materialised in HBM)"
    h = batch * heads
    lines = [f"Tiled attention on the SRAM/HBM machine: {title}, {pass_} pass."]
    if pass_ == "forward":
        what = "O = softmax(τ·Q·Kᵀ)·V"
        what += ", L = rowmax + log(rowsum) (log-sum-exp)" if algo != "fa1" else ", l = rowsum, m = rowmax"
        if variant != "exact":
            what += f" — variant {variant} (seed 003's break-it: " + (
                "no running max, e^S overflows for large scores)" if variant == "no-max"
                else "per-tile max, old statistics never rescaled: finite but wrong)")
    elif algo == "standard":
        what = ("dQ, dK, dV of O = softmax(τ·Q·Kᵀ)·V given dO, from Q, K, V, dO and the forward's P (Algorithm 3: "
                "dV = Pᵀ·dO; dP = dO·Vᵀ written; D_i = rowsum(P∘dP) and dS = P∘(dP − D) from row blocks of P and "
                "dP, dS written; dQ = dS·K; dK = dSᵀ·Q)")
    else:
        what = ("dQ, dK, dV of O = softmax(τ·Q·Kᵀ)·V given dO, from Q, K, V, O, dO and the forward's "
                + ("m, l" if algo == "fa1" else "L") + "; dS = P∘(dP − D)")
        if order == "split":
            what += ", D_i = rowsum(dO_i∘O_i) from the preprocess launch (the Dᵢ trick)"
        else:
            what += (", D_i = rowsum(dO_i∘O_i) precomputed (the Dᵢ trick: K, V loaded once)" if precompute_d
                     else ", D_i = rowsum(P∘dP) from an extra pass over the keys (K, V loaded twice)")
        what += {"row": ", row order (Q_i outer; dK, dV read-modify-written per pair)",
                 "col": ", column order (K_j outer; dQ read-modify-written per pair)",
                 "split": ", split order (FlashAttention-2's kernels: preprocess D; dK, dV with K_j outer; dQ with "
                          "Q_i outer; nothing read-modify-written, P and dS computed twice)"}[order]
        if not order_given:
            what += (" — fa1's own order, Algorithm 4's" if algo == "fa1" else f" — {algo}'s default") \
                + " (--order row, col or split to choose)"
        if phase:
            what += f" — the {phase} launch only"
    lines.append("Computes " + what + (", causal mask" if causal else "") + f", per head ({h} head(s)).")
    dims = f"[{batch}][{heads}][n]" if h > 1 else "[n]"
    if nk is None:
        lines.append(f"Parameters: n = {n}, d = {d}, batch = {batch}, heads = {heads}, causal = {causal}; arrays "
                     f"{dims}[d] and {dims} statistics.")
    else:
        kdims = f"[{batch}][{kv_heads}][nk]" if h > 1 else "[nk]"
        lines.append(f"Parameters: n = {n} queries, nk = {nk} keys, d = {d}, batch = {batch}, heads = {heads}, "
                     f"kv_heads = {kv_heads}, causal = {causal}; Q, O{', dO, dQ' if pass_ == 'backward' else ''} "
                     f"{dims}[d], K, V{', dK, dV' if pass_ == 'backward' else ''} {kdims}[d], statistics {dims}.")
        if kv_heads != heads:
            lines.append(f"Grouped-query attention: query head h reads K/V head h // {heads // kv_heads} "
                         f"({heads} query heads, {kv_heads} K/V head(s)"
                         + ("; multi-query" if kv_heads == 1 else "") + ")"
                         + ("; the backward sums each group's dK, dV" if pass_ == "backward" else "") + ".")
        if causal:
            lines.append(f"Causal mask aligned bottom-right (torch SDPA causal_lower_right, flash-attn): query i "
                         f"attends keys j ≤ i + {nk - n} (nk − n); MASK takes row0 = i0 + {nk - n}.")
    tau_text = "1/√d" if scale is None else "given"
    if tau != 1.0:
        to_ds = {"forward": "", "backward": " and to dS"}[pass_]
        if pass_ == "backward" and order == "split":
            to_ds = " and to the dK_j, dQ_i accumulators before they are stored (as the kernels do)"
        target = "to dS on chip" if (pass_, algo) == ("backward", "standard") else "to S on chip" + to_ds
        lines.append(f"Scale τ = {tau!r} ({tau_text}): FILL makes the 1×1 tile T{TAU}; MUL applies it {target}"
                     + " (scale=1 omits both: the seed's Q pre-scaled).")
    else:
        lines.append("Scale τ = 1: no multiply (the seed's convention: fold 1/√d into Q ahead of time).")
    if dropout:
        where = ("P̃_ij∘Z/(1−p) before ·V_j; the row sums (and L) are the undropped P̃'s" if pass_ == "forward"
                 else "each P_ij block ∘Z for dV, each dP row block ∘Z before D and dS" if algo == "standard"
                 else "P_ij∘Z for dV and (dO·Vᵀ)∘Z for dP, the mask remade pair by pair")
        lines.append(f"Dropout p = {dropout!r}, seed {dropout_seed} (Algorithm 2): {where}; DROPOUT makes the mask Z "
                     f"on chip from a hash of (seed, head, row, col) — it is never stored in HBM.")
    lines.append(f"Blocks: Br = {br} query rows (block_m), Bc = {bc} key rows (block_n); Tr = {g.tr}, Tc = {g.tc} "
                 f"({how}).")
    regs = ({**FORWARD_REGS, "fused": FUSED_REGS}[algo] if pass_ == "forward" else STANDARD_REGS if algo == "standard"
            else SPLIT_REGS if order == "split" else BACKWARD_REGS)
    if dropout and pass_ == "backward" and algo != "standard" and phase not in ("preprocess", "dq", "dk"):
        regs += " · T13 P_ij∘Z (Br×Bc, for dV)"
    lines.append("Registers (SRAM): " + regs
                 + (f" · T{TAU} τ (1×1)" if tau != 1.0 else "") + ".")
    peak_text = f"SRAM peak: {cost.sram_peak} words"
    if sram_words is not None:
        peak_text += f" of M = {sram_words}"
    lines.append(peak_text + "; a machine with fewer sram_words stops with a MachineLimitError — use smaller blocks "
                 "(--block-m/--block-n) or --sram to size them.")
    lines.extend(sram_note)
    lines.append(f"HBM per head: {cost.formula}.")
    lines.append(f"Cost: {cost.reads} words read, {cost.writes} written; {cost.flops_matmul} matmul FLOPs, "
                 f"{cost.flops_other} other; {cost.instructions} instructions (toymachine.cost.tile).")
    if pass_ == "backward" and not with_data:
        lines.append(("P is read from HBM: give it" if algo == "standard" else "O and the statistics are read from "
                                                                                 "HBM: give them")
                     + " (--data, or with_data) — the machine's random "
                     "stand-ins run, but are no forward's output.")
    paper = sram_rule != "exact"
    regenerate = command_line(
        "gen attention", level="tile", algo=algo, n=n, d=d, nk=nk, batch=batch if h > 1 else None,
        heads=heads if h > 1 else None, kv_heads=kv_heads if kv_heads is not None and kv_heads != heads else None,
        causal=True if causal else None, block_m=br, block_n=bc, sram_rule=sram_rule if paper else None,
        sram=sram_words if paper else None, **{"pass": None if pass_ == "forward" else pass_},
        variant=None if variant == "exact" else variant, scale=None if scale is None else repr(scale),
        dropout=repr(dropout) if dropout else None, dropout_seed=dropout_seed if dropout else None,
        data=True if with_data else None, seed=seed if with_data else None)
    lines.append("Regenerate: " + regenerate
                 + ("" if pass_ == "forward" or algo == "standard" else f"  (API: order={order!r}, precompute_d={precompute_d}"
                    + (f", phase={phase!r})" if phase else ")")))
    return lines
