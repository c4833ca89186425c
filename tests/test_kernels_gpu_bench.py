"""The benchmark's CPU-side parts: seed 003's tiled loop and memory table, the FLOP count, and
the time model (`bench --predict`) against closed forms and the stored H200 run."""
from __future__ import annotations

import json
import math
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")

from kernels_gpu.bench import run as bench  # noqa: E402
from kernels_gpu.bench import tables as bench_tables  # noqa: E402
from kernels_gpu.host.configs import KernelConfig  # noqa: E402
from kernels_gpu.model import data, memory, predict  # noqa: E402

BENCH_H200 = data.path("bench_h200.json")


@pytest.mark.parametrize("causal", [False, True])
def test_seed_003_tiled_loop_equals_naive_attention(causal):
    """Seed 003, Step 4: the tiled forward matches the naive one to fp32 round-off, for every
    block size (the seed's second sanity check)."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 256, 32, generator=g) for _ in range(3))
    if causal:
        from kernels_gpu import attention_reference
        ref = attention_reference(q, k, v, True)[0].float()
    else:
        ref = memory.naive_attention(q, k, v)
    for br in (16, 32, 64, 128):
        out = memory.tiled_attention(q, k, v, BR=br, BC=br, causal=causal)
        assert (out - ref).abs().max().item() < 1e-5


def test_seed_003_causal_loop_as_printed_gives_nan():
    """Why tiled_attention skips key tiles above the diagonal: the seed's loop as printed
    (no skip) meets a tile whose scores are all -inf and computes exp(-inf - (-inf))."""
    s = torch.full((1, 1, 4, 4), float("-inf"))
    m_tile = s.max(dim=-1, keepdim=True).values
    assert torch.isnan(torch.exp(s - m_tile)).all()


def test_simulated_footprints_are_the_closed_forms():
    """Standard attention holds Q, K, V, O (4Nd), S and P (2N^2) and a row statistic (N) per
    head; FlashAttention-2 4Nd + N: 2 bytes a word, B*H = 16 heads."""
    bh, d = 2 * 8, 64
    for n in (1024, 32768):
        assert memory.simulated_footprint_bytes(n, "standard") == 2 * bh * (4 * n * d + 2 * n * n
                                                                              + n)
        assert memory.simulated_footprint_bytes(n, "fa2") == 2 * bh * (4 * n * d + n)


def test_memory_table_records_oom():
    res = {"rows": [{"impl": "naive", "n": 1024, "peak_bytes": 2.5e8, "ms": 0.2},
                    {"impl": "tiled", "n": 1024, "peak_bytes": 1.1e7, "ms": 30.0},
                    {"impl": "kernel", "n": 1024, "peak_bytes": 1.0e7, "ms": 0.05},
                    {"impl": "naive", "n": 65536, "peak_bytes": None, "oom": True}],
           "simulated_bytes": {"1024": {"standard": 2.5e8, "fa2": 8.4e6},
                               "65536": {"standard": 1.4e11, "fa2": 5.4e8}}}
    table = memory.render(res)
    assert "| 65536 | OOM | 140.000 | - | - | 0.540 | OOM | - | - |" in table
    assert table.splitlines()[2].startswith("| 1024 | 0.250 | 0.250 | 0.011 | 0.010 |")


def test_visible_pairs_count_the_causal_mask():
    for nq, nk, causal in ((64, 64, True), (48, 96, True), (96, 40, True), (96, 40, "top_left"),
                           (30, 50, False)):
        off = 0 if causal == "top_left" else nk - nq
        brute = sum(1 for i in range(nq) for j in range(nk) if not causal or j <= i + off)
        want = nq * nk / 2 if (causal and nq == nk) else brute  # the square convention: N^2/2
        assert bench.visible_pairs(nq, nk, causal) == want
    assert bench.attention_flops(4, 32, 1024, 64, False, "bwd") == 2.5 * 4 * 4 * 32 * 1024 ** 2 * 64


def test_grids_cover_head_dims_grouped_heads_cross_attention_and_fp8():
    shapes = bench.GRIDS["shapes"]
    assert {s["d"] for s in shapes} >= {32, 80, 96, 192, 256}
    assert any(s["heads_kv"] == 1 for s in shapes) and any(1 < s["heads_kv"] < 32 for s in shapes)
    assert any(s["n"] > s["nk"] for s in shapes) and any(s["n"] < s["nk"] for s in shapes)
    assert {s["dtype"] for s in bench.GRIDS["fp8"]} == {"e5m2", "e4m3"}
    assert len(bench.GRIDS["main"]) == 20


# ---------------------------------------------------------------------------- the time model
CALIB = {"gpu": "test", "date": "-", "l2_copy_Bps": 8e12, "launch_s": 5e-6, "fp8_mm_flops": 1e15}


def test_prediction_terms_are_the_closed_forms():
    """Forward, not causal: the tensor cores do B H (4 N^2 d_p - N^2) FLOPs (the tile machine
    counts a length-k dot product as 2k - 1 FLOPs: QK^T N^2 (2 d_p - 1), PV 2 N^2 d_p); the
    softmax one exp2 per score, one per row and key tile (the rescale) and a log per row; HBM
    the compulsory words, 2 bytes each; predicted = max(compute, HBM, L2) + one launch."""
    m = predict.machine_for("NVIDIA H200")
    b, h, n, d, bm, bn = 4, 32, 4096, 80, 64, 64
    p = predict.predict_forward(m, CALIB, n=n, d=d, batch=b, heads=h, causal=False,
                                block_m=bm, block_n=bn)
    hz = m.clock_hz
    mm = b * h * (4 * n * n * 128 - n * n)  # d = 80 runs padded to 128
    assert math.isclose(p.tensor_s, mm / m.tensor_flops_per_cycle / hz)
    exps = b * h * (n * n + n * (n // bn) + n)  # P, the rescale alpha per tile, and log(l)
    assert math.isclose(p.sfu_s, exps / m.sfu_ops_per_cycle / hz)
    compulsory = b * h * (4 * n * d + n) * 2  # Q K V read, O written, lse: words of 2 bytes
    assert math.isclose(p.hbm_s, compulsory / (m.hbm_bytes_per_cycle * hz))
    tile_words = b * h * (n * d + 2 * d * n * (n // bm) + n * d + n)
    assert math.isclose(p.l2_s, tile_words * 2 / CALIB["l2_copy_Bps"])
    assert math.isclose(p.total_s, max(p.compute_s, p.hbm_s, p.l2_s) + CALIB["launch_s"])
    fp8 = predict.machine_for("NVIDIA H200", 1, CALIB)
    assert fp8.word_bytes == 1 and math.isclose(fp8.tensor_flops_per_cycle * fp8.clock_hz, 1e15)


def test_backward_prediction_is_three_launches_in_sequence():
    m = predict.machine_for("NVIDIA H200")
    kw = dict(n=2048, d=64, batch=2, heads=4, causal=True)
    bwd = predict.predict_backward(m, CALIB, dkdv=(32, 64), dq=(64, 32), **kw)
    parts = [predict._one(m, CALIB["l2_copy_Bps"], CALIB["launch_s"], pass_="backward", nk=None,
                          block_m=bm, block_n=bn, phase=ph, **kw)
             for ph, (bm, bn) in (("preprocess", (128, 128)), ("dkdv", (32, 64)),
                                  ("dq", (64, 32)))]
    assert math.isclose(bwd.total_s, sum(x.total_s for x in parts))
    assert math.isclose(bwd.launch_s, 3 * CALIB["launch_s"])
    assert bwd.bound.count("+") == 2
    # not causal: 7 products per score, dkdv 8d - 2 FLOPs, dq 6d - 2 (toymachine.cost.tile)
    kw["causal"] = False
    flat = predict.predict_backward(m, CALIB, dkdv=(64, 64), dq=(64, 64), **kw)
    scores = 2 * 4 * 2048 * 2048
    assert math.isclose(flat.tensor_s, scores * (8 * 64 - 2 + 6 * 64 - 2)
                        / (m.tensor_flops_per_cycle * m.clock_hz))


@pytest.mark.slow
def test_predict_table_from_the_stored_run(tmp_path):
    """`bench --predict --from` on the stored H200 run: every point the tile machine models
    (square, multi-head) gets a prediction and a ratio, the others none; a spread line per
    pass; the output is the same bytes twice."""
    src = BENCH_H200
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps(CALIB))
    out = tmp_path / "out"
    args = ["--predict", "--from", src, "--calibration", str(calib), "--out", str(out),
            "--alarm", "1e9"]
    assert bench.main(args) == 0
    first = (out / "predict.md").read_text()
    assert bench.main(args) == 0
    assert (out / "predict.md").read_text() == first
    rows = json.loads((out / "predict.json").read_text())["rows"]
    stored = json.loads(open(src).read())["rows"]
    modelled = [r for r in stored if r["causal"] is False or r["nk"] >= r["n"]]
    assert len(rows) == len(modelled) and len(modelled) < len(stored)
    assert all("fwd_ratio" in r["predict"] for r in rows)
    assert f"Forward: {len(modelled)} points, predicted/measured" in first


def test_cross_and_grouped_rows_are_modelled_but_rows_without_keys_are_not():
    """The tile machine models N_q != N_k and grouped heads; causal with N_k < N_q (query rows
    that see no key) it refuses, so such a row gets no prediction."""
    def row(n, nk, kv, causal=True):
        return {"grid": "shapes", "d": 128, "n": n, "nk": nk, "heads": 32, "heads_kv": kv,
                "causal": causal, "dtype": "fp16", "batch": 4,
                "configs": {"fwd": KernelConfig(64, 64).to_dict()}}
    rows = bench_tables.add_predictions([row(1024, 4096, 32), row(4096, 4096, 8),
                                         row(4096, 1024, 32), row(4096, 1024, 1, False)],
                                        "NVIDIA H200", CALIB)
    assert ["predict" in r for r in rows] == [True, True, False, True]
    m = predict.machine_for("NVIDIA H200")
    gqa = rows[1]["predict"]["fwd"]
    mha = predict.predict_forward(m, CALIB, n=4096, d=128, batch=4, heads=32, causal=True,
                                  block_m=64, block_n=64)
    assert gqa["tensor_s"] == mha.tensor_s and gqa["hbm_s"] < mha.hbm_s  # K, V: 8 heads, not 32


def test_bench_without_a_gpu_says_so(capsys):
    if torch.cuda.is_available():
        pytest.skip("there is a GPU")
    assert bench.main(["--grid", "main"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_h200_preset_holds_the_measured_calibration():
    """toymachine/machine/presets/h200.yaml's rates are calibration_h200.json's measured means per
    cycle of its clock (4 significant figures), not the datasheet's peaks."""
    calib = predict.calibration()
    m = predict.machine_for("NVIDIA H200")
    hz = m.clock_hz
    assert hz == calib["clocks"]["sm_max_mhz"] * 1e6
    for field, key in (("tensor_flops_per_cycle", "fp16_mm_flops"),
                       ("hbm_bytes_per_cycle", "dram_copy_Bps"),
                       ("vector_flops_per_cycle", "fma_flops"), ("sfu_ops_per_cycle", "exp2_per_s")):
        assert math.isclose(getattr(m, field) * hz, calib[key], rel_tol=5e-4), field
        runs = [r[key] for r in calib["runs"]]
        assert math.isclose(calib[key], sum(runs) / len(runs))
    assert m.tensor_flops_per_cycle * hz < 0.8 * 989.4e12  # sustained, below the datasheet


