"""The chunked d 192 Gluon backward in the model, on the CPU: the launches model.dispatch lists
where host/dispatch.py dispatches it, their labels, and each
launch's schedule — the tile simulator's bytes against the hand formula and against a closed
form of the kernel's loads (kernels/hopper_bwd_chunked.py: 64-column TMA boxes on the unpadded
(B·H·N, 192) rows, so 192 x 2 bytes a row, not the 256 the `tl` kernels pad to on chip)."""
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
from kernels_gpu.host.hopper_d192 import D192Config  # noqa: E402
from kernels_gpu.model import dispatch  # noqa: E402
from kernels_gpu.model.tile_traffic import simulated_traffic  # noqa: E402

APART = D192Config((32, 64, 4, 2), (64, 128, 8, 2), (128, 64, 8, 2))
ONE = D192Config(None, (64, 64, 4, 2), (64, 32, 4, 2))


@pytest.fixture
def tables(monkeypatch):
    """DISPATCH_D192 pinned (a re-tuned table must not move these tests): dV apart when not
    causal, one dK/dV launch when causal; below N 1k nothing."""
    monkeypatch.setattr(support, "HAVE_GLUON", True)  # the tables on any Triton: this one taken as verified
    monkeypatch.setitem(support.GLUON_DISPATCHED, support.triton_version(), "the test's tables")
    support.reset()
    monkeypatch.setattr(host_dispatch, "DISPATCH_D192", {False: [(1023, None), (1 << 62, APART)],
                                                       True: [(1023, None), (1 << 62, ONE)]})
    monkeypatch.setattr(host_dispatch, "DISPATCH_WS", {(192, c): [(1 << 62, WS)]
                                                     for c in (False, True)})


WS = (64, "lag", 2)  # the d 192 warp-specialised forward's pinned config


@pytest.mark.parametrize("causal,want", [
    (False, [("_attn_bwd_dkdv_d192", "gluon192 dv M32N64w4s2", 1, "M32N64w4s2-tma-dv"),
             ("_attn_bwd_dkdv_d192", "gluon192 dk M64N128w8s2", 2, "M64N128w8s2-tma-dv"),
             ("_attn_bwd_dq_d192", "gluon192 dq M128N64w8s2", 0, "M128N64w8s2-tma")]),
    (True, [("_attn_bwd_dkdv_d192", "gluon192 dkdv M64N64w4s2", 0, "M64N64w4s2-tma"),
            ("_attn_bwd_dq_d192", "gluon192 dq M64N32w4s2", 0, "M64N32w4s2-tma")])])
def test_the_chunked_launches_a_d192_dispatch_implies(tables, causal, want):
    """d 192 on sm_90: the warp-specialised Gluon forward (three 64-column chunks) and the
    `tl` preprocess, then the chunked dK/dV (dV and dK apart or one launch) and dQ with
    DISPATCH_D192's blocks, in the host's order; the pass labels are host_labels'
    (D192Config.label's pieces); anything the host keeps on the `tl` backward (N < 1k, N not a
    multiple of the blocks, cross-attention, fp32, no Hopper, KERNELS_GPU_HOPPER=0, grouped
    heads with KERNELS_GPU_D192_GROUPS=0) lists the `tl` backward launches, and the `tl`
    forward where the Gluon forward cannot run; grouped heads otherwise list the chunked
    launches."""
    got = dispatch.launches(2048, 192, causal, heads=4)
    ws_label = "gluon M128N{}w12 ws-{}-s{}".format(*WS)
    assert [(ln.function, ln.label) for ln in got[:2]] == [
        ("_attn_fwd_ws", ws_label), ("_attn_bwd_preprocess", "tl M128N128w4s1")]
    assert [(ln.function, ln.label, ln.part, ln.config.short()) for ln in got[2:]] == want
    cfg = APART if not causal else ONE
    labels = dispatch.pass_labels(got)
    assert labels == {"fwd": ws_label, **dispatch.d192_labels(cfg)}
    assert f"{labels['bwd_dkdv']} {labels['bwd_dq'].removeprefix('gluon192 ')}" == cfg.label()
    assert dispatch.case_launches({"configs": {}, "kernels": labels}) == got
    tl = ["_attn_fwd", "_attn_bwd_preprocess", "_attn_bwd_dkdv", "_attn_bwd_dq"]
    for kw in (dict(n=512), dict(n=2080), dict(nk=4096), dict(elem_bytes=4),
               dict(capability=(8, 0)), dict(capability=None), dict(env={"KERNELS_GPU_HOPPER": "0"}),
               dict(kv_heads=2, env={"KERNELS_GPU_D192_GROUPS": "0"})):
        args = dict(n=2048, heads=4) | kw
        names = [ln.function for ln in dispatch.launches(d=192, causal=causal, **args)]
        gluon_fwd = args["n"] % 128 == 0 and "nk" not in kw and "elem_bytes" not in kw and \
            kw.get("capability", (9, 0)) == (9, 0) and "KERNELS_GPU_HOPPER" not in kw.get("env", {})
        assert names[:2] == ["_attn_fwd_ws" if gluon_fwd else "_attn_fwd", tl[1]], kw
        assert "_attn_bwd_dkdv_d192" not in names, kw
    # grouped heads: the same chunked launches, on K/V copied out to the query heads
    grouped = dispatch.launches(2048, 192, causal, heads=4, kv_heads=2)
    assert [(ln.function, ln.label, ln.part) for ln in grouped[2:]] == [w[:3] for w in want]
    assert host_dispatch.choose(2048, 192, causal, env={"KERNELS_GPU_WS": "0"}) \
        == {"bwd_d192": cfg}


