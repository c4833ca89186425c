"""`toym verify-gpu`: the tile simulator against the Triton kernel (interpreter on CPU)."""

import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import kernels_gpu  # noqa: E402,F401  (sets TRITON_INTERPRET=1 on a machine without CUDA)
from kernels_gpu.bench import verify as verify_mod  # noqa: E402


@pytest.mark.interpreter
@pytest.mark.parametrize("causal,dtype", [(False, "fp16"), (True, "bf16")])
def test_forward_agrees(toym, causal, dtype):
    args = ["verify-gpu", "--n", "64", "--d", "32", "--block-m", "32", "--block-n", "16", "--dtype", dtype, "-f", "csv"]
    code, out, err = toym(*args + (["--causal"] if causal else []))
    assert code == 0, err
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(out)))  # every section: the comparison and the setup
    compared = [r for r in rows if r["table"] == "Simulator vs kernel"]
    assert [(r["Quantity"], r["result"]) for r in compared] == [("O", "ok"), ("L", "ok")]
    assert any(r["table"] == "Setup" for r in rows)


@pytest.mark.interpreter
def test_backward_agrees_and_both_sides_are_near_the_reference():
    v = verify_mod.verify(n=48, d=16, causal=True, pass_="backward", block_m=16, block_n=16, dtype="fp16")
    assert v.ok and [c.quantity for c in v.comparisons] == ["O", "L", "dQ", "dK", "dV"]
    for c in v.comparisons:
        assert c.sim_vs_ref < 1e-5  # the simulator at fp32 on fp16-rounded inputs
        assert c.gpu_vs_ref < c.tolerance


@pytest.mark.interpreter
def test_a_wrong_kernel_is_caught(toym, monkeypatch):
    real = verify_mod.flash_attention_forward

    def off_by_a_bit(*a, **k):
        o, lse = real(*a, **k)
        return o * 1.05, lse

    monkeypatch.setattr(verify_mod, "flash_attention_forward", off_by_a_bit)
    code, out, _ = toym("verify-gpu", "--n", "32", "--d", "16", "--block-m", "16", "--block-n", "16")
    assert code == 1 and "MISMATCH" in out and "DO NOT agree" in out


@pytest.mark.parametrize("args,needle", [
    (["--d", "300"], "head dims"),
    (["--block-m", "24"], "power of two"),
    (["--n", "0"], "at least 1"),
])
def test_bad_options_exit_2(toym, args, needle):
    code, out, err = toym("verify-gpu", "--n", "32", "--d", "16", *args)
    assert code == 2 and needle in err and "Traceback" not in err


def test_missing_gpu_extra_is_a_clear_error(toym, monkeypatch):
    monkeypatch.setitem(sys.modules, "kernels_gpu.bench.verify", None)
    code, _, err = toym("verify-gpu", "--n", "32", "--d", "16")
    assert code == 2 and "pip install -e '.[gpu]'" in err


