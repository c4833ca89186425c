"""Seed 002's TPU table ("What the emulator revealed"), reproduced by ``toymachine.cost.tpu_seed``:
the published figures are the oracle; the MXU formula is held to the tick-level emulator."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

from toymachine.cost.tpu_seed import mxu_matmul_cycles, seed_attention_cycles, seed_vpu_ops, vectors
from toymachine.sim.systolic import systolic_matmul

ROOT = Path(__file__).resolve().parent.parent

# Seed 002, n = 512, d = 64, causal, one head: (total, MXU, VPU, utilisation %, vs standard)
SEED = {
    "block=64": (24556, 13680, 10876, 8.4, 1.19),
    "block=128": (16936, 6360, 10576, 20.1, 0.82),
    "standard": (20604, 2172, 18432, 94.3, 1.00),
}


def _column(label):
    if label == "standard":
        return seed_attention_cycles(algo="standard")
    return seed_attention_cycles(algo="flash", block=int(label.split("=")[1]))


@pytest.mark.parametrize("label", SEED)
def test_seed_table(label):
    c = _column(label)
    total, mxu, vpu, util, ratio = SEED[label]
    assert (c.total, c.mxu, c.vpu) == (total, mxu, vpu)
    assert round(100 * c.utilization, 1) == util
    assert round(c.total / _column("standard").total, 2) == ratio


def test_mxu_matmuls_are_the_seeds():
    """Standard: two 512-size matmuls; flash: (Br,d)·(d,Bc) and (Br,Bc)·(Bc,d) per computed tile,
    causal tiles above the diagonal skipped (10 of 16 at block 128, 36 of 64 at block 64)."""
    assert seed_attention_cycles(algo="standard").mxu == 2 * (512 + 64 + 512 - 2)
    assert seed_attention_cycles(algo="flash", block=128).mxu == 10 * 2 * (128 + 64 + 128 - 2)
    assert seed_attention_cycles(algo="flash", block=64).mxu == 36 * 2 * (64 + 64 + 64 - 2)
    assert seed_attention_cycles(algo="standard").macs == 2 * 512 * 64 * 512


@pytest.mark.parametrize("shape", [(128, 64, 128), (128, 128, 64), (64, 64, 64), (16, 3, 9)])
def test_mxu_formula_is_the_emulators_busy_ticks(shape):
    m, k, n = shape
    run = systolic_matmul(np.ones((m, k), int), np.ones((k, n), int))
    assert run.busy_ticks == mxu_matmul_cycles(m, k, n)


def test_vpu_ops_cost_ceil_vectors():
    assert vectors(1) == vectors(128) == 1 and vectors(129) == 2 and vectors(512 * 512) == 2048
    ops = seed_vpu_ops(algo="flash", n=512, d=64, block=64)
    rows = [o for o in ops if o.shape == (64,)]
    assert rows and all(o.cycles() == o.count * o.cycles_per_vector for o in rows)  # a 64-row vector is 1 vector
    assert {o.cycles_per_vector for o in ops if o.what.startswith("exp")} == {2}
    assert {o.cycles_per_vector for o in ops if not o.what.startswith("exp")} == {1}


def test_script_reproduces_the_table(capsys):
    mod = runpy.run_path(str(ROOT / "benchmarks" / "tpu_table.py"), run_name="tpu_table")
    assert mod["table"]() is True
    out = capsys.readouterr().out
    assert "DIFFERS" not in out and out.count("equal") == 5
