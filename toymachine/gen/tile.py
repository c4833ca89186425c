"""Tiled attention on the SRAM/HBM machine: standard, FlashAttention-1 and -2, forward and
backward (seed 000, "Element is Tile" and the backward-pass draft; seed 004, Algorithms 1,
2 and 4; seed 003's tiled attention and its break-it experiments).

``attention_program(n=…, d=…, algo=…)`` returns a ``Program`` for the tile machine: T
registers hold blocks in SRAM, LOAD/STORE move them from/to HBM, MAC_Z/MAC are tensor-core
matmuls (``toymachine.tile``). The arrays are ``Q K V O`` (``dO dQ dK dV`` backward) of
shape [n][d] — [batch][heads][n][d] when batch·heads > 1 — and the row statistics ``L``
(the log-sum-exp), ``m``, ``l``, ``D`` of shape [n] (or [batch][heads][n]). Inputs never
given are the machine's deterministic random values, as for any program.

algo standard — Algorithm 0: S = τQKᵀ is written to HBM, P = softmax(S) is computed by the
    seed's 3-pass safe softmax over S (max, sum, normalise; Problem 4 at tile granularity)
    and written, then O = PV. HBM Θ(n·d + n²).
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
    ``cost_tile``'s pair sums PR = Σ r_i·J_i, PC = Σ W_i (non-causal n·Tc and n·Tr).
    ``phase`` builds one launch alone (``SPLIT_PHASES``), so each kernel launch has its own
    program and counts (``kernels_gpu.traffic`` predicts the launches' bytes from them).

Softmax scale τ (``scale``, default 1/√d): a FILL'd 1×1 tile multiplies S on chip
(``MUL Ts, Tτ, Ts``, Br·Bc FLOPs per pair) and dS in the backward (split order: the dK_j and
dQ_i accumulators once per block instead, as the kernels do); ``scale=1`` emits no
multiply — the seed's convention ("we fold it into Q ahead of time": give Q pre-scaled).

Blocks: ``block_m`` = Br query rows, ``block_n`` = Bc key rows (Triton's BLOCK_M/BLOCK_N),
clamped to n. Without them, ``sram_words`` = M gives the paper's Bc = ⌈M/4d⌉, Br =
min(⌈M/4d⌉, d), shrunk (keeping Br = min(Bc, d)) to the largest that fit when this
program's working set exceeds M (``cost_tile.fit_blocks``); otherwise 64 × 64. The header
of every program says what it computes, its blocks, SRAM occupancy and HBM cost.

Costs in closed form: ``toymachine.cost_tile.attention_tile_cost``.
"""

from __future__ import annotations

__all__ = ["ALGOS", "PASSES", "ORDERS", "SPLIT_PHASES", "VARIANTS", "attention_program", "run_attention",
           "resolve_blocks",
           "attention_reference", "attention_backward_reference", "array_shapes"]

import math
from typing import Iterable

import numpy as np

from ..cost_tile import SPLIT_PHASES, Blocks, attention_tile_cost, check_split, fit_blocks, sram_peak
from ..errors import ConfigError
from ..memory import random_block
from ..program import ArrayDecl, Instr, Mem, Program, Reg, Span

ALGOS = ("standard", "fa1", "fa2")
PASSES = ("forward", "backward")
ORDERS = ("row", "col", "split")  # backward; split's launches: SPLIT_PHASES (from cost_tile)
VARIANTS = ("exact", "no-max", "no-rescale")
DEFAULT_BLOCK = 64
_ALL = Span(None, None)


class _Emitter:
    """Builds the instruction list; an instruction repeated with the same operands is one
    shared ``Instr`` object (a FlashAttention program repeats a few dozen of them)."""

    def __init__(self) -> None:
        self.instrs: list[Instr] = []
        self._regs: dict[tuple[int, bool], Reg] = {}
        self._mems: dict[tuple, Mem] = {}
        self._memo: dict[tuple, Instr] = {}

    def t(self, n: int, transpose: bool = False) -> Reg:
        r = self._regs.get((n, transpose))
        if r is None:
            r = self._regs[(n, transpose)] = Reg(f"T{n}", transpose)
        return r

    def block(self, array: str, prefix: tuple[int, ...], r0: int, r1: int, matrix: bool) -> Mem:
        """``X[prefix…, r0:r1, :]`` (a block of rows), or ``x[prefix…, r0:r1]`` for a statistic."""
        key = (array, prefix, r0, r1, matrix)
        m = self._mems.get(key)
        if m is None:
            index = prefix + ((Span(r0, r1), _ALL) if matrix else (Span(r0, r1),))
            m = self._mems[key] = Mem(array, index)
        return m

    def op(self, mnemonic: str, *args) -> None:
        key = (mnemonic,) + tuple(id(a) if isinstance(a, (Reg, Mem)) else (type(a), a) for a in args)
        ins = self._memo.get(key)
        if ins is None:
            ins = self._memo[key] = Instr(mnemonic, tuple(args))
        self.instrs.append(ins)


# -- parameters ----------------------------------------------------------------------------
def _int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(f"--{name.replace('_', '-')} must be a whole number, got {value!r}")
    if value < minimum:
        raise ConfigError(f"--{name.replace('_', '-')} must be at least {minimum}, got {value}")
    return int(value)


def _choice(name: str, value, choices: Iterable[str]) -> str:
    if value not in choices:
        raise ConfigError(f"--{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def resolve_blocks(*, n: int, d: int, algo: str = "fa2", pass_: str = "forward", block_m: int | None = None,
                   block_n: int | None = None, sram_words: int | None = None, variant: str = "exact",
                   scaled: bool = True, precompute_d: bool = True, order: str = "row",
                   heads: int = 1, phase: str | None = None) -> tuple[int, int, str]:
    """(Br, Bc, how they were chosen): given, from the SRAM size, or 64 × 64; clamped to n."""
    fit = dict(algo=algo, pass_=pass_, d=d, n=n, sram_words=sram_words, variant=variant, scaled=scaled,
               precompute_d=precompute_d, order=order, heads=heads, phase=phase)
    if block_m is not None or block_n is not None or sram_words is None:
        if sram_words is not None and (block_m is None or block_n is None):
            pbr, pbc, _ = fit_blocks(**fit)
        else:
            pbr = pbc = DEFAULT_BLOCK
        br = min(n, block_m if block_m is not None else pbr)
        bc = min(n, block_n if block_n is not None else pbc)
        note = "given" if block_m is not None and block_n is not None else "given / default 64"
        if block_m is None and block_n is None:
            note = f"default {DEFAULT_BLOCK} × {DEFAULT_BLOCK}"
        if (br, bc) != (block_m or br, block_n or bc):
            note += f", clamped to n = {n}"
        if sram_words is not None:
            need = sram_peak(algo=algo, pass_=pass_, d=d, br=br, bc=bc, variant=variant, scaled=scaled,
                             precompute_d=precompute_d, order=order, n=n, heads=heads, phase=phase)
            if need > sram_words:
                fbr, fbc, _ = fit_blocks(**fit)
                raise ConfigError(f"blocks Br = {br}, Bc = {bc} need {need} words of SRAM; --sram is {sram_words}",
                                  hint=f"use --block-m {fbr} --block-n {fbc} (they fit), leave the blocks to --sram, "
                                       f"or use --sram {need}")
        return br, bc, note
    return fit_blocks(**fit)


