"""`toym systolic`, `toym memory` and the TPU sweep: seed 002's walk-through, its memory-scaling
table and seed 003's figures, units as sweep columns and plot metrics; errors exit 2."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from conftest import ROOT

from toymachine import resolve_machine
from toymachine.experiments.memory import memory_report, memory_rows
from toymachine.experiments.sweep import METRICS, sweep, sweep_report

SEED_DATA = str(ROOT / "examples" / "data" / "systolic.yaml")

# Seed 002, "Memory scaling" (one head, d = 64, float32; ~128 MB of VMEM)
SEED_SCALING = [
    ["512", "1.0 MB", "0.1 MB", "8.0x", "yes"], ["1024", "4.0 MB", "0.2 MB", "16.0x", "yes"],
    ["2048", "16.0 MB", "0.5 MB", "32.0x", "yes"], ["4096", "64.0 MB", "1.0 MB", "64.0x", "yes"],
    ["8192", "256.0 MB", "2.0 MB", "128.0x", "NO"], ["16384", "1024.0 MB", "4.0 MB", "256.0x", "NO"],
    ["32768", "4096.0 MB", "8.0 MB", "512.0x", "NO"],
]


# -- toym systolic ---------------------------------------------------------------------------------
def test_systolic_seed_walkthrough(toym):
    code, out, _ = toym("systolic", "--a", SEED_DATA, "--b", SEED_DATA, "-f", "json")
    d = json.loads(out)
    assert code == 0 and d["c"] == [[4, 5], [10, 11]] and (d["cycles"], d["ticks"]) == (5, 6)
    code, out, _ = toym("systolic", "--a", SEED_DATA, "--b", SEED_DATA, "-f", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[1][2:6] == ["A[0,0]", "A[1,0]", "", ""] and rows[3][4:6] == ["A[0,2]", "A[1,2]"]  # column 0: the table


@pytest.mark.parametrize("dataflow", ["weight", "output"])
def test_systolic_random_inputs_equal_numpy(toym, dataflow):
    code, out, _ = toym("systolic", "--m", 9, "--k", 5, "--n", 7, "--seed", 3, "--dataflow", dataflow, "-f", "json")
    d = json.loads(out)
    assert code == 0 and d["c"] == (np.array(d["a"]) @ np.array(d["b"])).tolist()
    assert d["ticks"] == d["cycles"] + 1 == 9 + 5 + 7 - 1 and d["dataflow"] == dataflow


def test_systolic_big_prints_no_table(toym):
    code, out, _ = toym("systolic", "--m", 40, "--k", 20, "--n", 17)
    assert code == 0 and "Cells, cycle by cycle" not in out and "cycles           75 (M+K+N−2)" in out


@pytest.mark.parametrize("args,needle", [
    (("--m", "0"), "--m must be at least 1"),
    (("--a", "nope.yaml"), "no such data file"),
    (("--a", SEED_DATA, "--m", "3"), "A from its file is 2×3"),
    (("--dataflow", "row"), "row"),
])
def test_systolic_errors_exit_2(toym, args, needle):
    code, out, err = toym("systolic", *args)
    assert code == 2 and needle in err + out and "Traceback" not in err


def test_systolic_picks_named_arrays(toym, tmp_path):
    f = tmp_path / "ab.yaml"
    f.write_text("X: [[1, 2]]\nY: [[3], [4]]\n")
    code, _, err = toym("systolic", "--a", str(f))
    assert code == 2 and "which is A" in err


# -- toym memory -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_seed_002_memory_scaling_table(toym):
    code, out, _ = toym("memory", "--machine", "tpu-v5e", "--n", "512..32768*2", "--d", "64", "-f", "csv")
    columns = ["seq_len", "scores (n^2)", "output (n*d)", "ratio", "fits on-chip?"]
    rows = [r for r in csv.DictReader(io.StringIO(out)) if r["table"] == "Memory scaling"]  # CSV: one table column
    assert code == 0 and [[r[c] for c in columns] for r in rows] == SEED_SCALING


def test_seed_003_figures():
    """Seed 003: 128 MB of scores per layer at n = 1024 (batch 8, 8 heads, fp16), 2 GB at 4096; the
    peak of standard attention quadruples per doubling of n, FlashAttention's doubles."""
    a100 = resolve_machine("a100")
    rows = memory_rows(ns=[1024, 2048, 4096], d=64, machine=a100, algos=("standard", "fa2"), batch=8, heads=8,
                       check=False)
    scaling = memory_report(rows, a100, batch=8, heads=8).sections[0].rows
    assert scaling[0][1] == "128.0 MB" and scaling[2][1] == "2048.0 MB"
    std = [r.hbm for r in rows if r.algo == "standard"]
    fa2 = [r.hbm for r in rows if r.algo == "fa2"]
    assert all(3.7 < b / a < 4 for a, b in zip(std, std[1:])) and all(b / a == 2 for a, b in zip(fa2, fa2[1:]))
    assert 4096 * 4096 == 16_777_216  # "about 16.8 million entries per head" at n = 4096


def test_memory_peaks_are_checked_by_simulation():
    rows = memory_rows(ns=[64, 128], d=16, machine=resolve_machine("tpu-v5e"), algos=("standard", "fused", "fa2"),
                       causal=True)
    assert all(r.checked is True for r in rows)


@pytest.mark.slow
def test_memory_plot(toym, tmp_path):
    path = tmp_path / "memory.svg"
    code, _, _ = toym("memory", "--machine", "a100", "--n", "256..1024*2", "--batch", 2, "--heads", 8, "--algo",
                      "standard,fa2", "--plot", str(path), "--no-check")
    assert code == 0 and path.read_text().startswith("<?xml")


@pytest.mark.parametrize("args,needle", [(("--algo", "fa3"), "--algo must be one of"), (("--n", "0"), "at least 1"),
                                         (("--plot", "x.pdf", "--n", "64"), ".png or .svg")])
def test_memory_errors_exit_2(toym, args, needle):
    code, out, err = toym("memory", *args)
    assert code == 2 and needle in err and "Traceback" not in err


# -- the sweep on tpu-v5e --------------------------------------------------------------------------
def test_tpu_sweep_has_unit_columns_and_metrics():
    tpu = resolve_machine("tpu-v5e")
    rows = sweep("attention-tile", {"n": "128,256", "d": "64", "algo": "fa2,fused", "causal": "true",
                                    "block_m": "64,128"}, machine=tpu)
    keys = sweep_report(rows, "attention-tile").sections[0].json_keys()  # the stable keys (headers carry units)
    assert {"mxu_cycles", "mxu_utilization", "vpu_cycles", "memory_peak", "onchip_peak"} <= set(keys)
    for r in rows:
        assert r.matches is True and r.cycles == r.formula_cycles == r.mxu_cycles + r.vpu_cycles
        assert METRICS["mxu_cycles"](r) == r.extra["units"]["mxu"]["cycles"]
        assert METRICS["memory_peak"](r) == r.extra["memory_peak"]["hbm"]
        assert METRICS["onchip_peak"](r) == r.extra["memory_peak"]["vmem"]
    fa2 = [r for r in rows if r.params["algo"] == "fa2" and r.params["block_m"] == 128]
    assert [r.params["n"] for r in fa2] == [128, 256]  # blocks sized for the MXU: Bc = 128 where not given


def test_sweep_unit_metric_needs_units(toym, tmp_path):
    code, _, err = toym("sweep", "softmax", "--n", "2,4", "--plot", str(tmp_path / "x.png"), "--y", "mxu_cycles")
    assert code == 2 and "does not measure it" in err