# ------------------------------------------------------------------ the alarm
def _predicted_rows(measured_over_predicted: dict[str, float]):
    """One modelled row whose measured times are the model's times x the given factors."""
    row = {"grid": "frontier", "d": 64, "n": 4096, "nk": 4096, "heads": 32, "heads_kv": 8,
           "causal": True, "dtype": "fp16", "batch": 4,
           "configs": {"fwd": KernelConfig(64, 128).to_dict(),
                       "bwd_dkdv": KernelConfig(64, 128).to_dict(),
                       "bwd_dq": KernelConfig(128, 64).to_dict()}}
    [pred] = bench_tables.add_predictions([dict(row, ours={"fwd_ms": 1.0, "bwd_ms": 1.0})],
                                          "NVIDIA H200", CALIB)
    row["ours"] = {f"{p}_ms": pred["predict"][p]["total_s"] * 1e3 * measured_over_predicted[p]
                   for p in ("fwd", "bwd")}
    return row


def test_the_alarm_flags_points_slower_than_the_model():
    """measured > 1.3 x predicted raises the alarm, 1.2 x does not (the cliff it exists
    for: a grouped backward at 4.2 x its prediction)."""
    from kernels_gpu.bench import alarm
    rows = bench_tables.add_predictions([_predicted_rows({"fwd": 1.2, "bwd": 4.2})],
                                        "NVIDIA H200", CALIB)
    [a] = alarm.alarms(rows, "NVIDIA H200")
    assert a.pass_ == "bwd" and math.isclose(a.slower, 4.2, rel_tol=1e-9)
    assert alarm.alarms(rows, "NVIDIA H200", slower=5.0) == []
    assert "bwd d 64 H 32/8 N 4096 causal" in alarm.render([a])


