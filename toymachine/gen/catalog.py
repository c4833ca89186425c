"""The built-in generators, registered for ``toym sweep`` and ``toym gen``: the scalar machine's
(matmul, softmax, attention, variance) and the tile machine's ``attention-tile``.

Each entry names its parameters, the builder, the closed-form cost and lower bound
(``toymachine.cost``), and how a sweep point changes the machine (registers, SRAM).
"""

from __future__ import annotations

__all__: list[str] = []

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..cost import (
    Bound,
    Cost,
    attention_bound,
    attention_cost,
    attention_tile_cost,
    matmul_bound,
    matmul_cost,
    softmax_bound,
    softmax_cost,
    variance_bound,
    variance_cost,
)
from ..cost.tile import default_order
from ..cost.tile.eager import eager_blocks
from ..cost.units import UNIT_ALGOS, attention_unit_cycles
from ..machine import Machine
from ..machine.config import SRAM_RULES
from ..program import Program
from .registry import GeneratorSpec, Param, register
from .scalar import attention, matmul, softmax, variance
from .tile import ALGOS, ORDERS, PASSES, VARIANTS, array_shapes, resolve_blocks
from .tile import attention_program as tile_program
from .tile.fused import machine_blocks

# -- the scalar machine's generators -------------------------------------------------------

def _with_registers(params: Mapping[str, Any], machine: Machine) -> Machine:
    if params.get("mac_accumulator"):
        return machine.with_(registers=params["registers"], mac_accumulator=True)
    return machine.with_(registers=params["registers"])


def _attention_machine(params: Mapping[str, Any], machine: Machine) -> Machine:
    _, need = attention.resolve_attention(**params)
    return machine.with_(registers=params["registers"] or need)


def _attention_cost(**params) -> Cost:
    slots, _ = attention.resolve_attention(**params)
    return attention_cost(params["n"], params["d"], params["order"], slots, params["variant"])


register(GeneratorSpec(
    "matmul", "C = A·B (A m×k, B k×n) on an R-register machine: inner, outer or best schedule",
    (Param("n", int, 2, "columns of B and C (and m, k unless given)", minimum=1),
     Param("m", int, None, "rows of A and C (default n)", minimum=1),
     Param("k", int, None, "columns of A, rows of B (default n)", minimum=1),
     Param("registers", int, 3, "register count R (at least 3; 2 with mac_accumulator)", minimum=2),
     Param("schedule", str, "best", "inner, outer, or the cheapest that fits", choices=matmul.SCHEDULES),
     Param("mac_accumulator", bool, None, "the MAC unit keeps its own accumulator ACC (2 registers suffice)")),
    build=matmul.matmul_program, cost=matmul_cost, bound=matmul_bound, machine=_with_registers))

register(GeneratorSpec(
    "softmax", "softmax of x[0..n−1]: naive (no max), 3-pass safe, 2-pass online",
    (Param("n", int, 6, "number of elements", minimum=1),
     Param("algo", str, "online", "naive, safe or online", choices=softmax.ALGOS)),
    build=softmax.softmax_program, cost=softmax_cost, bound=softmax_bound))

register(GeneratorSpec(
    "attention", "attention softmax(QKᵀ)V on the scalar machine, inner or outer loop order",
    (Param("n", int, 4, "sequence length (rows of Q, K, V)", minimum=1),
     Param("d", int, 2, "head dimension", minimum=1),
     Param("order", str, "inner", "inner (query loop outside) or outer (KV loop outside)", choices=attention.ORDERS),
     Param("registers", int, None, "register count (default: the minimum the order needs)", minimum=1),
     Param("output_slots", int, None, "outer order: output rows kept resident (default: as many as fit)", minimum=0),
     Param("variant", str, "exact", "exact, no-max or no-rescale", choices=attention.VARIANTS)),
    build=attention.attention_program, cost=_attention_cost, bound=attention_bound, machine=_attention_machine))

register(GeneratorSpec(
    "variance", "Welford's one-pass sample variance of x[0..n−1]",
    (Param("n", int, 6, "number of elements (at least 2)", minimum=2),),
    build=variance.variance_program, cost=variance_cost, bound=variance_bound))


