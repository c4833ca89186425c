"""The kernel each launch runs (kernels_gpu.host.dispatch, kernels_gpu.model.dispatch) and the
traffic of the Gluon launches, on the CPU: the dispatch decision made without a GPU, the launch
list it implies, and each Gluon launch's schedule — the tile simulator's bytes against the hand
formula, to the byte."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernels_gpu import KernelConfig, predict_traffic  # noqa: E402
from kernels_gpu.host import dispatch as host_dispatch  # noqa: E402
from kernels_gpu.host import (
    hopper_d192,  # noqa: E402
    support,  # noqa: E402
)
from kernels_gpu.host import launch as host_launch  # noqa: E402
from kernels_gpu.model import dispatch  # noqa: E402
from kernels_gpu.model.tile_traffic import simulated_traffic  # noqa: E402


def test_choose_follows_the_tables(tables):
    """host/dispatch.choose on pinned tables: the one-partition forward where DISPATCH names
    the head dim and N is a multiple of its blocks; the warp-specialised forward before it
    where DISPATCH_WS's first covering row names a config; the dK/dV and dQ where theirs do;
    the chunked d 192 backward (grouped heads too) where DISPATCH_D192's row does; the forwards
    alone (no Gluon backward) on grouped heads, MQA too, d 192's forward on the warp-specialised
    kernel alone; nothing on cross-attention, fp32, without a Hopper GPU, or switched off."""
    fwd64, fwd128 = TABLES["DISPATCH"][64], TABLES["DISPATCH"][128]
    dkdv, dq = TABLES["DISPATCH_DKDV"][128], TABLES["DISPATCH_DQ"][(128, True)]
    assert host_dispatch.choose(1024, 64) == {"fwd": fwd64}
    assert host_dispatch.choose(1088, 64) == {}  # not a multiple of the blocks
    assert host_dispatch.choose(512, 128) == {"fwd": fwd128, "bwd_dkdv": dkdv}  # ws row None
    assert host_dispatch.choose(1024, 128) == {"fwd": fwd128, "fwd_ws": (128, "lag", 3),
                                               "bwd_dkdv": dkdv}
    assert host_dispatch.choose(1024, 128, True) == {"fwd": fwd128, "bwd_dkdv": dkdv,
                                                     "bwd_dq": dq}
    assert host_dispatch.choose(4096, 128, True) == {
        "fwd": fwd128, "fwd_ws": (128, "pingpong", 2), "bwd_dkdv": dkdv, "bwd_dq": dq}
    assert host_dispatch.choose(4096, 128, True, env={"KERNELS_GPU_WS": "0"}) == {
        "fwd": fwd128, "bwd_dkdv": dkdv, "bwd_dq": dq}
    for kv_heads in (8, 2, 1):  # grouped heads, MQA: the forwards (DISPATCH_WS_GROUPED's
        # rows first), the `tl` backward
        assert host_dispatch.choose(4096, 128, True, heads=8, kv_heads=kv_heads) == {
            "fwd": fwd128, "fwd_ws": (128, "pingpong", 2), "bwd_dkdv": dkdv,
            "bwd_dq": dq} if kv_heads == 8 else {"fwd": fwd128, "fwd_ws": (128, "plag", 2)}
    assert host_dispatch.choose(512, 128, True, heads=8, kv_heads=2) == {"fwd": fwd128}
    assert host_dispatch.choose(1024, 128, False, heads=8, kv_heads=2)["fwd_ws"] == (
        128, "lag", 3)  # no grouped row: DISPATCH_WS's
    assert host_dispatch.choose(1024, 64, heads=8, kv_heads=1) == {"fwd": fwd64}
    assert host_dispatch.choose(1024, 64, heads=8, kv_heads=3) == {}  # 8 not a multiple of 3
    d192 = TABLES["DISPATCH_D192"][False][1][1]
    ws192 = TABLES["DISPATCH_WS"][(192, False)][0][1]
    assert host_dispatch.choose(2048, 192) == {"fwd_ws": ws192, "bwd_d192": d192}
    assert host_dispatch.choose(2048, 192, heads=8, kv_heads=2) == {"fwd_ws": ws192,
                                                                    "bwd_d192": d192}
    assert host_dispatch.choose(512, 192) == {"fwd_ws": ws192}  # no d 192 backward below 1k
    assert host_dispatch.choose(2048, 192, heads=8, kv_heads=2,
                                env={"KERNELS_GPU_D192_GROUPS": "0"}) == {"fwd_ws": ws192}
    assert host_dispatch.choose(2048, 192, env={"KERNELS_GPU_WS": "0"}) == {"bwd_d192": d192}
    assert host_dispatch.choose(2112, 192) == {}  # N not a multiple of 128
    for kw in (dict(nk=8192), dict(elem_bytes=4), dict(elem_bytes=1),
               dict(capability=None), dict(capability=(8, 0)),
               dict(env={"KERNELS_GPU_HOPPER": "0"})):
        assert host_dispatch.choose(4096, 128, True, **kw) == {}, kw
    assert host_dispatch.choose(2048, 192, capability=None) == {}
    host_dispatch.DISPATCH_DKDV_WS[(128, True)] = [(1024, None), (1 << 62, (64, 2, 1, 0))]
    assert host_dispatch.choose(2048, 128, True)["bwd_dkdv_ws"] == (64, 2, 1, 0)
    assert "bwd_dkdv_ws" not in host_dispatch.choose(1024, 128, True)
    assert "bwd_dkdv_ws" not in host_dispatch.choose(2048, 128, True,
                                                     env={"KERNELS_GPU_WS_BWD": "0"})


def test_choose_for_reads_the_problem_and_the_device(tables, monkeypatch):
    """choose_for(launch.Problem) = choose on the problem's fields and the current device's
    compute capability; the interpreter and a machine without CUDA choose nothing."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    for cap in ((9, 0), (8, 0)):
        monkeypatch.setattr(host_launch, "_capability", lambda device, cap=cap: cap)
        for dtype in (torch.float16, torch.bfloat16, torch.float32):
            for heads, kv_heads, nq, nk, d, causal in ((4, 4, 4096, 4096, 128, True),
                                                       (4, 4, 1024, 1024, 64, False),
                                                       (8, 2, 2048, 2048, 192, False),
                                                       (4, 4, 1024, 2048, 128, False)):
                p = host_launch.Problem(2, heads, kv_heads, nq, nk, d, dtype, causal, nk - nq)
                assert host_dispatch.choose_for(p, False) == host_dispatch.choose(
                    nq, d, causal, heads, kv_heads, nk, dtype.itemsize, cap)
                assert host_dispatch.choose_for(p, True) == {}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    p = host_launch.Problem(2, 4, 4, 4096, 4096, 128, torch.float16, True, 0)
    assert host_dispatch.choose_for(p, False) == {}


