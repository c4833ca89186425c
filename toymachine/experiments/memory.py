"""Peak memory of attention against the sequence length: seed 002's "Memory scaling" table and
seed 003's "single most important picture" (peak memory of standard vs tiled attention, log axis:
quadratic vs linear), from the programs' ``memory_peak`` (``toym run`` reports it per level).

For each n and algorithm the peak bytes of each memory level come from the cost model
(``cost.tile``: the HBM footprint — every array the program declares, S and P included for
standard attention — and the on-chip peak, × ``word_bytes``), for any n; points small enough
to simulate (batch·heads·n² ≤ ``CHECK_ELEMENTS`` score elements) are also run, and their simulated
``memory_peak`` must equal the formula (``MemoryRow.checked``).

Algorithms: ``standard`` (S and P materialised in HBM — what seed 003's naive PyTorch and an
unfused XLA keep), ``fused`` (S kept on chip, one block: XLA's fused standard attention, seed 002),
``fa2`` (FlashAttention-2: only (Br, Bc) tiles on chip).

Seed 002's table (``memory_report``'s first section): seq_len, the (n, n) scores and the (n, d)
output in MB (2²⁰ bytes; × batch·heads), their ratio, and whether the scores fit on chip — whether
fused attention's on-chip peak fits the machine's capacity (a TPU v5e's 128 MiB of VMEM: yes up to
n = 4096). Seed 003's figures are the same columns for batch 8 × 8 heads in fp16 (``--machine a100``):
128 MB of scores per layer at n = 1024, 2 GB at 4096; its picture is ``plot_memory``: the peak
quadruples per doubling of n for standard attention (S and P in HBM) and doubles for FlashAttention.
"""

from __future__ import annotations

__all__ = ["MemoryRow", "ALGOS", "CHECK_ELEMENTS", "memory_rows", "memory_report", "plot_memory"]

from collections.abc import Sequence
from dataclasses import dataclass

from ..cost.tile import attention_tile_cost
from ..errors import ConfigError, Opt
from ..gen.tile import ALGOS, attention_program, resolve_blocks
from ..gen.tile.fused import machine_blocks
from ..limits import LIMITS
from ..machine import Machine
from ..params import check_choice, check_int
from ..render.report import Report, Section
from ..sim import simulate
from .simulable import CHECK_ELEMENTS, simulable

MB = 1 << 20


@dataclass(frozen=True)
class MemoryRow:
    """One (n, algorithm): peak bytes per memory level, and whether the on-chip peak fits."""

    n: int
    d: int
    algo: str
    block_m: int
    block_n: int
    hbm: int  # bytes: every array the program declares
    onchip: int  # bytes: the on-chip peak (SRAM or VMEM)
    capacity: int | None  # the machine's on-chip bytes (None: unlimited)
    checked: bool | None  # simulated memory_peak equals the formula (None: too big to simulate)

    @property
    def fits(self) -> bool:
        return self.capacity is None or self.onchip <= self.capacity


def _blocks(machine: Machine, algo: str, n: int, d: int, block_m, block_n, heads: int) -> tuple[int, int]:
    if algo == "fused":
        return n, n
    sizing = machine if algo == "fa2" else None  # standard: S in HBM, blocks as given (default 64 × 64)
    _, bm, bn, sram = machine_blocks(sizing, n=n, d=d, algo=algo, block_m=block_m, block_n=block_n,
                                     sram_words=None)
    br, bc, _ = resolve_blocks(n=n, d=d, algo=algo, block_m=bm, block_n=bn, sram_words=sram, heads=heads)
    return br, bc


def memory_rows(*, ns: Sequence[int], d: int, machine: Machine, algos: Sequence[str] = ("standard", "fa2"),
                batch: int = 1, heads: int = 1, causal: bool = False, block_m: int | None = None,
                block_n: int | None = None, check: bool = True) -> list[MemoryRow]:
    """Peak bytes per level for every n and algorithm (module docstring)."""
    d, batch, heads = check_int("d", d, 1), check_int("batch", batch, 1), check_int("heads", heads, 1)
    if not ns or not algos:
        raise ConfigError(("give at least one ", Opt("n"), " and one ", Opt("algo")), key="n" if not ns else "algo")
    for algo in algos:
        check_choice("algo", algo, ALGOS)
    wb = machine.word_bytes
    cap = None if machine.onchip_words is None else machine.onchip_words * wb
    rows, work = [], 0
    for n in ns:
        n = check_int("n", n, 1)
        for algo in algos:
            br, bc = _blocks(machine, algo, n, d, block_m, block_n, batch * heads)
            cost = attention_tile_cost(n=n, d=d, algo=algo, batch=batch, heads=heads, causal=causal, block_m=br,
                                       block_n=bc)
            hbm, onchip = cost.hbm_footprint * wb, cost.sram_peak * wb
            checked = None
            if check and simulable(batch * heads * n * n):
                work += cost.instructions  # the simulations' instructions, added up before each runs
                LIMITS["sweep_work"].check(work, ("the ", Opt("check"), " simulations (so far)"))
                prog = attention_program(n=n, d=d, algo=algo, batch=batch, heads=heads, causal=causal, block_m=br,
                                         block_n=bc)
                peak = simulate(prog, machine.with_(sram_words=None, vmem_bytes=None), steps=False).extra[
                    "memory_peak"]
                checked = peak == {"hbm": hbm, "sram": onchip}
            rows.append(MemoryRow(n, d, algo, br, bc, hbm, onchip, cap, checked))
    return rows


