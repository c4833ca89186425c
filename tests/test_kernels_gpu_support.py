"""The Triton version gate of the Gluon kernels (kernels_gpu/host/support.py): where they are
dispatched, the one warning elsewhere, the `tl` kernels after a Gluon compile failure, and the
gpu extra's triton range stated where the gate states it."""
from __future__ import annotations

import os
import re
import warnings

import pytest
import tomllib

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
triton = pytest.importorskip("triton")

from kernels_gpu.host import flash_attn, hopper, support  # noqa: E402
from kernels_gpu.host.reference import attention_reference  # noqa: E402
from kernels_gpu.host.tolerance import output_tolerance, rel_err  # noqa: E402
from kernels_gpu.kernels.gluon_api import HAVE_GLUON  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA = torch.cuda.is_available()
DEV = "cuda" if CUDA else "cpu"


@pytest.fixture(autouse=True)
def _fresh_gate(monkeypatch):
    monkeypatch.delenv("KERNELS_GPU_GLUON", raising=False)
    monkeypatch.delenv("KERNELS_GPU_HOPPER", raising=False)
    support.reset()
    yield
    support.reset()


def test_triton_version_reads_major_and_minor():
    assert support.triton_version("3.6.0") == (3, 6)
    assert support.triton_version("3.10.0rc1") == (3, 10)
    assert support.triton_version("3.9.0+git1234") == (3, 9)


@pytest.mark.skipif(not HAVE_GLUON, reason="this Triton has no Gluon")
def test_the_gate_dispatches_only_on_verified_releases():
    for ver in support.GLUON_DISPATCHED:
        ok, why = support.gluon_status("{}.{}.0".format(*ver), env={})
        assert ok, why
    for ver in set(support.GLUON_COMPILES) - set(support.GLUON_DISPATCHED):
        ok, why = support.gluon_status("{}.{}.0".format(*ver), env={})
        assert not ok and "not run on a GPU" in why
    ok, why = support.gluon_status("3.7.1", env={})
    assert not ok and "3.7.1" in why
    assert support.gluon_status("3.7.1", env={"KERNELS_GPU_GLUON": "any"})[0]
    assert not support.gluon_status("3.6.0", env={"KERNELS_GPU_HOPPER": "0"})[0]


@pytest.mark.skipif(not HAVE_GLUON, reason="this Triton has no Gluon")
def test_an_unverified_triton_warns_once_with_the_reason_and_the_fast_path(monkeypatch):
    monkeypatch.setattr(support.triton, "__version__", "3.7.1")
    with pytest.warns(support.GluonFallbackWarning) as caught:
        assert not support.gluon_usable()
    message = str(caught[0].message)
    assert "3.7.1" in message and "triton==3.6" in message and "KERNELS_GPU_GLUON=any" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not support.gluon_usable()  # no second warning


@pytest.mark.skipif(not HAVE_GLUON, reason="this Triton has no Gluon")
def test_the_model_predicts_the_tl_kernels_on_an_unverified_triton(monkeypatch):
    """host/dispatch.choose, which the model asks for an sm_90 GPU on any machine: Gluon kernels
    on a verified Triton, none on another (the host runs the `tl` kernels there)."""
    from kernels_gpu.host.dispatch import choose

    monkeypatch.setattr(support, "HAVE_GLUON", True)
    monkeypatch.setattr(support.triton, "__version__", "3.6.0")
    assert choose(4096, 128, False, capability=(9, 0), env={})
    monkeypatch.setattr(support.triton, "__version__", "3.7.1")
    assert choose(4096, 128, False, capability=(9, 0), env={}) == {}


def test_the_gpu_extra_states_the_gates_triton_range():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extra = tomllib.load(f)["project"]["optional-dependencies"]["gpu"]
    spec = next(s for s in extra if s.startswith("triton"))
    (lo, hi) = support.TRITON_RANGE
    assert re.sub(r"\s", "", spec) == "triton>={}.{},<{}.{}".format(*lo, *hi)
    for ver in support.GLUON_COMPILES:
        assert lo <= ver < hi