def test_a_known_point_needs_a_reason_and_must_match():
    from kernels_gpu.bench import alarm
    with pytest.raises(ValueError):
        alarm.Known(" ", d=64)
    rows = bench_tables.add_predictions([_predicted_rows({"fwd": 2.0, "bwd": 2.0})],
                                        "NVIDIA H200", CALIB)
    found = alarm.alarms(rows, "NVIDIA H200")
    assert len(found) == 2
    known = (alarm.Known("forward of this shape", pass_="fwd", d=64, causal=True),
             alarm.Known("another head dim", d=128))
    unexplained, explained = alarm.explain(found, known)
    assert [a.pass_ for a in unexplained] == ["bwd"]
    assert [(a.pass_, k.reason) for a, k in explained] == [("fwd", "forward of this shape")]


def test_bench_predict_fails_on_an_unexplained_point(tmp_path, capsys):
    """`bench --predict --from` exits 1 when a point is slower than the model and not known,
    0 when the threshold lets it pass; the table names the point either way."""
    src = tmp_path / "bench.json"
    env = {"gpu": "NVIDIA H200", "date": "a run"}
    src.write_text(json.dumps({"env": env, "rows": [_predicted_rows({"fwd": 1.0,
                                                                     "bwd": 3.0})]}))
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps(CALIB))
    args = ["--predict", "--from", str(src), "--calibration", str(calib),
            "--out", str(tmp_path / "out")]
    assert bench.main(args) == 1
    md = (tmp_path / "out" / "predict.md").read_text()
    assert "Slower than the model: look here." in md and "| bwd d 64 H 32/8 N 4096" in md
    assert bench.main(args + ["--alarm", "3.5"]) == 0
    assert "0 unexplained" in (tmp_path / "out" / "predict.md").read_text()


