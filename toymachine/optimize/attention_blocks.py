"""FlashAttention block sizes: the best (Br, Bc) and loop order under an SRAM of M words,
beside the paper's rule (seed 001 quotes and questions it; seed 004, Algorithm 1).

FlashAttention's Algorithm 1 sets Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d) so that Q_i, K_j, V_j, O_i
take about M/4 words each, and Theorem 2 puts its HBM traffic at Θ(N²d²/M) (Proposition 3:
no exact algorithm does better for d ≤ M ≤ Nd). ``optimize_blocks`` searches every loop
order — fa1 (K_j, V_j outer: the outer-product schedule) and fa2 (Q_i outer: the inner
product), and for the backward pass also the row / col / split orders — and every feasible
(Br, Bc), i.e. every pair whose working set (``cost_tile.sram_peak``: the program's T
registers at their largest) fits in M, for the least HBM words (or, on a machine with rates,
the least cycles ``TileCost.cycles`` / roofline time), by the closed-form cost model
``cost.attention_tile_cost``; then it builds the winner's program and simulates it to check
that the closed form holds (reads, writes, SRAM peak).

Candidates. Without the causal mask a program's counts depend on the blocks only through
the trip counts Tr = ⌈n/Br⌉, Tc = ⌈n/Bc⌉, and the working set grows with Br and Bc, so the
smallest block of each trip count, B = ⌈n/T⌉, is the only one worth trying: the search over
those is exhaustive. With the causal mask the pair sums depend on the block boundaries too:
every (Br, Bc) is tried for n ≤ ``EXHAUSTIVE_CAUSAL_N``, the trip-count candidates beyond.
Ties go to fewer instructions, then to larger blocks.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BlockChoice", "BlockSearch", "optimize_blocks", "block_table", "paper_choice"]

import math
from dataclasses import dataclass, field

from ..cost import attention_tile_cost, paper_blocks
from ..cost.tile import ORDERS, PASSES, fit_blocks
from ..cost.tile.eager import eager_blocks
from ..errors import ConfigError, Opt
from ..limits import LIMITS
from ..machine import DEFAULT_MACHINE, Machine

EXHAUSTIVE_CAUSAL_N = 64
VERIFY_MAX_INSTRUCTIONS = 200_000  # simulate the winner only below this many instructions


@dataclass(frozen=True)
class BlockChoice:
    """One loop order and block pair, and what the closed form says it costs."""

    algo: str
    order: str  # backward loop order (row / col / split); "" for the forward pass
    br: int
    bc: int
    reads: int  # HBM words
    writes: int
    sram_peak: int  # words
    instructions: int
    cycles: float  # on the search's machine
    time_s: float | None

    @property
    def traffic(self) -> int:
        return self.reads + self.writes

    @property
    def loop(self) -> str:
        return self.algo + (f"/{self.order}" if self.order else "")

    def to_dict(self) -> dict:
        return {"algo": self.algo, "order": self.order or None, "br": self.br, "bc": self.bc,
                "hbm_reads": self.reads, "hbm_writes": self.writes, "hbm_words": self.traffic,
                "sram_peak": self.sram_peak, "instructions": self.instructions, "cycles": self.cycles,
                "time_s": self.time_s}


@dataclass(frozen=True)
class BlockSearch:
    """The winner, the best of each loop order, the paper's rule, and the Θ(N²d²/M) yardstick."""

    n: int
    d: int
    sram_words: int
    pass_: str
    causal: bool
    heads: int
    objective: str  # "hbm_words", "cycles" or "time_s"
    best: BlockChoice
    per_loop: tuple[BlockChoice, ...]  # the best of each loop order searched
    paper: tuple[tuple[str, BlockChoice | None, str], ...]  # (loop, the rule's blocks as fitted, note)
    bound: float  # heads · N²d²/M
    candidates: int  # (loop, Br, Bc) triples that fit and were costed
    exhaustive: bool  # every feasible pair (or every trip-count pair, which is the same optimum)
    verified: dict | None  # simulated reads, writes, sram_peak of the winner (None: not run)
    machine: Machine = field(default=DEFAULT_MACHINE, repr=False)

    def score(self, c: BlockChoice):
        return _score(c, self.objective)

    def to_dict(self) -> dict:
        return {
            "n": self.n, "d": self.d, "sram_words": self.sram_words, "pass": self.pass_, "causal": self.causal,
            "heads": self.heads, "objective": self.objective, "best": self.best.to_dict(),
            "per_loop": [c.to_dict() for c in self.per_loop],
            "paper": [{"loop": loop, "choice": c.to_dict() if c else None, "note": note}
                      for loop, c, note in self.paper],
            "bound_n2d2_over_m": self.bound, "ratio_to_bound": self.best.traffic / self.bound,
            "candidates": self.candidates, "exhaustive": self.exhaustive, "verified": self.verified,
            "machine": self.machine.name,
        }