def _closed_form(kind: str, n: int, bm: int, bn: int, b: int, h: int, causal: bool):
    """(read, write) bytes of one chunked launch from the kernel's own loops: per program the
    held tile once (rows x 192 x 2 bytes a tensor, lse / D 4 bytes a row), the streamed tiles
    once per iteration; causal, a dK/dV program starts at the query tile of its first key and
    a dQ program stops at the key tile of its last query (kernels/hopper_bwd_chunked.py)."""
    row, stat = 192 * 2, 4
    read = 0
    if kind == "dq":  # Q, dO, lse, D held; K, V streamed
        for start_m in range(0, n, bm):
            tiles = (start_m + bm) // bn if causal else n // bn
            read += bm * (2 * row + 2 * stat) + tiles * bn * 2 * row
    else:  # K (and V) held; Q, dO, lse (and D) streamed
        held = 1 if kind == "dv" else 2
        streamed = 2 * row + (stat if kind == "dv" else 2 * stat)
        for start_n in range(0, n, bn):
            tiles = n // bm - (start_n // bm if causal else 0)
            read += bn * held * row + tiles * bm * streamed
    outs = 2 if kind == "dkdv" else 1
    return b * h * read, b * h * n * row * outs


@pytest.mark.parametrize("label", ["gluon192 dv M32N64w4s2", "gluon192 dv M64N128w8s2",
                                   "gluon192 dk M64N128w8s2", "gluon192 dkdv M64N64w4s2",
                                   "gluon192 dq M128N64w8s2", "gluon192 dq M64N32w4s2"])
@pytest.mark.parametrize("n,causal", [(512, False), (512, True), (384, True)])
def test_chunked_launch_traffic_simulated_equals_the_hand_formula(label, n, causal):
    """Every chunked launch: the tile simulator's bytes for its schedule = the hand formula =
    the closed form of the kernel's loads, to the byte, at 192 x 2 bytes a row. The dV launch
    streams Q, dO and lse (no V, no D), the dK launch Q, dO, lse, D, the dQ streams K, V; every
    (rows, 192) tile through TMA, lse / D by pointers — in the dK/dV every warp loads them whole
    (the columns of its S^T rows, `col_st`), in the dQ once (`row_s`); outputs by plain stores."""
    pass_ = "bwd_dq" if " dq " in label else "bwd_dkdv"
    launch = dispatch.from_label(pass_, label)
    cfg, kind = launch.config, label.split()[1]
    if n % cfg.block_m or n % cfg.block_n:
        pytest.skip("the chunked kernels run N a multiple of the blocks")
    sim = simulated_traffic(n, 192, 2, 3, causal, pass_=pass_, config=cfg,
                            part=launch.part or None, kernel=launch.label)
    s = launch.schedule(n, 192, 2, 3, causal)
    assert sim.traffic == predict_traffic(s) and s.kernel == label
    assert (sim.read_bytes, sim.write_bytes) == _closed_form(kind, n, cfg.block_m, cfg.block_n,
                                                             2, 3, causal)
    tiles = {"dv": {"K", "Q", "dO"}, "dk": {"K", "V", "Q", "dO"}, "dkdv": {"K", "V", "Q", "dO"},
             "dq": {"Q", "dO", "K", "V"}}[kind]
    stats = ("lse",) if kind == "dv" else ("lse", "D")
    assert set(sim.tma_tensors) == tiles and set(sim.tensors) - tiles == set(stats) | {
        "dv": {"dV"}, "dk": {"dK"}, "dkdv": {"dK", "dV"}, "dq": {"dQ"}}[kind]
    copies = cfg.num_warps if pass_ == "bwd_dkdv" else 1
    assert sim.pointer_read_bytes == copies * sum(sim.tensors[t][0] for t in stats)
    assert sim.tma_stores == ()


