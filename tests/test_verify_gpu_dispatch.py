"""`toym verify-gpu` on an sm_90 GPU runs the dispatched Gluon kernels (issue 21 item 5): the
simulator agrees with them, the launches named are the host's dispatch and model.dispatch's
prediction of it. GPU only: skipped without CUDA or on a GPU that is not a Hopper."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

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
    assert got[0][0] in ("_attn_fwd_hopper", "_attn_fwd_ws")  # d 64 / 128 fp16: a Gluon forward