def array_shapes(*, n: int, d: int, batch: int = 1, heads: int = 1, algo: str = "fa2",
                 pass_: str = "forward") -> dict[str, tuple[int, ...]]:
    """Name → shape of every array the program declares (inputs and outputs)."""
    lead = (batch, heads) if batch * heads > 1 else ()
    mat, vec = lead + (n, d), lead + (n,)
    if pass_ == "forward":
        if algo == "fa1":
            return {"Q": mat, "K": mat, "V": mat, "O": mat, "l": vec, "m": vec}
        shapes = {"Q": mat, "K": mat, "V": mat}
        if algo == "standard":
            shapes.update(S=lead + (n, n), P=lead + (n, n))
        shapes.update(O=mat, L=vec)
        return shapes
    stats = {"m": vec, "l": vec} if algo == "fa1" else {"L": vec}
    return {"Q": mat, "K": mat, "V": mat, "O": mat, "dO": mat, **stats, "D": vec, "dQ": mat, "dK": mat, "dV": mat}


def attention_program(*, n: int, d: int, algo: str = "fa2", pass_: str = "forward", batch: int = 1, heads: int = 1,
                      causal: bool = False, block_m: int | None = None, block_n: int | None = None,
                      sram_words: int | None = None, variant: str = "exact", precompute_d: bool = True,
                      order: str = "row", with_data: bool = False, seed: int = 0,
                      scale: float | None = None, phase: str | None = None) -> Program:
    """A tiled attention program for the tile machine (module docstring: what each
    ``algo``/``pass_``/``order`` does; ``cost_tile.attention_tile_cost``: what it costs).
    ``phase`` (backward, order split only): one of ``SPLIT_PHASES`` alone — one kernel launch.

    ``with_data`` embeds the inputs as ``.data`` (the machine's own random values for
    ``seed``; for the backward also O and the statistics from a float64 numpy forward, so
    the gradients are those of that forward)."""
    n, d = _int("n", n, 1), _int("d", d, 1)
    batch, heads = _int("batch", batch, 1), _int("heads", heads, 1)
    algo = _choice("algo", algo, ALGOS)
    pass_ = _choice("pass", pass_, PASSES)
    variant = _choice("variant", variant, VARIANTS)
    order = _choice("order", order, ORDERS)
    for name, v in (("block_m", block_m), ("block_n", block_n), ("sram", sram_words)):
        if v is not None:
            _int(name, v, 1)
    if not isinstance(causal, (bool, np.bool_)) or not isinstance(precompute_d, (bool, np.bool_)):
        raise ConfigError("causal and precompute_d are true or false")
    if pass_ == "backward" and variant != "exact":
        raise ConfigError(f"--variant {variant} breaks the forward pass; the backward pass is exact only",
                          hint="use --variant exact with --pass backward")
    if pass_ == "backward" and algo == "standard":
        raise ConfigError("the backward pass is generated for fa1 and fa2 (FlashAttention's Algorithm 4)",
                          hint="use --algo fa1 (reads m, l) or --algo fa2 (reads L)")
    check_split(pass_, order, precompute_d, phase)
    if algo == "standard" and variant == "no-rescale":
        raise ConfigError("--variant no-rescale drops the rescaling of running statistics; standard attention "
                          "has none", hint="use --variant exact or no-max with --algo standard")
    tau = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if not math.isfinite(tau) or tau == 0.0:
        raise ConfigError(f"--scale must be a finite non-zero number, got {scale!r}")
    scaled = tau != 1.0
    br, bc, how = resolve_blocks(n=n, d=d, algo=algo, pass_=pass_, block_m=block_m, block_n=block_n,
                                 sram_words=sram_words, variant=variant, scaled=scaled, precompute_d=precompute_d,
                                 order=order, heads=batch * heads, phase=phase)
    g = Blocks(n, br, bc, bool(causal))
    heads_list = [(b, hh) for b in range(batch) for hh in range(heads)] if batch * heads > 1 else [()]
    e = _Emitter()
    if scaled:
        e.op("FILL", tau, 1, 1, e.t(_TAU))
    if pass_ == "backward" and order == "split":  # launch by launch, each over every head (the kernel's grid)
        for ph in (phase,) if phase else SPLIT_PHASES:
            for prefix in heads_list:
                _split_phase(e, g, d, tuple(prefix), ph, algo=algo, scaled=scaled)
    else:
        build = _forward if pass_ == "forward" else _backward
        for prefix in heads_list:
            build(e, g, d, tuple(prefix), algo=algo, variant=variant, scaled=scaled, precompute_d=precompute_d,
                  order=order)
    cost = attention_tile_cost(n=n, d=d, algo=algo, pass_=pass_, batch=batch, heads=heads, causal=bool(causal),
                               block_m=br, block_n=bc, variant=variant, precompute_d=precompute_d, order=order,
                               scale=tau, phase=phase)
    shapes = array_shapes(n=n, d=d, batch=batch, heads=heads, algo=algo, pass_=pass_)
    arrays = _declarations(shapes, algo, pass_, precompute_d, order, with_data, seed, tau, bool(causal), n, d,
                           phase)
    header = _header(n=n, d=d, algo=algo, pass_=pass_, batch=batch, heads=heads, causal=bool(causal), br=br, bc=bc,
                     how=how, sram_words=sram_words, variant=variant, precompute_d=precompute_d, order=order,
                     tau=tau, scale=scale, cost=cost, g=g, with_data=with_data, seed=seed, phase=phase)
    return Program(tuple(e.instrs), tuple(arrays), header=tuple(header))


# -- register maps (the header prints them) ---------------------------------------------------
_TAU = 15  # the 1×1 scale tile, in every program

