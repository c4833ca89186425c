"""Closed-form unit cycles of tiled attention on a machine with compute units (seed 002's TPU;
``machine.units`` prices one instruction, ``sim.engines.units`` charges them as a run executes).

``attention_unit_cycles(n=…, d=…, algo=…, machine=…)`` sums, without simulating, what the forward
programs of ``gen.tile`` cost on the MXU and the VPU — ``fa2`` (FlashAttention-2) and ``fused``
(standard attention with S on chip) — as sums over the Tr query blocks:

MXU, per computed pair (query block of r rows, key block of c rows): S = Q_i·K_jᵀ, an (r, d)·(d, c)
pass, and P̃·V_j, an (r, c)·(c, d) pass — ``MXU.matmul`` cycles each (M + K + N − 2 when they fit
the arrays); fused: (n, d)·(d, n) and (n, n)·(n, d) per head. MACs = r·c·d twice per pair.

VPU, with v(e) = ⌈e / lanes⌉ and p(op) the cycles per vector of op (``VPU.op_cycles``), fa2 per pair
(exact): p(MUL)·v(rc) [τ] + p(MASK)·v(rc) [pairs crossing the diagonal] + p(ROWMAX)·v(rc) + p(MAX)·v(r)
+ p(SUB)·(v(rc) + v(r)) + p(EXP)·(v(rc) + v(r)) + p(ROWSUM)·v(rc) + p(MUL)·(v(r) + v(rd))
+ p(ADD)·(v(r) + v(rd)) — the last ADD is the MAC's "+ O_i"; per query block FILL O_i, l, m
(p(FILL)·(v(rd) + 2v(r))), DIV (v(rd)), LOG and ADD (v(r)) for L; one FILL of the 1×1 τ.
``no-rescale``/``no-max`` drop the ops those variants drop. Fused per head: τ, MASK, ROWMAX, SUB,
EXP, ROWSUM and DIV over v(n²), LOG and ADD over v(n).

``total`` = MXU + VPU (the units in sequence; the tile LOADs and STOREs are DMA, overlapped).
"""

from __future__ import annotations

__all__ = ["UnitCycles", "attention_unit_cycles", "UNIT_ALGOS"]

from dataclasses import dataclass

from ..errors import ConfigError
from ..machine import Machine
from .tile.blocks import Blocks

UNIT_ALGOS = ("fa2", "fused")


@dataclass(frozen=True)
class UnitCycles:
    """MXU and VPU cycles of one program, in closed form."""

    mxu: int
    macs: int
    passes: int
    vpu: float
    mxu_cells: int

    @property
    def total(self) -> float:
        return self.mxu + self.vpu

    @property
    def utilization(self) -> float:
        """MACs / (MXU cycles × rows·cols): the seed's measure (of one array)."""
        return self.macs / (self.mxu * self.mxu_cells) if self.mxu else 0.0


