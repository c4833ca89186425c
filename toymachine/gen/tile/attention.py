"""Tiled attention on the SRAM/HBM machine: standard, FlashAttention-1 and -2, forward and
backward (seed 000, "Element is Tile" and the backward-pass draft; seed 004, Algorithms 1,
2 and 4; seed 003's tiled attention and its break-it experiments).

``attention_program(n=…, d=…, algo=…)`` returns a ``Program`` for the tile machine: T
registers hold blocks in SRAM, LOAD/STORE move them from/to HBM, MAC_Z/MAC are tensor-core
matmuls (``toymachine.sim.engines.tile``). The arrays are ``Q K V O`` (``dO dQ dK dV`` backward) of
shape [n][d] — [batch][heads][n][d] when batch·heads > 1 — and the row statistics ``L``
(the log-sum-exp), ``m``, ``l``, ``D`` of shape [n] (or [batch][heads][n]). Inputs never
given are the machine's deterministic random values, as for any program.

Shapes users run: ``nk`` keys/values of length Nk ≠ n (cross-attention: K, V, dK,
dV are [nk][d]; S, P [n][nk]); the causal mask is aligned bottom-right, as torch SDPA's
``causal_lower_right`` and flash-attn (≥ 2.1) do — query i attends keys j ≤ i + (nk − n), the
last query sees every key; MASK gets the row offset i0 + nk − n — and needs nk ≥ n (else the
first n − nk queries attend no key). ``kv_heads`` (grouped-query attention; 1 = multi-query):
K, V (dK, dV) are [batch][kv_heads][nk][d], heads % kv_heads == 0, query head h reads K/V head
h // (heads/kv_heads). The forward and the row-order backward run query head by query head
(row order read-modify-writes dK_j, dV_j, so a group's contributions add up in HBM); the
column order and the split order's dkdv launch hold K_j, V_j, dK_j, dV_j in SRAM while every
query head of the group streams past, so K, V are read and dK, dV written once per K/V head
(the kernel's grid for GQA: one dkdv program per key block and K/V head). Head dimensions are
any d ≥ 1 (80, 96, …: the machine has no power-of-two tiles). Defaults (nk = n, kv_heads =
heads) give the programs, byte for byte, that the generator made before these options.

algo standard — Algorithm 0 as the paper counts it: S = τQKᵀ is written to HBM by blocks;
    each row block of S (Br × nk) is read once, P = softmax(S) computed in SRAM and written
    once (with the log-sum-exp L); then O = PV by blocks. S and P written once, read once:
    HBM Θ(n·d + n²); SRAM holds a Br × nk row block (as a row-wise softmax kernel does).
algo standard-3pass — the same with P computed by the seed's 3-pass safe softmax over S
    blocks (max, sum, normalise; Problem 4 at tile granularity): SRAM holds one Br × Bc
    block, never a row, and S is read three times (no-max: twice) — 2n² more reads.
algo fa1 — FlashAttention-1 (Algorithm 1/2): K_j, V_j outer, Q_i inner; O_i, l_i, m_i are
    read and written per pair (the outer-product schedule of seed 000). HBM Θ(n²d²/M). With
    the causal mask a block row can be all −inf (rowmax −inf, e^(−inf+inf) = NaN); there the
    block max is taken as max(rowmax(S), m_i) — Algorithm 1 holds for any finite shift — as
    FlashAttention's kernels guard the same case.
algo fa2 — FlashAttention-2: Q_i outer, K_j, V_j inner; O_i, l_i, m_i stay in SRAM and O and
    L = m + log l are written once (the inner-product schedule). HBM n·d·(1 + 2·Tr) + ….

pass_ backward (fa1/fa2; fa1 reads m and l, fa2 reads L): dS_ij = P_ij∘(dP_ij − D_i) with
    D_i = rowsum(dO_i∘O_i) precomputed in a first pass (``precompute_d``, seed 000's
    "Dᵢ trick": K_j, V_j loaded once) or D_i = rowsum(P∘dP) accumulated in an extra pass over
    the keys (K_j, V_j loaded twice). ``order`` row: Q_i outer — dQ_i stays in SRAM (inner
    product), dK_j and dV_j are read-modified-written per pair (outer products);
    col: K_j outer (Algorithm 4) — dK_j, dV_j stay in SRAM, dQ_i is read-modified-written;
    split: the FlashAttention-2 kernels' schedule (``kernels_gpu``: three launches, each a
    phase here, all heads per phase) — *preprocess* D_i = rowsum(dO_i∘O_i) (reads O, dO,
    writes D); *dkdv* K_j outer: K_j, V_j, dK_j, dV_j stay in SRAM while Q_i, dO_i, L_i, D_i
    stream past (dK_j = τ·Σ_i dS_ijᵀ·Q_i, τ applied once per block as the kernel does);
    *dq* Q_i outer: Q_i, dO_i, L_i, D_i, dQ_i stay in SRAM while K_j, V_j stream past
    (P and dS recomputed: 7 matmuls per pair instead of 5, nothing read-modified-written).
    HBM per head (fa2): reads 4·n·d + (2d + 2)·(PR + n) + 2d·PC, writes 3·n·d + n, with
    ``cost.tile``'s pair sums PR = Σ r_i·J_i, PC = Σ W_i (non-causal n·Tc and n·Tr).
    ``phase`` builds one launch alone (``SPLIT_PHASES``), so each kernel launch has its own
    program and counts (``kernels_gpu.model.traffic`` predicts the launches' bytes from them).

Dropout (``dropout`` p, ``dropout_seed``; seed 004, Algorithm 2 and its backward): the mask Z
(Z_ij = 1/(1 − p) kept, 0 dropped) is made on chip by the DROPOUT instruction from a
counter-based hash of (seed, head, row, col) — never stored, remade wherever it is needed. The
forward multiplies P̃_ij by it just before P̃_ij·V_j (the row sums and L stay those of the
undropped P̃); the backward uses P∘Z for dV and (dO·Vᵀ)∘Z for dP, and D_i = rowsum(dO_i∘O_i)
holds unchanged (O carries the mask); standard attention applies it to each P block it loads
(O = PV; the backward's dV = Pᵀ·dO and dP row blocks). ``reference`` draws the same mask.

Softmax scale τ (``scale``, default 1/√d): a FILL'd 1×1 tile multiplies S on chip
(``MUL Ts, Tτ, Ts``, Br·Bc FLOPs per pair) and dS in the backward (split order: the dK_j and
dQ_i accumulators once per block instead, as the kernels do); ``scale=1`` emits no
multiply — the seed's convention ("we fold it into Q ahead of time": give Q pre-scaled).

Blocks: ``block_m`` = Br query rows, ``block_n`` = Bc key rows (Triton's BLOCK_M/BLOCK_N),
clamped to n. Without them, ``sram_words`` = M gives the paper's Bc = ⌈M/4d⌉, Br =
min(⌈M/4d⌉, d), shrunk (keeping Br = min(Bc, d)) to the largest that fit when this
program's working set exceeds M (``cost.tile.fit_blocks``); otherwise 64 × 64. The header
of every program says what it computes, its blocks, SRAM occupancy and HBM cost.

Costs in closed form: ``toymachine.cost.tile.attention_tile_cost``.

This module holds the public API (``attention_program``, ``array_shapes``, ``resolve_blocks``,
the parameter tuples; ``run`` holds ``run_attention``; ``gen.catalog`` registers ``attention-tile`` with the
sweep). The instruction streams live in ``forward`` (standard, FA1, FA2) and ``backward`` (row,
col, split), sharing ``emit``'s ``Emitter``; the arrays and header in ``header``; the float64
references in ``reference``.
"""

