"""Closed form of eager attention on the tile machine (``gen.tile.eager``): standard attention as a
framework runs it op by op, one kernel per operation, each reading its inputs from HBM and
writing its output back (the FlashAttention paper's baseline, seed 004's "standard attention").

Kernels of one head, forward (``s``: τ ≠ 1, ``c``: causal, ``p``: dropout):

    S = Q·Kᵀ            reads n·d + Tr·nk·d          writes n·nk     (a matmul by Br × Bc tiles)
    S = τ·S        (s)  reads n·nk                   writes n·nk     (elementwise, by blocks)
    S = mask(S)    (c)  reads n·nk                   writes n·nk     (additive mask, made on chip)
    P = softmax(S)      reads n·nk                   writes n·nk     (row blocks of R rows × nk)
    Pd = dropout(P) (p) reads n·nk                   writes n·nk     (the mask remade, never stored)
    O = Pd·V            reads n·nk + Tr·nk·d         writes n·d

backward (autograd's order; the additive mask's gradient is the identity — no kernel):

    dP = dO·Vᵀ          reads n·d + Tr·nk·d          writes n·nk
    dV = Pdᵀ·dO         reads n·nk + Tc·n·d          writes nk·d
    dP = dropout'(dP) (p) reads n·nk                 writes n·nk
    dS = P∘(dP − rowsum(P∘dP))  reads 2·n·nk         writes n·nk     (row blocks)
    dS = τ·dS      (s)  reads n·nk                   writes n·nk
    dQ = dS·K           reads n·nk + Tr·nk·d         writes n·d
    dK = dSᵀ·Q          reads n·nk + Tc·n·d          writes nk·d

so n·nk words move (4 + 2(s + c + p)) times forward and (7 + 2(s + p)) times backward: Θ(n·d + n²),
with no dependence on M (Theorem 2's standard-attention count, every op a round trip).

``eager_blocks`` picks the blocks from the SRAM: the matmul tile b × b the largest power of two
whose working set fits M (a GEMM library's square tile), the row-wise kernels' R rows the largest
power of two ≤ b that fits too; ``eager_peak`` walks the kernels' register writes (first block,
then last) — a fixed number of steps, never the instructions.
"""

from __future__ import annotations

__all__ = ["EAGER_REGISTERS", "eager_blocks", "eager_footprint", "eager_peak", "eager_words", "tally_eager"]

from ...errors import ConfigError, Opt
from .blocks import Blocks
from .counts import Tally

EAGER_REGISTERS = 5  # forward T0 T1 T3 T5 T6, backward T0 T1 T3 T4 T8 (+ τ's T15)


