"""Eager attention on the tile machine: standard attention as a framework runs it op by op — one
kernel per operation, each reading its inputs from HBM and writing its output back (seed 004's
"standard attention": 1. S = QKᵀ written, 2. S read, P = softmax(S) written, 3. P read, O = PV
written — with the scale, the mask and dropout each a kernel of their own, as PyTorch's eager
``softmax((Q @ K.T) * τ + mask) @ V`` and its autograd backward run).

``emit_eager`` emits one head's kernels in order (``cost.tile.eager`` lists them with their
words): S = Q·Kᵀ by Br × Bc output tiles (Q_i held, K_j streamed); τ·S, the causal mask and
dropout by blocks (elementwise kernels: read a block, write it back); the softmax by row blocks
of R rows × nk (a row-wise kernel holds its rows); O = Pd·V by tiles. The backward runs
autograd's kernels: dP = dO·Vᵀ, dV = Pdᵀ·dO, dropout's backward, the softmax's backward
dS = P∘(dP − rowsum(P∘dP)) by row blocks, τ·dS, dQ = dS·K, dK = dSᵀ·Q. The mask is additive
(−inf above the diagonal, made on chip by MASK), so its gradient is the identity: no kernel.
Dropout's mask is remade from its seed by DROPOUT wherever it is needed (a framework keeps it in
HBM: one byte an element more).

Arrays: Q K V O (dO dQ dK dV) [n][d] — [batch][heads][n][d] when batch·heads > 1 — and the score
matrices S, P, Pd (dropout), dP, dS [n][nk] per head.
"""

from __future__ import annotations

__all__ = ["EAGER_REGS", "EAGER_TITLE", "eager_kernels", "eager_program", "eager_shapes", "emit_eager"]

from ...cost.tile import Blocks, attention_tile_cost
from ...cost.tile.eager import eager_blocks
from ...errors import ConfigError, Opt
from ...program import ArrayDecl, Program
from ...sim.memory import random_block
from ..common import check_size
from .emit import TAU, Dropout, Emitter, drop
from .reference import attention_reference, dropout_scale

EAGER_TITLE = "eager attention (one kernel per op, each reading its inputs from HBM and writing its output back)"
EAGER_REGS = {"forward": "T0 Q_i → O_i accumulator (Br×d) · T1 K_j → V_j (Bc×d) · T3 S_ij, P_ij (Br×Bc); a row "
                         "block S_i → P_i (R×nk) in the softmax · T6 row max · T5 row sum (R×1)",
              "backward": "T0 dO_i, Q_i (Br×d), dQ_i accumulator · T1 V_j, K_j (Bc×d), dV_j, dK_j accumulators · "
                          "T3 dP_ij, P_ij, dS_ij (Br×Bc); row blocks P_i → P_i∘D_i (T3), dP_i → dS_i (T4) "
                          "(R×nk) · T8 D_i (R×1)"}


def eager_shapes(*, n: int, d: int, batch: int, heads: int, pass_: str, nk: int,
                 dropout: bool) -> dict[str, tuple[int, ...]]:
    """Name → shape of every array the eager program declares."""
    lead = (batch, heads) if batch * heads > 1 else ()
    mat, kmat, sq = lead + (n, d), lead + (nk, d), lead + (n, nk)
    dropped = {"Pd": sq} if dropout else {}
    if pass_ == "forward":
        return {"Q": mat, "K": kmat, "V": kmat, "S": sq, "P": sq, **dropped, "O": mat}
    return {"Q": mat, "K": kmat, "V": kmat, "dO": mat, "P": sq, **dropped, "dP": sq, "dS": sq, "dQ": mat,
            "dK": kmat, "dV": kmat}