from __future__ import annotations

__all__ = ["ALGOS", "PASSES", "ORDERS", "SPLIT_PHASES", "VARIANTS", "attention_program", "resolve_blocks",
           "attention_reference", "attention_backward_reference", "array_shapes"]

import math
from typing import Any

import numpy as np

from ...cost.tile import (
    KV_PHASES,
    ORDERS,
    PASSES,
    SPLIT_PHASES,
    VARIANTS,
    Blocks,
    attention_tile_cost,
    check_split,
    default_order,
    fit_blocks,
    sram_peak,
)
from ...errors import ConfigError, Opt
from ...machine.config import SRAM_RULES
from ...params import check_choice, check_int
from ...program import Program
from ..common import MAX_INSTRUCTIONS, check_size
from .backward import emit_backward, emit_split_phase, emit_standard_backward
from .eager import eager_program, eager_shapes
from .emit import TAU, Dropout, Emitter
from .forward import emit_forward
from .fused import emit_fused, machine_blocks
from .header import array_declarations, program_header
from .reference import attention_backward_reference, attention_reference

# eager: one kernel per op (gen.tile.eager); fused: S on chip, one block (gen.tile.fused)
ALGOS = ("eager", "standard", "standard-3pass", "fa1", "fa2", "fused")
DEFAULT_BLOCK = 64


