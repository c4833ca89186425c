"""Seed 002's TPU cycle model, reproduced: the MXU + VPU accounting behind its table
("What the emulator revealed": n = 512, d = 64, causal, one head — standard attention and
flash attention with blocks 128 and 64). It is the pricing of the preset ``tpu-v5e-seed``
(``accounting: seed-002``): the op names below are what a run on it lists in ``units.vpu.by_op``,
``SEED_OPS`` says which instruction carries each (``sim.engines.seed_units`` charges them), and
``seed_attention_cycles``/``seed_vpu_ops`` are their closed form — the tests hold every simulated
op equal to it (``toym tpu-table`` prints the table from the simulator).

MXU (exact, the seed's ``TPUCycleSimulator.matmul``): every (M, K)·(K, N) matmul costs the
systolic formula M + K + N − 2 cycles and M·K·N MACs; utilisation = MACs / (cycles × 128·128).
Standard attention is two matmuls of the whole problem, Q·Kᵀ (n, d)·(d, n) and P·V (n, n)·(n, d);
flash attention is two per computed tile, Q_i·K_jᵀ (Br, d)·(d, Bc) and P̃·V_j (Br, Bc)·(Bc, d),
tiles wholly above the causal diagonal skipped.

VPU (the seed's ``vpu(n_elements, cycles_per_vec)``): an op on an array of e elements costs
⌈e / 128⌉ × its cycles per vector. The seed does not print which ops it charged; the accounting
here reproduces all three VPU figures exactly (``benchmarks/tpu_table.py`` shows it is the only
one of its shape that does, and ``benchmarks/TPU_TABLE.md`` derives it). EXP costs 2 cycles per
vector, every other op 1. Charged, in the seed's code (``standard_causal_attention`` and
``flash_attention_vmap``'s ``k_body``):

* standard, each on the (n, n) scores: ×τ, the causal mask built (``triu(ones)``) and applied
  (``where``), and softmax's row max, −max, exp, row sum, ÷sum — 9 cycles per vector;
* flash, per computed tile: on the (Br, Bc) scores ×τ, ``where(valid)``, row max, −m_new,
  exp, row sum (7 cycles per vector); on the (Br,) row state m_new = max(m, rowmax), m − m_new,
  α = exp, α·l, + rowsum (6); on the (Br, d) accumulator α·acc and + P̃·V (2);
* flash, per query block: acc / l on (Br, d) (1) and 4 cycles on (Br,) row vectors; per call,
  4 cycles on one vector. These last two have no single reading in the seed's code; the one
  used here is ``one_q_block``'s row setup (q_idx, q_mask, running_max and running_sum
  initialised) and the call's index vectors (q_offsets, k_offsets, q_starts and its ×Br).

Not charged (the seed's simulator does not, by the figures): the (Br, Bc) index compares that
build ``valid``, the isfinite guards and their ``where``s, the gathers of K and V tiles and
their padding ``where``s, the (Br, d) zero-initialised accumulator and the final ``where``.
"""

from __future__ import annotations

__all__ = ["SEED_TABLE", "SeedOp", "SeedCycles", "seed_attention_cycles", "seed_vpu_ops", "seed_by_op", "vectors",
           "mxu_matmul_cycles", "SEED_OPS", "UNCHARGED", "CALL_VECTORS", "MNEMONIC"]

from dataclasses import dataclass, field

from ..params import check_choice, check_int

# The seed's table (seed 002, "What the emulator revealed"): n = 512, d = 64, causal, one head.
SEED_TABLE = {
    "standard": {"total": 20604, "mxu": 2172, "vpu": 18432, "utilization": 0.943, "vs_standard": 1.00},
    128: {"total": 16936, "mxu": 6360, "vpu": 10576, "utilization": 0.201, "vs_standard": 0.82},
    64: {"total": 24556, "mxu": 13680, "vpu": 10876, "utilization": 0.084, "vs_standard": 1.19},
}
EXP_CYCLES = 2  # cycles per vector of an exp; every other op 1