def emit_eager(e: Emitter, g: Blocks, d: int, pre: tuple, *, pass_: str, rows: int, scaled: bool,
               dropout: Dropout | None = None) -> None:
    """One head's eager kernels (module docstring); ``rows``: R, the row-wise kernels' rows."""
    t, rws, cols = e.t, g.rows(), g.cols()
    blocks = [(i0, i1, j0, j1) for i0, i1 in rws for j0, j1 in cols]
    srows = [(i, min(g.n, i + rows)) for i in range(0, g.n, rows)]
    dropped = "Pd" if dropout is not None and dropout.p else "P"

    def sblock(array: str, i0: int, i1: int, j0: int, j1: int):
        return e.score_block(array, pre, i0, i1, j0, j1)

    def elementwise(array: str, body) -> None:
        for i0, i1, j0, j1 in blocks:
            e.op("LOAD", sblock(array, i0, i1, j0, j1), t(3))
            body(i0, j0)
            e.op("STORE", t(3), sblock(array, i0, i1, j0, j1))

    def chain(k: int, a, b, acc) -> None:
        if k == 0:
            e.op("MAC_Z", a, b, acc)
        else:
            e.op("MAC", a, b, acc, acc)

    if pass_ == "forward":
        for i0, i1 in rws:  # S = Q·Kᵀ, by (Br, Bc) tiles
            e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))
            for j0, j1 in cols:
                e.op("LOAD", e.block("K", pre, j0, j1, True), t(1))
                e.op("MAC_Z", t(0), t(1, True), t(3))
                e.op("STORE", t(3), sblock("S", i0, i1, j0, j1))
        if scaled:  # S = τ·S
            elementwise("S", lambda i0, j0: e.op("MUL", t(3), t(TAU), t(3)))
        if g.causal:  # S = S + mask (−inf where a key follows its query)
            elementwise("S", lambda i0, j0: e.op("MASK", t(3), i0 + g.shift, j0, t(3)))
        for i0, i1 in srows:  # P = softmax(S), row blocks (R, nk)
            e.op("LOAD", e.block("S", pre, i0, i1, True), t(3))
            e.op("ROWMAX", t(3), t(6))
            e.op("SUB", t(3), t(6), t(3))
            e.op("EXP", t(3), t(3))
            e.op("ROWSUM", t(3), t(5))
            e.op("DIV", t(3), t(5), t(3))
            e.op("STORE", t(3), e.block("P", pre, i0, i1, True))
        if dropped == "Pd":  # Pd = dropout(P)
            for i0, i1, j0, j1 in blocks:
                e.op("LOAD", sblock("P", i0, i1, j0, j1), t(3))
                drop(e, dropout, 3, 3, pre, i0, j0)
                e.op("STORE", t(3), sblock("Pd", i0, i1, j0, j1))
        for i0, i1 in rws:  # O = Pd·V
            for k, (j0, j1) in enumerate(cols):
                e.op("LOAD", sblock(dropped, i0, i1, j0, j1), t(3))
                e.op("LOAD", e.block("V", pre, j0, j1, True), t(1))
                chain(k, t(3), t(1), t(0))
            e.op("STORE", t(0), e.block("O", pre, i0, i1, True))
        return
    for i0, i1 in rws:  # dP = dO·Vᵀ
        e.op("LOAD", e.block("dO", pre, i0, i1, True), t(0))
        for j0, j1 in cols:
            e.op("LOAD", e.block("V", pre, j0, j1, True), t(1))
            e.op("MAC_Z", t(0), t(1, True), t(3))
            e.op("STORE", t(3), sblock("dP", i0, i1, j0, j1))
    for j0, j1 in cols:  # dV = Pdᵀ·dO
        for k, (i0, i1) in enumerate(rws):
            e.op("LOAD", sblock(dropped, i0, i1, j0, j1), t(3))
            e.op("LOAD", e.block("dO", pre, i0, i1, True), t(0))
            chain(k, t(3, True), t(0), t(1))
        e.op("STORE", t(1), e.block("dV", pre, j0, j1, True))
    if dropped == "Pd":  # dP = dropout'(dP): the same mask
        elementwise("dP", lambda i0, j0: drop(e, dropout, 3, 3, pre, i0, j0))
    for i0, i1 in srows:  # dS = P∘(dP − rowsum(P∘dP)), row blocks (R, nk)
        e.op("LOAD", e.block("P", pre, i0, i1, True), t(3))
        e.op("LOAD", e.block("dP", pre, i0, i1, True), t(4))
        e.op("MUL", t(3), t(4), t(4))  # P∘dP
        e.op("ROWSUM", t(4), t(8))  # D_i
        e.op("MUL", t(3), t(8), t(3))  # P∘D
        e.op("SUB", t(4), t(3), t(4))
        e.op("STORE", t(4), e.block("dS", pre, i0, i1, True))
    if scaled:  # dS = τ·dS (the scale's backward)
        elementwise("dS", lambda i0, j0: e.op("MUL", t(3), t(TAU), t(3)))
    for i0, i1 in rws:  # dQ = dS·K
        for k, (j0, j1) in enumerate(cols):
            e.op("LOAD", sblock("dS", i0, i1, j0, j1), t(3))
            e.op("LOAD", e.block("K", pre, j0, j1, True), t(1))
            chain(k, t(3), t(1), t(0))
        e.op("STORE", t(0), e.block("dQ", pre, i0, i1, True))
    for j0, j1 in cols:  # dK = dSᵀ·Q
        for k, (i0, i1) in enumerate(rws):
            e.op("LOAD", sblock("dS", i0, i1, j0, j1), t(3))
            e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))
            chain(k, t(3, True), t(0), t(1))
        e.op("STORE", t(1), e.block("dK", pre, j0, j1, True))


