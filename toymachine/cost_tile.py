"""Closed-form costs of the tile machine's attention programs (``toymachine.gen.tile``).

Every count here is a formula in the parameters (n, d, batch·heads, block sizes, causal,
algorithm, pass, variant) — sums over the Tr = ⌈n/Br⌉ query blocks at most, never a
simulation. The tests hold the simulator to them at random parameter points
(``tests/test_tile_cost.py``): HBM words read and written, per-array traffic, FLOPs, SRAM
peak and every instruction count.

Blocking (paper notation): query blocks i = 0..Tr−1 of Br rows (the last may be short),
key/value blocks j = 0..Tc−1 of Bc rows; r_i, c_j their sizes. With ``causal`` a pair (i, j)
is computed only if some key of block j is at or before some query of block i
(j·Bc < i1 = min(n, (i+1)·Br)); it needs the MASK instruction only if some key is after
some query (j1 > i0 + 1). Per query block, J_i = number of key blocks it meets
(Tc, or ⌈i1/Bc⌉ causal) and W_i = min(n, J_i·Bc) keys it meets. Sums over the pairs:

    P  = Σ_i J_i          pairs computed                 (non-causal: Tr·Tc)
    PR = Σ_i r_i·J_i      query rows × pairs             (non-causal: n·Tc)
    PC = Σ_i W_i          key rows × pairs               (non-causal: Tr·n)
    PRC = Σ_i r_i·W_i     score elements computed        (non-causal: n²)

HBM footprint (words the arrays occupy, per head): 4nd + n (fa2: Q K V O, L), 4nd + 2n (fa1),
4nd + 2n² + n (standard: S and P are n × n — seed 003's quadratic memory curve); backward
8nd + 2n (fa2), 8nd + 3n (fa1).

HBM words of one head (batch·heads heads; words = elements):

    standard forward  reads n·d + 2·Tr·n·d + 4n² (exact; 3n² of them the seed's 3-pass softmax
                      over S, n² the read of P) — no-max 3n²; writes 2n² + n·d + n   → Θ(n·d + n²)
    fa1 forward       reads 2·n·d + (2d + 2)·PR, writes (d + 2)·PR (O, l, m per pair;
                      no-max/no-rescale read no m: (2d + 1)·PR)                          → Θ(n²d²/M)
    fa2 forward       reads n·d + 2d·PC, writes n·d + n (O and the log-sum-exp L)
    backward          see ``_backward_words``: K and V once per pair (row order) or per
                      key block (col order), twice without the Dᵢ precomputation.
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

With Bc = ⌈M/4d⌉ (the paper's rule) FA1's reads are 2nd + (2d+2)·n·⌈n/Bc⌉ ≈ 8n²d²/M:
doubling M halves the dominant term (Theorem 2 of the FlashAttention paper).

Cycles follow from a machine by the one formula in ``Machine``: Σ instructions × issue
cycles + words·word_bytes/hbm_bytes_per_cycle + matmul/tensor + vector/vector + sfu/sfu.
"""

from __future__ import annotations

__all__ = ["Blocks", "TileCost", "SPLIT_PHASES", "paper_blocks", "attention_tile_cost", "sram_peak", "fit_blocks",
           "check_split"]

from collections import Counter
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .errors import ConfigError
from .isa import MNEMONICS
from .machine import DEFAULT_MACHINE, Machine


SPLIT_PHASES = ("preprocess", "dkdv", "dq")  # order split: the FlashAttention-2 kernels' three backward launches