# -- parameters ----------------------------------------------------------------------------


def resolve_blocks(*, n: int, d: int, algo: str = "fa2", pass_: str = "forward", block_m: int | None = None,
                   block_n: int | None = None, sram_words: int | None = None, variant: str = "exact",
                   scaled: bool = True, precompute_d: bool = True, order: str | None = None,
                   heads: int = 1, phase: str | None = None, nk: int | None = None,
                   kv_heads: int | None = None, dropout: bool = False,
                   sram_rule: str = "exact") -> tuple[int, int, str]:
    """(Br, Bc, how they were chosen): given, from the SRAM size, or 64 × 64; Br clamped to n
    (the queries), Bc to nk (the keys, default n). ``heads``/``kv_heads``: all batches' heads."""
    keys = n if nk is None else nk
    order = default_order(algo, order)
    fit: dict[str, Any] = dict(algo=algo, pass_=pass_, d=d, n=n, sram_words=sram_words, variant=variant, scaled=scaled,
               precompute_d=precompute_d, order=order, heads=heads, phase=phase, nk=nk, kv_heads=kv_heads,
               dropout=dropout, sram_rule=sram_rule)
    if block_m is not None or block_n is not None or sram_words is None:
        if sram_words is not None and (block_m is None or block_n is None):
            pbr, pbc, _ = fit_blocks(**fit)
        else:
            pbr = pbc = DEFAULT_BLOCK
        br = min(n, block_m if block_m is not None else pbr)
        bc = min(keys, block_n if block_n is not None else pbc)
        note = "given" if block_m is not None and block_n is not None else "given / default 64"
        if block_m is None and block_n is None:
            note = f"default {DEFAULT_BLOCK} × {DEFAULT_BLOCK}"
        if (br, bc) != (block_m or br, block_n or bc):
            note += f", clamped to n = {n}" + ("" if keys == n else f", nk = {keys}")
        if sram_words is not None:
            need = sram_peak(algo=algo, pass_=pass_, d=d, br=br, bc=bc, variant=variant, scaled=scaled,
                             precompute_d=precompute_d, order=order, n=n, heads=heads, phase=phase, nk=nk,
                             kv_heads=kv_heads, dropout=dropout, sram_rule=sram_rule)
            if need > sram_words:
                fbr, fbc, _ = fit_blocks(**fit)
                counted = " counted as the paper does" if sram_rule == "paper" else ""
                raise ConfigError((f"blocks Br = {br}, Bc = {bc} need {need} words of SRAM{counted}; ", Opt("sram"),
                                   f" is {sram_words}"), key="sram",
                                  hint=("use ", Opt("block_m", fbr), " ", Opt("block_n", fbc), " (they fit), leave the "
                                        "blocks to ", Opt("sram"), ", or use ", Opt("sram", need)))
        return br, bc, note
    return fit_blocks(**fit)


