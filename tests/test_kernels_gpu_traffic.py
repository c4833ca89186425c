"""Tests of kernels_gpu's launch schedule and traffic prediction (CPU-side; no kernel runs).

The schedule's hand formula against closed forms, the tile simulator's bytes against the hand
formula, and the stored H200 ncu run (kernels_gpu/data/) against the simulator.
"""
from __future__ import annotations

import math

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from kernels_gpu import KernelConfig, predict_traffic, schedule  # noqa: E402


# ---------------------------------------------------------------- schedule / traffic formulas
def test_schedule_forward_traffic_closed_form():
    n, d, b, h, e = 1024, 64, 2, 3, 2
    s = schedule(n, d, b, h, causal=False, pass_="fwd", config=KernelConfig(128, 64))
    t = predict_traffic(s)
    q_tiles = n // 128
    assert s.grid == (q_tiles, b * h)
    assert s.iterations() == b * h * q_tiles * (n // 64)
    assert t.read_bytes == b * h * (n * d * e + 2 * q_tiles * n * d * e)   # Q once, K/V per tile
    assert t.write_bytes == b * h * (n * d * e + n * 4)                   # O and lse once


def test_schedule_causal_reads_only_tiles_up_to_the_diagonal():
    n, d, bm, bn = 1024, 64, 128, 64
    s = schedule(n, d, 1, 1, causal=True, pass_="fwd", config=KernelConfig(bm, bn))
    t = predict_traffic(s)
    kv_rows = sum(min((i + 1) * bm, n) for i in range(n // bm))  # rows 0 .. end of Q tile i
    assert t.read_bytes == n * d * 2 + 2 * kv_rows * d * 2
    full = predict_traffic(schedule(n, d, 1, 1, causal=False, pass_="fwd",
                                    config=KernelConfig(bm, bn)))
    assert t.read_bytes < 0.6 * full.read_bytes


def test_schedule_backward_passes():
    n, d, bm, bn, e = 512, 128, 64, 128, 2
    dkdv = predict_traffic(schedule(n, d, 1, 1, False, pass_="bwd_dkdv",
                                    config=KernelConfig(bm, bn)))
    kv_tiles = n // bn
    # K, V once; Q, dO (d*e per row) and lse, D (4 B per row) once per K/V tile
    assert dkdv.read_bytes == 2 * n * d * e + kv_tiles * n * (2 * d * e + 8)
    assert dkdv.write_bytes == 2 * n * d * e
    dq = predict_traffic(schedule(n, d, 1, 1, False, pass_="bwd_dq", config=KernelConfig(bm, bn)))
    assert dq.read_bytes == n * (2 * d * e + 8) + (n // bm) * 2 * n * d * e
    assert dq.write_bytes == n * d * e
    pre = predict_traffic(schedule(n, d, 1, 1, False, pass_="bwd_preprocess"))
    assert (pre.read_bytes, pre.write_bytes) == (2 * n * d * e, 4 * n)


def test_schedule_uneven_n_counts_only_real_rows():
    s = schedule(100, 16, 1, 1, False, pass_="fwd", config=KernelConfig(64, 32))
    t = predict_traffic(s)
    assert t.read_bytes == 100 * 32 + 2 * math.ceil(100 / 64) * 100 * 32


# ---------------------------------------------------------------- traffic: the tile simulator
LAUNCHES = ("fwd", "bwd_preprocess", "bwd_dkdv", "bwd_dq")


@pytest.mark.parametrize("pass_", LAUNCHES)
@pytest.mark.parametrize("n,bm,bn,causal,elem_bytes", [
    (256, 64, 32, False, 2), (256, 32, 64, True, 2),
    (100, 64, 32, True, 2), (77, 16, 32, False, 4), (200, 128, 64, True, 4)])  # N % tile != 0
def test_simulated_traffic_equals_the_hand_formula(pass_, n, bm, bn, causal, elem_bytes):
    """The tile simulator's bytes for the kernel's schedule (split backward, one program per
    launch) equal schedule.predict_traffic's hand formula, to the byte."""
    from kernels_gpu.model.traffic import simulated_traffic

    cfg = KernelConfig(bm, bn)
    sim = simulated_traffic(n, 32, 2, 3, causal, pass_=pass_, elem_bytes=elem_bytes, config=cfg)
    hand = predict_traffic(schedule(n, 32, 2, 3, causal, pass_=pass_, elem_bytes=elem_bytes,
                                    config=cfg))
    assert sim.traffic == hand and sim.config == cfg


@pytest.mark.parametrize("pass_", LAUNCHES)
@pytest.mark.parametrize("n,nk,heads,kv_heads,bm,bn,causal", [
    (64, 128, 4, 2, 32, 32, True), (96, 40, 4, 1, 32, 16, False), (48, 80, 6, 3, 16, 32, True),
    (100, 100, 4, 2, 32, 32, True), (40, 72, 2, 2, 16, 16, True)])  # N_k > N_q, ragged, grouped
def test_simulated_traffic_equals_the_hand_formula_for_cross_and_grouped(pass_, n, nk, heads,
                                                                         kv_heads, bm, bn, causal):
    """N_q != N_k (causal bottom-right) and grouped-query heads: the tile simulator's bytes for
    the kernel's launch equal the hand formula of the kernel's loops (kernels_common's causal
    ranges; a dK/dV program streams its group's query heads past one K/V tile), to the byte."""
    from kernels_gpu.model.traffic import simulated_traffic

    cfg = KernelConfig(bm, bn)
    kw = dict(pass_=pass_, config=cfg, nk=nk, kv_heads=kv_heads)
    sim = simulated_traffic(n, 32, 2, heads, causal, **kw)
    hand = predict_traffic(schedule(n, 32, 2, heads, causal, **kw))
    assert sim.traffic == hand


@pytest.mark.parametrize("split", [2, 4])
@pytest.mark.parametrize("n,nk,causal", [(64, 64, True), (48, 80, True), (96, 40, False)])
def test_split_dkdv_traffic_simulated_equals_hand_formula(split, n, nk, causal):
    """The grouped dK/dV split over programs: the tile simulator's bytes (a program
    = the tile program of its group / split query heads) equal the hand formula, to the byte;
    K/V are read once per program row (split x the group loop's), dK/dV written as fp32
    partials (split x 2 x the loop's bytes at fp16); Q, dO, lse, D read as often as before."""
    from kernels_gpu.model.traffic import simulated_traffic

    kw = dict(pass_="bwd_dkdv", nk=nk, kv_heads=2)
    cfg = KernelConfig(16, 32, split=split)
    sim = simulated_traffic(n, 32, 2, 8, causal, config=cfg, **kw)
    hand = predict_traffic(schedule(n, 32, 2, 8, causal, config=cfg, **kw))
    assert sim.traffic == hand
    loop = simulated_traffic(n, 32, 2, 8, causal, config=KernelConfig(16, 32), **kw)
    for t in ("K", "V"):
        assert sim.tensors[t] == (split * loop.tensors[t][0], 0)
    for t in ("dK", "dV"):
        assert sim.tensors[t] == (0, 2 * split * loop.tensors[t][1])
    for t in ("Q", "dO"):
        assert sim.tensors[t] == loop.tensors[t]


@pytest.mark.parametrize("split", [1, 2])
@pytest.mark.parametrize("n,nk,causal", [(64, 64, True), (48, 80, True), (96, 40, False)])
def test_dv_apart_traffic_simulated_equals_hand_formula(split, n, nk, causal):
    """dV apart from dK (the d 256 backward): two launches, each the tile machine's phase (dv,
    dk) and the hand formula of its schedule, equal to the byte. Against the one dK/dV launch:
    Q, dO and lse are streamed twice, K read twice, V and D once (by the dK launch), dK and dV
    each written once."""
    from kernels_gpu.model.traffic import simulated_traffic

    kw = dict(pass_="bwd_dkdv", nk=nk, kv_heads=2)
    apart = KernelConfig(16, 32, split=split, dv_apart=True)
    sims = [simulated_traffic(n, 32, 2, 4, causal, config=apart, part=p, **kw) for p in (1, 2)]
    for p, sim in zip((1, 2), sims):
        assert sim.traffic == predict_traffic(schedule(n, 32, 2, 4, causal, config=apart, part=p,
                                                       **kw))
    one = simulated_traffic(n, 32, 2, 4, causal, config=KernelConfig(16, 32, split=split), **kw)
    dv, dk = (s.tensors for s in sims)
    for t in ("Q", "dO", "lse", "K"):
        assert dv[t][0] + dk[t][0] == 2 * one.tensors[t][0]
    assert "V" not in dv and "D" not in dv and dk["V"] == one.tensors["V"]
    assert dv["dV"] == one.tensors["dV"] and dk["dK"] == one.tensors["dK"]
    with pytest.raises(ValueError):
        schedule(n, 32, 2, 4, causal, config=apart, **kw)  # which of the two launches?


def test_grouped_dkdv_reads_k_and_v_once_per_kv_head():
    """The dK/dV launch of grouped-query attention keeps a K/V tile on chip while every query
    head of its group streams past: K, V read and dK, dV written once per K/V head."""
    from kernels_gpu.model.traffic import simulated_traffic

    n, d, b, h, hkv = 128, 32, 2, 8, 2
    p = simulated_traffic(n, d, b, h, False, pass_="bwd_dkdv", config=KernelConfig(32, 64),
                          kv_heads=hkv)
    kv_bytes = b * hkv * n * d * 2
    assert p.tensors["K"] == (kv_bytes, 0) and p.tensors["dK"] == (0, kv_bytes)
    assert p.tensors["Q"][0] == b * h * n * d * 2 * (n // 64)  # each query head per K/V tile


def test_simulated_traffic_per_tensor_element_sizes():
    """fp16/bf16 tensors cost elem_bytes per element, the fp32 lse and D 4; TMA-loaded tensors
    are set apart from pointer loads; compulsory = every tensor read once."""
    from kernels_gpu.model.traffic import simulated_traffic

    n, d, bm, bn, bh = 256, 64, 64, 32, 6
    cfg = KernelConfig(bm, bn, use_tma=True)
    p = simulated_traffic(n, d, 2, 3, False, pass_="bwd_dkdv", elem_bytes=2, config=cfg)
    tc = n // bn
    assert p.tensors == {"K": (bh * n * d * 2, 0), "V": (bh * n * d * 2, 0),
                         "Q": (bh * tc * n * d * 2, 0), "dO": (bh * tc * n * d * 2, 0),
                         "lse": (bh * tc * n * 4, 0), "D": (bh * tc * n * 4, 0),
                         "dK": (0, bh * n * d * 2), "dV": (0, bh * n * d * 2)}
    assert p.tma_tensors == ("Q", "dO")
    assert p.pointer_read_bytes == p.read_bytes - 2 * bh * tc * n * d * 2
    assert p.compulsory_read_bytes == bh * (4 * n * d * 2 + 2 * n * 4)
    fp32 = simulated_traffic(n, d, 2, 3, False, pass_="bwd_dkdv", elem_bytes=4, config=cfg)
    assert fp32.tensors["lse"] == p.tensors["lse"] and fp32.tensors["Q"][0] == 2 * p.tensors["Q"][0]
    fwd = simulated_traffic(n, d, 2, 3, True, pass_="fwd", config=cfg)
    assert fwd.tensors["lse"] == (0, bh * n * 4) and fwd.tensors["O"] == (0, bh * n * d * 2)


@pytest.mark.parametrize("pass_", LAUNCHES)
def test_one_head_times_batch_heads_is_every_head(pass_):
    """simulated_traffic simulates one head and multiplies: every head runs the same loops."""
    from kernels_gpu.model.traffic import TILE_PROGRAM
    from toymachine import simulate
    from toymachine.gen.tile import attention_program

    kw = dict(n=40, d=8, algo="fa2", causal=True, block_m=16, block_n=8, **TILE_PROGRAM[pass_])
    one = simulate(attention_program(**kw), dtype="fp64", steps=False).extra["tile_traffic"]
    every = simulate(attention_program(batch=2, heads=3, **kw), dtype="fp64",
                     steps=False).extra["tile_traffic"]
    assert every == {a: {k: 6 * v for k, v in t.items()} for a, t in one.items()}


# the stored cases (d, N, causal) checked here (20 of the 32 launches, ~1 s of simulation): every
# N = 1024 case, and the N = 4096 case holding the register-spill launch. All 32 launches:
# python -m kernels_gpu.model.traffic (PERFORMANCE.md), where the same statements hold.
STORED = [(64, 1024, False), (64, 1024, True), (64, 4096, True), (128, 1024, False),
          (128, 1024, True)]
SPILL = ("bwd_dkdv", 64, 4096, True)  # M64N128w4s3: 255 registers, spilled (data/spills_sm90.json)


@pytest.fixture(scope="module")
def stored_traffic():
    """Rows of the stored H200 ncu run (kernels_gpu/data/) beside the simulator's prediction."""

    from kernels_gpu.model import data, traffic
    launches = [ln for ln in traffic.parse_ncu_csv(data.load_text("ncu_traffic.csv"))
                if traffic._kernel_pass(ln["kernel"])]
    cases = data.load_json("traffic_cases.json")
    assert len(launches) == 4 * len(cases) == 32
    keep = [i for i, c in enumerate(cases) if (c["d"], c["n"], c["causal"]) in STORED]
    assert len(keep) == len(STORED)
    return traffic.compare([ln for i in keep for ln in launches[4 * i:4 * i + 4]],
                           [cases[i] for i in keep])


@pytest.mark.slow  # simulates the launches at the measured sizes
def test_prediction_against_the_stored_h200_measurements(stored_traffic):
    """The stored ncu run (data/ncu_traffic.csv) against the simulator: pointer loads and L2
    writes equal the prediction to the byte; L2 reads never exceed it; DRAM reads are the
    compulsory bytes (every tensor once) — except where registers spilled."""
    assert len(stored_traffic) == 4 * len(STORED)
    for r in stored_traffic:
        key = (r["pass"], r["d"], r["n"], r["causal"])
        assert r["pred_pointer_read"] == r["l1_ld_read"], key
        if key == SPILL:  # local-memory spill stores and reloads come on top of the schedule
            assert r["l2_tex_write"] > 2 * r["pred_write"] and r["l2_tex_read"] > r["pred_read"]
        else:
            assert r["pred_write"] == r["l2_tex_write"], key
            assert r["l2_tex_read"] <= r["pred_read"], key
            compulsory = r["pred_compulsory_read"]
            assert compulsory <= r["dram_read"] <= 1.005 * compulsory, key
    dkdv = next(r for r in stored_traffic
                if (r["pass"], r["d"], r["n"], r["causal"]) == ("bwd_dkdv", 128, 1024, True))
    assert dkdv["tma_tensors"] == []  # pointer loads only: the whole read traffic, to the byte
    assert dkdv["pred_read"] == dkdv["l1_ld_read"] == dkdv["l2_tex_read"]


@pytest.mark.slow  # simulates the launches at the measured sizes
def test_the_performance_page_holds_the_recomputed_table(stored_traffic):
    """PERFORMANCE.md's traffic tables are render()'s output: the rows checked here are there."""
    from pathlib import Path

    from kernels_gpu.model.traffic import render

    results_md = Path(__file__).resolve().parent.parent / "kernels_gpu" / "PERFORMANCE.md"
    text = results_md.read_text().splitlines()
    rendered = render(stored_traffic).splitlines()
    missing = [line for line in rendered if line.startswith("| ") and line not in text]
    assert not missing
    assert sum(line.startswith("| bwd_") for line in rendered) == 2 * 3 * len(STORED)


@pytest.mark.slow
def test_traffic_main_parses_a_run_and_prints_the_table(tmp_path, capsys):
    """`python -m kernels_gpu.model.traffic --parse CSV --cases JSON --out DIR` on the first two cases."""
    import json

    from kernels_gpu.model import data, traffic
    lines = data.load_text("ncu_traffic.csv").splitlines()
    kept = [ln for ln in lines if not ln.startswith('"') or ln.startswith('"ID"')
            or int(ln.split('","')[0].strip('"')) < 8]
    (tmp_path / "ncu.csv").write_text("\n".join(kept) + "\n")
    cases = data.load_json("traffic_cases.json")[:2]
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    assert traffic.main(["--parse", str(tmp_path / "ncu.csv"), "--cases",
                         str(tmp_path / "cases.json"), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "| bwd_dkdv | 64 | 1024 | yes | M32N64w4s4-tma | 327.7 | 327.3 | 1.00 |" in printed
    rows = json.loads((tmp_path / "out" / "traffic.json").read_text())
    assert [r["pass"] for r in rows] == list(LAUNCHES) * 2


@pytest.mark.slow  # simulates the launches at the measured sizes
def test_cross_and_grouped_launches_against_the_stored_h200_measurements():
    """The stored ncu run of cross-attention, grouped/multi-query and padded-head-dim cases
    (data/ncu_traffic_shapes.csv) against the simulator: pointer loads to the byte in all 16
    launches, writes to the byte and DRAM reads = compulsory in all but the grouped dK/dV launch
    that spills registers inside its group loop (M64N128w8s2 at d 128: 33 spill stores)."""

    from kernels_gpu.model import data, traffic
    launches = traffic.parse_ncu_csv(data.load_text("ncu_traffic_shapes.csv"))
    cases = data.load_json("traffic_cases_shapes.json")
    rows = traffic.compare(launches, cases)
    assert len(rows) == 16 and any(r.get("kv_heads") == 1 for r in rows)
    assert any(r.get("nk", r["n"]) != r["n"] for r in rows) and any(r["d"] == 96 for r in rows)
    spill = ("bwd_dkdv", 128, 8)
    for r in rows:
        assert r["pred_pointer_read"] == r["l1_ld_read"], r
        if (r["pass"], r["d"], r.get("kv_heads")) == spill:
            assert r["l2_tex_write"] > r["pred_write"] and r["dram_read"] > r["pred_compulsory_read"]
        else:
            assert r["pred_write"] == r["l2_tex_write"], r
            assert r["pred_compulsory_read"] <= r["dram_read"] <= 1.01 * r["pred_compulsory_read"], r


@pytest.mark.slow  # simulates the launches at the measured sizes
def test_split_and_dv_apart_launches_against_the_stored_h100_measurements():
    """The ncu run of the dV-apart pair (d 256) and the grouped dK/dV split
    (data/ncu_traffic_split.csv): compare() walks each case's launches in order (5 when dV is
    apart: schedule.launch_order); pointer loads equal the prediction in every launch, writes
    in every launch but the split's (its fp32 partials are modelled, the extra bytes are not),
    and the causal dV-apart pair's L2 reads to the byte."""

    from kernels_gpu.model import data, traffic
    from kernels_gpu.model.schedule import launch_order
    launches = traffic.parse_ncu_csv(data.load_text("ncu_traffic_split.csv"))
    cases = data.load_json("traffic_cases_split.json")
    assert [len(launch_order(c["configs"])) for c in cases] == [5, 5, 4, 4]
    rows = traffic.compare(launches, cases)
    assert len(rows) == 18 and [r["part"] for r in rows[:5]] == [0, 0, 1, 2, 0]
    for r in rows:
        assert r["pred_pointer_read"] == r["l1_ld_read"], r
        split = KernelConfig.from_short(r["config"]).split > 1
        if r["pass"] == "bwd_dkdv" and split:
            assert r["l2_tex_write"] > r["pred_write"], r
        elif r.get("kv_heads") is None:
            assert r["pred_write"] == r["l2_tex_write"], r
        if r["pass"] == "bwd_dkdv" and r["part"] and r["causal"]:
            assert r["pred_read"] == r["l2_tex_read"], r