TABLES = dict(DISPATCH={64: (128, 128, 8), 128: (128, 64, 8)},
              DISPATCH_CAUSAL={64: (128, 128, 8), 128: (128, 64, 8)},
              DISPATCH_WS={(128, False): [(512, None), (1 << 62, (128, "lag", 3))],
                           (128, True): [(2048, None), (1 << 62, (128, "pingpong", 2))],
                           (192, False): [(1 << 62, (64, "lag", 2))]},
              DISPATCH_WS_GROUPED={(128, True): [(512, None), (1 << 62, (128, "plag", 2))]},
              DISPATCH_DKDV={128: (64, 64, 4, 2, 1)},
              DISPATCH_DQ={(128, True): (64, 64, 4, 2, 1)},
              DISPATCH_DKDV_WS={},
              DISPATCH_D192={c: [(1023, None), (1 << 62, hopper_d192.CANDIDATES["g-n128"])]
                             for c in (False, True)})


@pytest.fixture
def tables(monkeypatch):
    """The dispatch tables pinned (a re-tuned table must not move these tests), on a Triton
    with Gluon, the switches unset."""
    for name, table in TABLES.items():
        monkeypatch.setattr(host_dispatch, name, {k: list(v) if isinstance(v, list) else v
                                                  for k, v in table.items()})
    monkeypatch.setattr(support, "HAVE_GLUON", True)  # the tables on any Triton: this one taken as verified
    monkeypatch.setitem(support.GLUON_DISPATCHED, support.triton_version(), "the test's tables")
    support.reset()
    for key in ("KERNELS_GPU_HOPPER", "KERNELS_GPU_WS", "KERNELS_GPU_WS_BWD",
                "KERNELS_GPU_D192_GROUPS"):
        monkeypatch.delenv(key, raising=False)