_FORWARD_REGS = {
    "fa2": "T0 Q_i (Br×d) · T1 K_j, T2 V_j (Bc×d) · T3 S_ij → P̃_ij (Br×Bc) · T4 O_i accumulator (Br×d) · "
           "T5 l_i · T6/T7 m_i, old and new, alternating (Br×1) · T8 rowmax, rowsum (Br×1) · T9 α = e^(m−m_new)",
    "fa1": "T0 Q_i (Br×d) · T1 K_j, T2 V_j (Bc×d) · T3 S_ij → P̃_ij (Br×Bc) · T4 O_i (Br×d) · T5 l_i · T6 m_i → α → "
           "α·l_i · T7 m̃_ij → β · T8 l̃_ij → l_new · T9 m_new (Br×1) · T10 P̃_ij·V_j (Br×d)",
    "standard": "T0 Q_i → O_i accumulator (Br×d) · T1 K_j → V_j (Bc×d) · T3 S_ij → P_ij (Br×Bc) · T6 row max m · "
                "T5 row sum l · T8 rowmax/rowsum of a block · T9 L (Br×1)",
}
_BACKWARD_REGS = ("T0 Q_i, T5 dO_i, T9 dQ_i (Br×d) · T1 K_j, T2 V_j, T10 dK_j, T11 dV_j (Bc×d) · T3 S_ij → P_ij, "
                  "T4 dP_ij → dS_ij (Br×Bc) · T6 L_i (fa1: T6 m_i, T7 l_i) · T8 D_i · T12 rowsum(P∘dP) (Br×1)")
_SPLIT_REGS = ("preprocess: T5 dO_i, T0 O_i → dO_i∘O_i (Br×d), T8 D_i (Br×1) · dkdv: T1 K_j, T2 V_j, T10 dK_j, "
               "T11 dV_j (Bc×d), T0 Q_i, T5 dO_i (Br×d) · dq: T0 Q_i, T5 dO_i, T10 dQ_i (Br×d), T1 K_j, T2 V_j "
               "(Bc×d) · both: T3 S_ij → P_ij, T4 dP_ij → dS_ij (Br×Bc), T6 L_i (fa1: T6 m_i, T7 l_i), T8 D_i "
               "(Br×1). One SRAM for all three launches: through dq, T11 still holds the last dV_j (a GPU starts "
               "each launch empty)")


# -- forward ------------------------------------------------------------------------------------
def _forward(e: _Emitter, g: Blocks, d: int, pre: tuple, *, algo: str, variant: str, scaled: bool, **_) -> None:
    {"fa2": _fa2_forward, "fa1": _fa1_forward, "standard": _standard_forward}[algo](e, g, d, pre, variant, scaled)


def _scores(e: _Emitter, g: Blocks, q: int, k: int, s: int, i0: int, j0: int, j1: int, scaled: bool) -> None:
    """S_ij = τ·Q_i·K_jᵀ, causal-masked where a key follows a query: (Br, Bc) tile in T<s>."""
    t = e.t
    e.op("MAC_Z", t(q), t(k, True), t(s))  # tensor core: Q_i·K_jᵀ
    if scaled:
        e.op("MUL", t(s), t(_TAU), t(s))  # × τ, the softmax scale
    if g.masked(i0, j1):
        e.op("MASK", t(s), i0, j0, t(s))  # −inf where key j0+c > query i0+r


def _fa2_forward(e: _Emitter, g: Blocks, d: int, pre: tuple, variant: str, scaled: bool) -> None:
    """FlashAttention-2, forward (Dao 2023, Algorithm 1): for each Q_i, stream every K_j, V_j
    past a running max m, sum l and unnormalised O_i in SRAM; write O_i = O_i/l and L = m + log l."""
    t, cols = e.t, g.cols()
    for i0, i1 in g.rows():
        r = i1 - i0
        e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))  # (Br, d) tile, stays in SRAM for the row block
        e.op("FILL", 0, r, d, t(4))  # O_i accumulator (Br, d)
        e.op("FILL", 0, r, 1, t(5))  # l_i = 0
        m_old, m_new = 6, 7
        if variant != "no-max":
            e.op("FILL", -math.inf, r, 1, t(m_old))  # m_i = −inf
        for j in range(g.meets(i1)):
            j0, j1 = cols[j]
            e.op("LOAD", e.block("K", pre, j0, j1, True), t(1))  # (Bc, d)
            e.op("LOAD", e.block("V", pre, j0, j1, True), t(2))  # (Bc, d)
            _scores(e, g, 0, 1, 3, i0, j0, j1, scaled)
            if variant == "exact":
                e.op("ROWMAX", t(3), t(8))  # rowmax(S_ij) (Br, 1)
                e.op("MAX", t(m_old), t(8), t(m_new))  # m_new = max(m, rowmax)
                e.op("SUB", t(3), t(m_new), t(3))  # S − m_new (row broadcast)
                e.op("EXP", t(3), t(3))  # P̃ = e^(S − m_new) (Br, Bc)
                e.op("SUB", t(m_old), t(m_new), t(9))
                e.op("EXP", t(9), t(9))  # α = e^(m − m_new) ≤ 1
                e.op("ROWSUM", t(3), t(8))  # rowsum(P̃)
                e.op("MUL", t(5), t(9), t(5))
                e.op("ADD", t(5), t(8), t(5))  # l = α·l + rowsum(P̃)
                e.op("MUL", t(4), t(9), t(4))  # O_i = α·O_i …
                m_old, m_new = m_new, m_old
            elif variant == "no-rescale":  # seed 003, Break 2: per-tile max, old state never rescaled
                e.op("ROWMAX", t(3), t(m_old))  # m = m̃_ij (the tile's own max)
                e.op("SUB", t(3), t(m_old), t(3))
                e.op("EXP", t(3), t(3))
                e.op("ROWSUM", t(3), t(8))
                e.op("ADD", t(5), t(8), t(5))  # l += rowsum, on an incompatible scale
            else:  # no-max, seed 003, Break 1: P̃ = e^S, overflows for large scores
                e.op("EXP", t(3), t(3))
                e.op("ROWSUM", t(3), t(8))
                e.op("ADD", t(5), t(8), t(5))
            e.op("MAC", t(3), t(2), t(4), t(4))  # … + P̃·V_j (tensor core)
        e.op("DIV", t(4), t(5), t(4))  # O_i / l (row broadcast)
        e.op("STORE", t(4), e.block("O", pre, i0, i1, True))
        e.op("LOG", t(5), t(5))  # log l
        if variant != "no-max":
            e.op("ADD", t(m_old), t(5), t(5))  # L = m + log l, the log-sum-exp
        e.op("STORE", t(5), e.block("L", pre, i0, i1, False))