def vectors(elements: int, lanes: int = 128) -> int:
    """⌈elements / lanes⌉: the seed's ``(n − 1) // 128 + 1``."""
    return -(-elements // lanes)


def mxu_matmul_cycles(m: int, k: int, n: int) -> int:
    """One (m, k)·(k, n) matmul on the systolic array: M + K + N − 2 cycles (seed 002)."""
    return m + k + n - 2


@dataclass(frozen=True)
class SeedOp:
    """One VPU charge: ``what`` (the seed's code), the array it runs on, how often."""

    what: str
    shape: tuple[int, ...]  # the array the op runs on (elements = product)
    count: int  # how many times (computed tiles, query blocks, 1)
    cycles_per_vector: int

    def cycles(self, lanes: int = 128) -> int:
        elements = 1
        for s in self.shape:
            elements *= s
        return self.count * vectors(elements, lanes) * self.cycles_per_vector


# The seed's op names: ``by_op`` of a run on a machine with ``accounting: seed-002`` (``SEED_OPS``
# below says which toym instruction each is charged on) and the lists of ``seed_vpu_ops``.
SCALE, WHERE_VALID, TRIU, WHERE_MASK = ("scores × τ", "where(valid, scores, −inf)",
                                        "mask built: triu(ones((n, n)))", "where(mask, −inf, scores)")
ROW_MAX, SUB_MAX, EXP_S, ROW_SUM, DIV_SUM = ("row max", "scores − max", "exp(scores − max)", "row sum",
                                             "÷ row sum")
NEW_MAX, SUB_M, RESCALE, RESCALE_L, ADD_L = ("new_max = maximum(running_max, row max)", "running_max − new_max",
                                             "exp(running_max − new_max) = rescale", "rescale · running_sum",
                                             "running_sum + row sum")
RESCALE_ACC, ADD_PV, DIV_ACC = "rescale · acc", "acc + weights @ v_tile", "acc / running_sum"
INIT_MAX, INIT_SUM, Q_IDX, Q_MASK = ("running_max = −inf", "running_sum = 0", "q_idx = q_start + q_offsets",
                                     "q_mask = q_idx < n")
CALL_VECTORS = ("q_offsets = arange(block_m)", "k_offsets = arange(block_n)", "q_starts = arange(num_q_blocks)",
                "q_starts × block_m")
UNCHARGED = ("τ: a host scalar (FILL 1×1)", "acc = zeros((Br, d)) (FILL)", "L = m + log l: not in the seed's code")

# Which toym instruction carries each charge under ``accounting: seed-002`` (``sim.engines.seed_units``):
SEED_OPS = {
    SCALE: "MUL by the 1×1 τ tile", WHERE_VALID: "MAC_Z Q_i·K_jᵀ of a flash program (every computed tile)",
    TRIU: "MASK of a standard program", WHERE_MASK: "MASK of a standard program", ROW_MAX: "ROWMAX",
    SUB_MAX: "SUB on the scores", EXP_S: "EXP on the scores", ROW_SUM: "ROWSUM", DIV_SUM: "DIV of a standard program",
    NEW_MAX: "MAX", SUB_M: "SUB on (Br, 1)", RESCALE: "EXP on (Br, 1)", RESCALE_L: "MUL on (Br, 1)",
    ADD_L: "ADD on (Br, 1)", RESCALE_ACC: "MUL of the (Br, d) accumulator", ADD_PV: "MAC's + C",
    DIV_ACC: "DIV of a flash program", INIT_MAX: "FILL −inf, (Br, 1)", INIT_SUM: "FILL 0, (Br, 1)",
    Q_IDX: "FILL −inf, (Br, 1)", Q_MASK: "FILL −inf, (Br, 1)", **{v: "the program's first FILL −inf"
                                                                  for v in CALL_VECTORS},
}


def _ops(charges, shape, count):
    return [SeedOp(what, shape, count, EXP_CYCLES if what.startswith("exp") else 1)
            for what in charges]


# the instruction each op runs as (its cycles per vector: the machine's price of that instruction)
MNEMONIC = {SCALE: "MUL", WHERE_VALID: "MASK", TRIU: "MASK", WHERE_MASK: "MASK", ROW_MAX: "ROWMAX", SUB_MAX: "SUB",
            EXP_S: "EXP", ROW_SUM: "ROWSUM", DIV_SUM: "DIV", NEW_MAX: "MAX", SUB_M: "SUB", RESCALE: "EXP",
            RESCALE_L: "MUL", ADD_L: "ADD", RESCALE_ACC: "MUL", ADD_PV: "ADD", DIV_ACC: "DIV",
            **{k: "FILL" for k in (INIT_MAX, INIT_SUM, Q_IDX, Q_MASK) + CALL_VECTORS}}


def _flash_tiles(n: int, block_m: int, block_n: int, causal: bool) -> tuple[int, int]:
    """(computed tiles, query blocks) of one head: the seed's table skips the tiles wholly above the
    diagonal (nb(nb + 1)/2 of a square grid), as toym's programs do."""
    from .tile.blocks import Blocks

    g = Blocks(n, min(block_m, n), min(block_n, n), causal)
    return g.sums()["P"], g.tr


def seed_vpu_ops(*, algo: str, n: int, d: int, block: int | None = None, block_n: int | None = None,
                 causal: bool = True, scaled: bool = True, heads: int = 1) -> list[SeedOp]:
    """The VPU ops seed 002's table charges (module docstring): causal attention, one head and square
    blocks by default; ``block_n`` (default ``block``), ``causal``, ``scaled`` and ``heads`` give
    the same accounting for the other programs ``tpu-v5e-seed`` runs (tiles padded to whole blocks)."""
    if algo == "standard":
        names = ((SCALE,) if scaled else ()) + ((TRIU, WHERE_MASK) if causal and n > 1 else ())
        return _ops(names + (ROW_MAX, SUB_MAX, EXP_S, ROW_SUM, DIV_SUM), (n, n), heads)
    if block is None:
        raise ValueError(f"seed_vpu_ops: algo {algo} is blocked and needs block")
    bm = min(block, n)
    bn = min(block if block_n is None else block_n, n)
    tiles, nb = _flash_tiles(n, bm, bn, causal)
    tiles, nb = tiles * heads, nb * heads
    return (_ops(((SCALE,) if scaled else ()) + (WHERE_VALID, ROW_MAX, SUB_MAX, EXP_S, ROW_SUM), (bm, bn), tiles)
            + _ops((NEW_MAX, SUB_M, RESCALE, RESCALE_L, ADD_L), (bm,), tiles)
            + _ops((RESCALE_ACC, ADD_PV), (bm, d), tiles)
            + _ops((DIV_ACC,), (bm, d), nb)
            + _ops((Q_IDX, Q_MASK, INIT_MAX, INIT_SUM), (bm,), nb)
            + _ops(CALL_VECTORS, (1,), 1))


def seed_by_op(ops: list[SeedOp], lanes: int = 128) -> dict[str, int]:
    """Cycles by op name (the ``by_op`` a run on ``tpu-v5e-seed`` reports), names sorted."""
    out: dict[str, int] = {}
    for o in ops:
        out[o.what] = out.get(o.what, 0) + o.cycles(lanes)
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class SeedCycles:
    """One column of the seed's table."""

    label: str
    mxu: int
    macs: int
    vpu: int
    array_cells: int
    ops: tuple[SeedOp, ...] = field(default=())

    @property
    def total(self) -> int:
        """MXU and VPU in sequence, as the seed adds them."""
        return self.mxu + self.vpu

    @property
    def utilization(self) -> float:
        return self.macs / (self.mxu * self.array_cells)


def seed_attention_cycles(*, algo: str, n: int = 512, d: int = 64, block: int | None = None,
                          block_n: int | None = None, causal: bool = True, scaled: bool = True, heads: int = 1,
                          mxu_dim: int = 128, lanes: int = 128, prices=None) -> SeedCycles:
    """Seed 002's MXU and VPU cycles of attention (``algo`` standard or flash; causal, one head by
    default). ``prices``: a VPU (``machine.units.VPU``) whose cycles per vector price each op as the
    instruction it runs as (``MNEMONIC``); default the seed's (EXP 2, every other op 1)."""
    check_choice("algo", algo, ("standard", "flash"))
    n, d = check_int("n", n, 1), check_int("d", d, 1)
    if algo == "standard":
        mm = [(n, d, n), (n, n, d)] * heads  # Q·Kᵀ, P·V: the whole problem, one matmul each
        label = "standard"
    else:
        block = check_int("block", block, 1)
        bm, bn = min(block, n), min(block if block_n is None else check_int("block_n", block_n, 1), n)
        tiles = _flash_tiles(n, bm, bn, causal)[0] * heads
        mm = [(bm, d, bn), (bm, bn, d)] * tiles  # Q_i·K_jᵀ, P̃·V_j per computed tile, padded to whole blocks
        label = f"block={block}" if block_n in (None, block) else f"blocks={bm}×{bn}"
    ops = seed_vpu_ops(algo=algo, n=n, d=d, block=block, block_n=block_n, causal=causal, scaled=scaled, heads=heads)
    if prices is None:
        vpu = sum(o.cycles(lanes) for o in ops)
    else:
        vpu = sum(o.count * vectors(_elements(o.shape), prices.lanes) * prices.per_vector(MNEMONIC[o.what])
                  for o in ops)
    return SeedCycles(label, mxu=sum(mxu_matmul_cycles(*s) for s in mm), macs=sum(a * b * c for a, b, c in mm),
                      vpu=vpu, array_cells=mxu_dim * mxu_dim, ops=tuple(ops))


def _elements(shape) -> int:
    e = 1
    for x in shape:
        e *= x
    return e
