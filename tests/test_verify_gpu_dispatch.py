"""`toym verify-gpu` on an sm_90 GPU runs the dispatched Gluon kernels: the
simulator agrees with them, the launches named are the host's dispatch and model.dispatch's
prediction of it (the chunked d 192 backward too). GPU only: skipped without CUDA or on a GPU
that is not a Hopper."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
    pytest.skip("needs an sm_90 GPU (the Gluon kernels)", allow_module_level=True)

from kernels_gpu.bench import verify as verify_mod  # noqa: E402
from kernels_gpu.model import dispatch  # noqa: E402


@pytest.mark.parametrize("n,d,causal,pass_", [
    (1024, 64, False, "forward"), (1024, 64, True, "backward"), (1024, 128, False, "backward"),
    (1024, 128, True, "backward"), (4096, 128, False, "forward"), (4096, 128, True, "forward")])
def test_the_dispatched_kernels_agree_with_the_simulator(n, d, causal, pass_):
    v = verify_mod.verify(n=n, d=d, causal=causal, pass_=pass_, heads=2)
    assert v.ok, [(c.quantity, c.max_abs, c.tolerance) for c in v.comparisons]
    s = v.params
    assert s["dispatch"] is True and s["model_dispatch_agrees"] is True
    want = dispatch.launches(n, d, causal, heads=2, capability=(9, 0),
                             backward=pass_ == "backward")
    got = [(x["function"], x["kernel"]) for x in s["launches"]]
    assert [g for g in got if g[1].startswith("gluon")] == \
        [(ln.function, ln.label) for ln in want if ln.gluon]
    assert got[0][0] in ("_attn_fwd_hopper", "_attn_fwd_ws",  # d 64 / 128 fp16: a Gluon
                         "_attn_fwd_ws_persistent")  # forward


@pytest.mark.parametrize("causal", [False, True])
def test_the_chunked_d192_backward_agrees_with_the_simulator(causal):
    """d 192, N 1024 (the chunked Gluon backward's dispatch, host/hopper_d192.py): verify-gpu
    runs and names its launches — `_attn_bwd_dkdv_d192` (once, or dV and dK apart) and
    `_attn_bwd_dq_d192` after the warp-specialised Gluon forward (three 64-column chunks) and
    the `tl` preprocess — as model.dispatch predicts,
    and the simulator, run with each launch's blocks, agrees with them."""
    v = verify_mod.verify(n=1024, d=192, causal=causal, pass_="backward", heads=2)
    assert v.ok, [(c.quantity, c.max_abs, c.tolerance) for c in v.comparisons]
    s = v.params
    assert s["dispatch"] is True and s["model_dispatch_agrees"] is True
    want = dispatch.launches(1024, 192, causal, heads=2, capability=(9, 0))
    got = [(x["function"], x["kernel"], x["part"]) for x in s["launches"]]
    assert [g for g in got if g[1].startswith("gluon")] == \
        [(ln.function, ln.label, ln.part) for ln in want if ln.gluon]
    assert [g[0] for g in got[:2]] == ["_attn_fwd_ws", "_attn_bwd_preprocess"]
    assert {g[0] for g in got[2:]} == {"_attn_bwd_dkdv_d192", "_attn_bwd_dq_d192"}
    assert all(x["write_bytes"] == 2 * 1024 * 192 * 2 for x in s["launches"][2:])
