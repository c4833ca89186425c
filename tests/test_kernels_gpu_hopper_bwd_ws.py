"""The warp-specialised Gluon dK/dV (kernels_gpu/kernels/hopper_bwd_ws.py):
it compiles offline for sm_90 to wgmma with the producer / consumer register split (any
machine: Triton's own ptxas), its dispatch follows the table, and on an sm_90 GPU it computes
dK, dV (against float64) and the public backward runs it where the table says."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")

from kernels_gpu import attention_reference  # noqa: E402
from kernels_gpu.kernels.hopper_bwd_ws import HAVE_GLUON  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLUON = pytest.mark.skipif(not HAVE_GLUON, reason="this Triton has no Gluon")


def _sm90() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


def SM90(test):
    """The gpu mark, and a skip where there is no sm_90 GPU (the Gluon Hopper kernels need one)."""
    return pytest.mark.gpu(pytest.mark.skipif(not _sm90(), reason="the Gluon Hopper kernels need an sm_90 GPU")(test))


@GLUON
@pytest.mark.slow  # an offline sm_90 compile (ptxas)
def test_the_warp_specialised_dkdv_compiles_to_wgmma_with_the_register_split():
    """Offline sm_90 build of every (stages, overlap, fused dQ) config, causal or not: wgmma in
    the SASS,
    the consumers raised to 240 registers and the producer lowered to 24 (setmaxnreg), one
    program's shared memory within the 227 KB an sm_90 block may have."""
    env = dict(os.environ, TRITON_INTERPRET="0")
    r = subprocess.run([sys.executable, "-m", "kernels_gpu.bench.compile_check", "--ws-bwd"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("| gluon dkdv ws")]
    assert len(rows) == 28  # 2 depths x 3 overlaps + 2 x 3 fused dQ + 2 split, x causal
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[7].startswith("HGMMA"), row
        assert int(cells[6]) <= 227 * 1024, row
    from kernels_gpu.bench.compile_check import compile_bwd_ws
    ptx = compile_bwd_ws(128, 2, 1, causal=True).asm["ptx"]
    assert "setmaxnreg.inc.sync.aligned.u32 \t240" in ptx
    assert "setmaxnreg.dec.sync.aligned.u32 \t24" in ptx
    # the fused dQ's atomics; a scalar add whose result is unused is an atom (Triton 3.6) or
    # a red (later releases): the same relaxed global f32 add
    for vec, reds in ((1, ("atom.global.gpu.relaxed.add.f32", "red.global.gpu.relaxed.add.f32")),
                      (2, ("red.relaxed.gpu.global.add.v2.f32",)),
                      (4, ("red.relaxed.gpu.global.add.v4.f32",))):
        ptx = compile_bwd_ws(128, 2, 1, fused_dq=vec).asm["ptx"]
        # 64 x 64 floats a half, 128 threads, 2 x 2
        assert sum(ptx.count(red) for red in reds) == 128 // vec, vec
    ptx = compile_bwd_ws(128, 2, 1, fused_dq=4, dq_split=1).asm["ptx"]
    assert ptx.count("red.relaxed.gpu.global.add.v4.f32") == 16  # one half a warpgroup


def test_the_dispatch_follows_the_table(monkeypatch):
    """No row for the point: none; a row: the first whose largest N covers N_q (none where the
    row says so); no Gluon dK/dV beneath it, the interpreter, N not a multiple of 128 and
    KERNELS_GPU_WS_BWD=0: none."""
    from kernels_gpu.host import dispatch, support

    monkeypatch.setattr(support, "HAVE_GLUON", True)  # the tables on any Triton: this one taken as verified
    monkeypatch.setitem(support.GLUON_DISPATCHED, support.triton_version(), "the test's tables")
    support.reset()
    monkeypatch.setitem(dispatch.DISPATCH_DKDV_WS, (128, True),
                        [(1024, None), (4096, (64, 3, 1, 0)), (1 << 62, (64, 2, 1, 1))])
    monkeypatch.delitem(dispatch.DISPATCH_DKDV_WS, (128, False), raising=False)
    monkeypatch.delenv("KERNELS_GPU_WS_BWD", raising=False)

    def f(n, causal=True, **kw):
        return dispatch.choose(n, 128, causal, **kw).get("bwd_dkdv_ws")
    assert f(1024, causal=False) is None
    assert f(1024) is None
    assert f(2048) == (64, 3, 1, 0)
    assert f(4096) == (64, 3, 1, 0)
    assert f(8192) == (64, 2, 1, 1)
    assert f(8192, capability=None) is None
    assert f(8192 + 64) is None
    monkeypatch.setenv("KERNELS_GPU_WS_BWD", "0")
    assert f(8192) is None
    monkeypatch.delenv("KERNELS_GPU_WS_BWD")
    monkeypatch.delitem(dispatch.DISPATCH_DKDV, 128)
    assert f(8192) is None


def test_the_launch_refuses_what_the_kernel_cannot_run():
    """CPU tensors, a head dim the kernel has no layout for, N not a multiple of 128, a
    BLOCK_M or ring depth it does not take: ValueError, nothing launched."""
    from kernels_gpu.host.hopper_bwd_ws import attention_backward_dkdv_ws

    dev = "cuda" if _sm90() else "cpu"

    def call(n=256, d=128, **kw):
        q = torch.zeros(1, 1, n, d, dtype=torch.float16, device=dev)
        s = torch.zeros(1, 1, n, device=dev)
        return attention_backward_dkdv_ws(q, q, q, q, s, s, **kw)

    for kw in ({"n": 192}, {"d": 96}, {"block_m": 128}, {"stages": 1}, {"overlap": 3},
               {"fused_dq": 3}, {"fused_dq": 2}):  # 3: no such atomic; 2 needs dq_acc
        with pytest.raises(ValueError):
            call(**kw)


def _inputs(seed, n, d, dtype, causal, b=2, h=3):
    from kernels_gpu import flash_attention_forward
    from kernels_gpu.host import launch

    g = torch.Generator().manual_seed(seed)
    q, k, v, do = (torch.randn(b, h, n, d, generator=g).to(dtype).cuda() for _ in range(4))
    o, lse = flash_attention_forward(q, k, v, causal)
    delta = torch.empty(b, h, n, device="cuda", dtype=torch.float32)
    launch.launch_preprocess(launch.problem_of(q, k, v, causal), o, do, delta)
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    attention_reference(qr, kr, vr, causal)[0].backward(do.double())
    return (q, k, v, do, o, lse, delta), (qr.grad, kr.grad, vr.grad)


@GLUON
@SM90
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("d,bm,st,ov", [(128, 64, 2, 0), (128, 64, 2, 1), (128, 64, 3, 1),
                                        (128, 64, 2, 2), (128, 64, 3, 0), (128, 32, 2, 1),
                                        (64, 64, 2, 1)])
def test_the_warp_specialised_dkdv_computes_the_gradients(dtype, d, bm, st, ov, causal):
    """Against float64 autograd, fresh random inputs, N 640 (five programs of 128 key rows,
    causal ones of five lengths), the outputs poisoned with NaN first (every element written),
    and the one-partition Gluon dK/dV's result alike within rounding."""
    from kernels_gpu.host.hopper import attention_backward_dkdv_hopper
    from kernels_gpu.host.hopper_bwd_ws import attention_backward_dkdv_ws
    from kernels_gpu.host.tolerance import output_tolerance, rel_err

    (q, k, v, do, _, lse, delta), (_, gk, gv) = _inputs(d + bm + st + ov, 640, d, dtype,
                                                        causal)
    dk, dv = (torch.full((2 * 3 * 640, d), float("nan"), dtype=dtype, device="cuda")
              for _ in range(2))
    attention_backward_dkdv_ws(q, k, v, do, lse, delta, None, causal, bm, st, ov,
                               out=(dk, dv))
    dk, dv = dk.view(2, 3, 640, d), dv.view(2, 3, 640, d)
    assert not dk.isnan().any() and not dv.isnan().any()
    tol = output_tolerance(dtype, True, backward=True)
    assert rel_err(dk, gk) < tol and rel_err(dv, gv) < tol
    if d == 128:
        ok, ov_ = attention_backward_dkdv_hopper(q, k, v, do, lse, delta, None, causal, 64, 64,
                                                 4, 2, 1)
        assert rel_err(dk, ok) < tol and rel_err(dv, ov_) < tol


@GLUON
@SM90
@pytest.mark.parametrize("fused", [(0,), (1,), (4, 1)], ids=["dkdv", "fused-dq", "split-v4"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_the_public_backward_runs_the_warp_specialised_dkdv_where_dispatched(
        dtype, causal, fused, monkeypatch):
    """With a DISPATCH_DKDV_WS row for the point, flash_attention_backward's dK, dV are the
    warp-specialised kernel's bit for bit (fused: dQ too comes from it, by atomics) and all
    three gradients within tolerance of float64; autograd gives the same; KERNELS_GPU_WS_BWD=0
    falls back to the one-partition kernel."""
    from kernels_gpu import flash_attention, flash_attention_backward
    from kernels_gpu.host import dispatch, hopper, hopper_bwd_ws, launch
    from kernels_gpu.host.tolerance import output_tolerance, rel_err

    monkeypatch.setitem(dispatch.DISPATCH_DKDV_WS, (128, causal),
                        [(1 << 62, (64, 2, 1, *fused))])
    (q, k, v, do, o, lse, delta), grads = _inputs(11 + causal, 384, 128, dtype, causal, 1, 2)
    p = launch.problem_of(q, k, v, causal)
    cfg = dispatch.choose_for(p, False).get("bwd_dkdv_ws")
    assert cfg == (64, 2, 1, *fused)
    dq, dk, dv = flash_attention_backward(q, k, v, o, lse, do, causal)
    if fused[0]:
        _, wk, wv = hopper_bwd_ws.attention_backward_ws_fused(q, k, v, do, lse, delta, None,
                                                              causal, *cfg)
    else:
        wk, wv = hopper_bwd_ws.attention_backward_dkdv_ws(q, k, v, do, lse, delta, None,
                                                          causal, *cfg)
    assert torch.equal(dk, wk) and torch.equal(dv, wv)
    tol = output_tolerance(dtype, True, backward=True)
    for got, ref in zip((dq, dk, dv), grads):
        assert rel_err(got, ref) < tol
    qa, ka, va = (t.clone().requires_grad_() for t in (q, k, v))
    flash_attention(qa, ka, va, causal).backward(do)
    assert torch.equal(ka.grad, wk) and torch.equal(va.grad, wv)
    assert rel_err(qa.grad, grads[0]) < tol
    monkeypatch.setenv("KERNELS_GPU_WS_BWD", "0")
    _, ok, ov = flash_attention_backward(q, k, v, o, lse, do, causal)
    one = hopper.attention_backward_dkdv_hopper(q, k, v, do, lse, delta, None, causal,
                                                *dispatch.choose_for(p, False)["bwd_dkdv"])
    assert torch.equal(ok, one[0]) and torch.equal(ov, one[1])


@GLUON
@SM90
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("st,ov,vec,split", [(2, 0, 1, 0), (2, 1, 1, 0), (3, 1, 1, 0),
                                             (2, 1, 2, 0), (2, 1, 4, 0), (2, 0, 4, 0),
                                             (2, 1, 4, 1), (2, 0, 4, 1), (3, 1, 1, 1)])
def test_the_fused_dq_launch_computes_all_three_gradients(dtype, st, ov, vec, split, causal):
    """dQ by fp32 atomics inside the warp-specialised dK/dV (no dQ launch): dQ, dK, dV against
    float64 autograd, fresh random inputs, N 640, outputs poisoned with NaN first; dK, dV bit
    for bit the unfused launch's (the same products in the same order)."""
    from kernels_gpu.host.hopper_bwd_ws import (
        attention_backward_dkdv_ws,
        attention_backward_ws_fused,
    )
    from kernels_gpu.host.tolerance import output_tolerance, rel_err

    (q, k, v, do, _, lse, delta), grads = _inputs(40 + st + ov + split, 640, 128, dtype,
                                                  causal)
    out = tuple(torch.full_like(q, float("nan")) for _ in range(3))
    dq, dk, dv = attention_backward_ws_fused(q, k, v, do, lse, delta, None, causal, 64, st, ov,
                                             vec, split, out=out)
    assert all(t.data_ptr() == o_.data_ptr() for t, o_ in zip((dq, dk, dv), out))
    assert not any(t.isnan().any() for t in (dq, dk, dv))
    tol = output_tolerance(dtype, True, backward=True)
    for got, ref in zip((dq, dk, dv), grads):
        assert rel_err(got, ref) < tol
    uk, uv = attention_backward_dkdv_ws(q, k, v, do, lse, delta, None, causal, 64, st, ov)
    assert torch.equal(dk, uk) and torch.equal(dv, uv)