@pytest.mark.parametrize("n,d,causal,want", [
    (1024, 64, False, [("_attn_fwd_hopper", "gluon M128N128w8", "M128N128w8s2-tma"),
                       ("_attn_bwd_preprocess", "tl", None), ("_attn_bwd_dkdv", "tl", None),
                       ("_attn_bwd_dq", "tl", None)]),
    (1024, 128, False, [("_attn_fwd_ws", "gluon M128N128w12 ws-lag-s3", "M128N128w12s3-tma"),
                        ("_attn_bwd_preprocess", "tl", None),
                        ("_attn_bwd_dkdv_hopper", "gluon M64N64w4", "M64N64w4s2-tma"),
                        ("_attn_bwd_dq", "tl", None)]),
    (4096, 128, True, [("_attn_fwd_ws", "gluon M128N128w12 ws-pingpong-s2", "M128N128w12s2-tma"),
                       ("_attn_bwd_preprocess", "tl", None),
                       ("_attn_bwd_dkdv_hopper", "gluon M64N64w4", "M64N64w4s2-tma"),
                       ("_attn_bwd_dq_hopper", "gluon M64N64w4 s2 ov1", "M64N64w4s2-tma")]),
    (1024, 128, True, [("_attn_fwd_hopper", "gluon M128N64w8", "M128N64w8s2-tma"),
                       ("_attn_bwd_preprocess", "tl", None),
                       ("_attn_bwd_dkdv_hopper", "gluon M64N64w4", "M64N64w4s2-tma"),
                       ("_attn_bwd_dq_hopper", "gluon M64N64w4 s2 ov1", "M64N64w4s2-tma")]),
])
def test_the_launches_a_dispatch_implies(tables, n, d, causal, want):
    """launches(): the forward on the one-partition or warp-specialised Gluon kernel, the dK/dV
    and dQ on theirs where dispatched, the `tl` kernels (with their own configs) elsewhere, in
    the order the public functions launch them; the tables pinned here so that a re-tuned
    table does not move the test."""
    got = dispatch.launches(n, d, causal, heads=4)
    assert [(ln.function, ln.label if ln.gluon else "tl",
             ln.config.short() if ln.gluon else None) for ln in got] == want
    assert all(ln.label.startswith("tl M") for ln in got if not ln.gluon)
    # no GPU (interpreter), explicit blocks: the `tl` launches of the same problem
    tl = dispatch.launches(n, d, causal, heads=4, capability=None)
    assert [ln.function for ln in tl] == ["_attn_fwd", "_attn_bwd_preprocess", "_attn_bwd_dkdv",
                                          "_attn_bwd_dq"]
    assert [ln.function for ln in dispatch.launches(n, d, causal, heads=4, backward=False)] \
        == [want[0][0]]


def test_tl_dv_apart_and_fused_dq_launches():
    """The `tl` dK/dV: dV apart is two launches (parts 1, 2); a fused dQ has no dQ launch."""
    apart = dispatch.launches(512, 256, True, capability=None,
                              configs={"bwd_dkdv": KernelConfig(32, 128, 8, 3, True,
                                                                dv_apart=True)})
    assert [(ln.pass_, ln.part) for ln in apart] == [("fwd", 0), ("bwd_preprocess", 0),
                                                     ("bwd_dkdv", 1), ("bwd_dkdv", 2),
                                                     ("bwd_dq", 0)]
    fused = dispatch.launches(512, 64, False, capability=None,
                              configs={"bwd_dkdv": KernelConfig(64, 64, fused_dq=True)})
    assert [ln.pass_ for ln in fused] == ["fwd", "bwd_preprocess", "bwd_dkdv"]


GLUON_LABELS = [("fwd", "gluon M128N128w8"), ("fwd", "gluon M128N64w8"),
                ("fwd", "gluon M128N128w12 ws-lag-s3"), ("fwd", "gluon M128N128w12 ws-pingpong-s2"),
                ("fwd", "gluon M128N64w12 ws-ws-s2"),
                ("bwd_dkdv", "gluon M64N64w4"), ("bwd_dkdv", "gluon M64N128w8"),
                ("bwd_dq", "gluon M64N64w4 s2 ov1"), ("bwd_dq", "gluon M128N64w8")]