# -- the tile machine's attention -----------------------------------------------------------------
def _tile_params(p: dict, machine: Machine | None = None) -> dict:
    """The generator's keywords; the blocks sized by --sram, else by the machine's SRAM (as
    ``toym gen -m`` sizes them), else 64 × 64."""
    p = dict(p)
    p["pass_"] = p.pop("pass")
    p["sram_words"] = p.pop("sram")
    if p["sram_words"] is None and machine is not None and not machine.has_units:
        p["sram_words"] = machine.sram_words
    p["sram_rule"] = p.get("sram_rule") or "exact"
    return p

def _sizing(machine: Machine | None) -> Machine | None:
    """A machine with compute units (a TPU) sizes the blocks (``gen.tile.fused.machine_blocks``);
    the others size them by their SRAM (``_tile_params``)."""
    return machine if machine is not None and machine.has_units else None

def _tile_build(with_data: bool = False, seed: int = 0, machine: Machine | None = None, **p) -> Program:
    return tile_program(**_tile_params(p, machine), with_data=with_data, seed=seed, machine=_sizing(machine))

def _tile_blocks(p: dict, machine: Machine | None) -> tuple[dict, int, int, int | None]:
    """The point's keywords (algo, order and SRAM resolved) and its blocks Br, Bc (eager: and R)."""
    q = _tile_params(p, machine)
    q["order"] = default_order(q["algo"], q["order"])
    q["algo"], q["block_m"], q["block_n"], q["sram_words"] = machine_blocks(
        _sizing(machine), n=q["n"], d=q["d"], algo=q["algo"], pass_=q["pass_"], block_m=q["block_m"],
        block_n=q["block_n"], sram_words=q["sram_words"], variant=q["variant"])
    if q["algo"] == "eager":
        return q, *eager_blocks(pass_=q["pass_"], n=q["n"], nk=q["nk"] or q["n"], d=q["d"], sram_words=q["sram_words"],
                                block_m=q["block_m"], block_n=q["block_n"], heads=q["batch"] * q["heads"],
                                scaled=q["d"] != 1, dropout=False, causal=q["causal"])[:3]
    br, bc, _ = resolve_blocks(n=q["n"], d=q["d"], algo=q["algo"], pass_=q["pass_"], block_m=q["block_m"],
                               block_n=q["block_n"], sram_words=q["sram_words"], variant=q["variant"],
                               scaled=q["d"] != 1, precompute_d=q["precompute_d"], order=q["order"],
                               heads=q["batch"] * q["heads"], nk=q["nk"],
                               kv_heads=None if q["kv_heads"] is None else q["batch"] * q["kv_heads"],
                               sram_rule=q["sram_rule"])
    return q, br, bc, None

def _tile_resolved(machine: Machine | None = None, **p) -> dict:
    """What ran where the point left it to the defaults: the blocks and the backward's loop order."""
    q, br, bc, _ = _tile_blocks(p, machine)
    out = {"block_m": br, "block_n": bc}
    if p["pass"] == "backward" and q["algo"] in ("fa1", "fa2"):
        out["order"] = q["order"]
    return out

def _tile_cost(machine: Machine | None = None, **p) -> Cost:
    q, br, bc, rows = _tile_blocks(p, machine)
    sizing = _sizing(machine)
    c = attention_tile_cost(n=q["n"], d=q["d"], algo=q["algo"], pass_=q["pass_"], batch=q["batch"],
                            heads=q["heads"], causal=q["causal"], block_m=br, block_n=bc, variant=q["variant"],
                            precompute_d=q["precompute_d"], order=q["order"], nk=q["nk"], kv_heads=q["kv_heads"],
                            sram_rule=q["sram_rule"], block_rows=rows)
    breakdown: dict[str, float] = {"HBM reads": c.reads, "HBM writes": c.writes, "SRAM peak": c.sram_peak,
                 "HBM footprint": c.hbm_footprint, "matmul FLOPs": c.flops_matmul, "other FLOPs": c.flops_other}
    if sizing is not None and q["algo"] in UNIT_ALGOS and q["pass_"] == "forward":  # cost.units' closed form
        u = attention_unit_cycles(n=q["n"], d=q["d"], algo=q["algo"], machine=sizing, batch=q["batch"],
                                  heads=q["heads"], causal=q["causal"], block_m=br, block_n=bc, variant=q["variant"])
        breakdown.update({"MXU cycles": u.mxu, "VPU cycles": u.vpu, "unit cycles": u.total})
    return Cost(ops=dict(c.ops), registers=c.registers, breakdown=breakdown,
                work={"words": c.reads + c.writes, "matmul": c.flops_matmul, "vector": c.flops_other - c.sfu_ops,
                      "sfu": c.sfu_ops, "matmul_outputs": c.mac_z_outputs})