def _fa1_forward(e: _Emitter, g: Blocks, d: int, pre: tuple, variant: str, scaled: bool) -> None:
    """FlashAttention-1, forward (Dao et al. 2022, Algorithm 1; Algorithm 2 with the mask):
    for each K_j, V_j, update every Q_i's O_i, l_i, m_i in HBM."""
    t, rows = e.t, g.rows()
    for j0, j1 in g.cols():
        e.op("LOAD", e.block("K", pre, j0, j1, True), t(1))  # (Bc, d), stays for the whole inner loop
        e.op("LOAD", e.block("V", pre, j0, j1, True), t(2))
        for i in range(g.met_by(j0), g.tr):
            i0, i1 = rows[i]
            e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))  # (Br, d)
            e.op("LOAD", e.block("O", pre, i0, i1, True), t(4))  # (Br, d), read and written per pair
            e.op("LOAD", e.block("l", pre, i0, i1, False), t(5))  # (Br, 1)
            if variant == "exact":
                e.op("LOAD", e.block("m", pre, i0, i1, False), t(6))
            _scores(e, g, 0, 1, 3, i0, j0, j1, scaled)
            if variant == "exact":
                e.op("ROWMAX", t(3), t(7))  # m̃_ij = rowmax(S_ij)
                if g.causal:  # safe shift: a row the mask empties has rowmax −inf; P̃ = e^(−inf − m) = 0
                    e.op("MAX", t(7), t(6), t(7))
                e.op("SUB", t(3), t(7), t(3))
                e.op("EXP", t(3), t(3))  # P̃_ij = e^(S − m̃)
                e.op("ROWSUM", t(3), t(8))  # l̃_ij
                e.op("MAX", t(6), t(7), t(9))  # m_new = max(m_i, m̃_ij)
                e.op("SUB", t(6), t(9), t(6))
                e.op("EXP", t(6), t(6))  # α = e^(m_i − m_new)
                e.op("SUB", t(7), t(9), t(7))
                e.op("EXP", t(7), t(7))  # β = e^(m̃ − m_new)
                e.op("MUL", t(5), t(6), t(6))  # α·l_i
                e.op("MUL", t(8), t(7), t(8))  # β·l̃
                e.op("ADD", t(6), t(8), t(8))  # l_new = α·l_i + β·l̃
                e.op("MUL", t(4), t(6), t(4))  # diag(l_i)·α·O_i
                e.op("MAC_Z", t(3), t(2), t(10))  # P̃_ij·V_j (Br, d)
                e.op("MUL", t(10), t(7), t(10))  # β·P̃V
                e.op("ADD", t(4), t(10), t(4))
                e.op("DIV", t(4), t(8), t(4))  # O_i = diag(l_new)⁻¹(…)
                e.op("STORE", t(4), e.block("O", pre, i0, i1, True))
                e.op("STORE", t(8), e.block("l", pre, i0, i1, False))
                e.op("STORE", t(9), e.block("m", pre, i0, i1, False))
                continue
            if variant == "no-rescale":
                e.op("ROWMAX", t(3), t(7))  # m̃_ij; m_i := m̃_ij, l and O never rescaled
                e.op("SUB", t(3), t(7), t(3))
            e.op("EXP", t(3), t(3))
            e.op("ROWSUM", t(3), t(8))
            e.op("ADD", t(5), t(8), t(8))  # l_new = l_i + l̃ (no rescaling)
            e.op("MUL", t(4), t(5), t(4))  # diag(l_i)·O_i
            e.op("MAC", t(3), t(2), t(4), t(4))
            e.op("DIV", t(4), t(8), t(4))
            e.op("STORE", t(4), e.block("O", pre, i0, i1, True))
            e.op("STORE", t(8), e.block("l", pre, i0, i1, False))
            if variant == "no-rescale":
                e.op("STORE", t(7), e.block("m", pre, i0, i1, False))


def _standard_forward(e: _Emitter, g: Blocks, d: int, pre: tuple, variant: str, scaled: bool) -> None:
    """Standard attention (the FlashAttention paper's Algorithm 0), blocked to fit SRAM:
    S = τQKᵀ to HBM; P = softmax(S) to HBM by the seed's safe softmax (a pass for the row
    max, one for the row sum, one to normalise), then O = PV."""
    t, rows, cols = e.t, g.rows(), g.cols()
    for i0, i1 in rows:  # 1. S = τ·Q·Kᵀ
        e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))
        for j0, j1 in cols:
            e.op("LOAD", e.block("K", pre, j0, j1, True), t(1))
            _scores(e, g, 0, 1, 3, i0, j0, j1, scaled)
            e.op("STORE", t(3), _sblock(e, "S", pre, i0, i1, j0, j1))
    for i0, i1 in rows:  # 2. P = softmax(S), row block by row block
        if variant == "exact":
            for k, (j0, j1) in enumerate(cols):  # pass 1: m = row max
                e.op("LOAD", _sblock(e, "S", pre, i0, i1, j0, j1), t(3))
                if k == 0:
                    e.op("ROWMAX", t(3), t(6))
                else:
                    e.op("ROWMAX", t(3), t(8))
                    e.op("MAX", t(6), t(8), t(6))
        for k, (j0, j1) in enumerate(cols):  # pass 2: l = Σ e^(S − m)
            e.op("LOAD", _sblock(e, "S", pre, i0, i1, j0, j1), t(3))
            if variant == "exact":
                e.op("SUB", t(3), t(6), t(3))
            e.op("EXP", t(3), t(3))
            if k == 0:
                e.op("ROWSUM", t(3), t(5))
            else:
                e.op("ROWSUM", t(3), t(8))
                e.op("ADD", t(5), t(8), t(5))
        e.op("LOG", t(5), t(9))
        if variant == "exact":
            e.op("ADD", t(6), t(9), t(9))  # L = m + log l
        e.op("STORE", t(9), e.block("L", pre, i0, i1, False))
        for j0, j1 in cols:  # pass 3: P = e^(S − m) / l
            e.op("LOAD", _sblock(e, "S", pre, i0, i1, j0, j1), t(3))
            if variant == "exact":
                e.op("SUB", t(3), t(6), t(3))
            e.op("EXP", t(3), t(3))
            e.op("DIV", t(3), t(5), t(3))
            e.op("STORE", t(3), _sblock(e, "P", pre, i0, i1, j0, j1))
    for i0, i1 in rows:  # 3. O = P·V
        for k, (j0, j1) in enumerate(cols):
            e.op("LOAD", _sblock(e, "P", pre, i0, i1, j0, j1), t(3))
            e.op("LOAD", e.block("V", pre, j0, j1, True), t(1))
            if k == 0:
                e.op("MAC_Z", t(3), t(1), t(0))
            else:
                e.op("MAC", t(3), t(1), t(0), t(0))
        e.op("STORE", t(0), e.block("O", pre, i0, i1, True))


