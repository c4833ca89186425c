"""Blocking and working sets of the tile machine's attention programs (``toymachine.cost.tile``;
FlashAttention's Algorithm 1 block sizes, seed 004; the split backward's launches, seed 000's
backward-pass draft as the FlashAttention-2 kernels run it).

Blocking (paper notation): query blocks i = 0..Tr−1 of Br rows over the Nq = ``n`` queries
(the last may be short), key/value blocks j = 0..Tc−1 of Bc rows over the Nk = ``nk`` keys
(default Nk = Nq; cross-attention otherwise); r_i, c_j their sizes. The causal mask is
aligned bottom-right, as torch SDPA's ``causal_lower_right`` and flash-attn (≥ 2.1) do:
query i attends key j iff j ≤ i + δ with δ = Nk − Nq (δ = 0: the usual lower triangle;
the last query sees every key). With ``causal`` a pair (i, j) is computed only if some key
of block j is at or before some query of block i (j·Bc < i1 + δ, i1 = min(Nq, (i+1)·Br));
it needs the MASK instruction only if some key is after some query (j1 > i0 + 1 + δ).
Per query block, J_i = number of key blocks it meets (Tc, or ⌈(i1 + δ)/Bc⌉ causal) and
W_i = min(Nk, J_i·Bc) keys it meets. Causal needs Nk ≥ Nq (δ ≥ 0): with δ < 0 the first
−δ queries would attend no key at all. Sums over the pairs:

    P  = Σ_i J_i          pairs computed                 (non-causal: Tr·Tc)
    PR = Σ_i r_i·J_i      query rows × pairs             (non-causal: Nq·Tc)
    PC = Σ_i W_i          key rows × pairs               (non-causal: Tr·Nk)
    PRC = Σ_i r_i·W_i     score elements computed        (non-causal: Nq·Nk)

``Blocks`` computes these sums; ``paper_blocks`` gives the paper's (Br, Bc) for an SRAM of M
words, ``sram_peak`` the words a program occupies and ``fit_blocks`` the largest blocks that
fit; ``SPLIT_PHASES`` and ``check_split`` name the split backward's launches.
"""

from __future__ import annotations

__all__ = ["PASSES", "ORDERS", "VARIANTS", "DEFAULT_ORDERS", "default_order", "SPLIT_PHASES", "APART_PHASES", "KV_PHASES", "check_split", "Blocks", "paper_blocks", "sram_peak", "fit_blocks", "floor_sum"]

from dataclasses import dataclass

from ...errors import ConfigError, Opt

PASSES = ("forward", "backward")
ORDERS = ("row", "col", "split")  # the backward's loop orders (split: SPLIT_PHASES' launches)
VARIANTS = ("exact", "no-max", "no-rescale")  # seed 003's attention: exact, and its two breaks (every level's)
SPLIT_PHASES = ("preprocess", "dkdv", "dq")  # order split: the FlashAttention-2 kernels' three backward launches
APART_PHASES = ("dv", "dk")  # dkdv as two launches, one accumulator each (kernels_gpu's d 256 backward, dv_apart)
KV_PHASES = ("dkdv",) + APART_PHASES  # the launches that hold K_j (and V_j) while Q_i, dO_i stream past


DEFAULT_ORDERS = {"fa1": "col"}  # each algorithm's own backward loop order: FA1's Algorithm 4 holds K_j, V_j outer


def default_order(algo: str, order: str | None = None) -> str:
    """The backward's loop order: ``order`` if given, else the algorithm's default — fa1 Algorithm 4's
    (col: K_j, V_j outer, dQ read-modify-written), every other row (Q_i outer, dK and dV
    read-modify-written). FlashAttention-2's kernels run split (``--order split``: the dkdv and dq
    launches), its paper's Algorithm 2 col with dQ added atomically."""
    return order if order is not None else DEFAULT_ORDERS.get(algo, "row")


def check_split(pass_: str, order: str, precompute_d: bool, phase: str | None) -> None:
    """``phase`` names one launch of the split backward; split needs the Dᵢ precomputation."""
    if phase is not None:
        if phase not in SPLIT_PHASES + APART_PHASES:
            raise ConfigError(f"phase must be one of {', '.join(SPLIT_PHASES + APART_PHASES)}; got {phase!r}")
        if pass_ != "backward" or order != "split":
            raise ConfigError(f"phase {phase!r} is one launch of the split backward (pass backward, order split)",
                              hint="use pass_='backward', order='split' with phase, or leave phase out")
    if pass_ == "backward" and order == "split" and not precompute_d:
        raise ConfigError("order split computes D = rowsum(dO∘O) in its preprocess launch (the Dᵢ trick), as the "
                          "FlashAttention-2 kernels do", key="precompute_d",
                          hint=("use ", Opt("precompute_d", True), " with order split, or order row/col to accumulate "
                                "D from P∘dP instead"))


