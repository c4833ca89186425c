"""The Gluon backward kernels beyond the one-partition dK/dV and dQ, as the time model sees them (model/gluon.py's
KINDS rows "bwd_dkdv-ws", "bwd_dkdv-ws+dq", "d192-dv", "d192-dk", "d192-dq"): their programs'
resources and the fused dQ's atomics.

* **The warp-specialised dK/dV** (kernels/hopper_bwd_ws.py): one program of 128 key rows, a
  producer warp (24 registers by `setmaxnreg`) and two consumer warpgroups (240): 12 warps at
  (2 x 4 x 240 + 4 x 24) / 12 = 168 registers a thread, one program per SM. Its shared memory:
  K and V of 128 rows, the Q / dO ring of `stages` x 2 x BLOCK_M rows, (fused) dS^T of each
  warpgroup, double-buffered, and the mbarriers (`ws_resources`).
* **The fused dQ** (FUSED_DQ): every (64-key, BLOCK_M-query) tile pair a consumer warpgroup
  computes adds its dQ_part, BLOCK_M x d fp32, by reductions into a zeroed fp32 accumulator
  (`split`: the two warpgroups share dS^T and each adds one column half over all 128 keys,
  half the bytes); the accumulator's zeroing (write fp32) and the final scale and cast (read
  fp32, write the dtype) are in the launch. Its time beyond the chain: the reduction bytes at
  the form's throughput (`ATOMIC_BPS`, fitted by `fit_model --gluon` on
  gluon.GLUON_FIT_SUBSET) plus the accumulator's bytes at the HBM rate and two launches
  (`atomic_s`). The bytes are a closed form of the tile pairs (`atomic_bytes`).
* **The d 192 chunked launches** (kernels/hopper_bwd_chunked.py): registers and shared memory
  from the declared offline sm_90 compile, `data/resources_gluon_d192_sm90.json`
  (`python -m kernels_gpu.bench.compile_check --d192 --json`), read here (`d192_compiled`).
"""
from __future__ import annotations

from functools import lru_cache

from . import data

__all__ = ["ws_resources", "atomic_bytes", "accumulator_bytes", "atomic_s", "ATOMIC_BPS",
           "d192_compiled", "D192_FILE", "WS_KEYS", "WG_KEYS"]

D192_FILE = "resources_gluon_d192_sm90.json"  # declared in data/manifest.json
WS_KEYS = 128        # key rows of a warp-specialised dK/dV program
WG_KEYS = 64         # key rows of each consumer warpgroup
CONSUMER_REGS, PRODUCER_REGS, BARRIER_BYTES = 240, 24, 8

# Bytes per second of the fused dQ's fp32 reductions, by form (red1: Triton's atomic_add,
# red.f32; red2 / red4: inline red.global.add.v2 / v4.f32; "red4 split": v4 with half the
# atomics, the warpgroups sharing dS^T). Fitted by `python -m kernels_gpu.bench.fit_model
# --gluon` on gluon.GLUON_FIT_SUBSET (the warp-specialised backward studies at N 1k, 16k).
ATOMIC_BPS = {"red1": 3.0e12, "red2": 2.9e12, "red4": 4.5e12, "red4 split": 3.8e12}


def ws_resources(block_m: int, block_n: int, num_warps: int, stages: int, d: int,
                 fused: bool, elem_bytes: int = 2) -> tuple[int, int]:
    """(registers a thread, shared-memory bytes) of a warp-specialised dK/dV program from its
    budgets (module docstring)."""
    regs = (2 * 4 * CONSUMER_REGS + 4 * PRODUCER_REGS) // num_warps
    tiles = 2 * block_n * d + stages * 2 * block_m * d
    tiles += 2 * 2 * WG_KEYS * block_m if fused else 0  # dS^T of each warpgroup, two buffers
    bars = (2 + 2 * 2 * stages + 4) * BARRIER_BYTES
    return regs, tiles * elem_bytes + bars


def tile_pairs(n: int, block_m: int, causal: bool, keys: int = WG_KEYS) -> int:
    """(keys-row key block, block_m-row query tile) pairs a head computes: every one, or
    causal those with a query row at or after a key row of the block."""
    kb, qb = -(-n // keys), -(-n // block_m)
    if not causal:
        return kb * qb
    return sum(qb - (k * keys) // block_m for k in range(kb))


def atomic_bytes(n: int, d: int, batch: int, heads: int, causal: bool, block_m: int,
                 split: bool) -> int:
    """Bytes of fp32 reductions of the fused dQ: BLOCK_M x d x 4 B a tile pair of 64 keys
    (split: of 128 keys, the two warpgroups adding one column half each)."""
    keys = 2 * WG_KEYS if split else WG_KEYS
    return tile_pairs(n, block_m, causal, keys) * block_m * d * 4 * batch * heads


def accumulator_bytes(n: int, d: int, batch: int, heads: int, elem_bytes: int = 2) -> int:
    """The fused dQ's fp32 accumulator: zeroed (4 B written), read (4 B) and cast into dQ."""
    return batch * heads * n * d * (4 + 4 + elem_bytes)


def atomic_s(form: str, n: int, d: int, batch: int, heads: int, causal: bool, block_m: int,
             hbm_Bps: float, launch_s: float, rates: dict | None = None,
             elem_bytes: int = 2) -> float:
    """Seconds the fused dQ adds to its dK/dV chain (module docstring): the reductions at
    `rates[form]` (ATOMIC_BPS if None), the accumulator at the HBM rate, two launches."""
    rates = ATOMIC_BPS if rates is None else rates
    red = atomic_bytes(n, d, batch, heads, causal, block_m, form.endswith("split"))
    return (red / rates[form] + accumulator_bytes(n, d, batch, heads, elem_bytes) / hbm_Bps
            + 2 * launch_s)


@lru_cache(maxsize=2)
def d192_compiled(name: str = D192_FILE) -> dict:
    """{(part, "M..N..w..s..", causal): (registers, shared-memory bytes)} of the declared
    offline compile of the chunked d 192 kernels (fp16; part 1 dV, 2 dK, 0 both, "dq" the
    dQ)."""
    out = {}
    for key, r in data.load_json(name)["kernels"].items():
        part, config, causal = key.split("|")
        out[(part if part == "dq" else int(part), config, causal == "1")] = (r["regs"], r["smem"])
    return out