def _sblock(e: _Emitter, array: str, pre: tuple, i0: int, i1: int, j0: int, j1: int) -> Mem:
    key = (array, pre, i0, i1, j0, j1)
    m = e._mems.get(key)
    if m is None:
        m = e._mems[key] = Mem(array, pre + (Span(i0, i1), Span(j0, j1)))
    return m


# -- backward -----------------------------------------------------------------------------------
def _backward(e: _Emitter, g: Blocks, d: int, pre: tuple, *, algo: str, scaled: bool, precompute_d: bool,
              order: str, **_) -> None:
    """FlashAttention backward (Algorithm 4; seed 000's draft): recompute P from the saved
    statistics, dV += Pᵀ·dO, dP = dO·Vᵀ, dS = P∘(dP − D)·τ, dQ += dS·K, dK += dSᵀ·Q."""
    t, rows, cols = e.t, g.rows(), g.cols()
    fa1 = algo == "fa1"
    if precompute_d:  # D_i = rowsum(dO_i ∘ O_i): the Dᵢ trick, no P needed
        for i0, i1 in rows:
            e.op("LOAD", e.block("dO", pre, i0, i1, True), t(5))
            e.op("LOAD", e.block("O", pre, i0, i1, True), t(9))
            e.op("MUL", t(5), t(9), t(9))
            e.op("ROWSUM", t(9), t(8))
            e.op("STORE", t(8), e.block("D", pre, i0, i1, False))

    def load_row(i0: int, i1: int) -> None:
        """Q_i, dO_i (Br, d) and the row statistics L_i (fa1: m_i, l_i) (Br, 1)."""
        e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))
        e.op("LOAD", e.block("dO", pre, i0, i1, True), t(5))
        if fa1:
            e.op("LOAD", e.block("m", pre, i0, i1, False), t(6))
            e.op("LOAD", e.block("l", pre, i0, i1, False), t(7))
        else:
            e.op("LOAD", e.block("L", pre, i0, i1, False), t(6))

    def probabilities(i0: int, j0: int, j1: int) -> None:
        """P_ij recomputed: (Br, Bc) in T3."""
        _scores(e, g, 0, 1, 3, i0, j0, j1, scaled)
        e.op("SUB", t(3), t(6), t(3))  # S − L (fa1: S − m)
        e.op("EXP", t(3), t(3))
        if fa1:
            e.op("DIV", t(3), t(7), t(3))  # diag(l)⁻¹·e^(S − m)

    def d_contribution() -> None:
        e.op("MAC_Z", t(5), t(2, True), t(4))  # dP = dO_i·V_jᵀ
        e.op("MUL", t(3), t(4), t(4))  # P∘dP
        e.op("ROWSUM", t(4), t(12))
        e.op("ADD", t(8), t(12), t(8))  # D_i += rowsum(P∘dP)

    def gradients(dv_rmw: tuple | None, dk_rmw: tuple | None) -> None:
        if dv_rmw:
            e.op("LOAD", dv_rmw, t(11))
        e.op("MAC", t(3, True), t(5), t(11), t(11))  # dV_j += P_ijᵀ·dO_i
        if dv_rmw:
            e.op("STORE", t(11), dv_rmw)
        e.op("MAC_Z", t(5), t(2, True), t(4))  # dP_ij = dO_i·V_jᵀ
        e.op("SUB", t(4), t(8), t(4))  # dP − D_i (row broadcast)
        e.op("MUL", t(3), t(4), t(4))  # dS = P∘(dP − D)
        if scaled:
            e.op("MUL", t(4), t(_TAU), t(4))  # τ·dS
        e.op("MAC", t(4), t(1), t(9), t(9))  # dQ_i += dS·K_j
        if dk_rmw:
            e.op("LOAD", dk_rmw, t(10))
        e.op("MAC", t(4, True), t(0), t(10), t(10))  # dK_j += dSᵀ·Q_i
        if dk_rmw:
            e.op("STORE", t(10), dk_rmw)

    if order == "col":  # K_j outer: dK_j, dV_j in SRAM; dQ_i read-modified-written (Algorithm 4)
        for pass_no in ((0, 1) if not precompute_d else (1,)):
            for j0, j1 in cols:
                e.op("LOAD", e.block("K", pre, j0, j1, True), t(1))  # (Bc, d), once per key block and pass
                e.op("LOAD", e.block("V", pre, j0, j1, True), t(2))
                if pass_no == 1:
                    e.op("FILL", 0, j1 - j0, d, t(10))  # dK_j = 0
                    e.op("FILL", 0, j1 - j0, d, t(11))  # dV_j = 0
                for i in range(g.met_by(j0), g.tr):
                    i0, i1 = rows[i]
                    load_row(i0, i1)
                    e.op("LOAD", e.block("D", pre, i0, i1, False), t(8))
                    if pass_no == 1:
                        e.op("LOAD", e.block("dQ", pre, i0, i1, True), t(9))
                    probabilities(i0, j0, j1)
                    if pass_no == 0:  # without the trick: D_i = rowsum(P∘dP) over every key block first
                        d_contribution()
                        e.op("STORE", t(8), e.block("D", pre, i0, i1, False))
                        continue
                    gradients(None, None)
                    e.op("STORE", t(9), e.block("dQ", pre, i0, i1, True))
                if pass_no == 1:
                    e.op("STORE", t(10), e.block("dK", pre, j0, j1, True))
                    e.op("STORE", t(11), e.block("dV", pre, j0, j1, True))
        return
    for i0, i1 in rows:  # Q_i outer: dQ_i in SRAM; dK_j, dV_j read-modified-written per pair
        r = i1 - i0
        load_row(i0, i1)
        if precompute_d:
            e.op("LOAD", e.block("D", pre, i0, i1, False), t(8))
        else:
            e.op("FILL", 0, r, 1, t(8))  # D_i accumulated from P∘dP
        e.op("FILL", 0, r, d, t(9))  # dQ_i = 0
        jn = g.meets(i1)
        if not precompute_d:
            for j0, j1 in cols[:jn]:  # the first pass over the keys: D_i only
                e.op("LOAD", e.block("K", pre, j0, j1, True), t(1))
                e.op("LOAD", e.block("V", pre, j0, j1, True), t(2))
                probabilities(i0, j0, j1)
                d_contribution()
        for j0, j1 in cols[:jn]:
            e.op("LOAD", e.block("K", pre, j0, j1, True), t(1))
            e.op("LOAD", e.block("V", pre, j0, j1, True), t(2))
            probabilities(i0, j0, j1)
            gradients(e.block("dV", pre, j0, j1, True), e.block("dK", pre, j0, j1, True))
        e.op("STORE", t(9), e.block("dQ", pre, i0, i1, True))