# -- blocking --------------------------------------------------------------------------
@dataclass(frozen=True)
class Blocks:
    """Query blocks of ``br`` rows over ``n`` queries and key/value blocks of ``bc`` rows over
    ``nk`` keys (default ``n``); ``causal``: the bottom-right-aligned mask (j ≤ i + nk − n)."""

    n: int
    br: int
    bc: int
    causal: bool = False
    nk: int | None = None

    @property
    def keys(self) -> int:
        """Nk, the key/value length."""
        return self.n if self.nk is None else self.nk

    @property
    def shift(self) -> int:
        """δ = Nk − Nq: query i attends keys j ≤ i + δ under the causal mask."""
        return self.keys - self.n

    @property
    def tr(self) -> int:
        return -(-self.n // self.br)

    @property
    def tc(self) -> int:
        return -(-self.keys // self.bc)

    def rows(self) -> list[tuple[int, int]]:
        """(i0, i1) of every query block."""
        return [(i, min(self.n, i + self.br)) for i in range(0, self.n, self.br)]

    def cols(self) -> list[tuple[int, int]]:
        """(j0, j1) of every key/value block."""
        return [(j, min(self.keys, j + self.bc)) for j in range(0, self.keys, self.bc)]

    def meets(self, i1: int) -> int:
        """J_i: key blocks a query block ending at i1 computes with (causal: those starting before i1 + δ)."""
        return -(-(i1 + self.shift) // self.bc) if self.causal else self.tc

    def met_by(self, j0: int) -> int:
        """First query block computing with the key block starting at j0."""
        return max(0, j0 - self.shift) // self.br if self.causal else 0

    def masked(self, i0: int, j1: int) -> bool:
        """Does the pair need the causal MASK (some key after some query)?"""
        return self.causal and j1 > i0 + 1 + self.shift

    def unmasked(self, i0: int) -> int:
        """Key blocks (from the first) that the query block starting at i0 computes without the mask."""
        edge = i0 + 1 + self.shift
        return self.tc if edge >= self.keys else edge // self.bc

    def sums(self) -> dict[str, int]:
        """P, PR, PC, PRC and MP (pairs needing MASK) over the computed pairs of one head — in closed
        form (floor sums, O(log n)): the size guard of ``toym gen`` reads them before anything is built,
        so ``--n 10000000000`` costs no more than ``--n 64`` to refuse (``sums_by_rows`` walks the rows)."""
        tr, tc, br, bc, n, keys, shift = self.tr, self.tc, self.br, self.bc, self.n, self.keys, self.shift
        r_last = n - (tr - 1) * br
        if not self.causal:
            return {"P": tr * tc, "PR": n * tc, "PC": tr * min(keys, tc * bc), "PRC": n * min(keys, tc * bc), "MP": 0}
        full = tr - 1  # query blocks of Br rows; the last has r_last
        s1 = floor_sum(full, bc, br, br + shift + bc - 1)  # Σ J_i over the full blocks, J = ⌈(i1 + δ)/Bc⌉
        j_last = -(-(n + shift) // bc)
        excess = tc * bc - keys  # the last key block's missing columns
        t0 = min(full, max(0, ((tc - 1) * bc - shift - br) // br + 1))  # first full block meeting every key block
        w_full = bc * s1 - excess * (full - t0)  # Σ min(Nk, J·Bc) over the full blocks
        w_last = min(keys, j_last * bc)
        return {"P": s1 + j_last, "PR": br * s1 + r_last * j_last, "PC": w_full + w_last,
                "PRC": br * w_full + r_last * w_last, "MP": self._meets_under(self._edge_rows()) - self._unmasked_sum()}

    def _edge_rows(self) -> int:
        """Query blocks whose first row i0 has i0 + 1 + δ < Nk (only they can need the mask)."""
        return 0 if self.n < 2 else min(self.tr, (self.n - 2) // self.br + 1)

    def _meets_under(self, count: int) -> int:
        """Σ J_t over the first ``count`` query blocks."""
        full = min(count, self.tr - 1)
        total = floor_sum(full, self.bc, self.br, self.br + self.shift + self.bc - 1)
        return total + (-(-(self.n + self.shift) // self.bc) if count == self.tr else 0)

    def _unmasked_sum(self) -> int:
        """Σ ⌊(i0 + 1 + δ)/Bc⌋ over the query blocks that can need the mask."""
        return floor_sum(self._edge_rows(), self.bc, self.br, 1 + self.shift)

    def masked_key_blocks(self) -> int:
        """Σ over query blocks of (Tc − key blocks it computes without the mask), in closed form."""
        if not self.causal:
            return 0
        return self._edge_rows() * self.tc - self._unmasked_sum()

    def sums_by_rows(self) -> dict[str, int]:
        """``sums`` by walking every query block (the definition the closed form is tested against)."""
        p = pr = pc = prc = mp = 0
        for i0, i1 in self.rows():
            r = i1 - i0
            jn = self.meets(i1)
            w = min(self.keys, jn * self.bc)
            p += jn
            pr += r * jn
            pc += w
            prc += r * w
            if self.causal:  # blocks whose end j1 ≤ i0 + 1 + δ need no mask
                mp += jn - min(jn, self.unmasked(i0))
        return {"P": p, "PR": pr, "PC": pc, "PRC": prc, "MP": mp}


def floor_sum(n: int, m: int, a: int, b: int) -> int:
    """Σ_{i=0}^{n−1} ⌊(a·i + b)/m⌋ in O(log m) (the AtCoder Library's algorithm; any integers a, b)."""
    if n <= 0:
        return 0
    total = 0
    q, a = divmod(a, m)
    total += q * n * (n - 1) // 2
    q, b = divmod(b, m)
    total += q * n
    while True:
        if a >= m:
            total += n * (n - 1) // 2 * (a // m)
            a %= m
        if b >= m:
            total += n * (b // m)
            b %= m
        y_max = a * n + b
        if y_max < m:
            return total
        n, b = divmod(y_max, m)
        m, a = a, m


def paper_blocks(d: int, sram_words: int) -> tuple[int, int]:
    """(Br, Bc) from SRAM size M as FlashAttention's Algorithm 1 sets them:
    Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d). (Seed 001's example N=5, d=3, M=59 prints Bc = 4;
    ⌈59/12⌉ is 5 — the seed rounded down.)"""
    bc = -(-sram_words // (4 * d))
    return min(bc, d), bc


# -- what each program occupies ----------------------------------------------------------
def sram_peak(*, algo: str, pass_: str, d: int, br: int, bc: int, variant: str = "exact", scaled: bool = True,
              heads: int = 1, precompute_d: bool = True, order: str = "row", n: int | None = None,
              phase: str | None = None, nk: int | None = None, kv_heads: int | None = None,
              dropout: bool = False, sram_rule: str = "exact") -> int:
    """Peak SRAM words of a generated program (Br ≤ Nq = ``n``, Bc ≤ Nk = ``nk``; ``heads`` query
    heads, ``kv_heads`` key/value heads, all batches). FlashAttention's registers are
    all live at their largest tiles from the first block pair on: the peak is their sum.
    Standard attention and the column-order backward without the Dᵢ trick reuse registers
    across phases, so the last (possibly short) block of one phase meets the first of the
    next: r_last = Nq − (Tr−1)·Br and c_last = Nk − (Tc−1)·Bc enter (``n`` defaults to a
    multiple of both blocks). The split backward's launches share the one SRAM: through the dq
    launch the last dV_j block (c_last·d words) is still held."""
    if algo == "fused":  # S on chip: one block of n rows (cost.tile.fused)
        from .fused import fused_sram_peak

        return fused_sram_peak(n=n if n is not None else br, d=d, variant=variant, scaled=scaled)
    s = 1 if scaled else 0
    n = n if n is not None else br * bc
    nk = nk if nk is not None else n
    kv_heads = heads if kv_heads is None else kv_heads
    r_last, c_last = n - (-(-n // br) - 1) * br, nk - (-(-nk // bc) - 1) * bc
    one_key_block = bc >= nk
    if sram_rule == "paper":
        return _paper_peak(algo, pass_, d, br, bc, nk, r_last, c_last, order, phase)
    if pass_ == "forward":
        if algo == "fa2":
            stats = {"exact": 5, "no-max": 2, "no-rescale": 3}[variant] * br
            return 2 * br * d + 2 * bc * d + br * bc + stats + s
        if algo == "fa1":
            stats = {"exact": 5, "no-max": 2, "no-rescale": 3}[variant] * br
            extra = br * d if variant == "exact" else 0  # the P̃·V product (exact form)
            return 2 * br * d + 2 * bc * d + br * bc + stats + extra + s
        if algo == "standard":  # Algorithm 0: step 2 holds a row block of S (Br × nk) and m, l, L
            k = {"exact": 3, "no-max": 2}[variant]  # T6 m, T5 l, T9 L (Br × 1)
            step1 = br * d + bc * d + br * bc + (k * r_last if heads > 1 else 0)  # stats: the previous head's
            step2 = br * nk + k * br + r_last * d + c_last * d  # Q, K: the last blocks of step 1
            step3 = br * bc + bc * d + br * d + k * r_last  # O = PV (stats: the last row block's)
            return max(step1, step2, step3) + s
        # S/P, Q/O and K/V blocks; row statistics m, l, L and a block's rowmax/rowsum (unused with one key block)
        k = {"exact": 4, "no-max": 3}[variant] - (1 if one_key_block else 0)
        step1 = br * d + bc * d + br * bc + (k * r_last if heads > 1 else 0)  # S = QKᵀ (stats: the previous head's)
        step2 = k * br + br * bc + r_last * d + c_last * d  # softmax of row block 0 (Q, K: the last blocks of step 1)
        step3 = br * d + bc * d + br * bc + k * r_last  # O = PV (stats: the last row block's)
        return max(step1, step2, step3) + s
    if algo == "standard":  # Algorithm 3: steps 1, 2, 4, 5 hold a Br×Bc block, a Br×d and a Bc×d tile (and,
        # after step 3, its last row block of dS and D); step 3 two row blocks (Br × nk) and D, with step 2's last
        # dO_i and V_j still in T0, T1
        return max(br * d + bc * d + br * bc + r_last * (nk + 1), 2 * br * nk + br + r_last * d + c_last * d) + s
    stats = 2 if algo == "fa1" else 1
    drop = br * bc if dropout else 0  # T13: P_ij∘Z for dV (Br × Bc), where dV is accumulated
    drop_last = r_last * c_last if dropout else 0  # T13 after the last pair that made it
    if order == "split":
        pre = 2 * br * d + br + s  # dO_i, dO_i∘O_i, D_i
        both = 2 * br * bc + 2 * br * d + (stats + 1) * br + s  # P, dS; Q_i, dO_i; L_i (m_i, l_i), D_i
        dkdv = both + 4 * bc * d + drop  # K_j, V_j, dK_j, dV_j
        dq = both + br * d + 2 * bc * d  # dQ_i; K_j, V_j
        dv = br * bc + 2 * br * d + stats * br + s + 2 * bc * d + drop  # P; Q_i, dO_i; L_i; K_j, dV_j
        dk = both + 3 * bc * d  # K_j, V_j, dK_j
        if phase is not None:
            return {"preprocess": pre, "dkdv": dkdv, "dq": dq, "dv": dv, "dk": dk}[phase]
        return max(dkdv, dq + c_last * d + drop_last)
    base = 2 * br * bc + 3 * br * d + 4 * bc * d + (stats + 1) * br + s  # S/P, dP/dS; Q dO dQ; K V dK dV; L (m,l), D
    if precompute_d:
        return base + drop
    if order == "row":
        return base + br + drop  # rowsum(P∘dP) before it is added into D
    # column order without the trick: rowsum(P∘dP) is written in pass 1 only (in pass 2 it holds its last
    # value: r_last rows); dQ_i, dK_j, dV_j (and P∘Z) in pass 2 only (in pass 1 they hold the previous key/value
    # head's last blocks: a group of query heads sharing one K, V runs pass 1, then pass 2, together)
    pass1 = base - 2 * bc * d - br * d + br + ((2 * c_last + r_last) * d + drop_last if kv_heads > 1 else 0)
    pass2 = base + r_last + drop
    return max(pass1, pass2)


def _paper_peak(algo: str, pass_: str, d: int, br: int, bc: int, nk: int, r_last: int, c_last: int, order: str,
                phase: str | None) -> int:
    """Peak SRAM under the paper's rule (``sram_rule: paper``): only the registers holding blocks of
    HBM matrices count — the Q_i, O_i (Br × d), K_j, V_j (Bc × d) tiles of FlashAttention's forward
    (2·Br·d + 2·Bc·d, which Bc = ⌈M/4d⌉, Br ≤ Bc keep near M), the backward's dO_i, dQ_i, dK_j,
    dV_j too, standard attention's blocks and row blocks of S, P, dP, dS; never S_ij computed on
    chip, the row statistics, D or τ."""
    if pass_ == "forward":
        if algo in ("fa1", "fa2"):  # T0 Q_i, T4 O_i; T1 K_j, T2 V_j
            return 2 * br * d + 2 * bc * d
        if algo == "standard-3pass":  # T0 Q_i → O_i, T1 K_j → V_j, T3 S_ij → P_ij
            return br * d + bc * d + br * bc
        return max(br * d + bc * d + br * bc, br * nk + r_last * d + c_last * d)  # + the row block of S
    if algo == "standard":  # T0, T1, T3 (and T4: the row blocks of dP, dS)
        return max(br * d + bc * d + br * bc + r_last * nk, 2 * br * nk + r_last * d + c_last * d)
    if order == "split":
        pre, dkdv, dq = 2 * br * d, 2 * br * d + 4 * bc * d, 3 * br * d + 2 * bc * d
        if phase is not None:
            return {"preprocess": pre, "dkdv": dkdv, "dq": dq, "dv": 2 * br * d + 2 * bc * d,
                    "dk": 2 * br * d + 3 * bc * d}[phase]
        return max(dkdv, dq + c_last * d)  # through dq the last dV_j is still held
    return 3 * br * d + 4 * bc * d  # Q_i, dO_i, dQ_i (and O_i); K_j, V_j, dK_j, dV_j


def fit_blocks(*, algo: str, pass_: str, d: int, n: int, sram_words: int, variant: str = "exact",
               scaled: bool = True, precompute_d: bool = True, order: str = "row",
               heads: int = 1, phase: str | None = None, nk: int | None = None,
               kv_heads: int | None = None, dropout: bool = False,
               sram_rule: str = "exact") -> tuple[int, int, str]:
    """Blocks for SRAM size M: the paper's (Br, Bc) if the program's working set (counted by
    ``sram_rule``: exact, every tile; paper, only blocks of HBM matrices) fits in M, else the
    largest Bc ≤ ⌈M/4d⌉ (Br = min(Bc, d) ≤ Nq, Bc ≤ Nk) whose working set does.
    Returns (Br, Bc, note); raises ConfigError if not even 1-row blocks fit."""
    br0, bc0 = paper_blocks(d, sram_words)
    keys = n if nk is None else nk
    rule = "the paper's count: Q_i, K_j, V_j, O_i …" if sram_rule == "paper" else "exact count"

    def need(bc: int) -> tuple[int, int, int]:
        br = min(bc, d, n)
        bcc = min(bc, keys)
        return br, bcc, sram_peak(algo=algo, pass_=pass_, d=d, br=br, bc=bcc, variant=variant, scaled=scaled,
                                  precompute_d=precompute_d, order=order, n=n, heads=heads, phase=phase, nk=keys,
                                  kv_heads=kv_heads, dropout=dropout, sram_rule=sram_rule)

    rule0 = f"Bc = ⌈M/4d⌉ = ⌈{sram_words}/{4 * d}⌉ = {bc0}, Br = min(⌈M/4d⌉, d) = {br0}"
    br, bc, words = need(bc0)
    if words <= sram_words:
        return br, bc, (f"blocks from M = {sram_words} words: {rule0}"
                        + ((f" (clamped to n = {n})" if keys == n else f" (clamped to n = {n}, nk = {keys})")
                           if (br, bc) != (br0, bc0) else "")
                        + f"; working set ({rule}) {words} words ≤ M")
    paper_words = words
    for b in range(bc0 - 1, 0, -1):
        br, bc, words = need(b)
        if words <= sram_words:
            on_top = ("" if sram_rule == "paper" else " (the paper's rule sizes K_j, V_j, Q_i, O_i to about M/4 each; "
                      "S, the row statistics and temporaries come on top)")
            return br, bc, (f"blocks from M = {sram_words} words: the paper's {rule0} need {paper_words} words here "
                            f"({rule}){on_top}, so the blocks shrink to the largest that fit: Bc = {bc}, Br = {br} "
                            f"({words} words ≤ M)")
    _, _, one = need(1)
    raise ConfigError(f"SRAM of {sram_words} words cannot hold the {algo} {pass_} working set ({rule}) even with 1-row "
                      f"blocks (it needs {one} words)", key="sram", hint=("use ", Opt("sram", one), " or more"))