@pytest.mark.slow
def test_the_model_schedule_explains_the_multi_query_backward_of_the_stored_h200_run():
    """The stored run of the grouped-loop dispatch: the multi-query causal backward (d 128, H_kv 1, N 4k, the
    group loop) was 1.72 x the rate model. With the schedule (B x H_kv x N / BLOCK_N = 256
    dK/dV programs, each looping over 32 query heads) the model predicts 0.83 of its time (the
    constants fitted on the H100) and says where the time goes: more than a quarter is the
    schedule's (30 %); the alarm names only the fp8 forward at N 1k causal there."""
    from kernels_gpu.bench import alarm
    stored = json.loads(open(BENCH_H200).read())
    rows = bench_tables.add_predictions(stored["rows"], stored["env"]["gpu"],
                                        predict.calibration())
    [mq] = [r for r in rows if r["d"] == 128 and r["heads_kv"] == 1 and r["n"] == 4096
            and r["causal"] is True and "predict" in r]
    assert 1 / alarm.SLOWER < mq["predict"]["bwd_ratio"] <= 1.15
    assert mq["predict"]["bwd"]["schedule_s"] > 0.25 * mq["predict"]["bwd"]["total_s"]
    unexplained, _ = alarm.explain(alarm.alarms(rows, stored["env"]["gpu"]))
    assert {(a.pass_, a.d, a.n, a.dtype) for a in unexplained} == {
        ("fwd", 64, 1024, "e5m2"), ("fwd", 64, 1024, "e4m3")}


def test_an_h100_calibration_replaces_the_datasheet_rates():
    """The h100 preset holds datasheet rates (989 TFLOP/s); the model of an H100 run uses the
    stored H100 calibration's measured ones; another card's calibration changes nothing."""
    path = predict.calibration_file("NVIDIA H100 80GB HBM3")
    assert path.endswith("calibration_h100.json")
    calib = predict.calibration(path)
    m = predict.machine_for("NVIDIA H100 80GB HBM3", 2, calib)
    assert math.isclose(m.tensor_flops_per_cycle * m.clock_hz, calib["fp16_mm_flops"])
    assert math.isclose(m.hbm_bytes_per_cycle * m.clock_hz, calib["dram_copy_Bps"])
    plain = predict.machine_for("NVIDIA H100 80GB HBM3")
    assert plain.tensor_flops_per_cycle * plain.clock_hz > 1.2 * calib["fp16_mm_flops"]
    h200 = predict.calibration()
    assert predict.machine_for("NVIDIA H100 80GB HBM3", 2, h200) == plain