def _compile_error() -> BaseException:
    import ast

    from triton.compiler.errors import CompilationError

    return CompilationError("src", ast.parse("x").body[0], "renamed in this Triton")


def _qkv(n=32, d=16):
    g = torch.Generator().manual_seed(n + d)
    return tuple(torch.randn(1, 2, n, d, generator=g).to(DEV) for _ in range(3))


@pytest.mark.interpreter
def test_a_gluon_compile_failure_runs_the_tl_forward_and_backward_warned_once(monkeypatch):
    """The dispatch picks a Gluon kernel, whose build fails: the `tl` kernels compute the
    result (right against float64), one GluonFallbackWarning names the failure, and no Gluon
    kernel is dispatched afterwards."""
    def broken(*a, **kw):
        raise _compile_error()

    monkeypatch.setattr(flash_attn.dispatch, "choose_for", lambda p, interp: {"fwd": (128, 64, 8)})
    monkeypatch.setattr(hopper, "attention_forward_hopper", broken)
    monkeypatch.setattr(hopper, "attention_backward_dkdv_hopper", broken)
    q, k, v = _qkv()
    with pytest.warns(support.GluonFallbackWarning, match="renamed in this Triton"):
        o, lse = flash_attn.flash_attention_forward(q, k, v)
    ref, _ = attention_reference(q.double(), k.double(), v.double())
    assert rel_err(o, ref) < output_tolerance(q.dtype, CUDA)
    assert not support.gluon_status()[0]
    support.reset()  # the backward's own failure
    p = flash_attn.L.problem_of(q, k, v, False)
    do = torch.randn_like(q)
    cfgs = [flash_attn.L.resolve_config(s, p) for s in ("bwd_dkdv", "bwd_dq")]
    with pytest.warns(support.GluonFallbackWarning):
        got = flash_attn._backward(p, q, k, v, o, lse, do, p.d ** -0.5, *cfgs, {"bwd_dkdv": (64, 64, 4, 2, 1)})
    want = flash_attn._backward(p, q, k, v, o, lse, do, p.d ** -0.5, *cfgs, None)
    for a, b in zip(got, want, strict=False):
        assert torch.equal(a, b)


@pytest.mark.gpu
@pytest.mark.skipif(not (CUDA and HAVE_GLUON and torch.cuda.get_device_capability()[0] == 9),
                    reason="the Gluon kernels' dispatch needs an sm_90 GPU")
def test_on_sm90_an_unverified_triton_runs_the_tl_kernels(monkeypatch):
    """d 128 N 1k, where the Gluon kernels are dispatched on a verified Triton: on an
    unverified one the forward and backward are the `tl` kernels' (bit for bit those with the
    Gluon kernels switched off), with one warning."""
    g = torch.Generator().manual_seed(0)
    q, k, v, do = (torch.randn(1, 4, 1024, 128, generator=g).half().cuda() for _ in range(4))

    def run():
        qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
        o = flash_attn.flash_attention(qq, kk, vv, True)
        return (o, *torch.autograd.grad(o, (qq, kk, vv), do))

    monkeypatch.setenv("KERNELS_GPU_HOPPER", "0")
    tl = run()
    monkeypatch.delenv("KERNELS_GPU_HOPPER")
    monkeypatch.setattr(support.triton, "__version__", "3.7.1")
    with pytest.warns(support.GluonFallbackWarning):
        got = run()
    for a, b in zip(got, tl, strict=False):
        assert torch.equal(a, b)


@pytest.mark.skipif(not HAVE_GLUON, reason="this Triton has no Gluon")
def test_verify_gpu_says_why_the_tl_kernels_ran(monkeypatch):
    from kernels_gpu.bench import verify

    monkeypatch.setattr(support.triton, "__version__", "3.7.1")
    text = verify._dispatch_text(False, {}, [])
    assert text.startswith("on: the tl kernels here (") and "3.7.1" in text