def _mb(b: float) -> str:
    return f"{b / MB:.1f} MB"


def memory_report(rows: Sequence[MemoryRow], machine: Machine, *, batch: int = 1, heads: int = 1) -> Report:
    """Seed 002's table (one head's scores and output, fits on chip) and the peak of every algorithm."""
    wb = machine.word_bytes
    level = machine.onchip_name.upper()
    ns = sorted({r.n for r in rows})
    fused = {r.n: r for r in rows if r.algo == "fused"}
    scaling = []
    h = batch * heads
    for n in ns:
        d = rows[0].d
        scores, output = h * n * n * wb, h * n * d * wb
        fits = fused[n].fits if n in fused else (machine.onchip_words is None or n * n <= machine.onchip_words)
        alone = machine.onchip_words is None or scores <= machine.onchip_words * wb  # seed 002's criterion
        scaling.append((str(n), _mb(scores), _mb(output), f"{scores / output:.1f}x", "yes" if fits else "NO",
                        "yes" if alone else "NO"))
    cap = "unlimited" if machine.onchip_words is None else _mb(machine.onchip_words * wb)
    sections = [Section("Memory scaling", ("seq_len", "scores (n^2)", "output (n*d)", "ratio", "fits on-chip?",
                                           f"scores alone ≤ {level}?"),
                        tuple(scaling), align=("r", "r", "r", "r", "r", "r"),
                        note=f"{wb}-byte words; fits on-chip: fused attention's whole {level} peak (S, Q, K → V, "
                             f"O, row statistics) ≤ {cap}; scores alone: the seed's criterion, the n×n scores "
                             f"≤ {cap}")]
    peak: list[tuple] = []
    previous: dict[str, MemoryRow] = {}  # algo → its row at the last n
    for r in rows:
        before = previous.get(r.algo)
        growth = f"{r.hbm / before.hbm:.2f}x per {r.n // before.n}x n" if before and r.n > before.n else ""
        previous[r.algo] = r
        peak.append((str(r.n), r.algo, f"{r.block_m}×{r.block_n}", str(r.hbm), _mb(r.hbm), growth, str(r.onchip),
                     "yes" if r.fits else "NO", {True: "yes", False: "NO", None: ""}[r.checked]))
    sections.append(Section("Peak memory", ("n", "algo", "blocks", "HBM peak (B)", "HBM peak", "growth",
                                            f"{level} peak (B)", f"fits {level}", "sim = formula"), tuple(peak),
                            align=("r", "l", "r", "r", "r", "r", "r", "l", "l")))
    heads_text = f"batch {batch} × heads {heads}" if batch * heads > 1 else "one head"
    notes = (f"toym memory on {machine.name}: {heads_text}; HBM peak = every array the program declares "
             f"(standard: Q K V O L and the n×n S and P); {level} peak = its tiles at their largest "
             f"(toymachine.cost.tile), × {wb} bytes",
             f"sim = formula: the simulated memory_peak equals the formula (points with batch·heads·n² ≤ "
             f"{CHECK_ELEMENTS} are simulated)")
    return Report("memory", tuple(sections), notes)


def plot_memory(rows: Sequence[MemoryRow], path: str, *, level: str = "hbm", title: str | None = None) -> None:
    """Seed 003's picture: peak bytes (``level`` hbm or onchip) against n, one line per algorithm,
    both axes logarithmic. PNG or SVG by the extension; needs matplotlib."""
    from .plot import check_plot_path, pyplot, save_figure

    check_plot_path(path)
    fig, ax = pyplot().subplots(figsize=(7, 4.5))
    for algo in dict.fromkeys(r.algo for r in rows):
        members = sorted((r for r in rows if r.algo == algo), key=lambda r: r.n)
        ax.plot([r.n for r in members], [getattr(r, level) for r in members], marker="o", label=algo)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("peak HBM bytes" if level == "hbm" else "peak on-chip bytes")
    ax.set_title(title or "peak memory: standard attention is quadratic in n, tiled attention linear")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    save_figure(fig, path)