def _split_phase(e: _Emitter, g: Blocks, d: int, pre: tuple, phase: str, *, algo: str, scaled: bool) -> None:
    """One launch of FlashAttention-2's split backward (``kernels_gpu.kernels``: _attn_bwd_preprocess,
    _attn_bwd_dkdv, _attn_bwd_dq) for one head. The kernel's loops exactly: the same blocks, the
    same causal ranges (dkdv: Q blocks from the one holding key j0 on; dq: K blocks up to the
    query block's last row); τ multiplies S per pair and the dK, dQ accumulators once."""
    t, rows, cols = e.t, g.rows(), g.cols()
    fa1 = algo == "fa1"
    if phase == "preprocess":  # D_i = rowsum(dO_i∘O_i): (Br, d) tiles in T5, T0; (Br, 1) in T8
        for i0, i1 in rows:
            e.op("LOAD", e.block("dO", pre, i0, i1, True), t(5))
            e.op("LOAD", e.block("O", pre, i0, i1, True), t(0))
            e.op("MUL", t(5), t(0), t(0))
            e.op("ROWSUM", t(0), t(8))
            e.op("STORE", t(8), e.block("D", pre, i0, i1, False))
        return

    def load_row(i0: int, i1: int) -> None:
        """Q_i, dO_i (Br, d), the statistics L_i (fa1: m_i, l_i) and D_i (Br, 1)."""
        e.op("LOAD", e.block("Q", pre, i0, i1, True), t(0))
        e.op("LOAD", e.block("dO", pre, i0, i1, True), t(5))
        if fa1:
            e.op("LOAD", e.block("m", pre, i0, i1, False), t(6))
            e.op("LOAD", e.block("l", pre, i0, i1, False), t(7))
        else:
            e.op("LOAD", e.block("L", pre, i0, i1, False), t(6))
        e.op("LOAD", e.block("D", pre, i0, i1, False), t(8))

    def probabilities_and_ds(i0: int, j0: int, j1: int) -> None:
        """P_ij = e^(τ·Q_i·K_jᵀ − L_i) in T3 (fa1: e^(S − m)/l); dS_ij/τ = P∘(dO_i·V_jᵀ − D_i) in T4."""
        _scores(e, g, 0, 1, 3, i0, j0, j1, scaled)
        e.op("SUB", t(3), t(6), t(3))
        e.op("EXP", t(3), t(3))
        if fa1:
            e.op("DIV", t(3), t(7), t(3))
        if phase == "dkdv":
            e.op("MAC", t(3, True), t(5), t(11), t(11))  # dV_j += P_ijᵀ·dO_i (Bc, d)
        e.op("MAC_Z", t(5), t(2, True), t(4))  # dP_ij = dO_i·V_jᵀ (Br, Bc)
        e.op("SUB", t(4), t(8), t(4))
        e.op("MUL", t(3), t(4), t(4))  # dS_ij without τ

    if phase == "dkdv":  # K_j outer: K_j, V_j, dK_j (T10), dV_j (T11) stay in SRAM
        for j0, j1 in cols:
            e.op("LOAD", e.block("K", pre, j0, j1, True), t(1))  # (Bc, d), once per launch
            e.op("LOAD", e.block("V", pre, j0, j1, True), t(2))
            e.op("FILL", 0, j1 - j0, d, t(10))
            e.op("FILL", 0, j1 - j0, d, t(11))
            for i0, i1 in rows[g.met_by(j0):]:
                load_row(i0, i1)  # streamed: once per pair
                probabilities_and_ds(i0, j0, j1)
                e.op("MAC", t(4, True), t(0), t(10), t(10))  # dK_j += dS_ijᵀ·Q_i
            if scaled:
                e.op("MUL", t(10), t(_TAU), t(10))  # dK_j = τ·Σ dSᵀQ
            e.op("STORE", t(10), e.block("dK", pre, j0, j1, True))
            e.op("STORE", t(11), e.block("dV", pre, j0, j1, True))
        return
    for i0, i1 in rows:  # dq, Q_i outer: Q_i, dO_i, L_i, D_i and dQ_i (T10) stay in SRAM
        load_row(i0, i1)
        e.op("FILL", 0, i1 - i0, d, t(10))
        for j0, j1 in cols[:g.meets(i1)]:
            e.op("LOAD", e.block("K", pre, j0, j1, True), t(1))  # streamed: once per pair
            e.op("LOAD", e.block("V", pre, j0, j1, True), t(2))
            probabilities_and_ds(i0, j0, j1)
            e.op("MAC", t(4), t(1), t(10), t(10))  # dQ_i += dS_ij·K_j
        if scaled:
            e.op("MUL", t(10), t(_TAU), t(10))  # dQ_i = τ·Σ dS·K
        e.op("STORE", t(10), e.block("dQ", pre, i0, i1, True))


# -- arrays, data, header -----------------------------------------------------------------------
def _declarations(shapes: dict, algo: str, pass_: str, precompute_d: bool, order: str, with_data: bool, seed: int,
                  tau: float, causal: bool, n: int, d: int, phase: str | None = None) -> list[ArrayDecl]:
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
            ref = attention_reference(values["Q"], values["K"], values["V"], scale=tau, causal=causal)
            for name in ("O", "L", "m", "l"):
                if name in shapes:
                    values[name] = ref[name]
            if phase in ("dkdv", "dq"):  # a launch alone reads D that its preprocess would have written
                values["D"] = (values["dO"] * ref["O"]).sum(axis=-1)
    decls = []
    for name, shape in shapes.items():
        if name in values:
            decls.append(ArrayDecl(name, shape, values=(values[name] + 0.0).tolist()))
        else:
            decls.append(ArrayDecl(name, shape, fill=fills.get(name)))
    return decls