def check_split(pass_: str, order: str, precompute_d: bool, phase: str | None) -> None:
    """``phase`` names one launch of the split backward; split needs the Dᵢ precomputation."""
    if phase is not None:
        if phase not in SPLIT_PHASES:
            raise ConfigError(f"phase must be one of {', '.join(SPLIT_PHASES)}; got {phase!r}")
        if pass_ != "backward" or order != "split":
            raise ConfigError(f"phase {phase!r} is one launch of the split backward (pass backward, order split)",
                              hint="use pass_='backward', order='split' with phase, or leave phase out")
    if pass_ == "backward" and order == "split" and not precompute_d:
        raise ConfigError("order split computes D = rowsum(dO∘O) in its preprocess launch (the Dᵢ trick), as the "
                          "FlashAttention-2 kernels do", hint="use --precompute-d with order split, or order row/col "
                                                              "to accumulate D from P∘dP instead")


# -- blocking --------------------------------------------------------------------------
@dataclass(frozen=True)
class Blocks:
    """Query blocks of ``br`` rows and key/value blocks of ``bc`` rows over ``n`` positions."""

    n: int
    br: int
    bc: int
    causal: bool = False

    @property
    def tr(self) -> int:
        return -(-self.n // self.br)

    @property
    def tc(self) -> int:
        return -(-self.n // self.bc)

    def rows(self) -> list[tuple[int, int]]:
        """(i0, i1) of every query block."""
        return [(i, min(self.n, i + self.br)) for i in range(0, self.n, self.br)]

    def cols(self) -> list[tuple[int, int]]:
        """(j0, j1) of every key/value block."""
        return [(j, min(self.n, j + self.bc)) for j in range(0, self.n, self.bc)]

    def meets(self, i1: int) -> int:
        """J_i: key blocks a query block ending at i1 computes with (causal: those starting before i1)."""
        return -(-i1 // self.bc) if self.causal else self.tc

    def met_by(self, j0: int) -> int:
        """First query block computing with the key block starting at j0."""
        return j0 // self.br if self.causal else 0

    def masked(self, i0: int, j1: int) -> bool:
        """Does the pair need the causal MASK (some key after some query)?"""
        return self.causal and j1 > i0 + 1

    def sums(self) -> dict[str, int]:
        """P, PR, PC, PRC and MP (pairs needing MASK) over the computed pairs of one head."""
        p = pr = pc = prc = mp = 0
        for i0, i1 in self.rows():
            r = i1 - i0
            jn = self.meets(i1)
            w = min(self.n, jn * self.bc)
            p += jn
            pr += r * jn
            pc += w
            prc += r * w
            if self.causal:  # blocks whose end j1 ≤ i0 + 1 need no mask
                unmasked = self.tc if i0 + 1 >= self.n else (i0 + 1) // self.bc
                mp += jn - min(jn, unmasked)
        return {"P": p, "PR": pr, "PC": pc, "PRC": prc, "MP": mp}


def paper_blocks(d: int, sram_words: int) -> tuple[int, int]:
    """(Br, Bc) from SRAM size M as FlashAttention's Algorithm 1 sets them:
    Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d). (Seed 001's example N=5, d=3, M=59 prints Bc = 4;
    ⌈59/12⌉ is 5 — the seed rounded down.)"""
    bc = -(-sram_words // (4 * d))
    return min(bc, d), bc


# -- what each program occupies ----------------------------------------------------------
def sram_peak(*, algo: str, pass_: str, d: int, br: int, bc: int, variant: str = "exact", scaled: bool = True,
              heads: int = 1, precompute_d: bool = True, order: str = "row", n: int | None = None,
              phase: str | None = None) -> int:
    """Peak SRAM words of a generated program (Br, Bc ≤ n). FlashAttention's registers are
    all live at their largest tiles from the first block pair on: the peak is their sum.
    Standard attention and the column-order backward without the Dᵢ trick reuse registers
    across phases, so the last (possibly short) block of one phase meets the first of the
    next: r_last = n − (Tr−1)·Br and c_last = n − (Tc−1)·Bc enter (``n`` defaults to a
    multiple of both blocks). The split backward's launches share the one SRAM: through the dq
    launch the last dV_j block (c_last·d words) is still held."""
    s = 1 if scaled else 0
    n = n if n is not None else br * bc
    r_last, c_last = n - (-(-n // br) - 1) * br, n - (-(-n // bc) - 1) * bc
    one_key_block = bc >= n
    if pass_ == "forward":
        if algo == "fa2":
            stats = {"exact": 5, "no-max": 2, "no-rescale": 3}[variant] * br
            return 2 * br * d + 2 * bc * d + br * bc + stats + s
        if algo == "fa1":
            stats = {"exact": 5, "no-max": 2, "no-rescale": 3}[variant] * br
            extra = br * d if variant == "exact" else 0  # the P̃·V product (exact form)
            return 2 * br * d + 2 * bc * d + br * bc + stats + extra + s
        # S/P, Q/O and K/V blocks; row statistics m, l, L and a block's rowmax/rowsum (unused with one key block)
        k = {"exact": 4, "no-max": 3}[variant] - (1 if one_key_block else 0)
        step1 = br * d + bc * d + br * bc + (k * r_last if heads > 1 else 0)  # S = QKᵀ (stats: the previous head's)
        step2 = k * br + br * bc + r_last * d + c_last * d  # softmax of row block 0 (Q, K: the last blocks of step 1)
        step3 = br * d + bc * d + br * bc + k * r_last  # O = PV (stats: the last row block's)
        return max(step1, step2, step3) + s
    stats = 2 if algo == "fa1" else 1
    if order == "split":
        pre = 2 * br * d + br + s  # dO_i, dO_i∘O_i, D_i
        both = 2 * br * bc + 2 * br * d + (stats + 1) * br + s  # P, dS; Q_i, dO_i; L_i (m_i, l_i), D_i
        dkdv = both + 4 * bc * d  # K_j, V_j, dK_j, dV_j
        dq = both + br * d + 2 * bc * d  # dQ_i; K_j, V_j
        if phase is not None:
            return {"preprocess": pre, "dkdv": dkdv, "dq": dq}[phase]
        return max(dkdv, dq + c_last * d)
    base = 2 * br * bc + 3 * br * d + 4 * bc * d + (stats + 1) * br + s  # S/P, dP/dS; Q dO dQ; K V dK dV; L (m,l), D
    if precompute_d:
        return base
    if order == "row":
        return base + br  # rowsum(P∘dP) before it is added into D
    # column order without the trick: rowsum(P∘dP) is written in pass 1 only (in pass 2 it holds its last
    # value: r_last rows); dQ_i, dK_j, dV_j in pass 2 only (in pass 1 they hold the previous head's last blocks)
    pass1 = base - 2 * bc * d - br * d + br + ((2 * c_last + r_last) * d if heads > 1 else 0)
    pass2 = base + r_last
    return max(pass1, pass2)


def fit_blocks(*, algo: str, pass_: str, d: int, n: int, sram_words: int, variant: str = "exact",
               scaled: bool = True, precompute_d: bool = True, order: str = "row",
               heads: int = 1, phase: str | None = None) -> tuple[int, int, str]:
    """Blocks for SRAM size M: the paper's (Br, Bc) if the program's working set fits in M,
    else the largest Bc ≤ ⌈M/4d⌉ (Br = min(Bc, d), both ≤ n) whose working set does.
    Returns (Br, Bc, note); raises ConfigError if not even 1-row blocks fit."""
    br0, bc0 = paper_blocks(d, sram_words)

    def need(bc: int) -> tuple[int, int, int]:
        br = min(bc, d, n)
        bcc = min(bc, n)
        return br, bcc, sram_peak(algo=algo, pass_=pass_, d=d, br=br, bc=bcc, variant=variant, scaled=scaled,
                                  precompute_d=precompute_d, order=order, n=n, heads=heads, phase=phase)

    br, bc, words = need(bc0)
    if words <= sram_words:
        return br, bc, (f"blocks from M = {sram_words} words: Bc = ⌈M/4d⌉ = {bc0}, Br = min(⌈M/4d⌉, d) = {br0}"
                        + (f" (clamped to n = {n})" if (br, bc) != (br0, bc0) else "")
                        + f"; working set {words} words ≤ M")
    paper_words = words
    for b in range(bc0 - 1, 0, -1):
        br, bc, words = need(b)
        if words <= sram_words:
            return br, bc, (f"blocks from M = {sram_words} words: the paper's Bc = ⌈M/4d⌉ = {bc0}, "
                            f"Br = min(⌈M/4d⌉, d) = {br0} need {paper_words} words here (the paper's rule sizes K_j, "
                            f"V_j, Q_i, O_i to about M/4 each; S, the row statistics and temporaries come on top), "
                            f"so the blocks shrink to the largest that fit: Bc = {bc}, Br = {br} ({words} words ≤ M)")
    _, _, one = need(1)
    raise ConfigError(f"SRAM of {sram_words} words cannot hold the {algo} {pass_} working set even with 1-row blocks "
                      f"(it needs {one} words)", hint=f"use --sram {one} or more")


# -- the closed forms ---------------------------------------------------------------------
@dataclass(frozen=True)
class TileCost:
    """Everything a generated tile program costs, in closed form."""

    ops: Mapping[str, int]  # mnemonic → instructions executed
    reads: int  # HBM words read (all heads)
    writes: int  # HBM words written
    traffic: Mapping[str, tuple[int, int]]  # array → (words read, words written)
    flops_matmul: int
    flops_other: int  # includes sfu_ops
    sfu_ops: int  # EXP/LOG elements
    sram_peak: int  # words
    registers: int  # distinct registers the program names
    hbm_footprint: int = 0  # words of HBM the program's arrays occupy
    formula: str = ""  # the HBM formula in words, as the header prints it
    breakdown: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self):
        ordered = {m: int(self.ops[m]) for m in MNEMONICS if self.ops.get(m)}
        object.__setattr__(self, "ops", MappingProxyType(ordered))
        object.__setattr__(self, "traffic", MappingProxyType(dict(self.traffic)))

    @property
    def instructions(self) -> int:
        return sum(self.ops.values())

    def cycles(self, machine: Machine | None = None) -> float:
        """Cycles on ``machine`` by the simulator's formula (``Machine.work_cycles``)."""
        m = machine or DEFAULT_MACHINE
        issue = sum(n * m.op_cycles(op) for op, n in self.ops.items())
        work = m.work_cycles(words=self.reads + self.writes, matmul=self.flops_matmul,
                             vector=self.flops_other - self.sfu_ops, sfu=self.sfu_ops)
        total = issue + sum(work.values())
        return int(total) if float(total).is_integer() else total

    def time_s(self, machine: Machine) -> float | None:
        """The roofline estimate max(HBM time, compute time), as the simulator reports it."""
        if not machine.clock_hz:
            return None
        work = machine.work_cycles(words=self.reads + self.writes, matmul=self.flops_matmul,
                                   vector=self.flops_other - self.sfu_ops, sfu=self.sfu_ops)
        return max(work["hbm"], work["tensor"] + work["vector"] + work["sfu"]) / machine.clock_hz


class _Tally:
    """Accumulates instruction counts, FLOPs and per-array words for the formulas."""

    def __init__(self) -> None:
        self.ops: Counter = Counter()
        self.mm = self.vec = self.sfu = 0
        self.reads: Counter = Counter()
        self.writes: Counter = Counter()

    def load(self, array: str, words: int, times: int = 1) -> None:
        self.ops["LOAD"] += times
        self.reads[array] += words

    def store(self, array: str, words: int, times: int = 1) -> None:
        self.ops["STORE"] += times
        self.writes[array] += words

    def op(self, name: str, times: int = 1, *, elems: int = 0, unit: str = "vec") -> None:
        """``times`` instructions of ``name`` with ``elems`` FLOPs (or SFU ops) in all."""
        self.ops[name] += times
        if unit == "mm":
            self.mm += elems
        elif unit == "sfu":
            self.sfu += elems
        else:
            self.vec += elems


def _rows_sums(g: Blocks) -> dict[str, int]:
    s = g.sums()
    s.update(N=g.n, Tr=g.tr, Tc=g.tc)
    return s


def attention_tile_cost(*, n: int, d: int, algo: str = "fa2", pass_: str = "forward", batch: int = 1, heads: int = 1,
                        causal: bool = False, block_m: int, block_n: int, variant: str = "exact",
                        precompute_d: bool = True, order: str = "row", scale: float | None = None,
                        phase: str | None = None) -> TileCost:
    """The closed-form cost of ``gen.tile.attention_program`` with these (resolved) blocks
    (``phase``: one launch of the split backward)."""
    check_split(pass_, order, precompute_d, phase)
    br, bc = min(block_m, n), min(block_n, n)
    g = Blocks(n, br, bc, causal)
    s = _rows_sums(g)
    h = batch * heads
    scaled = (d ** -0.5 if scale is None else scale) != 1.0
    t = _Tally()
    if scaled:
        t.op("FILL")  # the 1×1 scale tile, once per program
    if pass_ == "forward":
        {"standard": _standard_forward, "fa1": _fa1_forward, "fa2": _fa2_forward}[algo](t, g, s, d, h, variant, scaled)
    elif order == "split":
        for ph in (phase,) if phase else SPLIT_PHASES:
            _split(t, s, d, h, algo, scaled, ph)
    else:
        _backward(t, g, s, d, h, algo, scaled, precompute_d, order)
    peak = sram_peak(algo=algo, pass_=pass_, d=d, br=br, bc=bc, variant=variant, scaled=scaled, heads=h,
                     precompute_d=precompute_d, order=order, n=n, phase=phase)
    traffic = {a: (t.reads[a], t.writes[a]) for a in sorted(set(t.reads) | set(t.writes))}
    if pass_ == "forward":  # Q K V O, the row statistics, and standard attention's S and P
        footprint = 4 * n * d + {"fa2": n, "fa1": 2 * n, "standard": n + 2 * n * n}[algo]
    else:  # Q K V O dO dQ dK dV, the statistics (L, or m and l) and D
        footprint = 8 * n * d + (3 * n if algo == "fa1" else 2 * n)
    return TileCost(ops=dict(t.ops), reads=sum(t.reads.values()), writes=sum(t.writes.values()), traffic=traffic,
                    flops_matmul=t.mm, flops_other=t.vec + t.sfu, sfu_ops=t.sfu, sram_peak=peak,
                    registers=_registers(algo, pass_, variant, scaled, precompute_d, bc >= n, order, phase),
                    hbm_footprint=h * footprint,
                    formula=_formula(algo, pass_, variant, precompute_d, order, phase), breakdown=s)


def _registers(algo: str, pass_: str, variant: str, scaled: bool, precompute_d: bool, one_key_block: bool,
               order: str = "row", phase: str | None = None) -> int:
    s = 1 if scaled else 0
    if pass_ == "forward":
        if algo == "fa2":
            return {"exact": 10, "no-max": 7, "no-rescale": 8}[variant] + s
        if algo == "fa1":
            return {"exact": 11, "no-max": 7, "no-rescale": 8}[variant] + s
        return {"exact": 7, "no-max": 6}[variant] + s - (1 if one_key_block else 0)
    stats = 2 if algo == "fa1" else 1
    if order == "split":  # T0 T5 T8 (preprocess); + T1 T2 T3 T4 T6 T10 (+T7) (dq); + T11 (dkdv, all)
        return {"preprocess": 3, "dq": 8 + stats}.get(phase, 9 + stats) + s
    return 10 + stats + (0 if precompute_d else 1) + s


def _formula(algo, pass_, variant, precompute_d, order, phase=None) -> str:
    if pass_ == "forward":
        if algo == "fa2":
            return "reads n·d + 2·d·PC (Q once; K, V once per pair: non-causal n·d + 2·Tr·n·d), writes n·d + n (O, L)"
        if algo == "fa1":
            m = "2d + 2" if variant == "exact" else "2d + 1"
            w = "d + 1" if variant == "no-max" else "d + 2"
            return (f"reads 2·n·d + ({m})·PR (K, V once; Q, O, l{', m' if variant == 'exact' else ''} per pair: "
                    f"non-causal PR = n·Tc), writes ({w})·PR")
        k = 4 if variant == "exact" else 3
        return f"reads n·d + 2·Tr·n·d + {k}·n² (S read {k - 1}×, P once), writes 2·n² + n·d + n"
    if order == "split":
        return _split_words(algo, phase)
    return _backward_words(algo, precompute_d, order)


def _split_words(algo: str, phase: str | None) -> str:
    st = "m, l" if algo == "fa1" else "L"
    k = "2d + 3" if algo == "fa1" else "2d + 2"
    words = {"preprocess": "preprocess reads 2·n·d (O, dO), writes n (D)",
             "dkdv": f"dkdv reads 2·n·d + ({k})·PR (K, V once per key block; Q, dO, {st}, D per pair), "
                     f"writes 2·n·d (dK, dV once)",
             "dq": f"dq reads ({k})·n + 2d·PC (Q, dO, {st}, D once per query block; K, V per pair), writes n·d "
                   f"(dQ once)"}
    if phase:
        return words[phase]
    return "; ".join(words[p] for p in SPLIT_PHASES) + " — nothing read-modify-written"


def _backward_words(algo: str, precompute_d: bool, order: str) -> str:
    st = "2" if algo == "fa1" else "1"
    pre = "; D pre-pass reads 2·n·d, writes n" if precompute_d else ""
    if order == "col":
        if precompute_d:
            return (f"reads 2·n·d + (3d + {st} + 1)·PR (K, V once per key block; Q, dO, dQ, stats, D per pair), "
                    f"writes d·PR + 2·n·d (dQ per pair, dK, dV once){pre}")
        return (f"pass 1 (D): reads 2·n·d + (2d + {st} + 1)·PR, writes PR; pass 2: reads 2·n·d + (3d + {st} + 1)·PR, "
                f"writes d·PR + 2·n·d — K and V read twice")
    if precompute_d:
        return (f"reads (2d + {st} + 1)·n + 4d·PC (K, V, dK, dV per pair), writes 2d·PC + n·d{pre}")
    return f"reads (2d + {st})·n + 6d·PC (K, V twice per pair; dK, dV once), writes 2d·PC + n·d"


# -- forward formulas ---------------------------------------------------------------------
def _fa2_forward(t: _Tally, g: Blocks, s: dict, d: int, h: int, variant: str, scaled: bool) -> None:
    n, tr, p, pr, pc, prc = s["N"], s["Tr"], s["P"], s["PR"], s["PC"], s["PRC"]
    t.load("Q", h * n * d, h * tr)
    t.op("FILL", h * tr * (2 if variant == "no-max" else 3))
    t.load("K", h * pc * d, h * p)
    t.load("V", h * pc * d, h * p)
    t.op("MAC_Z", h * p, elems=h * prc * (2 * d - 1), unit="mm")
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


def _fa1_forward(t: _Tally, g: Blocks, s: dict, d: int, h: int, variant: str, scaled: bool) -> None:
    n, tc, p, pr, prc = s["N"], s["Tc"], s["P"], s["PR"], s["PRC"]
    t.load("K", h * n * d, h * tc)
    t.load("V", h * n * d, h * tc)
    t.load("Q", h * pr * d, h * p)
    t.load("O", h * pr * d, h * p)
    t.load("l", h * pr, h * p)
    if variant == "exact":
        t.load("m", h * pr, h * p)
    t.op("MAC_Z", h * p, elems=h * prc * (2 * d - 1), unit="mm")
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
        t.op("MAC_Z", h * p, elems=h * d * (2 * prc - pr), unit="mm")  # P̃·V: r·d·(2c − 1) per pair
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


def _standard_forward(t: _Tally, g: Blocks, s: dict, d: int, h: int, variant: str, scaled: bool) -> None:
    n, tr, tc = s["N"], s["Tr"], s["Tc"]
    pairs = tr * tc  # standard attention computes every block, masked or not
    masked = sum(tc - min(tc, tc if i0 + 1 >= n else (i0 + 1) // g.bc) for i0, _ in g.rows()) if g.causal else 0
    nn = n * n
    # 1. S = τ·Q·Kᵀ, stored
    t.load("Q", h * n * d, h * tr)
    t.load("K", h * tr * n * d, h * pairs)
    t.op("MAC_Z", h * pairs, elems=h * nn * (2 * d - 1), unit="mm")
    if scaled:
        t.op("MUL", h * pairs, elems=h * nn)
    t.op("MASK", h * masked)
    t.store("S", h * nn, h * pairs)
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
    # 3. O = P·V
    t.load("P", h * nn, h * pairs)
    t.load("V", h * tr * n * d, h * pairs)
    # MAC_Z for a row block's first key block, MAC after: Σ_i r·d·(2·Σ_j c_j − 1) = n·d·(2n − 1)
    t.op("MAC_Z", h * tr, elems=h * n * d * (2 * n - 1), unit="mm")
    t.op("MAC", h * (pairs - tr))
    t.store("O", h * n * d, h * tr)


# -- backward formulas --------------------------------------------------------------------
def _backward(t: _Tally, g: Blocks, s: dict, d: int, h: int, algo: str, scaled: bool, precompute_d: bool,
              order: str) -> None:
    n, tr, tc, p, pr, pc, prc = s["N"], s["Tr"], s["Tc"], s["P"], s["PR"], s["PC"], s["PRC"]
    stats = ("m", "l") if algo == "fa1" else ("L",)
    if precompute_d:  # D_i = rowsum(dO_i ∘ O_i), one pass over dO and O
        t.load("dO", h * n * d, h * tr)
        t.load("O", h * n * d, h * tr)
        t.op("MUL", h * tr, elems=h * n * d)
        t.op("ROWSUM", h * tr, elems=h * n * (d - 1))
        t.store("D", h * n, h * tr)

    def recompute_p(times: int, rows_pairs: int) -> None:
        """S = τ·Q·Kᵀ, masked; P = exp(S − L) (fa1: exp(S − m)/l) — over ``times`` pairs."""
        t.op("MAC_Z", h * times, elems=h * prc * (2 * d - 1), unit="mm")
        if scaled:
            t.op("MUL", h * times, elems=h * prc)
        t.op("MASK", h * s["MP"])
        t.op("SUB", h * times, elems=h * prc)
        t.op("EXP", h * times, elems=h * prc, unit="sfu")
        if algo == "fa1":
            t.op("DIV", h * times, elems=h * prc)

    def d_contribution() -> None:
        """dP = dO·Vᵀ; D += rowsum(P∘dP)."""
        t.op("MAC_Z", h * p, elems=h * prc * (2 * d - 1), unit="mm")
        t.op("MUL", h * p, elems=h * prc)
        t.op("ROWSUM", h * p, elems=h * (prc - pr))
        t.op("ADD", h * p, elems=h * pr)

    def gradients() -> None:
        """dV += Pᵀ·dO; dP = dO·Vᵀ; dS = P∘(dP − D)·τ; dQ += dS·K; dK += dSᵀ·Q."""
        t.op("MAC", h * p, elems=h * 2 * prc * d, unit="mm")  # dV
        t.op("MAC_Z", h * p, elems=h * prc * (2 * d - 1), unit="mm")  # dP
        t.op("SUB", h * p, elems=h * prc)
        t.op("MUL", h * p, elems=h * prc)
        if scaled:
            t.op("MUL", h * p, elems=h * prc)
        t.op("MAC", 2 * h * p, elems=h * 4 * prc * d, unit="mm")  # dQ, dK

    if order == "col":
        passes = 1 if precompute_d else 2
        t.load("K", passes * h * n * d, passes * h * tc)
        t.load("V", passes * h * n * d, passes * h * tc)
        t.load("Q", passes * h * pr * d, passes * h * p)
        t.load("dO", passes * h * pr * d, passes * h * p)
        for st in stats:
            t.load(st, passes * h * pr, passes * h * p)
        t.load("D", passes * h * pr, passes * h * p)
        if not precompute_d:  # pass 1: D accumulated in HBM
            recompute_p(p, pr)
            d_contribution()
            t.store("D", h * pr, h * p)
        t.op("FILL", 2 * h * tc)
        t.load("dQ", h * pr * d, h * p)
        recompute_p(p, pr)
        gradients()
        t.store("dQ", h * pr * d, h * p)
        t.store("dK", h * n * d, h * tc)
        t.store("dV", h * n * d, h * tc)
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


def _split(t: _Tally, s: dict, d: int, h: int, algo: str, scaled: bool, phase: str) -> None:
    """One launch of the split backward (``gen.tile._split_phase``), all heads."""
    n, tr, tc, p, pr, pc, prc = s["N"], s["Tr"], s["Tc"], s["P"], s["PR"], s["PC"], s["PRC"]
    stats = ("m", "l") if algo == "fa1" else ("L",)
    if phase == "preprocess":  # D_i = rowsum(dO_i ∘ O_i)
        t.load("dO", h * n * d, h * tr)
        t.load("O", h * n * d, h * tr)
        t.op("MUL", h * tr, elems=h * n * d)
        t.op("ROWSUM", h * tr, elems=h * n * (d - 1))
        t.store("D", h * n, h * tr)
        return
    held, held_blocks = (("K", "V"), tc) if phase == "dkdv" else (("Q", "dO"), tr)
    for a in held:  # once per program: n·d words each
        t.load(a, h * n * d, h * held_blocks)
    if phase == "dkdv":  # Q_i, dO_i, the statistics and D_i once per pair
        t.op("FILL", 2 * h * tc)
        t.load("Q", h * pr * d, h * p)
        t.load("dO", h * pr * d, h * p)
        for st in stats:
            t.load(st, h * pr, h * p)
        t.load("D", h * pr, h * p)
    else:  # the statistics and D once per query block; K_j, V_j once per pair
        for st in stats:
            t.load(st, h * n, h * tr)
        t.load("D", h * n, h * tr)
        t.op("FILL", h * tr)
        t.load("K", h * pc * d, h * p)
        t.load("V", h * pc * d, h * p)
    # P = e^(τ·Q·Kᵀ − L) (fa1: e^(S − m)/l), masked; dS/τ = P∘(dO·Vᵀ − D)
    t.op("MAC_Z", 2 * h * p, elems=2 * h * prc * (2 * d - 1), unit="mm")  # Q·Kᵀ, dO·Vᵀ
    if scaled:
        t.op("MUL", h * p, elems=h * prc)
    t.op("MASK", h * s["MP"])
    t.op("SUB", 2 * h * p, elems=2 * h * prc)
    t.op("EXP", h * p, elems=h * prc, unit="sfu")
    if algo == "fa1":
        t.op("DIV", h * p, elems=h * prc)
    t.op("MUL", h * p, elems=h * prc)
    products = 2 if phase == "dkdv" else 1  # dV += Pᵀ·dO and dK += dSᵀ·Q, or dQ += dS·K
    t.op("MAC", products * h * p, elems=products * h * 2 * prc * d, unit="mm")
    if scaled:  # τ on the accumulator, once per program
        t.op("MUL", h * held_blocks, elems=h * n * d)
    if phase == "dkdv":
        t.store("dK", h * n * d, h * tc)
        t.store("dV", h * n * d, h * tc)
    else:
        t.store("dQ", h * n * d, h * tr)