@pytest.mark.interpreter
def test_json_is_typed_with_snake_case_keys(toym):
    """`verify-gpu -f json`: numbers as numbers, booleans as booleans, stable snake_case keys."""
    import json
    import re

    code, out, err = toym("verify-gpu", "--n", "32", "--d", "16", "--block-m", "16", "--block-n", "16", "-f", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["ok"] is True and [c["quantity"] for c in d["comparisons"]] == ["O", "L"]
    for c in d["comparisons"]:
        assert c["ok"] is True and all(isinstance(c[k], float) for k in ("max_abs", "max_rel", "tolerance",
                                                                         "sim_vs_ref", "gpu_vs_ref"))
        assert c["max_abs"] <= c["tolerance"]
    s = d["setup"]
    assert (s["n"], s["d"], s["block_m"], s["block_n"], s["causal"], s["dtype"]) == (32, 16, 16, 16, False, "fp16")
    assert s["sim_hbm_forward"]["reads"] > 0 and isinstance(s["scale"], float)
    keys = list(d) + list(s) + [k for c in d["comparisons"] for k in c]
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", k) for k in keys), keys


def test_errors_under_json_are_a_json_object(toym):
    import json

    code, out, err = toym("verify-gpu", "--n", "32", "--d", "300", "-f", "json")
    assert code == 2 and "head dims" in err
    assert "head dims" in json.loads(out)["error"]["message"]


@pytest.mark.interpreter
@pytest.mark.parametrize("args", [
    ["--n", "32", "--nk", "48", "--heads", "4", "--kv-heads", "2", "--d", "96", "--causal", "--pass", "backward"],
    ["--n", "40", "--nk", "24", "--heads", "2", "--kv-heads", "1", "--d", "24", "--pass", "backward"],
    ["--n", "48", "--nk", "80", "--d", "80", "--causal"],
], ids=["cross-gqa-d96-causal", "cross-mqa-ragged", "cross-d80-causal"])
def test_cross_grouped_and_padded_head_dims_agree(toym, args):
    """--nk (causal aligned bottom-right), --kv-heads and a head dim the kernel pads (80, 96):
    simulator and kernel agree, the simulator is the float64 reference to fp32 round-off, and
    the cost model's HBM words are the simulator's (forward and backward)."""
    import json

    code, out, err = toym("verify-gpu", *args, "--block-m", "16", "--block-n", "16", "-f", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["ok"] and all(c["sim_vs_ref"] < 1e-5 for c in d["comparisons"])
    s = d["setup"]
    assert s["sim_hbm_forward"] == s["cost_hbm_forward"]
    if "backward" in args:
        assert s["sim_hbm_backward"] == s["cost_hbm_backward"]
        assert [c["quantity"] for c in d["comparisons"]] == ["O", "L", "dQ", "dK", "dV"]
    assert (s["nk"], s["kv_heads"]) == (int(args[args.index("--nk") + 1]),
                                        int(args[args.index("--kv-heads") + 1]) if "--kv-heads" in args
                                        else s["heads"])


@pytest.mark.parametrize("args,needle", [
    (["--heads", "4", "--kv-heads", "3"], "not a multiple"),
    (["--n", "32", "--nk", "16", "--causal"], "bottom-right"),
    (["--nk", "0"], "at least 1"),
])
def test_bad_shapes_exit_2(toym, args, needle):
    code, out, err = toym("verify-gpu", "--n", "32", "--d", "16", *args)
    assert code == 2 and needle in err and "Traceback" not in err


@pytest.mark.interpreter
@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's launches; on a GPU: "
                    "tests/test_verify_gpu_dispatch.py")
def test_without_blocks_each_launch_is_named_and_simulated_with_its_own_blocks(monkeypatch):
    """No --block-m/--block-n: the public functions' own launches (on CPU the `tl` kernels, no
    dispatch). The simulator follows each launch's blocks: the forward's for O and L, the dK/dV
    launch's for the backward (the cost model's words for those blocks are the simulator's),
    and a second run with the dQ launch's blocks where they differ; every launch is named with
    its kernel and its hand-formula bytes (model.dispatch, schedule.predict_traffic)."""
    from kernels_gpu import KernelConfig, predict_traffic
    from kernels_gpu.model import dispatch

    tiles = {"fwd": KernelConfig(16, 32), "bwd_dkdv": KernelConfig(32, 16), "bwd_dq": KernelConfig(16, 16)}
    monkeypatch.setattr(verify_mod, "resolve_config", lambda p, *a, **k: tiles[p])
    v = verify_mod.verify(n=64, d=16, causal=True, pass_="backward")
    assert v.ok, v.comparisons
    s = v.params
    assert s["dispatch"] is True and s["model_dispatch_agrees"] is None  # interpreter: no dispatch
    assert (s["block_m"], s["block_n"]) == (16, 32)
    want = dispatch.launches(64, 16, True, capability=None, configs=tiles)
    assert [(x["function"], x["kernel"], x["block_m"], x["block_n"]) for x in s["launches"]] == \
        [(ln.function, ln.label, ln.config.block_m, ln.config.block_n) for ln in want]
    assert [x["read_bytes"] for x in s["launches"]] == \
        [predict_traffic(ln.schedule(64, 16, causal=True)).read_bytes for ln in want]
    assert s["sim_hbm_backward"] == s["cost_hbm_backward"] == verify_mod._closed_form(
        "backward", "split", n=64, d=16, batch=1, heads=1, causal=True, block_m=32, block_n=16,
        scale=v.params["scale"])
    assert "Triton interpreter" in v.setup["dispatch"] and "_attn_bwd_dq (tl M16N16" in v.setup["kernels"]
    assert "bwd_dq BLOCK_M 16 × BLOCK_N 16" in v.setup["blocks"]


@pytest.mark.interpreter
def test_explicit_blocks_turn_the_dispatch_off():
    v = verify_mod.verify(n=32, d=16, block_m=16, block_n=16)
    assert v.params["dispatch"] is False and "explicit blocks" in v.setup["dispatch"]
    assert [x["function"] for x in v.params["launches"]] == ["_attn_fwd"]


@pytest.mark.parametrize("pass_,want", [
    ("forward", ["_attn_fwd_ws"]),
    ("backward", ["_attn_fwd_ws", "_attn_bwd_preprocess", "_attn_bwd_dkdv_hopper", "_attn_bwd_dq"])])
def test_the_plan_follows_the_hosts_labels_for_the_passes_run(monkeypatch, pass_, want):
    """On a GPU verify-gpu's launches are the host's dispatch (its Gluon labels; `tl` configs
    elsewhere), only those of the passes the run launches (a forward-only run lists no
    backward launch)."""
    from kernels_gpu import KernelConfig

    labels = {"fwd": "gluon M128N128w12 ws-lag-s3", "bwd_dkdv": "gluon M64N64w4"}
    monkeypatch.setattr(verify_mod, "INTERPRETER", False)
    monkeypatch.setattr(verify_mod, "host_labels", lambda *a: dict(labels))
    monkeypatch.setattr(verify_mod, "resolve_config", lambda p, *a, **k: KernelConfig(128, 32, 8, 3, True))
    monkeypatch.delenv("KERNELS_GPU_AUTOTUNE", raising=False)
    plan, got = verify_mod._plan(None, None, None, False, pass_, None, None, "fp16", False)
    assert [ln.function for ln in plan] == want
    assert got == ({"fwd": labels["fwd"]} if pass_ == "forward" else labels)
    assert plan[0].config == KernelConfig(128, 128, 12, 3, True)


def test_the_plan_runs_the_chunked_d192_launches(monkeypatch):
    """d 192 on sm_90: the host's labels name the chunked Gluon backward (dV and dK apart, dQ);
    verify-gpu's plan lists the `tl` forward and preprocess, then `_attn_bwd_dkdv_d192` twice
    (parts 1, 2) and `_attn_bwd_dq_d192`, model.dispatch agrees, and the simulator takes dV
    from the dV launch's blocks, dK from the dK launch's, dQ from the dQ's."""
    from kernels_gpu.host import support

    # the tables on any Triton: this one taken as verified (host/support.py)
    monkeypatch.setitem(support.GLUON_DISPATCHED, support.triton_version(), "the test's tables")
    from kernels_gpu import KernelConfig
    from kernels_gpu.host import dispatch as host_dispatch
    from kernels_gpu.host import hopper_d192, support
    from kernels_gpu.model import dispatch

    labels = dispatch.d192_labels(hopper_d192.CANDIDATES["g-best"])
    monkeypatch.setattr(verify_mod, "INTERPRETER", False)
    monkeypatch.setattr(verify_mod, "host_labels", lambda *a: dict(labels))
    monkeypatch.setattr(verify_mod, "resolve_config", lambda p, *a, **k: KernelConfig(128, 64, 8, 2))
    monkeypatch.delenv("KERNELS_GPU_AUTOTUNE", raising=False)
    plan, got = verify_mod._plan(None, None, None, True, "backward", None, None, "fp16", False)
    assert got == labels
    assert [(ln.function, ln.part, ln.label if ln.gluon else None) for ln in plan] == [
        ("_attn_fwd", 0, None), ("_attn_bwd_preprocess", 0, None),
        ("_attn_bwd_dkdv_d192", 1, "gluon192 dv M32N64w4s2"),
        ("_attn_bwd_dkdv_d192", 2, "gluon192 dk M64N128w8s2"),
        ("_attn_bwd_dq_d192", 0, "gluon192 dq M128N64w8s2")]
    assert verify_mod._sim_blocks(plan) == {"O": (128, 64), "L": (128, 64), "dV": (32, 64),
                                            "dK": (64, 128), "dQ": (128, 64)}
    assert verify_mod._dispatch_text(False, got, plan) == "on: bwd_dkdv, bwd_dkdv, bwd_dq on Gluon kernels"
    assert [verify_mod._part(ln) for ln in plan] == [""] * 5  # the chunked labels say dv / dk
    monkeypatch.setattr(host_dispatch, "DISPATCH_D192",
                        {c: [(1 << 62, hopper_d192.CANDIDATES["g-best"])] for c in (False, True)})
    monkeypatch.setattr(host_dispatch, "DISPATCH_WS", {})  # the `tl` forward, as the labels say
    monkeypatch.setattr(support, "HAVE_GLUON", True)  # the tables on any Triton: this one taken as verified
    monkeypatch.setitem(support.GLUON_DISPATCHED, support.triton_version(), "the test's tables")
    support.reset()
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    assert verify_mod._agrees(got, 1024, 192, True, 1, 1, 1024, 2, True) is True
    assert verify_mod._agrees({"bwd_dkdv": labels["bwd_dkdv"]}, 1024, 192, True, 1, 1, 1024, 2, True) is False


@pytest.mark.interpreter
@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter; on a GPU: tests/test_verify_gpu_dispatch.py")
def test_a_d192_plan_is_simulated_launch_by_launch(monkeypatch):
    """The whole verify-gpu run at d 192 with a chunked plan (its blocks small enough for the
    interpreter, which runs the `tl` kernels for the values): every quantity agrees, each
    launch is named with its hand-formula bytes at 192 x 2 bytes a row, the blocks line lists
    the dV, dK and dQ launches, the backward's simulated HBM words are the cost model's for
    the dK launch's blocks."""
    from kernels_gpu.host import support

    # the tables on any Triton: this one taken as verified (host/support.py)
    monkeypatch.setitem(support.GLUON_DISPATCHED, support.triton_version(), "the test's tables")
    from kernels_gpu import predict_traffic
    from kernels_gpu.host import dispatch as host_dispatch
    from kernels_gpu.host.hopper_d192 import D192Config
    from kernels_gpu.model import dispatch

    cfg = D192Config((16, 32, 4, 2), (32, 16, 4, 2), (16, 16, 4, 2))
    real = verify_mod._plan

    def plan(*a):
        tl, _ = real(*a)
        labels = dispatch.d192_labels(cfg)
        return tl[:2] + dispatch.case_launches({"configs": {}, "kernels": labels})[1:], labels

    monkeypatch.setattr(verify_mod, "_plan", plan)
    monkeypatch.setattr(host_dispatch, "DISPATCH_D192", {c: [(1 << 62, cfg)] for c in (False, True)})
    monkeypatch.setattr(support, "HAVE_GLUON", True)  # the tables on any Triton: this one taken as verified
    monkeypatch.setitem(support.GLUON_DISPATCHED, support.triton_version(), "the test's tables")
    support.reset()
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    v = verify_mod.verify(n=64, d=192, causal=True, pass_="backward")
    assert v.ok, v.comparisons
    s = v.params
    assert s["model_dispatch_agrees"] is True
    assert [(x["function"], x["kernel"], x["part"]) for x in s["launches"][2:]] == [
        ("_attn_bwd_dkdv_d192", "gluon192 dv M16N32w4s2", 1), ("_attn_bwd_dkdv_d192", "gluon192 dk M32N16w4s2", 2),
        ("_attn_bwd_dq_d192", "gluon192 dq M16N16w4s2", 0)]
    for x in s["launches"][2:]:
        t = predict_traffic(dispatch.from_label(x["pass"], x["kernel"]).schedule(64, 192, causal=True))
        assert (x["read_bytes"], x["write_bytes"]) == (t.read_bytes, t.write_bytes)
        assert x["write_bytes"] == 64 * 192 * 2
    assert "bwd_dkdv BLOCK_M 16 × BLOCK_N 32; bwd_dkdv BLOCK_M 32 × BLOCK_N 16; bwd_dq BLOCK_M 16 × BLOCK_N 16" \
        in v.setup["blocks"]
    assert s["sim_hbm_backward"] == s["cost_hbm_backward"] == verify_mod._closed_form(
        "backward", "split", n=64, d=192, batch=1, heads=1, causal=True, block_m=32, block_n=16, scale=s["scale"])
