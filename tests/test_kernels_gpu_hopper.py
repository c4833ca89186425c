"""The Gluon Hopper forward (kernels_gpu/kernels/hopper.py): it compiles for
sm_90 to wgmma (HGMMA) without register spills (offline, on any machine: Triton's own ptxas),
and on an sm_90 GPU it computes attention (against float64)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")

from kernels_gpu_reference import assert_forward_and_backward_match_float64  # noqa: E402

from kernels_gpu import attention_reference  # noqa: E402
from kernels_gpu.kernels.hopper import HAVE_GLUON  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLUON = pytest.mark.skipif(not HAVE_GLUON, reason="this Triton has no Gluon")


def _sm90() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


@GLUON
@pytest.mark.slow  # an offline sm_90 compile (ptxas)
def test_the_gluon_forward_compiles_to_wgmma_without_spills():
    env = dict(os.environ, TRITON_INTERPRET="0")  # compile, not interpret (kernels_gpu's
    # __init__ would set 1 on a machine without CUDA)
    r = subprocess.run([sys.executable, "-m", "kernels_gpu.bench.compile_check", "--hopper"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("| gluon fwd")]
    assert len(rows) == 8  # 4 configs, non-causal and causal
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[5] == "0" and cells[7].startswith("HGMMA"), row  # no STL; wgmma


@GLUON
@pytest.mark.gpu
@pytest.mark.skipif(not _sm90(), reason="the Gluon Hopper kernel needs an sm_90 GPU")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("d,bm,bn,w", [(64, 128, 128, 8), (64, 64, 128, 4),
                                       (128, 128, 64, 8), (128, 128, 128, 8)])
def test_the_gluon_forward_computes_attention(dtype, d, bm, bn, w, causal):
    """Against float64; causal skips the key tiles past the diagonal, which needs BLOCK_M a
    multiple of BLOCK_N (refused otherwise)."""
    from kernels_gpu.host.hopper import attention_forward_hopper
    from kernels_gpu.host.tolerance import output_tolerance, rel_err

    g = torch.Generator().manual_seed(d + bn)
    q, k, v = (torch.randn(2, 3, 512, d, generator=g).to(dtype).cuda() for _ in range(3))
    if causal and bm % bn:
        with pytest.raises(ValueError):
            attention_forward_hopper(q, k, v, block_m=bm, block_n=bn, num_warps=w, causal=True)
        return
    o = attention_forward_hopper(q, k, v, block_m=bm, block_n=bn, num_warps=w, causal=causal)
    ref, _ = attention_reference(q.double(), k.double(), v.double(), causal)
    assert rel_err(o, ref) < output_tolerance(dtype, True)


@GLUON
@pytest.mark.gpu
@pytest.mark.skipif(not _sm90(), reason="the Gluon Hopper kernel needs an sm_90 GPU")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128])
def test_flash_attention_dispatches_to_gluon_and_its_lse_feeds_the_backward(d, causal):
    """MHA at d 64/128 on sm_90, causal or not: flash_attention_forward runs the Gluon kernel
    (its O bit for bit), its O and lse are right, and autograd's backward from it is right."""
    from kernels_gpu import flash_attention_forward
    from kernels_gpu.host import dispatch, hopper, launch

    g = torch.Generator().manual_seed(d)
    q, k, v, do = (torch.randn(1, 2, 256, d, generator=g).half().cuda() for _ in range(4))
    bm, bn, w = dispatch.choose_for(launch.problem_of(q, k, v, causal), False)["fwd"]
    o, lse = flash_attention_forward(q, k, v, causal)
    assert torch.equal(o, hopper.attention_forward_hopper(q, k, v, None, bm, bn, w,
                                                          causal=causal))
    assert_forward_and_backward_match_float64(q, k, v, do, causal, o, lse)