def _objective(machine: Machine) -> str:
    if machine.hbm_bytes_per_cycle or machine.tensor_flops_per_cycle or machine.vector_flops_per_cycle:
        return "time_s" if machine.clock_hz else "cycles"
    return "hbm_words"


def _score(c: BlockChoice, objective: str):
    primary = {"hbm_words": c.traffic, "cycles": c.cycles, "time_s": c.time_s}[objective]
    return (primary, c.traffic, c.instructions, -c.br, -c.bc, c.algo, c.order)


SEARCHED = ("fa1", "fa2", "eager")  # the tile algorithms whose blocks this search chooses (eager: no loop order)


def _loops(pass_: str, algo: str | None, order: str | None) -> list[tuple[str, str]]:
    if algo == "eager":
        return [("eager", "")]
    algos = [algo] if algo else ["fa1", "fa2"]
    if pass_ == "forward":
        return [(a, "") for a in algos]
    return [(a, o) for a in algos for o in ([order] if order else ["row", "col", "split"])]


def _cost(n, d, heads, causal, pass_, algo, order, br, bc, machine, sram_words=None) -> BlockChoice:
    kw = dict(order=order) if pass_ == "backward" and algo != "eager" else {}
    if algo == "eager":  # its softmax kernels' rows R: the largest that fits M with these blocks (cost.tile.eager)
        try:
            kw["block_rows"] = eager_blocks(pass_=pass_, n=n, nk=n, d=d, sram_words=sram_words, block_m=br,
                                            block_n=bc, heads=heads, scaled=True, dropout=False, causal=causal)[2]
        except ConfigError:
            kw["block_rows"] = 1  # does not fit even so: its peak with 1-row softmax blocks exceeds M
    c = attention_tile_cost(n=n, d=d, algo=algo, pass_=pass_, heads=heads, causal=causal, block_m=br, block_n=bc,
                            **kw)
    return BlockChoice(algo, order, min(br, n), min(bc, n), c.reads, c.writes, c.sram_peak, c.instructions,
                       c.cycles(machine), c.time_s(machine))