def _tile_bound(**p) -> Bound:
    """Compulsory traffic: every input word read once, every output word written once."""
    shapes = array_shapes(n=p["n"], d=p["d"], batch=p["batch"], heads=p["heads"], algo=p["algo"],
                          pass_=p["pass"], nk=p["nk"], kv_heads=p["kv_heads"])
    size = {k: int(np.prod(v)) for k, v in shapes.items()}
    ins: tuple[str, ...]
    outs: tuple[str, ...]
    if p["pass"] == "forward":
        ins, outs = ("Q", "K", "V"), {"fa1": ("O", "l", "m"), "eager": ("O",)}.get(p["algo"], ("O", "L"))
    elif p["algo"] in ("standard", "eager"):  # Algorithm 3 and autograd read the forward's P
        ins, outs = ("Q", "K", "V", "dO", "P"), ("dQ", "dK", "dV")
    else:
        ins = ("Q", "K", "V", "O", "dO") + (("m", "l") if p["algo"] == "fa1" else ("L",))
        outs = ("dQ", "dK", "dV")
    reads, writes = sum(size[a] for a in ins), sum(size[a] for a in outs)
    return Bound(reads=reads, writes=writes, traffic=reads + writes,
                 source="attention-tile: every input read once, every output written once")

def _tile_machine(p, m):
    m = m.with_(sram_rule=p["sram_rule"]) if p.get("sram_rule") not in (None, "exact") else m
    return m.with_(sram_words=p["sram"]) if p.get("sram") else m

register(GeneratorSpec(
    "attention-tile", "tiled attention on the SRAM/HBM machine: standard, FlashAttention-1/2, forward/backward",
    (Param("n", int, 256, "sequence length", minimum=1),
     Param("d", int, 64, "head dimension", minimum=1),
     Param("nk", int, None, "keys/values length Nk (default n; causal aligned bottom-right, needs nk ≥ n)",
           minimum=1),
     Param("algo", str, "fa2", "eager (one kernel per op), standard (Algorithm 0), standard-3pass, fa1, fa2 or fused "
           "(S on chip)", choices=ALGOS),
     Param("pass", str, "forward", "forward or backward", choices=PASSES),
     Param("batch", int, 1, "batch size", minimum=1),
     Param("heads", int, 1, "heads", minimum=1),
     Param("kv_heads", int, None, "K/V heads (default heads; fewer: grouped-query, 1: multi-query)", minimum=1),
     Param("causal", bool, False, "causal mask"),
     Param("block_m", int, None, "query block rows Br (default: from --sram, else 64)", minimum=1),
     Param("block_n", int, None, "key block rows Bc (default: from --sram, else 64)", minimum=1),
     Param("sram", int, None, "SRAM words M: sizes the blocks and bounds the machine", minimum=1),
     Param("sram_rule", str, None, "what M bounds: exact (every tile; the default) or paper (Q_i, K_j, V_j, O_i … "
           "blocks only)", choices=SRAM_RULES),
     Param("variant", str, "exact", "exact, no-max or no-rescale (seed 003's breaks)", choices=VARIANTS),
     Param("order", str, None, "backward: row (Q outer), col (K outer) or split (FA2's three kernels); default the "
           "algorithm's own (fa1: col, Algorithm 4; others: row)", choices=ORDERS),
     Param("precompute_d", bool, True, "backward: D = rowsum(dO∘O) first (K, V loaded once)")),
    build=_tile_build, cost=_tile_cost, bound=_tile_bound, machine=_tile_machine,
    size=lambda **p: p["batch"] * p["heads"] * p["n"] * (p["nk"] or p["n"]), resolved=_tile_resolved))