@pytest.mark.parametrize("pass_,label", GLUON_LABELS)
@pytest.mark.parametrize("n,d,causal", [(512, 64, False), (512, 128, True), (384, 64, True)])
def test_gluon_launch_traffic_simulated_equals_the_hand_formula(pass_, label, n, d, causal):
    """Every Gluon launch (the one-partition and warp-specialised forwards, the dK/dV, the dQ):
    the tile simulator's bytes for its schedule equal the hand formula, to the byte; every
    (rows, d) tile it reads comes through TMA (no pointer loads but lse / D rows, which each
    warp of the dK/dV loads whole), the forwards' O and the dK/dV's dK, dV through TMA stores."""
    launch = dispatch.from_label(pass_, label)
    if n % launch.config.block_m or n % launch.config.block_n:
        pytest.skip("the Gluon kernels run N a multiple of the blocks")
    sim = simulated_traffic(n, d, 2, 3, causal, pass_=pass_, config=launch.config,
                            kernel=launch.label)
    s = launch.schedule(n, d, 2, 3, causal)
    assert sim.traffic == predict_traffic(s) and s.kernel == launch.label
    stats = {"fwd": 0, "bwd_dkdv": 2, "bwd_dq": 2}[pass_]  # lse, D (4 B a row) by pointers
    tiles = {"fwd": {"Q", "K", "V"}, "bwd_dkdv": {"K", "V", "Q", "dO"},
             "bwd_dq": {"Q", "dO", "K", "V"}}[pass_]
    assert set(sim.tma_tensors) == tiles
    copies = launch.config.num_warps if pass_ == "bwd_dkdv" else 1  # every warp loads them
    assert sim.pointer_read_bytes == copies * sum(sim.tensors[t][0] for t in ("lse", "D")[:stats])
    assert sim.tma_stores == {"fwd": ("O",), "bwd_dkdv": ("dK", "dV"), "bwd_dq": ()}[pass_]
    if pass_ == "fwd" and not causal:  # closed form: Q once, K and V once per program
        e, bm = 2, launch.config.block_m
        assert sim.read_bytes == 2 * 3 * (n * d * e + 2 * (n // bm) * n * d * e)
        assert sim.write_bytes == 2 * 3 * (n * d * e + 4 * n)


def test_the_warp_specialised_program_is_128_query_rows():
    """The warp-specialised forward's two 64-row consumer warpgroups share one program's K/V
    stream: its traffic is the one-partition kernel's at BLOCK_M 128, not 64."""
    ws = dispatch.from_label("fwd", "gluon M128N128w12 ws-lag-s3")
    one = dispatch.from_label("fwd", "gluon M128N128w8")
    assert predict_traffic(ws.schedule(1024, 128, causal=True)) \
        == predict_traffic(one.schedule(1024, 128, causal=True))
    assert ws.schedule(1024, 128).grid == (1024 // 128, 1)


@pytest.mark.parametrize("args,needle", [
    (dict(nk=1024), "N_q = N_k"), (dict(heads=8, kv_heads=2), "H_kv = H"),
    (dict(n=200), "multiple of the blocks")])
def test_a_gluon_schedule_refuses_what_the_kernels_do_not_run(args, needle):
    launch = dispatch.from_label("bwd_dkdv", "gluon M64N64w4")
    kw = dict(n=512, d=128, heads=1, nk=None, kv_heads=None) | args
    with pytest.raises(ValueError, match=needle):
        launch.schedule(kw["n"], kw["d"], 1, kw["heads"], False, nk=kw["nk"],
                        kv_heads=kw["kv_heads"])
    with pytest.raises(ValueError, match="Gluon kernel label"):
        dispatch.from_label("fwd", "gluon X")
    with pytest.raises(ValueError, match="no Gluon kernel"):
        dispatch.from_label("bwd_preprocess", "gluon M64N64w4")


def test_compare_walks_a_dispatched_case(tmp_path):
    """traffic.compare on a --dispatch case: its launches are the Gluon kernels the case
    records, in launch order, each checked against ncu's kernel name and predicted with the
    Gluon schedule; a launch of another kernel is refused."""
    from kernels_gpu.model import traffic

    cfg = {p: KernelConfig(128, 64, 8, 3, True).to_dict() for p in ("fwd", "bwd_dkdv", "bwd_dq")}
    case = {"d": 128, "n": 512, "causal": False, "configs": cfg,
            "kernels": {"fwd": "gluon M128N128w12 ws-lag-s3", "bwd_dkdv": "gluon M64N64w4"}}
    names = ["_attn_fwd_ws", "_attn_bwd_preprocess", "_attn_bwd_dkdv_hopper", "_attn_bwd_dq"]
    launches = [{"id": i, "kernel": k, "metrics": {}} for i, k in enumerate(names)]
    rows = traffic.compare(launches, [case])
    assert [r["function"] for r in rows] == names
    assert [r.get("kernel") for r in rows] == ["gluon M128N128w12 ws-lag-s3", None,
                                               "gluon M64N64w4", None]
    assert rows[0]["tma_tensors"] == ["Q", "K", "V"] and rows[0]["pred_pointer_read"] == 0
    assert rows[3]["config"] == "M128N64w8s3-tma"
    table = traffic.render(rows)
    assert "| fwd | 128 | 512 | no | gluon M128N128w12 ws-lag-s3 |" in table
    with pytest.raises(ValueError, match="expected _attn_bwd_dkdv_hopper"):
        traffic.compare([{**ln, "kernel": "_attn_bwd_dkdv"} if ln["id"] == 2 else ln
                         for ln in launches], [case])


@pytest.mark.slow  # simulates the launches at the measured sizes
def test_gluon_launches_against_the_stored_h100_measurements():
    """The ncu run of the public path (data/traffic_gluon_h100.*): 16
    launches, the host's dispatch = model.dispatch's in every case; the Gluon forwards (one
    partition, warp-specialised lag and ping-pong), dK/dV and dQ predicted with their own
    schedule. Pointer loads to the byte in all 16 (the Gluon dK/dV's lse and D once per warp);
    writes to the byte but for the Gluon backward's plain stores from the wgmma accumulator
    layout (each warp store fills half of each 32-byte sector: about 2 L2 write sectors per
    sector of dK, dV, dQ) and the split's register spills (the whole gap is local stores);
    DRAM reads within 4 % of the compulsory bytes but the split (K/V read from L2)."""

    from kernels_gpu.model import data, traffic

    cases = data.load_json("traffic_gluon_h100_cases.json")
    assert all(c["model_agrees"] for c in cases)
    rows = traffic.stored_rows("traffic_gluon_h100.csv", "traffic_gluon_h100_cases.json")
    assert len(rows) == 16
    assert {r["function"] for r in rows} >= {"_attn_fwd_hopper", "_attn_fwd_ws",
                                             "_attn_bwd_dkdv_hopper", "_attn_bwd_dq_hopper"}
    for r in rows:
        assert r["pred_pointer_read"] == r["l1_ld_read"], r
        spills = r["l1_local_st"]
        if r["function"] in ("_attn_bwd_dkdv_hopper", "_attn_bwd_dq_hopper"):
            assert 1.85 < (r["l2_tex_write"] - spills) / r["pred_write"] < 2.05, r
            assert 0.95 < r["dram_write"] / r["pred_write"] < 1.1, r  # the bytes themselves
        elif KernelConfig.from_short(r["config"]).split > 1:
            assert abs(r["l2_tex_write"] - r["pred_write"] - spills) < 1e-4 * spills, r
        else:
            assert r["pred_write"] == r["l2_tex_write"] and spills == 0, r
        if r["function"].startswith("_attn_fwd_"):  # every tile through TMA, O by TMA store
            assert r["pred_pointer_read"] == 0 and r["tma_stores"] == ["O"]
        if r.get("kv_heads") is None:
            assert 1.0 <= r["dram_read"] / r["pred_compulsory_read"] < 1.04, r


def test_the_warp_specialised_backward_is_not_dispatched_until_the_model_knows_it():
    """host/flash_attn.py runs the warp-specialised dK/dV (host/hopper_bwd_ws.py) wherever
    DISPATCH_DKDV_WS names a config, but model/dispatch.py, the traffic model and verify-gpu
    do not describe it (it measured within the spread). A row added to that table without
    teaching the model would make them describe the wrong kernel."""
    assert host_dispatch.DISPATCH_DKDV_WS == {}, (
        "teach model/dispatch.py (and the schedule, verify-gpu, model/gluon.py) the "
        "warp-specialised dK/dV before dispatching it")