@GLUON
@pytest.mark.gpu
@pytest.mark.skipif(not _sm90(), reason="the Gluon Hopper kernel needs an sm_90 GPU")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("schedule", ["ws", "lag", "pingpong"])
@pytest.mark.parametrize("d,bn,stages", [(64, 128, 2), (128, 128, 2), (128, 64, 3)])
def test_the_warp_specialised_forward_computes_attention(dtype, d, bn, stages, schedule, causal):
    """kernels.hopper_ws in each schedule against float64: O and lse, fresh random inputs,
    O poisoned (NaN) first so that an unwritten row fails; N 640 = 5 programs of 128 rows, so
    the K/V ring wraps several times and causal programs have 1 - 5 (or 2 - 10) key tiles."""
    from kernels_gpu.host.hopper import attention_forward_ws
    from kernels_gpu.host.tolerance import lse_tolerance, output_tolerance, rel_err

    g = torch.Generator().manual_seed(d + bn + stages)
    q, k, v = (torch.randn(2, 3, 640, d, generator=g).to(dtype).cuda() for _ in range(3))
    o = torch.full_like(q, float("nan"))
    lse = torch.full((2 * 3 * 640,), float("nan"), device="cuda")
    attention_forward_ws(q, k, v, block_n=bn, schedule=schedule, stages=stages, out=(o, lse),
                         causal=causal)
    ref, ref_lse = attention_reference(q.double(), k.double(), v.double(), causal)
    assert rel_err(o, ref) < output_tolerance(dtype, True)
    assert rel_err(lse.view(2, 3, 640), ref_lse) < lse_tolerance(dtype, True)


@GLUON
@pytest.mark.slow  # an offline sm_90 compile (ptxas)
def test_the_dispatched_warp_specialised_forwards_compile_to_wgmma_without_spills():
    """Offline sm_90 builds (Triton's ptxas) of every DISPATCH_WS and DISPATCH_WS_GROUPED entry
    (the persistent schedules and d 192's three-chunk consumers among them): wgmma, no local
    memory, and setmaxnreg giving the second consumer warpgroup 240 registers and the producer
    24."""
    code = ("import json\n"
            "from kernels_gpu.bench.compile_check import compile_ws, compile_ws_persistent, "
            "resources\n"
            "from kernels_gpu.host.dispatch import DISPATCH_WS, DISPATCH_WS_GROUPED\n"
            "from kernels_gpu.host.hopper import PERSISTENT\n"
            "out = []\n"
            "cfgs = sorted({(d, c, cfg) for table in (DISPATCH_WS, DISPATCH_WS_GROUPED)\n"
            "               for (d, c), rows in table.items() for _, cfg in rows if cfg})\n"
            "for d, causal, (bn, sched, st) in cfgs:\n"
            "    build = compile_ws_persistent if sched in PERSISTENT else compile_ws\n"
            "    out.append(resources(build(d, bn, sched, causal=causal, stages=st)))\n"
            "print(json.dumps(out))\n")
    env = dict(os.environ, TRITON_INTERPRET="0")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    import json
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(rows) >= 7  # d 128 and 192, causal or not, one-launch-a-tile and persistent
    for row in rows:
        assert row["spill_stores"] == 0 and row["local_bytes"] == 0, row
        assert row["mma"].get("HGMMA", 0) > 0 and "HMMA" not in row["mma"], row
        assert {"0xf0", "0x18"} <= set(row["setmaxnreg"]), row  # 240 and 24 registers


