"""Seed 002's correctness check on a TPU, as a model (``toym numerics --table bf16``): FlashAttention
on the seed's shapes that are not multiples of the block —

    n= 257, d= 64, blocks=(64,64)   match=True  max_abs=0.004399
    n= 513, d= 64, blocks=(128,128) match=True  max_abs=0.003483
    n= 777, d= 80, blocks=(128,64)  match=True  max_abs=0.005013

— with the seed's explanation of the size ("on TPU, XLA may use bf16 internally even when float32 is
requested") as the model: **bf16 inputs, fp32 accumulation**. Two columns:

* **TPU model** (the seed's check): the seed's ``flash_attention_tiled`` and its
  ``standard_causal_attention``, both as a TPU at default precision runs them — every matmul's
  operands rounded to bf16 (Q, K; the weights and V), the products accumulated and everything else
  kept in fp32 — and max |flash − standard|, as the seed prints it. (numpy: ``tpu_flash`` and
  ``tpu_standard`` below.)
* **simulator**: toym's causal FlashAttention-2 program run on the simulator in fp32 (each tile result
  rounded to fp32 once: a wide accumulator) on Q, K, V rounded to bf16, against float64 attention on
  the fp32 inputs — only the inputs are bf16, and the reference does not share their rounding.

The seed's Q, K, V are random and not printed; toym's are the machine's deterministic random values
(unit variance) for seeds ``seed … seed + trials − 1``: the table gives the first seed's figure and
the spread over all of them beside the seed's. "match" is the seed's ``allclose`` as we read it
(|difference| ≤ 1e-2) for every seed, on the TPU model.
"""

from __future__ import annotations

__all__ = ["SEED_BF16", "Bf16Row", "bf16_rows", "bf16_report", "MAX_TRIALS", "tpu_flash", "tpu_standard"]

import math
from dataclasses import dataclass

import numpy as np

from ..dtypes import DTYPES
from ..errors import ConfigError, Opt
from ..gen.tile import attention_program, attention_reference
from ..params import check_int
from ..render.report import Report, Section
from ..sim import simulate
from ..sim.memory import random_block

# (n, d, block_m, block_n) → the seed's max_abs (seed 002, "Correctness check")
SEED_BF16 = {(257, 64, 64, 64): 0.004399, (513, 64, 128, 128): 0.003483, (777, 80, 128, 64): 0.005013}
MATCH_ATOL = 1e-2
MAX_TRIALS = 50


@dataclass(frozen=True)
class Bf16Row:
    n: int
    d: int
    block_m: int
    block_n: int
    seed_max_abs: float
    model: tuple[float, ...]  # the TPU model's max |flash − standard|, one per input seed
    sim: tuple[float, ...]  # the simulator's max |O − float64|, bf16 inputs, one per input seed

    @property
    def match(self) -> bool:
        return all(e <= MATCH_ATOL for e in self.model)


_F32, _BF16 = DTYPES["fp32"], DTYPES["bf16"]