def _header(*, n, d, algo, pass_, batch, heads, causal, br, bc, how, sram_words, variant, precompute_d, order, tau,
            scale, cost, g, with_data, seed, phase=None) -> list[str]:
    title = {"standard": "standard attention (Algorithm 0: S and P materialised in HBM)",
             "fa1": "FlashAttention-1 (Algorithm 1: K_j, V_j outer; O, l, m updated in HBM per block pair)",
             "fa2": "FlashAttention-2 (Q_i outer; O_i, l_i, m_i stay in SRAM; O and L written once)"}[algo]
    h = batch * heads
    lines = [f"Tiled attention on the SRAM/HBM machine: {title}, {pass_} pass."]
    if pass_ == "forward":
        what = "O = softmax(τ·Q·Kᵀ)·V"
        what += ", L = rowmax + log(rowsum) (log-sum-exp)" if algo != "fa1" else ", l = rowsum, m = rowmax"
        if variant != "exact":
            what += f" — variant {variant} (seed 003's break-it: " + (
                "no running max, e^S overflows for large scores)" if variant == "no-max"
                else "per-tile max, old statistics never rescaled: finite but wrong)")
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
        if phase:
            what += f" — the {phase} launch only"
    lines.append("Computes " + what + (", causal mask" if causal else "") + f", per head ({h} head(s)).")
    dims = f"[{batch}][{heads}][n]" if h > 1 else "[n]"
    lines.append(f"Parameters: n = {n}, d = {d}, batch = {batch}, heads = {heads}, causal = {causal}; arrays "
                 f"{dims}[d] and {dims} statistics.")
    tau_text = "1/√d" if scale is None else "given"
    if tau != 1.0:
        to_ds = {"forward": "", "backward": " and to dS"}[pass_]
        if pass_ == "backward" and order == "split":
            to_ds = " and to the dK_j, dQ_i accumulators before they are stored (as the kernels do)"
        lines.append(f"Scale τ = {tau!r} ({tau_text}): FILL makes the 1×1 tile T{_TAU}; MUL applies it to S on chip"
                     + to_ds + " (scale=1 omits both: the seed's Q pre-scaled).")
    else:
        lines.append("Scale τ = 1: no multiply (the seed's convention: fold 1/√d into Q ahead of time).")
    lines.append(f"Blocks: Br = {br} query rows (block_m), Bc = {bc} key rows (block_n); Tr = {g.tr}, Tc = {g.tc} "
                 f"({how}).")
    regs = _FORWARD_REGS[algo] if pass_ == "forward" else _SPLIT_REGS if order == "split" else _BACKWARD_REGS
    lines.append("Registers (SRAM): " + regs
                 + (f" · T{_TAU} τ (1×1)" if tau != 1.0 else "") + ".")
    peak_text = f"SRAM peak: {cost.sram_peak} words"
    if sram_words is not None:
        peak_text += f" of M = {sram_words}"
    lines.append(peak_text + "; a machine with fewer sram_words stops with a MachineLimitError — use smaller blocks "
                 "(--block-m/--block-n) or --sram to size them.")
    lines.append(f"HBM per head: {cost.formula}.")
    lines.append(f"Cost: {cost.reads} words read, {cost.writes} written; {cost.flops_matmul} matmul FLOPs, "
                 f"{cost.flops_other} other; {cost.instructions} instructions (toymachine.cost_tile).")
    if pass_ == "backward" and not with_data:
        lines.append("O and the statistics are read from HBM: give them (--data, or with_data) — the machine's random "
                     "stand-ins run, but are no forward's output.")
    params = [f"--algo {algo}", f"--n {n}", f"--d {d}"]
    if h > 1:
        params += [f"--batch {batch}", f"--heads {heads}"]
    if causal:
        params.append("--causal")
    params += [f"--block-m {br}", f"--block-n {bc}"]
    if pass_ != "forward":
        params.append(f"--pass {pass_}")
    if variant != "exact":
        params.append(f"--variant {variant}")
    if with_data:
        params.append(f"--data --seed {seed}")
    lines.append("Regenerate: toym gen attention --level tile " + " ".join(params)
                 + ("" if pass_ == "forward" else f"  (API: order={order!r}, precompute_d={precompute_d}"
                    + (f", phase={phase!r})" if phase else ")"))
                 + ("" if scale is None else f"  (API: scale={scale!r})"))
    return lines