@GLUON
@pytest.mark.gpu
@pytest.mark.skipif(not _sm90(), reason="the Gluon Hopper kernel needs an sm_90 GPU")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_flash_attention_dispatches_to_the_warp_specialised_forward(causal):
    """Where DISPATCH_WS names it (d 128 at its smallest N), flash_attention_forward runs the
    warp-specialised kernel (its O bit for bit), lse is right, and the backward from it too."""
    from kernels_gpu import flash_attention_forward
    from kernels_gpu.host import dispatch, hopper, launch

    def at(n):
        return torch.empty(1, 2, n, 128, device="cuda", dtype=torch.float16)
    n = next(n for n in (1024, 2048, 4096)
             if dispatch.choose_for(launch.problem_of(at(n), at(n), at(n), causal), False).get("fwd_ws"))
    g = torch.Generator().manual_seed(n)
    q, k, v, do = (torch.randn(1, 2, n, 128, generator=g).half().cuda() for _ in range(4))
    ws = dispatch.choose_for(launch.problem_of(q, k, v, causal), False).get("fwd_ws")
    o, lse = flash_attention_forward(q, k, v, causal)
    assert torch.equal(o, hopper.attention_forward_ws(q, k, v, None, *ws, causal=causal))
    assert_forward_and_backward_match_float64(q, k, v, do, causal, o, lse)


@GLUON
@pytest.mark.gpu
@pytest.mark.skipif(not _sm90(), reason="the Gluon Hopper kernel needs an sm_90 GPU")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("d,bm,bn,w,st,ov", [
    (64, 64, 128, 8, 2, 0), (64, 32, 128, 8, 2, 0), (128, 32, 128, 8, 2, 0),
    (128, 64, 64, 4, 2, 0), (128, 64, 64, 4, 3, 0), (128, 64, 64, 4, 2, 1),
    (128, 64, 64, 4, 3, 2), (128, 64, 128, 8, 3, 0)])
def test_the_gluon_dkdv_computes_the_gradients(dtype, d, bm, bn, w, st, ov, causal):
    """kernels.hopper_bwd against float64 autograd: dK and dV from the forward's lse and
    D = rowsum(dO * O) (the `tl` preprocess), fresh random inputs, N 512 (several query tiles,
    causal programs of different lengths)."""
    from kernels_gpu import flash_attention_forward
    from kernels_gpu.host import launch
    from kernels_gpu.host.hopper import attention_backward_dkdv_hopper
    from kernels_gpu.host.tolerance import output_tolerance, rel_err

    g = torch.Generator().manual_seed(d + bm + bn)
    q, k, v, do = (torch.randn(2, 3, 512, d, generator=g).to(dtype).cuda() for _ in range(4))
    o, lse = flash_attention_forward(q, k, v, causal)
    p = launch.problem_of(q, k, v, causal)
    delta = torch.empty(2, 3, 512, device="cuda", dtype=torch.float32)
    launch.launch_preprocess(p, o, do, delta)
    dk, dv = attention_backward_dkdv_hopper(q, k, v, do, lse, delta, None, causal, bm, bn, w,
                                            st, ov)
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    attention_reference(qr, kr, vr, causal)[0].backward(do.double())
    tol = output_tolerance(dtype, True, backward=True)
    assert rel_err(dk, kr.grad) < tol and rel_err(dv, vr.grad) < tol


@GLUON
@pytest.mark.gpu
@pytest.mark.skipif(not _sm90(), reason="the Gluon Hopper kernel needs an sm_90 GPU")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("tables", [None, ((64, 64, 4, 3, 0), None), ((64, 64, 4, 2, 1), None),
                                    ((64, 64, 4, 3, 0), (64, 64, 4, 2, 1)),
                                    ((64, 128, 8, 3, 0), (64, 64, 4, 2, 1)),
                                    ((64, 64, 4, 3, 2), (128, 128, 8, 2, 1))],
                         ids=["dispatched", "kv-s3", "kv-ov1", "kv-s3+dq", "kv-n128+dq",
                              "kv-ov2+dq"])