def _key_blocks(g: Blocks, i0: int, i1: int) -> list[tuple[int, bool, int]]:
    """(c, masked, how many) for the key blocks query block [i0, i1) computes with: every block
    of Bc rows except a short last one; those crossing the diagonal (j1 > i0 + 1) need the MASK."""
    met = g.meets(i1)
    c_last = g.n - (g.tc - 1) * g.bc
    unmasked = met if not g.causal else min(met, g.tc if i0 + 1 >= g.n else (i0 + 1) // g.bc)
    groups = []
    full = met - (1 if met == g.tc else 0)  # blocks of Bc rows among those met
    groups.append((g.bc, False, min(full, unmasked)))
    groups.append((g.bc, True, full - min(full, unmasked)))
    if met == g.tc:  # the last key block (c_last rows) is met
        groups.append((c_last, met > unmasked, 1))
    return [x for x in groups if x[2]]


def attention_unit_cycles(*, n: int, d: int, algo: str = "fa2", machine: Machine, batch: int = 1, heads: int = 1,
                          causal: bool = False, block_m: int | None = None, block_n: int | None = None,
                          variant: str = "exact", scale: float | None = None) -> UnitCycles:
    """MXU and VPU cycles of ``gen.tile.attention_program`` (forward) on ``machine`` (module docstring)."""
    if algo not in UNIT_ALGOS:
        raise ConfigError(f"unit cycles in closed form are given for {', '.join(UNIT_ALGOS)}; got {algo!r}",
                          key="algo", hint="simulate other programs on the machine (toym run)")
    mxu, vpu = machine.mxu, machine.vpu
    if mxu is None or vpu is None:  # the machine loader gives a machine both or neither
        raise ConfigError(f"machine {machine.name} has no compute units (mxu, vpu)", hint="use e.g. tpu-v5e")
    h = batch * heads
    scaled = (d ** -0.5 if scale is None else scale) != 1.0
    if machine.accounting == "seed-002":  # seed 002's own accounting (cost.tpu_seed), as tpu-v5e-seed prices
        return _seed(n, d, algo, machine, h, causal, block_m, block_n, variant, scaled)
    exact, no_max = variant == "exact", variant == "no-max"

    def v(op: str, elements: int) -> float:
        return vpu.op_cycles(op, elements)

    mx = macs = passes = 0
    vp = v("FILL", 1) if scaled else 0
    if algo == "fused":
        for mkn in ((n, d, n), (n, n, d)):
            c, p = mxu.matmul(*mkn)
            mx, passes, macs = mx + h * c, passes + h * p, macs + h * n * n * d
        nn = n * n
        per = v("EXP", nn) + v("ROWSUM", nn) + v("DIV", nn) + v("LOG", n)
        per += v("MUL", nn) if scaled else 0
        per += v("MASK", nn) if causal and n > 1 else 0
        per += v("ROWMAX", nn) + v("SUB", nn) + v("ADD", n) if exact else 0
        return UnitCycles(mx, macs, passes, vp + h * per, mxu.cells)
    br, bc = min(block_m or 64, n), min(block_n or 64, n)
    g = Blocks(n, br, bc, causal)
    for i0, i1 in g.rows():
        r = i1 - i0
        block = v("FILL", r * d) + v("FILL", r) + v("DIV", r * d) + v("LOG", r)
        block += 0 if no_max else v("FILL", r) + v("ADD", r)
        for c, masked, count in _key_blocks(g, i0, i1):
            c1, p1 = mxu.matmul(r, d, c)
            c2, p2 = mxu.matmul(r, c, d)
            mx += count * h * (c1 + c2)
            passes += count * h * (p1 + p2)
            macs += count * h * 2 * r * c * d
            rc = r * c
            pair = v("ROWSUM", rc) + v("EXP", rc) + v("ADD", r) + v("ADD", r * d)  # every variant; + MAC's "+ O_i"
            pair += v("MUL", rc) if scaled else 0
            pair += v("MASK", rc) if masked else 0
            if exact:
                pair += (v("ROWMAX", rc) + v("MAX", r) + v("SUB", rc) + v("SUB", r) + v("EXP", r)
                         + v("MUL", r) + v("MUL", r * d))
            elif not no_max:  # no-rescale
                pair += v("ROWMAX", rc) + v("SUB", rc)
            block += count * pair
        vp += h * block
    return UnitCycles(mx, macs, passes, vp, mxu.cells)


def _seed(n, d, algo, machine, h, causal, block_m, block_n, variant, scaled) -> UnitCycles:
    from .tpu_seed import seed_attention_cycles

    if variant != "exact":
        raise ConfigError("seed 002's accounting is given in closed form for the exact online softmax",
                          key="variant", suggestion="exact", alternative="a machine with accounting: toym")
    br, bc = min(block_m or 64, n), min(block_n or 64, n)
    s = seed_attention_cycles(algo="standard" if algo == "fused" else "flash", n=n, d=d, block=br, block_n=bc,
                              causal=causal, scaled=scaled, heads=h, mxu_dim=machine.mxu.rows, prices=machine.vpu)
    tiles = 1 if algo == "fused" else Blocks(n, br, bc, causal).sums()["P"]
    return UnitCycles(s.mxu, s.macs, 2 * h * tiles, s.vpu, machine.mxu.cells)  # every matmul one pass