def array_shapes(*, n: int, d: int, batch: int = 1, heads: int = 1, algo: str = "fa2",
                 pass_: str = "forward", nk: int | None = None,
                 kv_heads: int | None = None, dropout: bool = False) -> dict[str, tuple[int, ...]]:
    """Name → shape of every array the program declares (inputs and outputs): Q, O, dO, dQ
    ``[batch][heads][n][d]``; K, V, dK, dV ``[batch][kv_heads][nk][d]`` (the leading axes when
    batch·heads > 1); the statistics ``[batch][heads][n]``; standard attention's S, P ``[n][nk]``."""
    keys = n if nk is None else nk
    kvh = heads if kv_heads is None else kv_heads
    if algo == "eager":
        return eager_shapes(n=n, d=d, batch=batch, heads=heads, pass_=pass_, nk=keys, dropout=dropout)
    many = batch * heads > 1
    lead, klead = ((batch, heads), (batch, kvh)) if many else ((), ())
    mat, kmat, vec = lead + (n, d), klead + (keys, d), lead + (n,)
    if pass_ == "forward":
        if algo == "fa1":
            return {"Q": mat, "K": kmat, "V": kmat, "O": mat, "l": vec, "m": vec}
        shapes = {"Q": mat, "K": kmat, "V": kmat}
        if algo in ("standard", "standard-3pass"):
            shapes.update(S=lead + (n, keys), P=lead + (n, keys))
        shapes.update(O=mat, L=vec)
        return shapes
    if algo == "standard":  # Algorithm 3: P from the forward; dP, dS written
        sq = lead + (n, keys)
        return {"Q": mat, "K": kmat, "V": kmat, "dO": mat, "P": sq, "dP": sq, "dS": sq, "D": vec, "dQ": mat,
                "dK": kmat, "dV": kmat}
    stats = {"m": vec, "l": vec} if algo == "fa1" else {"L": vec}
    return {"Q": mat, "K": kmat, "V": kmat, "O": mat, "dO": mat, **stats, "D": vec, "dQ": mat, "dK": kmat,
            "dV": kmat}