def test_the_model_follows_the_split_dkdv():
    """A grouped dK/dV split over the whole group is, per program, the MHA tile program: the
    model's dK/dV launch equals the MHA one's, plus the host's sum of the fp32 partials
    (HBM-bound: 2 B H_kv N_k d elements x (4 split + 8 + 2) bytes, 4 launches)."""
    m = predict.machine_for("NVIDIA H200")
    kw = dict(n=2048, d=64, batch=2, heads=8, causal=True, dkdv=(64, 128), dq=(128, 64))
    split = predict.predict_backward(m, CALIB, kv_heads=2, dkdv_split=4, **kw)
    loop = predict.predict_backward(m, CALIB, kv_heads=2, **kw)
    mha = predict.predict_backward(m, CALIB, **kw)
    elems = 2 * 2 * 2 * 2048 * 64
    sum_s = elems * (4 * 4 + 4 + 4 + 2) / (m.hbm_bytes_per_cycle * m.clock_hz)
    assert math.isclose(split.tensor_s, mha.tensor_s) and split.tensor_s == loop.tensor_s
    assert math.isclose(split.total_s, mha.total_s + sum_s + 4 * CALIB["launch_s"])
    assert split.bound.endswith("+hbm") and split.l2_s > loop.l2_s


def test_the_model_follows_dv_apart_from_dk():
    """dV apart from dK (the d 256 TUNED backward): the model runs the tile machine's dv and dk
    launches instead of dkdv — one more Q K^T per tile pair on the tensor cores (5 products
    instead of 4), Q, dO and the statistics streamed twice, V and D not read by the dV launch —
    and one more launch latency."""
    from toymachine.cost import attention_tile_cost

    m = predict.machine_for("NVIDIA H100", calib=CALIB)
    kw = dict(n=4096, d=256, batch=4, heads=32, causal=True, dkdv=(32, 128), dq=(128, 32))
    apart = predict.predict_backward(m, CALIB, dkdv_apart=True, **kw)
    both = predict.predict_backward(m, CALIB, **kw)
    cost = {ph: attention_tile_cost(n=4096, d=256, batch=4, heads=32, causal=True, algo="fa2",
                                    pass_="backward", order="split", phase=ph, block_m=32,
                                    block_n=128) for ph in ("dkdv", "dv", "dk")}
    qk = 4 * 32 * cost["dkdv"].breakdown["PRC"] * (2 * 256 - 1)  # one Q K^T over every pair
    assert cost["dv"].flops_matmul + cost["dk"].flops_matmul == cost["dkdv"].flops_matmul + qk
    assert "V" not in cost["dv"].traffic and "D" not in cost["dv"].traffic
    assert cost["dv"].traffic["Q"] == cost["dk"].traffic["Q"] == cost["dkdv"].traffic["Q"]
    assert math.isclose(apart.tensor_s - both.tensor_s,
                        qk / (m.tensor_flops_per_cycle * m.clock_hz))
    assert math.isclose(apart.launch_s, both.launch_s + CALIB["launch_s"])
    assert apart.bound.count("+") == both.bound.count("+") + 1