# -- numpy references (float64) -------------------------------------------------------------------
def attention_reference(q, k, v, *, scale: float | None = None, causal: bool = False) -> dict[str, np.ndarray]:
    """O = softmax(τ·Q·Kᵀ)·V and the row statistics L (log-sum-exp), m (row max), l (row sum
    of e^(S − m)), for arrays of shape (…, n, d)."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    tau = q.shape[-1] ** -0.5 if scale is None else scale
    s = tau * (q @ np.swapaxes(k, -1, -2))
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    l_ = p.sum(axis=-1, keepdims=True)
    return {"O": (p / l_) @ v, "L": (m + np.log(l_))[..., 0], "m": m[..., 0], "l": l_[..., 0], "P": p / l_}


def attention_backward_reference(q, k, v, do, *, scale: float | None = None,
                                 causal: bool = False) -> dict[str, np.ndarray]:
    """dQ, dK, dV (and D = rowsum(dO∘O)) of O = softmax(τ·Q·Kᵀ)·V for upstream gradient dO."""
    q, k, v, do = (np.asarray(x, dtype=np.float64) for x in (q, k, v, do))
    tau = q.shape[-1] ** -0.5 if scale is None else scale
    fwd = attention_reference(q, k, v, scale=tau, causal=causal)
    p, o = fwd["P"], fwd["O"]
    dv = np.swapaxes(p, -1, -2) @ do
    dp = do @ np.swapaxes(v, -1, -2)
    dd = (do * o).sum(axis=-1, keepdims=True)
    ds = p * (dp - dd)
    return {"dQ": tau * ds @ k, "dK": tau * np.swapaxes(ds, -1, -2) @ q, "dV": dv, "D": dd[..., 0]}


# -- running it: arrays in, arrays out (what a GPU kernel is compared with) -------------------------
def run_attention(q, k, v, do=None, *, algo: str = "fa2", causal: bool = False, block_m: int | None = 64,
                  block_n: int | None = 64, scale: float | None = None, dtype: str | None = None, machine=None,
                  order: str = "col", precompute_d: bool = True, strict_numerics: bool = False) -> dict:
    """Simulate the tile program on given inputs and return its outputs as arrays.

    ``q, k, v`` (and ``do``): float arrays of shape (n, d), (heads, n, d) or (batch, heads, n, d).
    Returns ``O`` (the inputs' shape) and the statistics ``L`` (fa1: ``m``, ``l``) of shape
    (…, n); with ``do``, the backward pass too, fed the simulated O and statistics:
    ``dQ, dK, dV`` (and ``D``). ``forward``/``backward`` hold the ``Result``s (counts,
    alarms). ``machine``: a ``Machine`` or preset name (default: the seed's); ``dtype``
    overrides the machine's."""
    from ..machine import Machine, resolve_machine
    from ..simulator import simulate

    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    if q.ndim not in (2, 3, 4) or k.shape != q.shape or v.shape != q.shape:
        raise ConfigError(f"q, k, v must share a shape (n, d), (heads, n, d) or (batch, heads, n, d); got "
                          f"{q.shape}, {k.shape}, {v.shape}")
    lead = q.shape[:-2]
    batch, heads = (1,) * (2 - len(lead)) + tuple(lead)
    n, d = q.shape[-2:]
    mach = machine if isinstance(machine, Machine) or machine is None else resolve_machine(machine)
    common = dict(n=n, d=d, algo=algo, batch=batch, heads=heads, causal=causal, block_m=block_m, block_n=block_n,
                  scale=scale)
    shapes = array_shapes(n=n, d=d, batch=batch, heads=heads, algo=algo)

    def given(**arrays):
        return {name: a.reshape(shapes[name]) for name, a in arrays.items()}

    fwd = simulate(attention_program(**common), mach, given(Q=q, K=k, V=v), dtype=dtype,
                   strict_numerics=strict_numerics, steps=False)
    stats = ("m", "l") if algo == "fa1" else ("L",)
    out = {"O": fwd.array("O").reshape(q.shape), "forward": fwd}
    for name in stats:
        out[name] = fwd.array(name).reshape(q.shape[:-1])
    if do is None:
        return out
    do = np.asarray(do, dtype=np.float64).reshape(q.shape)
    bshapes = array_shapes(n=n, d=d, batch=batch, heads=heads, algo=algo, pass_="backward")
    data = {"Q": q, "K": k, "V": v, "dO": do, "O": out["O"], **{name: out[name] for name in stats}}
    data = {name: a.reshape(bshapes[name]) for name, a in data.items()}
    bwd = simulate(attention_program(**common, pass_="backward", order=order, precompute_d=precompute_d), mach, data,
                   dtype=dtype, strict_numerics=strict_numerics, steps=False)
    out.update({name: bwd.array(name).reshape(q.shape) for name in ("dQ", "dK", "dV")})
    out["D"] = bwd.array("D").reshape(q.shape[:-1])
    out["backward"] = bwd
    return out


# -- the sweep registry (toymachine.gen.registry loads this module as a plugin) ---------------------
def _register() -> None:
    from ..cost import Bound, Cost
    from .registry import GeneratorSpec, Param, register

    def params(p: dict) -> dict:
        p = dict(p)
        p["pass_"] = p.pop("pass")
        p["sram_words"] = p.pop("sram")
        return p

    def build(with_data: bool = False, seed: int = 0, **p) -> Program:
        return attention_program(**params(p), with_data=with_data, seed=seed)

    def cost(**p) -> Cost:
        q = params(p)
        tau = 1.0 / math.sqrt(q["d"])
        br, bc, _ = resolve_blocks(n=q["n"], d=q["d"], algo=q["algo"], pass_=q["pass_"], block_m=q["block_m"],
                                   block_n=q["block_n"], sram_words=q["sram_words"], variant=q["variant"],
                                   scaled=tau != 1.0, precompute_d=q["precompute_d"], order=q["order"],
                                   heads=q["batch"] * q["heads"])
        c = attention_tile_cost(n=q["n"], d=q["d"], algo=q["algo"], pass_=q["pass_"], batch=q["batch"],
                                heads=q["heads"], causal=q["causal"], block_m=br, block_n=bc, variant=q["variant"],
                                precompute_d=q["precompute_d"], order=q["order"])
        return Cost(ops=dict(c.ops), registers=c.registers,
                    breakdown={"HBM reads": c.reads, "HBM writes": c.writes, "SRAM peak": c.sram_peak,
                               "HBM footprint": c.hbm_footprint, "matmul FLOPs": c.flops_matmul,
                               "other FLOPs": c.flops_other})

    def bound(**p) -> Bound:
        """Compulsory traffic: every input word read once, every output word written once."""
        shapes = array_shapes(n=p["n"], d=p["d"], batch=p["batch"], heads=p["heads"], algo=p["algo"],
                              pass_=p["pass"])
        size = {k: int(np.prod(v)) for k, v in shapes.items()}
        if p["pass"] == "forward":
            ins, outs = ("Q", "K", "V"), (("O", "l", "m") if p["algo"] == "fa1" else ("O", "L"))
        else:
            ins = ("Q", "K", "V", "O", "dO") + (("m", "l") if p["algo"] == "fa1" else ("L",))
            outs = ("dQ", "dK", "dV")
        reads, writes = sum(size[a] for a in ins), sum(size[a] for a in outs)
        return Bound(reads=reads, writes=writes, traffic=reads + writes,
                     source="attention-tile: every input read once, every output written once")

    def machine(p, m):
        return m.with_(sram_words=p["sram"]) if p.get("sram") else m

    register(GeneratorSpec(
        "attention-tile", "tiled attention on the SRAM/HBM machine: standard, FlashAttention-1/2, forward/backward",
        (Param("n", int, 256, "sequence length", minimum=1),
         Param("d", int, 64, "head dimension", minimum=1),
         Param("algo", str, "fa2", "standard, fa1 or fa2", choices=ALGOS),
         Param("pass", str, "forward", "forward or backward", choices=PASSES),
         Param("batch", int, 1, "batch size", minimum=1),
         Param("heads", int, 1, "heads", minimum=1),
         Param("causal", bool, False, "causal mask"),
         Param("block_m", int, None, "query block rows Br (default: from --sram, else 64)", minimum=1),
         Param("block_n", int, None, "key block rows Bc (default: from --sram, else 64)", minimum=1),
         Param("sram", int, None, "SRAM words M: sizes the blocks and bounds the machine", minimum=1),
         Param("variant", str, "exact", "exact, no-max or no-rescale (seed 003's breaks)", choices=VARIANTS),
         Param("order", str, "row", "backward: row (Q outer), col (K outer) or split (FA2's three kernels)",
               choices=ORDERS),
         Param("precompute_d", bool, True, "backward: D = rowsum(dO∘O) first (K, V loaded once)")),
        build=build, cost=cost, bound=bound, machine=machine), replace=True)


_register()
