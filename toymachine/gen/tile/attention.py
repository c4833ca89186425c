"""Tiled attention on the SRAM/HBM machine: standard, FlashAttention-1 and -2, forward and
backward (seed 000, "Element is Tile" and the backward-pass draft; seed 004, Algorithms 1,
2 and 4; seed 003's tiled attention and its break-it experiments).

``attention_program(n=…, d=…, algo=…)`` returns a ``Program`` for the tile machine: T
registers hold blocks in SRAM, LOAD/STORE move them from/to HBM, MAC_Z/MAC are tensor-core
matmuls (``toymachine.sim.engines.tile``). The arrays are ``Q K V O`` (``dO dQ dK dV`` backward) of
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
    ``cost.tile``'s pair sums PR = Σ r_i·J_i, PC = Σ W_i (non-causal n·Tc and n·Tr).
    ``phase`` builds one launch alone (``SPLIT_PHASES``), so each kernel launch has its own
    program and counts (``kernels_gpu.traffic`` predicts the launches' bytes from them).

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

This module holds the public API (``attention_program``, ``run_attention``, ``array_shapes``,
``resolve_blocks``, the parameter tuples; ``gen.catalog`` registers ``attention-tile`` with the
sweep). The instruction streams live in ``forward`` (standard, FA1, FA2) and ``backward`` (row,
col, split), sharing ``emit``'s ``Emitter``; the arrays and header in ``header``; the float64
references in ``reference``.
"""

from __future__ import annotations

__all__ = ["ALGOS", "PASSES", "ORDERS", "SPLIT_PHASES", "VARIANTS", "attention_program", "run_attention",
           "resolve_blocks",
           "attention_reference", "attention_backward_reference", "array_shapes"]

import math
from typing import Iterable

import numpy as np

from ...cost.tile import SPLIT_PHASES, Blocks, attention_tile_cost, check_split, fit_blocks, sram_peak
from ...errors import ConfigError
from ...program import Program
from .backward import emit_backward, emit_split_phase
from .emit import TAU, Emitter
from .forward import emit_forward
from .fused import emit_fused, machine_blocks
from .header import array_declarations, program_header
from .reference import attention_backward_reference, attention_reference

ALGOS = ("standard", "fa1", "fa2", "fused")  # fused: S on chip, one block (gen.tile.fused)
PASSES = ("forward", "backward")
ORDERS = ("row", "col", "split")  # backward; split's launches: SPLIT_PHASES (from cost.tile)
VARIANTS = ("exact", "no-max", "no-rescale")
DEFAULT_BLOCK = 64


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
                      scale: float | None = None, phase: str | None = None, machine=None) -> Program:
    """A tiled attention program for the tile machine (module docstring: what each
    ``algo``/``pass_``/``order`` does; ``cost.tile.attention_tile_cost``: what it costs).
    ``phase`` (backward, order split only): one of ``SPLIT_PHASES`` alone — one kernel launch.

    ``with_data`` embeds the inputs as ``.data`` (the machine's own random values for
    ``seed``; for the backward also O and the statistics from a float64 numpy forward, so
    the gradients are those of that forward). ``machine`` sizes the blocks for it (``fused.machine_blocks``)."""
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
    algo, block_m, block_n, sram_words = machine_blocks(machine, n=n, d=d, algo=algo, pass_=pass_, block_m=block_m,
                                                        block_n=block_n, sram_words=sram_words, variant=variant,
                                                        scale=scale)
    if pass_ == "backward" and algo in ("standard", "fused"):
        raise ConfigError("the backward pass is generated for fa1 and fa2 (FlashAttention's Algorithm 4)",
                          hint="use --algo fa1 (reads m, l) or --algo fa2 (reads L)")
    check_split(pass_, order, precompute_d, phase)
    if algo in ("standard", "fused") and variant == "no-rescale":
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
    e = Emitter()
    if scaled:
        e.op("FILL", tau, 1, 1, e.t(TAU))
    if pass_ == "backward" and order == "split":  # launch by launch, each over every head (the kernel's grid)
        for ph in (phase,) if phase else SPLIT_PHASES:
            for prefix in heads_list:
                emit_split_phase(e, g, d, tuple(prefix), ph, algo=algo, scaled=scaled)
    else:
        build = (emit_fused if algo == "fused" else emit_forward) if pass_ == "forward" else emit_backward
        for prefix in heads_list:
            build(e, g, d, tuple(prefix), algo=algo, variant=variant, scaled=scaled, precompute_d=precompute_d,
                  order=order)
    cost = attention_tile_cost(n=n, d=d, algo=algo, pass_=pass_, batch=batch, heads=heads, causal=bool(causal),
                               block_m=br, block_n=bc, variant=variant, precompute_d=precompute_d, order=order,
                               scale=tau, phase=phase)
    shapes = array_shapes(n=n, d=d, batch=batch, heads=heads, algo=algo, pass_=pass_)
    arrays = array_declarations(shapes, algo, pass_, precompute_d, order, with_data, seed, tau, bool(causal), n, d,
                                phase)
    header = program_header(n=n, d=d, algo=algo, pass_=pass_, batch=batch, heads=heads, causal=bool(causal), br=br,
                            bc=bc, how=how, sram_words=sram_words, variant=variant, precompute_d=precompute_d,
                            order=order, tau=tau, scale=scale, cost=cost, g=g, with_data=with_data, seed=seed,
                            phase=phase)
    return Program(tuple(e.instrs), tuple(arrays), header=tuple(header))


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
    from ...machine import Machine, resolve_machine
    from ...sim import simulate

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