def attention_program(*, n: int, d: int, algo: str = "fa2", pass_: str = "forward", batch: int = 1, heads: int = 1,
                      causal: bool = False, block_m: int | None = None, block_n: int | None = None,
                      sram_words: int | None = None, variant: str = "exact", precompute_d: bool = True,
                      order: str | None = None, with_data: bool = False, seed: int = 0,
                      scale: float | None = None, phase: str | None = None, nk: int | None = None,
                      kv_heads: int | None = None, dropout: float = 0.0, dropout_seed: int = 0,
                      sram_rule: str = "exact", machine=None, max_instructions: int | None = MAX_INSTRUCTIONS,
                      on_size=None) -> Program:
    """A tiled attention program for the tile machine (module docstring: what each
    ``algo``/``pass_``/``order`` does; ``cost.tile.attention_tile_cost``: what it costs).
    ``phase`` (backward, order split only): one of ``SPLIT_PHASES`` alone — one kernel launch — or
    ``dv`` / ``dk`` (``APART_PHASES``: the dkdv launch as two, one accumulator each).
    ``nk``: keys/values of length Nk (default ``n``; causal aligned bottom-right, needs Nk ≥ n);
    ``kv_heads``: K/V heads (default ``heads``; grouped-query attention, ``heads % kv_heads == 0``).
    ``dropout``: drop probability p (Algorithm 2; 0 = none), its mask drawn from ``dropout_seed``.
    ``sram_rule``: how the program's SRAM is counted against ``sram_words`` and reported — exact
    (every tile, the default) or paper (only blocks of HBM matrices: run it on a machine with
    ``sram_rule: paper``, e.g. the ``toysram-paper`` preset).

    ``with_data`` embeds the inputs as ``.data`` (the machine's own random values for
    ``seed``; for the backward also O and the statistics from a float64 numpy forward, so
    the gradients are those of that forward). ``machine`` sizes the blocks for it (``fused.machine_blocks``)."""
    n, d = check_int("n", n, 1), check_int("d", d, 1)
    batch, heads = check_int("batch", batch, 1), check_int("heads", heads, 1)
    keys = n if nk is None else check_int("nk", nk, 1)
    kvh = heads if kv_heads is None else check_int("kv_heads", kv_heads, 1)
    if heads % kvh:
        raise ConfigError((Opt("heads", heads), " is not a multiple of ", Opt("kv_heads", kvh), " (grouped-query "
                           "attention shares each K, V head among heads / kv_heads query heads)"), key="kv_heads",
                          hint=("use a ", Opt("kv_heads"), f" that divides {heads}, e.g. 1 (multi-query) or {heads}"))
    if causal and keys < n:
        raise ConfigError(f"the causal mask is aligned bottom-right (query i attends keys j ≤ i + nk − n); with "
                          f"nk = {keys} < n = {n} the first {n - keys} queries would attend no key",
                          key="nk", hint=("use ", Opt("nk"), " ≥ ", Opt("n"), " with ", Opt("causal", True), ", or ",
                                          Opt("causal", False)))
    algo = check_choice("algo", algo, ALGOS)
    pass_ = check_choice("pass", pass_, PASSES)
    variant = check_choice("variant", variant, VARIANTS)
    sram_rule = check_choice("sram_rule", sram_rule, SRAM_RULES)
    order_given = order is not None
    order = check_choice("order", default_order(algo, order), ORDERS)
    for name, v in (("block_m", block_m), ("block_n", block_n), ("sram", sram_words)):
        if v is not None:
            check_int(name, v, 1)
    if not isinstance(causal, (bool, np.bool_)) or not isinstance(precompute_d, (bool, np.bool_)):
        raise ConfigError("causal and precompute_d are true or false")
    if pass_ == "backward" and variant != "exact":
        raise ConfigError((Opt("variant", variant), " breaks the forward pass; the backward pass is exact only"),
                          key="variant", hint=("use ", Opt("variant", "exact"), " with ", Opt("pass", "backward")))
    algo, block_m, block_n, sram_words = machine_blocks(machine, n=n, d=d, algo=algo, pass_=pass_, block_m=block_m,
                                                        block_n=block_n, sram_words=sram_words, variant=variant,
                                                        scale=scale)
    if pass_ == "backward" and algo == "standard-3pass":
        raise ConfigError("standard-3pass differs from standard in its forward pass only; the standard backward is "
                          "Algorithm 3", key="algo", hint=("use ", Opt("algo", "standard"), " ", Opt("pass", "backward")))
    if pass_ == "backward" and algo == "standard" and (order != "row" or not precompute_d or phase):
        raise ConfigError(("the standard backward is Algorithm 3's fixed schedule (dV, dP, dS, dQ, dK by blocks, "
                           "D = rowsum(P∘dP) from the materialised P): ", Opt("order"), ", ", Opt("precompute_d", False),
                           " and phases are FlashAttention's (fa1, fa2)"), key="order",
                          hint=("leave them out with ", Opt("algo", "standard")))
    if algo == "fused" and (pass_ == "backward" or keys != n or kvh != heads or dropout):
        raise ConfigError("fused attention (the score matrix on chip, seed 002's standard path on a TPU) is generated "
                          "for the forward pass of self-attention without dropout",
                          key="algo", hint=("use ", Opt("algo", "standard"), " or fa2 for the backward, ", Opt("nk"), ", ",
                                            Opt("kv_heads"), " or ", Opt("dropout")))
    check_split(pass_, order, precompute_d, phase)
    if algo in ("standard", "standard-3pass", "fused") and variant == "no-rescale":
        raise ConfigError((Opt("variant", "no-rescale"), " drops the rescaling of running statistics; standard "
                           "attention has none"), key="variant",
                          hint=("use ", Opt("variant", "exact"), " or no-max with ", Opt("algo", "standard")))
    p_drop = _dropout(dropout, dropout_seed)
    tau = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if not math.isfinite(tau) or tau == 0.0:
        raise ConfigError.of_option("scale", f"must be a finite non-zero number, got {scale!r}")
    scaled = tau != 1.0
    if algo == "eager":
        return eager_program(n=n, d=d, nk=keys, batch=batch, heads=heads, kv_heads=kvh, causal=bool(causal),
                             pass_=pass_, block_m=block_m, block_n=block_n, sram_words=sram_words, variant=variant,
                             order=order, precompute_d=precompute_d, phase=phase, tau=tau, scale=scale,
                             dropout=p_drop, dropout_seed=int(dropout_seed), with_data=with_data, seed=seed,
                             max_instructions=max_instructions, on_size=on_size)
    br, bc, how = resolve_blocks(n=n, d=d, algo=algo, pass_=pass_, block_m=block_m, block_n=block_n,
                                 sram_words=sram_words, variant=variant, scaled=scaled, precompute_d=precompute_d,
                                 order=order, heads=batch * heads, phase=phase, nk=keys,
                                 kv_heads=batch * kvh, dropout=bool(p_drop), sram_rule=sram_rule)
    g = Blocks(n, br, bc, bool(causal), None if keys == n else keys)
    groups = _head_groups(batch, heads, kvh)
    dr = Dropout(p_drop, int(dropout_seed), heads) if p_drop else None
    extra: dict[str, Any] = {} if (nk is None and kv_heads is None) else dict(nk=keys, kv_heads=kvh)
    cost = attention_tile_cost(n=n, d=d, algo=algo, pass_=pass_, batch=batch, heads=heads, causal=bool(causal),
                               block_m=br, block_n=bc, variant=variant, precompute_d=precompute_d, order=order,
                               scale=tau, phase=phase, dropout=p_drop, sram_rule=sram_rule, **extra)
    check_size(cost.instructions, f"tiled attention with n = {n:,}, {batch * heads} head(s)", max_instructions,
               on_size)
    e = Emitter()
    if scaled:
        e.op("FILL", tau, 1, 1, e.t(TAU))
    if pass_ == "backward" and order == "split":  # launch by launch, each over every head (the kernel's grid)
        for ph in (phase,) if phase else SPLIT_PHASES:
            for kpre, pres in groups:
                if ph in KV_PHASES:  # one program per key/value head: its query heads stream past K_j, V_j
                    emit_split_phase(e, g, d, pres, ph, algo=algo, scaled=scaled, kpre=kpre, dropout=dr)
                else:
                    for pre in pres:
                        emit_split_phase(e, g, d, [pre], ph, algo=algo, scaled=scaled, kpre=kpre, dropout=dr)
    elif pass_ == "backward" and algo == "standard":
        for kpre, pres in groups:
            emit_standard_backward(e, g, d, pres, scaled=scaled, kpre=kpre, dropout=dr)
    elif pass_ == "backward":
        for kpre, pres in groups:
            emit_backward(e, g, d, pres, algo=algo, scaled=scaled, precompute_d=precompute_d, order=order, kpre=kpre,
                          dropout=dr)
    else:
        for kpre, pres in groups:
            for pre in pres:
                if algo == "fused":
                    emit_fused(e, g, d, pre, variant=variant, scaled=scaled)
                else:
                    emit_forward(e, g, d, pre, algo=algo, variant=variant, scaled=scaled, kpre=kpre, dropout=dr)
    peak_kw = dict(algo=algo, pass_=pass_, d=d, variant=variant, scaled=scaled, precompute_d=precompute_d, order=order,
                   n=n, heads=batch * heads, phase=phase, nk=keys, kv_heads=batch * kvh, dropout=bool(p_drop))
    drop_kw: dict[str, Any] = dict(dropout=p_drop, dropout_seed=int(dropout_seed)) if p_drop else {}
    shapes = array_shapes(n=n, d=d, batch=batch, heads=heads, algo=algo, pass_=pass_, **extra)
    arrays = array_declarations(shapes, algo, pass_, precompute_d, order, with_data, seed, tau, bool(causal), n, d,
                                phase, **drop_kw)
    header = program_header(n=n, d=d, algo=algo, pass_=pass_, batch=batch, heads=heads, causal=bool(causal), br=br,
                            bc=bc, how=how, sram_words=sram_words, variant=variant, precompute_d=precompute_d,
                            order=order, tau=tau, scale=scale, cost=cost, g=g, with_data=with_data, seed=seed,
                            phase=phase, **extra, **drop_kw, sram_rule=sram_rule, order_given=order_given,
                            sram_note=_sram_note(sram_rule, sram_words, n, d, br, bc, cost.sram_peak, peak_kw))
    return Program(tuple(e.instrs), tuple(arrays), header=tuple(header))