def _rows(n: int, rows: int) -> int:
    return -(-n // rows)


def tally_eager(t: Tally, g: Blocks, d: int, h: int, pass_: str, scaled: bool, dropout: bool,
                rows: int) -> None:
    """Every kernel of ``h`` heads (module docstring); ``rows``: R, the row-wise kernels' rows."""
    n, nk, tr, tc = g.n, g.keys, g.tr, g.tc
    nn, pairs, ts = n * nk, tr * tc, _rows(n, rows)

    def elementwise(array: str, op: str | None, flops: bool = True) -> None:
        t.load(array, h * nn, h * pairs)
        if op is not None:
            t.op(op, h * pairs, elems=h * nn if flops else 0)
        t.store(array, h * nn, h * pairs)

    if pass_ == "forward":
        t.load("Q", h * n * d, h * tr)
        t.load("K", h * tr * nk * d, h * pairs)
        t.op("MAC_Z", h * pairs, elems=h * nn * (2 * d - 1), unit="mm", outputs=h * nn)
        t.store("S", h * nn, h * pairs)
        if scaled:
            elementwise("S", "MUL")
        if g.causal:
            elementwise("S", "MASK", flops=False)
        t.load("S", h * nn, h * ts)
        t.op("ROWMAX", h * ts, elems=h * (nn - n))
        t.op("SUB", h * ts, elems=h * nn)
        t.op("EXP", h * ts, elems=h * nn, unit="sfu")
        t.op("ROWSUM", h * ts, elems=h * (nn - n))
        t.op("DIV", h * ts, elems=h * nn)
        t.store("P", h * nn, h * ts)
        if dropout:
            t.load("P", h * nn, h * pairs)
            t.op("DROPOUT", h * pairs, elems=h * nn)
            t.store("Pd", h * nn, h * pairs)
        t.load("Pd" if dropout else "P", h * nn, h * pairs)
        t.load("V", h * tr * nk * d, h * pairs)
        t.op("MAC_Z", h * tr, elems=h * n * d * (2 * nk - 1), unit="mm",
                  outputs=h * n * d)  # the chain MAC_Z, MAC, … per O_i
        t.op("MAC", h * (pairs - tr))
        t.store("O", h * n * d, h * tr)
        return
    t.load("dO", h * n * d, h * tr)  # dP = dO·Vᵀ
    t.load("V", h * tr * nk * d, h * pairs)
    t.op("MAC_Z", h * pairs, elems=h * nn * (2 * d - 1), unit="mm", outputs=h * nn)
    t.store("dP", h * nn, h * pairs)
    t.load("Pd" if dropout else "P", h * nn, h * pairs)  # dV = Pdᵀ·dO
    t.load("dO", h * tc * n * d, h * pairs)
    t.op("MAC_Z", h * tc, elems=h * nk * d * (2 * n - 1), unit="mm", outputs=h * nk * d)
    t.op("MAC", h * (pairs - tc))
    t.store("dV", h * nk * d, h * tc)
    if dropout:
        t.load("dP", h * nn, h * pairs)
        t.op("DROPOUT", h * pairs, elems=h * nn)
        t.store("dP", h * nn, h * pairs)
    t.load("P", h * nn, h * ts)  # dS = P∘(dP − rowsum(P∘dP)), row blocks
    t.load("dP", h * nn, h * ts)
    t.op("MUL", 2 * h * ts, elems=2 * h * nn)
    t.op("ROWSUM", h * ts, elems=h * (nn - n))
    t.op("SUB", h * ts, elems=h * nn)
    t.store("dS", h * nn, h * ts)
    if scaled:
        elementwise("dS", "MUL")
    t.load("dS", 2 * h * nn, 2 * h * pairs)  # dQ = dS·K, dK = dSᵀ·Q
    t.load("K", h * tr * nk * d, h * pairs)
    t.load("Q", h * tc * n * d, h * pairs)
    t.op("MAC_Z", h * (tr + tc), elems=h * (n * d * (2 * nk - 1) + nk * d * (2 * n - 1)), unit="mm",
              outputs=h * (n + nk) * d)
    t.op("MAC", h * (2 * pairs - tr - tc))
    t.store("dQ", h * n * d, h * tr)
    t.store("dK", h * nk * d, h * tc)


def eager_words(pass_: str, scaled: bool, causal: bool, dropout: bool) -> str:
    """The HBM formula per head, as the header prints it (module docstring: kernel by kernel)."""
    s, c, p = int(scaled), int(causal), int(dropout)
    if pass_ == "forward":
        k = 2 + s + c + p
        return (f"reads n·d + 2·Tr·nk·d + {k}·n·nk, writes {k}·n·nk + n·d (S, P: every op a round trip through "
                f"HBM; K, V once per row block)")
    return (f"reads {5 + s + p}·n·nk + n·d + 2·Tr·nk·d + 2·Tc·n·d, writes {2 + s + p}·n·nk + n·d + 2·nk·d (P, dP, "
            f"dS: every op a round trip through HBM; V, K once per row block, dO, Q once per column block)")


def eager_footprint(n: int, nk: int, d: int, h: int, pass_: str, dropout: bool) -> int:
    """HBM words the arrays occupy: S, P (Pd) forward; P (Pd), dP, dS backward."""
    sq = n * nk * (2 + (1 if dropout else 0))
    if pass_ == "forward":
        return h * (2 * n * d + 2 * nk * d + sq)
    return h * (3 * n * d + 4 * nk * d + sq + n * nk)


def eager_peak(*, pass_: str, n: int, nk: int, d: int, br: int, bc: int, rows: int, heads: int, scaled: bool,
               dropout: bool, causal: bool = False) -> int:
    """Peak SRAM words: the kernels' register writes in program order (each kernel's first block,
    then its last), every register keeping its last tile until it is written again."""
    r_last, c_last, s_last = n - (-(-n // br) - 1) * br, nk - (-(-nk // bc) - 1) * bc, n - (-(-n // rows) - 1) * rows
    regs: dict[int, int] = {}
    peak = 0

    def write(reg: int, words: int) -> None:
        nonlocal peak
        regs[reg] = words
        peak = max(peak, sum(regs.values()))

    def kernel(first: list[tuple[int, int]], last: list[tuple[int, int]]) -> None:
        for reg, words in first:
            write(reg, words)
        for reg, words in last:
            regs[reg] = words

    full, tail = (br * d, bc * d, br * bc), (r_last * d, c_last * d, r_last * c_last)
    block = ([(3, full[2])], [(3, tail[2])])
    for _ in range(min(heads, 2)):  # a later head starts from the state the previous one left
        if pass_ == "forward":
            kernel([(0, full[0]), (1, full[1]), (3, full[2])], [(0, tail[0]), (1, tail[1]), (3, tail[2])])
            for _k in range(int(scaled) + int(causal)):
                kernel(*block)
            kernel([(3, rows * nk), (6, rows), (5, rows)], [(3, s_last * nk), (6, s_last), (5, s_last)])
            if dropout:
                kernel(*block)
            kernel([(3, full[2]), (1, full[1]), (0, full[0])], [(3, tail[2]), (1, tail[1]), (0, tail[0])])
            continue
        kernel([(0, full[0]), (1, full[1]), (3, full[2])], [(0, tail[0]), (1, tail[1]), (3, tail[2])])  # dO·Vᵀ
        kernel([(3, full[2]), (0, full[0]), (1, full[1])], [(3, tail[2]), (0, tail[0]), (1, tail[1])])  # Pdᵀ·dO
        if dropout:
            kernel(*block)
        kernel([(3, rows * nk), (4, rows * nk), (8, rows)], [(3, s_last * nk), (4, s_last * nk), (8, s_last)])
        if scaled:
            kernel(*block)
        kernel([(3, full[2]), (1, full[1]), (0, full[0])], [(3, tail[2]), (1, tail[1]), (0, tail[0])])  # dS·K
        kernel([(3, full[2]), (0, full[0]), (1, full[1])], [(3, tail[2]), (0, tail[0]), (1, tail[1])])  # dSᵀ·Q
    return peak + (1 if scaled else 0)


def eager_blocks(*, pass_: str, n: int, nk: int, d: int, sram_words: int | None, block_m: int | None,
                 block_n: int | None, heads: int, scaled: bool, dropout: bool, causal: bool = False,
                 default: int = 64) -> tuple[int, int, int, str]:
    """(Br, Bc, R, how): given blocks (R = Br, else the largest power of two below it that fits), or from M — the
    largest power-of-two square tile b (≤ the sequence) and R ≤ b whose peak fits — or ``default``."""
    def need(br: int, bc: int, rows: int) -> int:
        return eager_peak(pass_=pass_, n=n, nk=nk, d=d, br=br, bc=bc, rows=rows, heads=heads, scaled=scaled,
                          dropout=dropout, causal=causal)

    def rows_for(br: int, bc: int) -> int | None:  # Br, else the largest power of two below it that fits
        r = 1 << (br.bit_length() - 1)
        for rows in ([br] if r == br else [br, r]) + [r >> k for k in range(1, r.bit_length())]:
            if sram_words is None or need(br, bc, rows) <= sram_words:
                return rows
        return None

    if block_m is not None or block_n is not None or sram_words is None:
        br = min(n, block_m if block_m is not None else default)
        bc = min(nk, block_n if block_n is not None else default)
        rows = rows_for(br, bc)
        if rows is None:
            raise ConfigError((f"eager attention with blocks Br = {br}, Bc = {bc} needs {need(br, bc, 1)} words of "
                              f"SRAM even with 1-row softmax blocks (a row of S is nk = {nk} words); ", Opt("sram"), f" is "
                              f"{sram_words}"), key="sram",
                              hint=("use smaller ", Opt("block_m"), "/", Opt("block_n"), ", a smaller ", Opt("n"),
                                    ", or more SRAM"))
        how = "given" if block_m is not None and block_n is not None else f"default {default} × {default}"
        return br, bc, rows, how + f"; the row-wise kernels (softmax) take R = {rows} rows"
    b = 1 << (max(n, nk).bit_length() - 1)
    while b >= 1:
        br, bc = min(n, b), min(nk, b)
        rows = rows_for(br, bc) if br * d + bc * d + br * bc <= sram_words else None
        if rows is not None:
            return br, bc, rows, (f"from M = {sram_words} words: the largest power-of-two square matmul tile that "
                                  f"fits, b = {b}; the row-wise kernels (softmax) R = {rows} rows of nk = {nk}")
        b //= 2
    raise ConfigError(f"SRAM of {sram_words} words cannot hold eager attention's softmax kernel: one row of S is "
                      f"nk = {nk} words", key="sram", hint=("use a smaller ", Opt("n"), " or more SRAM (", Opt("sram"), ")"))