def _mxu(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A TPU matmul at default precision: bf16 operands, products accumulated, an fp32 result."""
    return _F32.round_array(_BF16.round_array(a) @ _BF16.round_array(b))


def tpu_standard(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The seed's ``standard_causal_attention`` under the model (module docstring)."""
    n, d = q.shape
    s = _F32.round_array(_mxu(q, k.T) * _F32.round_array(np.float64(1 / math.sqrt(d))))
    s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    w = np.exp(s - s.max(1, keepdims=True))
    return _mxu(_F32.round_array(w / w.sum(1, keepdims=True)), v)


def tpu_flash(q: np.ndarray, k: np.ndarray, v: np.ndarray, block_m: int, block_n: int) -> np.ndarray:
    """The seed's ``flash_attention_tiled`` (causal, online softmax per (block_m, block_n) tile) under
    the model: its two matmuls per tile on the MXU, the running state in fp32."""
    n, d = q.shape
    tau = _F32.round_array(np.float64(1 / math.sqrt(d)))
    out = np.zeros((n, d))
    with np.errstate(invalid="ignore"):
        for i0 in range(0, n, block_m):
            qi = q[i0:i0 + block_m]
            r = qi.shape[0]
            m, l, acc = np.full(r, -np.inf), np.zeros(r), np.zeros((r, d))
            for j0 in range(0, n, block_n):
                kj, vj = k[j0:j0 + block_n], v[j0:j0 + block_n]
                s = _F32.round_array(_mxu(qi, kj.T) * tau)
                s = np.where(np.arange(i0, i0 + r)[:, None] >= np.arange(j0, j0 + kj.shape[0])[None, :], s, -np.inf)
                new = np.maximum(m, s.max(1))
                rescale = np.where(np.isfinite(m), np.exp(m - new), 0.0)
                w = np.where(np.isfinite(new)[:, None], np.exp(s - new[:, None]), 0.0)
                l = _F32.round_array(rescale * l + w.sum(1))
                acc = _F32.round_array(rescale[:, None] * acc + _mxu(w, vj))
                m = new
            out[i0:i0 + r] = _F32.round_array(acc / l[:, None])
    return out


def _inputs(n: int, d: int, seed: int):
    return tuple(_F32.round_array(random_block(seed, name, (n, d))) for name in "QKV")  # the fp32 inputs


def _model(n: int, d: int, bm: int, bn: int, seed: int) -> float:
    q, k, v = _inputs(n, d, seed)
    return float(np.max(np.abs(tpu_flash(q, k, v, bm, bn) - tpu_standard(q, k, v))))


def _sim(n: int, d: int, bm: int, bn: int, seed: int) -> float:
    q, k, v = _inputs(n, d, seed)
    ref = attention_reference(q, k, v, causal=True)["O"]  # float64
    data = {name: _BF16.round_array(x) for name, x in zip("QKV", (q, k, v))}
    prog = attention_program(n=n, d=d, algo="fa2", causal=True, block_m=bm, block_n=bn)
    out = simulate(prog, data=data, dtype="fp32", steps=False).memory["O"]
    return float(np.max(np.abs(np.asarray(out, dtype=np.float64) - ref)))


def bf16_rows(*, seed: int = 0, trials: int = 5) -> list[Bf16Row]:
    """The seed's three points, toym's max |O − reference| for seeds ``seed … seed + trials − 1``."""
    seed, trials = check_int("seed", seed, 0), check_int("trials", trials, 1)
    if trials > MAX_TRIALS:
        raise ConfigError((Opt("trials", trials), f" is more than {MAX_TRIALS}"), key="trials",
                          hint=("use ", Opt("trials"), f" ≤ {MAX_TRIALS}"))
    seeds = range(seed, seed + trials)
    return [Bf16Row(n, d, bm, bn, want, tuple(_model(n, d, bm, bn, s) for s in seeds), (_sim(n, d, bm, bn, seed),))
            for (n, d, bm, bn), want in SEED_BF16.items()]


def bf16_report(rows: list[Bf16Row], *, seed: int = 0) -> Report:
    body = []
    for r in rows:
        e = r.model
        body.append((str(r.n), str(r.d), f"({r.block_m},{r.block_n})", f"{r.seed_max_abs:.6f}", f"{e[0]:.6f}",
                     f"{min(e):.6f} – {max(e):.6f}", f"{r.sim[0]:.6f}", "True" if r.match else "False"))
    trials = len(rows[0].model) if rows else 0
    section = Section("Seed 002's bf16 error table", ("n", "d", "blocks", "seed 002 max_abs",
                                                      f"TPU model (seed {seed})", f"TPU model, {trials} seeds",
                                                      f"simulator (seed {seed})", "match"), tuple(body),
                      align=("r", "r", "l", "r", "r", "r", "r", "l"))
    note = ("bf16 inputs, fp32 accumulation. TPU model: max |flash − standard|, both with every matmul's operands "
            "in bf16 (Q, K, the weights, V) and the rest in fp32 — the seed's check; simulator: toym's causal "
            "FlashAttention-2 in fp32 on bf16-rounded Q, K, V against float64 on the fp32 inputs (the reference "
            f"does not share V's rounding). Inputs: the machine's random values for seeds {seed}…{seed + trials - 1} "
            f"(the seed's were random and not printed); match: every TPU-model |difference| ≤ {MATCH_ATOL}")
    return Report("bf16 error table (seed 002)", (section,), (note,))
