"""``cost.tpu_schedule``: four independent MXUs and DMA double-buffering as a schedule of a tile
program — the in-order model equals the simulator's MXU + VPU + DMA cycles, and small programs'
schedules equal their closed forms."""

from __future__ import annotations

import json

import pytest

from toymachine import parse, resolve_machine, simulate
from toymachine.cost.tpu_schedule import MODELS, schedule_cycles
from toymachine.gen.tile import attention_program

TPU = resolve_machine("tpu-v5e")


@pytest.mark.parametrize("n, kw", [(512, dict(algo="fa2", block_m=64, block_n=64)), (512, dict(algo="standard")),
                                   (300, dict(algo="fa2", block_m=128, block_n=128)),
                                   (256, dict(algo="standard", block_m=64, block_n=64)),
                                   (256, dict(algo="fa1", block_m=64, block_n=128))])
def test_in_order_model_is_the_simulated_units_in_sequence(n, kw):
    prog = attention_program(n=n, d=64, causal=True, machine=TPU, **kw)
    u = simulate(prog, TPU, steps=False).extra["units"]
    got = schedule_cycles(prog, TPU, overlap_compute=False, double_buffer=False, independent_mxus=False)
    assert got.cycles == pytest.approx(u["mxu"]["cycles"] + u["vpu"]["cycles"] + u["dma"]["cycles"], rel=1e-12)
    assert (got.mxu, got.vpu) == (u["mxu"]["cycles"], u["vpu"]["cycles"])
    for oc, db, ind in MODELS.values():  # overlap never makes it slower, nor faster than the busiest unit
        t = schedule_cycles(prog, TPU, overlap_compute=oc, double_buffer=db, independent_mxus=ind)
        assert max(t.vpu, t.dma, t.mxu / TPU.mxu.count) <= t.cycles <= got.cycles + 1e-9


L = 128 * 128 * 4 / 545  # one 128 × 128 fp32 block over HBM, cycles
M = 128 + 128 + 128 - 2  # one (128, 128)·(128, 128) pass


def _prog(same_register: bool, count: int) -> str:
    lines = [".array A[512][128]", ".array B[128][128]", "LOAD B[:, :], T1"]
    for i in range(count):
        t = 0 if same_register else 2 * i + 2
        lines += [f"LOAD A[{128 * i}:{128 * (i + 1)}, :], T{t}", f"MAC_Z T{t}, T1, T{2 * i + 3}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("model, want", [
    ("in order, no overlap", 5 * L + 4 * M),
    ("4 MXUs", 5 * L + 4 * M),  # every LOAD waits for the work before it: nothing to overlap
    ("DMA double-buffered", 2 * L + 4 * M),  # loads run ahead; one MXU does the four passes in turn
    ("4 MXUs + double-buffered", 5 * L + M),  # the last pass starts once its block is in
])
def test_four_blocks_closed_forms(model, want):
    got = schedule_cycles(parse(_prog(False, 4)), TPU, **dict(zip(("overlap_compute", "double_buffer",
                                                                   "independent_mxus"), MODELS[model])))
    assert got.cycles == pytest.approx(want)


def test_two_buffers_per_register():
    """Three loads into the same register: the third waits for the first tile's reader (two buffers)."""
    got = schedule_cycles(parse(_prog(True, 3)), TPU, overlap_compute=True, double_buffer=True, independent_mxus=True)
    assert got.cycles == pytest.approx(3 * L + 2 * M)


def test_tpu_table_overlap_section(toym):
    code, out, _ = toym("tpu-table", "--machine", "tpu-v5e", "-f", "json")
    sections = json.loads(out)
    overlap = next(v for k, v in sections.items() if k.startswith("overlap"))
    assert code == 0 and [r[""] for r in overlap] == list(MODELS)
    assert all(r["block=64"].endswith("(1.00x)") for r in overlap[:1])
    code, out, _ = toym("tpu-table", "-f", "json")
    assert code == 0 and not any(k.startswith("overlap") for k in json.loads(out))


def test_predicted_times_in_order_columns_are_the_simulated_cycles_over_the_clock():
    from toymachine.experiments.tpu_time import SEED_MS, SEED_VMAP_MS, time_rows

    (n, unfused, fused, fori, vmap), = time_rows(TPU, [512])
    for ms, kw in ((unfused, dict(algo="standard", block_m=128, block_n=128)),
                   (fori, dict(algo="fa2", block_m=128, block_n=128))):
        u = simulate(attention_program(n=512, d=64, causal=True, machine=TPU, **kw), TPU, steps=False).extra["units"]
        assert ms == pytest.approx(1e3 * (u["mxu"]["cycles"] + u["vpu"]["cycles"] + u["dma"]["cycles"]) / 1.503e9)
    assert vmap < fori and fused < unfused
    assert SEED_MS[4096] == (3.016, 1.038, 0.072, 2.509) and SEED_VMAP_MS[16384][:2] == (89.538, 1.997)


@pytest.mark.parametrize("args, needle", [(["--n", "32768"], "past 16384"), (["--machine", "tpu-v5e-seed"], "toym's"),
                                          (["--table", "x"], "--table must be")])
def test_predicted_times_errors(toym, args, needle):
    base = ["tpu-table", "--table", "times", "--machine", "tpu-v5e", "--n", "512"]
    code, _, err = toym(*base, *args)
    assert code == 2 and needle in err