def _sram_note(rule: str, sram_words: int | None, n: int, d: int, br: int, bc: int, peak: int, kw: dict) -> list[str]:
    """Header lines on how SRAM was counted: under the paper's rule, the exact working set beside it;
    with M given, the paper's block rule worked out — and for seed 001's M = 59, d = 3, its Bc = 4."""
    lines = []
    if rule == "paper":
        exact = sram_peak(br=br, bc=bc, sram_rule="exact", **kw)
        lines.append(f"SRAM rule paper: {peak} words are the blocks of HBM matrices (Q_i, K_j, V_j, O_i …: what the "
                     f"paper's Bc = ⌈M/4d⌉ sizes); the exact working set (S_ij, m, ℓ, temporaries too) is {exact} words"
                     + (" > M: run it on a machine with sram_rule: paper (--machine toysram-paper)"
                        if sram_words is not None and exact > sram_words else "") + ".")
    if sram_words == 59 and d == 3:  # seed 001's worked example: N = 5, d = 3, M = 59
        seed = {r: sram_peak(br=min(3, n), bc=min(4, kw["nk"]), sram_rule=r, **kw) for r in SRAM_RULES}
        fits = [r for r in SRAM_RULES if seed[r] <= 59]
        verdict = ("fit M only under the paper's rule" if fits == ["paper"] else
                   "fit M under both rules" if len(fits) == 2 else "fit M under neither rule")
        lines.append(f"Seed 001 (N = 5, d = 3, M = 59) prints Bc = ⌈M/4d⌉ = 4, but ⌈59/12⌉ = 5 (59/12 = 4.92 rounds "
                     f"up); its Br = 3, Bc = 4 blocks need {seed['paper']} words counted as the paper does (Q_i, K_j, "
                     f"V_j, O_i) and {seed['exact']} counted exactly: they {verdict} (toym gen attention --level tile "
                     f"--sram-rule paper --sram 59 --block-m 3 --block-n 4 plays its 2 × 2 walk).")
    return lines


def _dropout(p, seed) -> float:
    """The drop probability, checked (0 ≤ p < 1), and the mask seed (a whole number ≥ 0)."""
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) or not 0 <= p < 1:
        raise ConfigError.of_option("dropout", f"must be a probability 0 ≤ p < 1, got {p!r}",
                                    hint=("e.g. ", Opt("dropout", 0.1)))
    check_int("dropout_seed", seed, 0)
    return float(p)


def _head_groups(batch: int, heads: int, kv_heads: int) -> list[tuple[tuple, list[tuple]]]:
    """(K/V head prefix, the prefixes of the query heads that read it), in head order: query head
    h of a batch reads K/V head h // (heads / kv_heads). One head: ``[((), [()])]``."""
    if batch * heads == 1:
        return [((), [()])]
    group = heads // kv_heads
    return [((b, kv), [(b, kv * group + q) for q in range(group)]) for b in range(batch) for kv in range(kv_heads)]