def eager_program(*, n: int, d: int, nk: int, batch: int, heads: int, kv_heads: int, causal: bool, pass_: str,
                  block_m: int | None, block_n: int | None, sram_words: int | None, variant: str, order: str,
                  precompute_d: bool, phase: str | None, tau: float, scale: float | None, dropout: float,
                  dropout_seed: int, with_data: bool, seed: int, max_instructions: int | None,
                  on_size=None) -> Program:
    """The eager program (``gen.tile.attention_program`` with ``algo="eager"``): checks what eager
    attention has no use for, sizes its blocks (``cost.tile.eager.eager_blocks``), emits every head."""
    if kv_heads != heads:
        raise ConfigError("eager attention runs each query head's kernels on its own K, V (a framework repeats a "
                          "grouped K, V to every query head first)", key="kv_heads",
                          hint=("leave ", Opt("kv_heads"), " out with ", Opt("algo", "eager")))
    if variant != "exact":
        raise ConfigError((Opt("variant", variant), " breaks FlashAttention's running statistics; eager attention's "
                           "softmax holds whole rows"), key="variant",
                          hint=("use ", Opt("variant", "exact"), " with ", Opt("algo", "eager")))
    if pass_ == "backward" and (order != "row" or not precompute_d or phase):
        raise ConfigError(("the eager backward is autograd's fixed sequence of kernels: ", Opt("order"), ", ",
                           Opt("precompute_d", False), " and phases are FlashAttention's (fa1, fa2)"), key="order",
                          hint=("leave them out with ", Opt("algo", "eager")))
    scaled, p = tau != 1.0, bool(dropout)
    h = batch * heads
    br, bc, rows, how = eager_blocks(pass_=pass_, n=n, nk=nk, d=d, sram_words=sram_words, block_m=block_m,
                                     block_n=block_n, heads=h, scaled=scaled, dropout=p, causal=causal)
    g = Blocks(n, br, bc, causal, None if nk == n else nk)
    cost = attention_tile_cost(n=n, d=d, algo="eager", pass_=pass_, batch=batch, heads=heads, causal=causal,
                               block_m=br, block_n=bc, scale=tau, dropout=dropout, nk=None if nk == n else nk,
                               block_rows=rows)
    check_size(cost.instructions, f"eager attention with n = {n:,}, {h} head(s)", max_instructions, on_size)
    e = Emitter()
    if scaled:
        e.op("FILL", tau, 1, 1, e.t(TAU))
    dr = Dropout(dropout, dropout_seed, heads) if p else None
    pres = [(b, hh) for b in range(batch) for hh in range(heads)] if h > 1 else [()]
    for pre in pres:
        emit_eager(e, g, d, pre, pass_=pass_, rows=rows, scaled=scaled, dropout=dr)
    shapes = eager_shapes(n=n, d=d, batch=batch, heads=heads, pass_=pass_, nk=nk, dropout=p)
    arrays = _arrays(shapes, pass_, with_data, seed, tau, causal, dropout, dropout_seed)
    lines = [f"Tiled attention on the SRAM/HBM machine: {EAGER_TITLE}, {pass_} pass.",
             "Computes " + ("O = softmax(τ·Q·Kᵀ + mask)·V" if pass_ == "forward" else
                            "dQ, dK, dV of O = softmax(τ·Q·Kᵀ + mask)·V given dO, from Q, K, V, dO and the "
                            "forward's P" + (" and Pd" if p else "")) + (", causal mask" if causal else "")
             + f", per head ({h} head(s)); kernels: " + " · ".join(eager_kernels(pass_, scaled, causal, p)) + ".",
             f"Parameters: n = {n}, nk = {nk}, d = {d}, batch = {batch}, heads = {heads}, causal = {causal}, "
             f"τ = {tau!r}" + (f", dropout p = {dropout!r} (seed {dropout_seed}; the mask remade on chip, never "
                               f"stored)" if p else "") + ".",
             f"Blocks: Br = {br}, Bc = {bc}; Tr = {g.tr}, Tc = {g.tc}; R = {rows} rows ({how}).",
             "Registers (SRAM): " + EAGER_REGS[pass_] + (f" · T{TAU} τ (1×1)" if scaled else "") + ".",
             f"SRAM peak: {cost.sram_peak} words" + (f" of M = {sram_words}" if sram_words is not None else "") + ".",
             f"HBM per head: {cost.formula}.",
             (f"Cost: {cost.reads} words read, {cost.writes} written; {cost.flops_matmul} matmul FLOPs, "
              f"{cost.flops_other} other; {cost.instructions} instructions (toymachine.cost.tile).")]
    return Program(tuple(e.instrs), tuple(arrays), header=tuple(lines))