@pytest.mark.slow  # an offline sm_90 compile (ptxas)
def test_the_d256_backward_configs_compile_to_wgmma_without_spills():
    """The TUNED d 256 backward (dV apart from dK: two launches of one fp32 accumulator each,
    BLOCK_N 128; dQ 3 stages) compiles for sm_90 to wgmma without local-memory spills and
    within the shared memory of one block, where the two-accumulator dK/dV it replaced
    (M64N64w8s2) took 255 registers and spilled (offline: Triton's own ptxas, no GPU)."""
    import subprocess
    import sys

    code = """
import json
from kernels_gpu.bench.compile_check import compile_kernel, resources
from kernels_gpu.host import configs as cfgs
kv = cfgs.tuned_config("bwd_dkdv", 256, True, 8192)
dq = cfgs.tuned_config("bwd_dq", 256, True, 8192)
out = {"dkdv": kv.short(), "dq": dq.short()}
for name, pass_, cfg, part in (("dv", "bwd_dkdv", kv, 1), ("dk", "bwd_dkdv", kv, 2),
                               ("dq", "bwd_dq", dq, None)):
    out[name] = resources(compile_kernel(pass_, cfg, 256, part=part))
print("RESULT " + json.dumps(out))
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TRITON_INTERPRET="0", PYTHONPATH=root)
    r = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
    assert res["dkdv"].endswith("-dv")
    for name in ("dv", "dk", "dq"):
        assert res[name]["spill_stores"] == 0, res
        assert "HGMMA" in res[name]["mma"], res
        assert res[name]["smem"] <= 232448, res  # sm_90: 227 KB a block


def test_the_study_harness_records_failures_and_renders_ratios(monkeypatch):
    """bench/study.py (shared by every study): each figure the median of the repeats; a
    variant that raises is a NaN with its error, not an exception; the table's ratios are
    SDPA's time over the variant's."""
    import triton

    from kernels_gpu.bench import study

    times = iter([3.0, 1.0, 2.0])
    monkeypatch.setattr(triton.testing, "do_bench", lambda fn, **kw: (fn(), next(times))[1])
    row = {"ms": {}, "runs": {}}
    assert study.time_into(row, "good", lambda: None, 3) == 2.0
    assert row["runs"]["good"] == [3.0, 1.0, 2.0]

    def boom():
        raise RuntimeError("out of shared memory")
    ms = study.time_into(row, "bad", boom, 1)
    assert ms != ms and row["ms"]["bad"] != row["ms"]["bad"]
    assert "out of shared memory" in row["runs"]["bad"][0]
    ms = {"a": 1.25, "flash": 2.0, "cudnn": 1.5}
    rows = [{"d": 64, "n": 1024, "causal": True, "heads": 32, "heads_kv": 8, "ms": ms,
             "tflops": {k: 100.0 / v for k, v in ms.items()}, "err": {"a": 1e-3}}]
    for text, lead in ((study.render_grouped(rows), 4), (study.render_points(rows), 3)):
        cells = [c.strip() for c in text.splitlines()[2].strip("|").split("|")]
        assert cells[lead] == "a" and float(cells[lead + 1]) == 1.25
        assert float(cells[lead + 3]) == round(2.0 / 1.25, 2)
        assert float(cells[lead + 4]) == round(1.5 / 1.25, 2)
    assert study.render_points(rows).splitlines()[2].rstrip(" |").endswith("1.0e-03")


def test_the_study_runner_walks_the_grid_and_writes_each_point(monkeypatch, tmp_path):
    """study.run: the points d, then causal, then N from the options (`--causal` alone: causal
    only; B·N = 16k), the study's own options parsed, the rows saved after each point and the
    table written at the end; every named study is one the runner can parse."""
    from kernels_gpu.bench import run as bench_run
    from kernels_gpu.bench import studies, study

    monkeypatch.setattr(study, "needs_cuda", lambda name: True)
    monkeypatch.setattr(bench_run, "environment", lambda: {"gpu": "none"})
    seen = []

    def row(pt, args):
        seen.append((pt.d, pt.causal, pt.n, pt.batch, args.tag))
        return dict(pt.row(), ms={"a": 1.0, "flash": 2.0, "cudnn": 4.0},
                    tflops={"a": 1.0, "flash": 0.5, "cudnn": 0.25})
    fake = study.Study("a fake study", row, lambda a: "fake", dims="64", ns="1024,2048",
                       options=lambda ap: ap.add_argument("--tag", default="x") and None,
                       table=study.render_points)
    assert study.run("fake", fake, ["--out", str(tmp_path), "--dims", "64,128", "--tag",
                                    "y"]) == 0
    assert seen == [(d, c, n, 16384 // n, "y") for d in (64, 128) for c in (False, True)
                    for n in (1024, 2048)]
    saved = json.loads((tmp_path / "fake.json").read_text())
    assert saved["env"] == {"gpu": "none"} and len(saved["rows"]) == 8
    assert "| 128 | 2048 | yes | a | 1.000 |" in (tmp_path / "fake.md").read_text()
    seen.clear()
    study.run("fake", fake, ["--out", str(tmp_path), "--causal"])
    assert [s[1] for s in seen] == [True, True]
    for name in studies.STUDIES:  # each study's options parse (--help exits 0)
        with pytest.raises(SystemExit) as e:
            studies.main([name, "--help"])
        assert e.value.code == 0
    assert studies.main(["nope"]) == 2


