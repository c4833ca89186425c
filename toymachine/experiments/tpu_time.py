"""Seed 002's wall-clock tables as *predicted* times (``toym tpu-table --table times``): a model, not a
measurement. For each n (causal, one head, d = 64) four programs are scheduled on the machine
(``cost.tpu_schedule``) and their cycles divided by its clock:

* unfused — ``--algo standard`` with 128 × 128 blocks: S and P written to and read from HBM (the
  seed's three separately jitted steps), in order, no overlap;
* fused — ``--algo standard`` sized for the machine: S kept in VMEM while it fits (XLA's fused
  kernel), else blocked through HBM; four MXUs and double-buffered DMA (what the compiler schedules);
* flash, fori_loop — FlashAttention-2 with 128 × 128 blocks, in order, no overlap (the seed's guess:
  load, wait, compute);
* flash, vmap — the same program with four MXUs and double-buffered DMA (query blocks independent).

Beside them: the seed's measured milliseconds (Colab TPU v5e, JAX 0.7.2) and the two ratios it
draws — fuse speed-up (unfused ÷ fused) and vmap speed-up (fori ÷ vmap) — predicted and measured.
``nojit`` (a dispatch per op) is not modelled: its cost is host dispatch, which no cycle model has.
The model's VPU is the seed's 128 lanes at one vector per cycle; the absolute times are the cycle
model's, and the seed's table is what a real chip did.
"""

from __future__ import annotations

__all__ = ["SEED_MS", "SEED_VMAP_MS", "time_rows", "time_report", "MAX_N"]

from collections.abc import Sequence

from ..cost.tpu_schedule import schedule_cycles
from ..errors import ConfigError, Opt
from ..gen.tile import attention_program
from ..machine import Machine
from ..params import check_int
from ..render.report import Report, Section

# seed 002, "Benchmark": n → (nojit, unfused, fused, flash) ms; "The vmap insight": n → (fori, vmap, fused) ms
SEED_MS = {512: (1.390, 0.475, 0.076, 0.082), 1024: (1.504, 0.497, 0.055, 0.133), 2048: (1.737, 0.651, 0.067, 0.522),
           4096: (3.016, 1.038, 0.072, 2.509), 8192: (7.385, 2.834, 1.189, 14.052),
           16384: (25.576, 10.110, 4.445, 89.567)}
SEED_VMAP_MS = {512: (0.074, 0.065, 0.065), 1024: (0.133, 0.079, 0.069), 2048: (0.525, 0.083, 0.069),
                4096: (2.510, 0.178, 0.072), 8192: (14.061, 0.587, 1.194), 16384: (89.538, 1.997, 4.444)}
MAX_N = 16384
D, BLOCK = 64, 128


def _ms(prog, machine: Machine, clock_hz: float, overlap: bool) -> float:
    t = schedule_cycles(prog, machine, overlap_compute=overlap, double_buffer=overlap, independent_mxus=overlap)
    return 1e3 * t.cycles / clock_hz


def time_rows(machine: Machine, ns: Sequence[int]) -> list[tuple[int, float, float, float, float]]:
    """(n, unfused, fused, fori, vmap) predicted milliseconds."""
    clock = machine.clock_hz
    if not machine.has_units or not clock or not machine.hbm_bytes_per_cycle:
        raise ConfigError(f"machine {machine.name} has no compute units, clock or HBM rate to predict times with",
                          key="machine", suggestion="tpu-v5e")
    if machine.accounting != "toym":
        raise ConfigError("predicted times schedule each instruction at toym's prices; tpu-v5e-seed prices the "
                          "seed's op list instead", key="machine", suggestion="tpu-v5e")
    rows = []
    for n in ns:
        n = check_int("n", n, 1)
        if n > MAX_N:
            raise ConfigError((Opt("n", n), f" is past {MAX_N} (the seed's largest timed point)"), key="n",
                              hint=f"use n ≤ {MAX_N}")
        blocked = attention_program(n=n, d=D, algo="standard", causal=True, machine=machine, block_m=BLOCK,
                                    block_n=BLOCK, max_instructions=None)
        fused = attention_program(n=n, d=D, algo="standard", causal=True, machine=machine, max_instructions=None)
        flash = attention_program(n=n, d=D, algo="fa2", causal=True, machine=machine, block_m=BLOCK, block_n=BLOCK,
                                  max_instructions=None)
        rows.append((n, _ms(blocked, machine, clock, False), _ms(fused, machine, clock, True),
                     _ms(flash, machine, clock, False), _ms(flash, machine, clock, True)))
    return rows


def _f(x: float) -> str:
    return f"{x:.3f}"


def time_report(machine: Machine, rows: list[tuple]) -> Report:
    body = []
    for n, unf, fus, fori, vmap in rows:
        seed, sv = SEED_MS.get(n), SEED_VMAP_MS.get(n)
        body.append((str(n), _f(unf), _f(fus), _f(fori), _f(vmap),
                     "—" if seed is None or sv is None else f"{seed[1]:.3f} / {seed[2]:.3f} / {seed[3]:.3f} / {sv[1]:.3f}",
                     f"{unf / fus:.1f}x", "—" if seed is None else f"{seed[1] / seed[2]:.1f}x",
                     f"{fori / vmap:.1f}x", "—" if sv is None else f"{sv[0] / sv[1]:.1f}x"))
    heads = ("n", "unfused (ms)", "fused (ms)", "flash fori (ms)", "flash vmap (ms)",
             "seed 002 measured: unfused / fused / flash / vmap (ms)", "fuse speed-up", "seed",
             "vmap speed-up", "seed")
    section = Section(f"Predicted times on {machine.name} (a model), beside seed 002's measurements", heads,
                      tuple(body), keys=heads[:6] + ("fuse speed-up (model)", "fuse speed-up (seed)",
                                                    "vmap speed-up (model)", "vmap speed-up (seed)"),
                      align=("r",) * 10)
    note = (f"A MODEL, not a measurement: cycles (cost.tpu_schedule) ÷ {machine.clock_hz:.4g} Hz; causal, one head, "
            f"d = {D}; unfused = standard attention with S and P through HBM, in order; fused = S in VMEM where it "
            "fits, 4 MXUs + double-buffered DMA; fori = FlashAttention-2 128 × 128 in order, no overlap; vmap = the "
            "same with 4 MXUs + double-buffered DMA. nojit (host dispatch per op) is not modelled. The seed's "
            "columns are its Colab v5e measurements")
    return Report(f"Predicted times on {machine.name}", (section,), (note,))