def test_the_dv_launch_reads_less_than_the_dk_launch_and_the_bytes_are_192_wide():
    """At one shape (fp16, B 4 x H 32, N 4096, DISPATCH_D192's g-n128): the dV launch reads no
    V and no D, so fewer bytes than the dK launch of the same blocks; every launch writes one
    (B·H·N, 192) fp16 tensor; the `tl` dK/dV the model lists without the dispatch (its config
    padded to 256 on chip) counts the same 192-wide rows."""
    cfg = hopper_d192.CANDIDATES["g-n128"]
    dv, dk, dq = dispatch.d192_launches("bwd_dkdv", dispatch.d192_labels(cfg)["bwd_dkdv"]) + \
        dispatch.d192_launches("bwd_dq", dispatch.d192_labels(cfg)["bwd_dq"])
    t = [predict_traffic(ln.schedule(4096, 192, 4, 32, False)) for ln in (dv, dk, dq)]
    b, h, n, row = 4, 32, 4096, 192 * 2
    assert [x.write_bytes for x in t] == [b * h * n * row] * 3
    tiles = n // 64  # the query tiles a dK/dV program streams
    assert t[1].read_bytes - t[0].read_bytes == b * h * (n * row + (n // 128) * tiles * 64 * 4)


@pytest.mark.parametrize("pass_,label,needle", [
    ("bwd_dq", "gluon192 dv M64N64w4s2", "bwd_dkdv launch, not bwd_dq"),
    ("fwd", "gluon192 dq M64N64w4s2", "bwd_dq launch, not fwd")])
def test_a_chunked_label_names_its_own_pass(pass_, label, needle):
    with pytest.raises(ValueError, match=needle):
        dispatch.from_label(pass_, label)


@pytest.mark.parametrize("pass_,label", [
    ("bwd_dkdv", "gluon192 dk M64N64w4s2 dv M64N64w4s2"), ("bwd_dkdv", "gluon192 dq M64N64w4s2"),
    ("bwd_dq", "gluon192 dkdv M64N64w4s2"), ("bwd_dkdv", "gluon192 dv M64N64w4s2"),
    ("bwd_dkdv", "gluon192"), ("bwd_dkdv", "gluon M64N64w4")])
def test_a_pass_label_of_the_wrong_launches_is_refused(pass_, label):
    with pytest.raises(ValueError, match="not a chunked d 192"):
        dispatch.d192_launches(pass_, label)


@pytest.mark.parametrize("kw,needle", [
    (dict(d=128), "d 192 only"), (dict(nk=1024), "N_q = N_k"), (dict(n=200), "multiple"),
    (dict(config=KernelConfig(64, 64, 4, 2, True)), "N_q = N_k a multiple")])
def test_a_chunked_schedule_refuses_what_the_kernels_do_not_run(kw, needle):
    """d 192 only, N_q = N_k a multiple of the blocks, and the dV / dK launches are the parts
    of a dV-apart config (a plain config is not what the dV launch runs)."""
    from kernels_gpu.model.schedule import schedule

    launch = dispatch.from_label("bwd_dkdv", "gluon192 dv M64N64w4s2")
    args = dict(n=512, d=192, nk=None, config=launch.config) | kw
    with pytest.raises(ValueError, match=needle):
        schedule(args["n"], args["d"], pass_="bwd_dkdv", config=args["config"], nk=args["nk"],
                 part=1 if args["config"].dv_apart else None, kernel=launch.label)


@pytest.mark.slow
def test_compare_walks_a_d192_case():
    """traffic.compare on a --dispatch case at d 192: preprocess, the dV and dK launches (both
    `_attn_bwd_dkdv_d192`, parts 1 and 2) and the dQ, each predicted with its chunked schedule
    (the forward is the `tl` one, its config from the case)."""
    from kernels_gpu.model import traffic

    cfg = {p: KernelConfig(128, 64, 8, 2).to_dict() for p in ("fwd", "bwd_dkdv", "bwd_dq")}
    labels = dispatch.d192_labels(hopper_d192.CANDIDATES["g-best"])
    case = {"d": 192, "n": 1024, "causal": True, "configs": cfg, "kernels": labels}
    names = ["_attn_fwd", "_attn_bwd_preprocess", "_attn_bwd_dkdv_d192", "_attn_bwd_dkdv_d192",
             "_attn_bwd_dq_d192"]
    rows = traffic.compare([{"id": i, "kernel": k, "metrics": {}} for i, k in enumerate(names)],
                           [case])
    assert [(r["function"], r["part"], r.get("kernel")) for r in rows] == [
        ("_attn_fwd", 0, None), ("_attn_bwd_preprocess", 0, None),
        ("_attn_bwd_dkdv_d192", 1, "gluon192 dv M32N64w4s2"),
        ("_attn_bwd_dkdv_d192", 2, "gluon192 dk M64N128w8s2"),
        ("_attn_bwd_dq_d192", 0, "gluon192 dq M128N64w8s2")]
    assert rows[2]["tma_tensors"] == ["K", "Q", "dO"] and "D" not in rows[2]["pred_tensors"]
    for r in rows[2:]:  # each with its own launch's schedule (traffic's B 4 x H 32)
        launch = dispatch.from_label(r["pass"], r["kernel"])
        t = predict_traffic(launch.schedule(1024, 192, traffic.BATCH, traffic.HEADS, True))
        assert (r["pred_read"], r["pred_write"], r["config"]) == \
            (t.read_bytes, t.write_bytes, launch.config.short())
    assert "| gluon192 dv M32N64w4s2 |" in traffic.render(rows)