def eager_kernels(pass_: str, scaled: bool, causal: bool, dropout: bool) -> list[str]:
    """The kernels one head runs, in order."""
    if pass_ == "forward":
        ks = ["S = Q·Kᵀ"] + (["S = τ·S"] if scaled else []) + (["S = S + mask"] if causal else []) \
            + ["P = softmax(S)"] + (["Pd = dropout(P)"] if dropout else [])
        return ks + [("O = Pd·V" if dropout else "O = P·V")]
    return (["dP = dO·Vᵀ", "dV = Pdᵀ·dO" if dropout else "dV = Pᵀ·dO"] + (["dP = dropout'(dP)"] if dropout else [])
            + ["dS = P∘(dP − rowsum(P∘dP))"] + (["dS = τ·dS"] if scaled else []) + ["dQ = dS·K", "dK = dSᵀ·Q"])


def _arrays(shapes: dict, pass_: str, with_data: bool, seed: int, tau: float, causal: bool, dropout: float,
            dropout_seed: int) -> list[ArrayDecl]:
    inputs = ("Q", "K", "V") if pass_ == "forward" else ("Q", "K", "V", "dO")
    values = {name: random_block(seed, name, shapes[name]) for name in inputs} if with_data else {}
    if with_data and pass_ == "backward":
        ref = attention_reference(values["Q"], values["K"], values["V"], scale=tau, causal=causal)
        values["P"] = ref["P"]
        if "Pd" in shapes:
            values["Pd"] = ref["P"] * dropout_scale(ref["P"].shape, dropout, dropout_seed)
    return [ArrayDecl(name, shape, values=(values[name] + 0.0).tolist()) if name in values else ArrayDecl(name, shape)
            for name, shape in shapes.items()]