def test_flash_attention_backward_dispatches_dkdv_to_gluon(dtype, causal, tables, monkeypatch):
    """At d 128 (DISPATCH_DKDV; `tables` = other (dK/dV, dQ) dispatch entries, the candidates
    the bench measured) flash_attention_backward's dK, dV are the Gluon kernel's, bit for bit,
    and dQ the Gluon dQ's where DISPATCH_DQ names one; all three against float64; an explicit
    dK/dV config (the `tl` kernel) is right too."""
    from kernels_gpu import KernelConfig, flash_attention_backward, flash_attention_forward
    from kernels_gpu.host import dispatch, hopper, launch
    from kernels_gpu.host.tolerance import output_tolerance, rel_err

    if tables is not None:
        monkeypatch.setitem(dispatch.DISPATCH_DKDV, 128, tables[0])
        if tables[1] is None:
            monkeypatch.delitem(dispatch.DISPATCH_DQ, (128, causal), raising=False)
        else:
            monkeypatch.setitem(dispatch.DISPATCH_DQ, (128, causal), tables[1])
    g = torch.Generator().manual_seed(7 + causal)
    q, k, v, do = (torch.randn(1, 2, 384, 128, generator=g).to(dtype).cuda() for _ in range(4))
    p = launch.problem_of(q, k, v, causal)
    cfg = dispatch.choose_for(p, False).get("bwd_dkdv")
    assert cfg is not None
    o, lse = flash_attention_forward(q, k, v, causal)
    dq, dk, dv = flash_attention_backward(q, k, v, o, lse, do, causal)
    delta = torch.empty(1, 2, 384, device="cuda", dtype=torch.float32)
    launch.launch_preprocess(p, o, do, delta)
    gk, gv = hopper.attention_backward_dkdv_hopper(q, k, v, do, lse, delta, None, causal, *cfg)
    assert torch.equal(dk, gk) and torch.equal(dv, gv)
    qcfg = dispatch.choose_for(p, False).get("bwd_dq")
    assert (qcfg is not None) == (tables is None and causal or bool(tables and tables[1]))
    if qcfg is not None:
        assert torch.equal(dq, hopper.attention_backward_dq_hopper(
            q, k, v, do, lse, delta, None, causal, *qcfg))
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    attention_reference(qr, kr, vr, causal)[0].backward(do.double())
    tol = output_tolerance(dtype, True, backward=True)
    assert max(rel_err(dq, qr.grad), rel_err(dk, kr.grad), rel_err(dv, vr.grad)) < tol
    tl = KernelConfig(64, 64, 4, 2)
    _, tk, tv = flash_attention_backward(q, k, v, o, lse, do, causal, dkdv_config=tl)
    assert rel_err(tk, kr.grad) < tol and rel_err(tv, vr.grad) < tol


@GLUON
@pytest.mark.gpu
@pytest.mark.skipif(not _sm90(), reason="the Gluon Hopper kernel needs an sm_90 GPU")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("d,bm,bn,w,st,ov", [
    (64, 128, 64, 8, 2, 0), (128, 128, 32, 8, 2, 0), (128, 64, 64, 4, 2, 0),
    (128, 64, 64, 4, 2, 1), (128, 64, 64, 4, 3, 1), (128, 128, 128, 8, 2, 1)])
def test_the_gluon_dq_computes_the_gradient(dtype, d, bm, bn, w, st, ov, causal):
    """kernels.hopper_bwd's dQ against float64 autograd, N 512, fresh random inputs."""
    from kernels_gpu import flash_attention_forward
    from kernels_gpu.host import launch
    from kernels_gpu.host.hopper import attention_backward_dq_hopper
    from kernels_gpu.host.tolerance import output_tolerance, rel_err

    g = torch.Generator().manual_seed(d + bm + bn + 1)
    q, k, v, do = (torch.randn(2, 3, 512, d, generator=g).to(dtype).cuda() for _ in range(4))
    o, lse = flash_attention_forward(q, k, v, causal)
    p = launch.problem_of(q, k, v, causal)
    delta = torch.empty(2, 3, 512, device="cuda", dtype=torch.float32)
    launch.launch_preprocess(p, o, do, delta)
    dq = attention_backward_dq_hopper(q, k, v, do, lse, delta, None, causal, bm, bn, w, st,
                                      ov)
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    attention_reference(qr, kr, vr, causal)[0].backward(do.double())
    assert rel_err(dq, qr.grad) < output_tolerance(dtype, True, backward=True)