def _sizes(n: int, cap: int | None = None) -> list[int]:
    """The smallest block of each trip count: ⌈n/T⌉ for T = 1 … n, those ≤ ``cap`` — in O(√n): a
    value above √n comes from a T ≤ √n + 1; a value v below it from T = ⌈n/v⌉ or from no T."""
    cap = n if cap is None else min(cap, n)
    root = math.isqrt(n)
    out = {v for t in range(max(1, n // max(cap, 1)), root + 2) if (v := -(-n // t)) <= cap}
    out.update(v for v in range(1, min(cap, root + 1) + 1) if -(-n // -(-n // v)) == v)
    return sorted(out)


def _check_search(n: int, d: int, sram_words: int, exhaustive: bool) -> int:
    """The largest block a Q or K tile (rows × d words) leaves room for, after refusing up front a
    search of more (Br, Bc) pairs than ``limits.search_size``."""
    cap = max(1, sram_words // d)
    count = min(cap, n) if exhaustive else min(cap, n, 2 * math.isqrt(n) + 2)
    LIMITS["search_size"].check(count * count, (f"the block search (n = {n:,}, d = {d}, ", Opt("sram", f"{sram_words:,}"),
                                                f": up to {count:,} block sizes, {count * count:,} (Br, Bc) pairs)"))
    return cap


def paper_choice(n, d, sram_words, heads, causal, pass_, algo, order, machine) -> tuple[BlockChoice | None, str]:
    """The paper's (Br, Bc) for M, shrunk as ``gen.tile`` shrinks it when the working set exceeds M
    (eager attention: its own rule, ``cost.tile.eager.eager_blocks``)."""
    if algo == "eager":
        try:
            br, bc, _, note = eager_blocks(pass_=pass_, n=n, nk=n, d=d, sram_words=sram_words, block_m=None,
                                           block_n=None, heads=heads, scaled=True, dropout=False, causal=causal)
        except ConfigError as exc:
            return None, exc.message
        return _cost(n, d, heads, causal, pass_, algo, order, br, bc, machine, sram_words), note
    br0, bc0 = paper_blocks(d, sram_words)
    try:
        kw = dict(order=order) if pass_ == "backward" else {}
        br, bc, note = fit_blocks(algo=algo, pass_=pass_, d=d, n=n, sram_words=sram_words, heads=heads, **kw)
    except ConfigError as exc:
        return None, exc.message
    shrunk = (br, bc) != (min(br0, n), min(bc0, n))
    note = (f"Bc = ⌈M/4d⌉ = {bc0}, Br = min(⌈M/4d⌉, d) = {br0}" +
            (f"; its working set exceeds M, shrunk to {br}×{bc}" if shrunk else ""))
    return _cost(n, d, heads, causal, pass_, algo, order, br, bc, machine), note


def optimize_blocks(*, n: int, d: int, sram_words: int, pass_: str = "forward", causal: bool = False,
                    heads: int = 1, algo: str | None = None, order: str | None = None,
                    machine: Machine | None = None, verify: bool = True) -> BlockSearch:
    """The (loop order, Br, Bc) of least cost under ``sram_words``; see the module docstring."""
    from ..params import check_choice, check_int

    n, d, sram_words = check_int("n", n, 1), check_int("d", d, 1), check_int("sram", sram_words, 1)
    heads = check_int("heads", heads, 1)
    check_choice("pass", pass_, PASSES)
    if algo is not None:
        if algo not in SEARCHED:
            raise ConfigError((Opt("algo", algo), f": the block search chooses the blocks of {', '.join(SEARCHED)}; "
                               f"{algo}'s are its own rule's"), key="algo",
                              hint=("use ", Opt("algo", "fa1"), ", fa2 or eager, or leave it out"))
    if order is not None and algo == "eager":
        raise ConfigError("eager attention's backward is autograd's fixed sequence of kernels: it has no loop order",
                          key="order", hint=("leave ", Opt("order"), " out with ", Opt("algo", "eager")))
    if order is not None:
        if pass_ != "backward":
            raise ConfigError((Opt("order"), " chooses the backward pass's loop order"), key="order",
                              hint=("use it with ", Opt("pass", "backward")))
        check_choice("order", order, ORDERS)
    machine = machine or DEFAULT_MACHINE
    objective = _objective(machine)
    exhaustive_pairs = causal and n <= EXHAUSTIVE_CAUSAL_N
    cap = _check_search(n, d, sram_words, exhaustive_pairs)
    sizes = list(range(1, min(n, cap) + 1)) if exhaustive_pairs else _sizes(n, cap)
    per_loop, paper, count = [], [], 0
    for a, o in _loops(pass_, algo, order):
        best = None
        for br in sizes:
            for bc in sizes:  # the working set grows with Bc: stop at the first that does not fit
                c = _cost(n, d, heads, causal, pass_, a, o, br, bc, machine, sram_words)
                if c.sram_peak > sram_words:
                    break
                count += 1
                if best is None or _score(c, objective) < _score(best, objective):
                    best = c
        if best is not None:
            per_loop.append(best)
        paper.append((a + (f"/{o}" if o else ""), *paper_choice(n, d, sram_words, heads, causal, pass_, a, o, machine)))
    if not per_loop:
        raise ConfigError(f"no block sizes fit an SRAM of {sram_words} words (d = {d}): even 1×1 blocks need more",
                          key="sram", hint=("use a larger ", Opt("sram")))
    winner = min(per_loop, key=lambda c: _score(c, objective))
    return BlockSearch(n, d, sram_words, pass_, causal, heads, objective, winner, tuple(per_loop), tuple(paper),
                       heads * n * n * d * d / sram_words, count, True,
                       _verify(winner, n, d, sram_words, heads, causal, pass_) if verify else None, machine)


def _verify(c: BlockChoice, n, d, sram_words, heads, causal, pass_) -> dict | None:
    """Simulate the winner's program: its HBM words and SRAM peak against the closed form."""
    from ..gen.tile import attention_program
    from ..sim import simulate

    if c.instructions > VERIFY_MAX_INSTRUCTIONS:
        return None
    kw: dict[str, Any] = dict(order=c.order) if pass_ == "backward" and c.algo != "eager" else {}
    program = attention_program(n=n, d=d, algo=c.algo, pass_=pass_, heads=heads, causal=causal, block_m=c.br,
                                block_n=c.bc, sram_words=sram_words, **kw)
    r = simulate(program, DEFAULT_MACHINE.with_(sram_words=sram_words), steps=False)
    got = {"hbm_reads": r.dram_reads, "hbm_writes": r.dram_writes, "sram_peak": r.extra["sram_peak"]}
    got["matches_closed_form"] = (got["hbm_reads"], got["hbm_writes"], got["sram_peak"]) == (c.reads, c.writes,
                                                                                              c.sram_peak)
    return got


def block_table(*, n: int, d: int, sram_list, pass_: str = "forward", causal: bool = False, heads: int = 1,
                algo: str | None = None, order: str | None = None, machine: Machine | None = None) -> list[dict]:
    """Per M: the optimum per loop order beside the paper's rule — where the rule is optimal and where not."""
    rows = []
    for M in sram_list:
        try:
            s = optimize_blocks(n=n, d=d, sram_words=M, pass_=pass_, causal=causal, heads=heads, algo=algo,
                                order=order, machine=machine, verify=False)
        except ConfigError:
            continue
        best_of = {c.loop: c for c in s.per_loop}
        for loop, pc, note in s.paper:
            opt = best_of.get(loop)
            if opt is None:
                continue
            rows.append({"sram_words": M, "loop": loop, "best": opt, "paper": pc, "note": note,
                         "bound": s.bound, "objective": s.objective,
                         "paper_optimal": pc is not None and s.score(pc)[0] == s.score(opt)[0]})
    return rows
