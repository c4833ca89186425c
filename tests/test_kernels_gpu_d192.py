"""The d 192 backward in Gluon with the head dim as 3 x 64 chunks (kernels_gpu/kernels/
hopper_bwd_chunked.py): the dispatch decision and the offline sm_90 build on any
machine; on an sm_90 GPU every launch against float64 and the public backward's dispatch."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")

from kernels_gpu import attention_reference  # noqa: E402
from kernels_gpu.host import dispatch as host_dispatch  # noqa: E402
from kernels_gpu.host import hopper_d192 as g  # noqa: E402
from kernels_gpu.host.launch import Problem  # noqa: E402
from kernels_gpu.host.support import gluon_status  # noqa: E402
from kernels_gpu.kernels.hopper_bwd_chunked import HAVE_GLUON  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLUON = pytest.mark.skipif(not HAVE_GLUON, reason="this Triton has no Gluon")
# the dispatch's tests: only on a Triton the Gluon kernels are dispatched on (host/support.py)
DISPATCHED = pytest.mark.skipif(not gluon_status(env={})[0], reason=gluon_status(env={})[1])
CFG = g.D192Config((32, 64, 4, 2), (32, 64, 4, 2), (64, 32, 4, 2))


def _sm90() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


def SM90(test):
    """The gpu mark, and a skip where there is no sm_90 GPU (the Gluon Hopper kernels need one)."""
    return pytest.mark.gpu(pytest.mark.skipif(not _sm90(), reason="the Gluon Hopper kernels need an sm_90 GPU")(test))


def _d192(p, interpreter: bool):
    """The chunked d 192 backward's config host/dispatch.py picks for a launch.Problem."""
    return host_dispatch.choose_for(p, interpreter).get("bwd_d192")


def _problem(d=192, heads=4, heads_kv=4, nq=1024, nk=1024, dtype=torch.float16, causal=True):
    return Problem(2, heads, heads_kv, nq, nk, d, dtype, causal, nk - nq)


@GLUON
@DISPATCHED
def test_dispatch_takes_square_d192_half_precision_on_sm90(monkeypatch):
    from kernels_gpu.host import launch

    monkeypatch.setitem(host_dispatch.DISPATCH_D192, True, [(2048, CFG), (1 << 62, None)])
    monkeypatch.setitem(host_dispatch.DISPATCH_D192, False, [])
    monkeypatch.setattr(launch, "_capability", lambda i: (9, 0))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert _d192(_problem(), False) == CFG
    assert _d192(_problem(nq=2048, nk=2048), False) == CFG
    for p, interp in [(_problem(), True),  # the interpreter cannot run Gluon
                      (_problem(nq=4096, nk=4096), False),  # the table's row says None
                      (_problem(causal=False), False),  # no non-causal row
                      (_problem(d=128), False), (_problem(d=256), False),
                      (_problem(nq=512), False),  # cross-attention
                      (_problem(nq=1000, nk=1000), False),  # not a multiple of the blocks
                      (_problem(dtype=torch.float32), False)]:
        assert _d192(p, interp) is None, p
    assert _d192(_problem(heads_kv=2), False) == CFG  # grouped: K/V copied out
    assert _d192(_problem(heads_kv=1), False) == CFG
    monkeypatch.setenv("KERNELS_GPU_D192_GROUPS", "0")
    assert _d192(_problem(heads_kv=2), False) is None
    assert _d192(_problem(), False) == CFG
    monkeypatch.delenv("KERNELS_GPU_D192_GROUPS")
    monkeypatch.setenv("KERNELS_GPU_HOPPER", "0")
    assert _d192(_problem(), False) is None
    assert _d192(_problem(heads_kv=2), False) is None
    monkeypatch.delenv("KERNELS_GPU_HOPPER")
    monkeypatch.setattr(launch, "_capability", lambda i: (8, 0))
    assert _d192(_problem(), False) is None


@GLUON
@pytest.mark.slow  # an offline sm_90 compile (ptxas)
def test_the_dispatched_d192_configs_compile_to_wgmma_without_spills():
    """Offline sm_90 builds (Triton's ptxas) of every launch of every DISPATCH_D192 entry,
    causal or not as dispatched: HGMMA, no local memory, shared memory within an SM's 227 KB."""
    code = ("import json\n"
            "from kernels_gpu.bench.compile_check import compile_d192, resources\n"
            "from kernels_gpu.host.dispatch import DISPATCH_D192\n"
            "from kernels_gpu.host.hopper_d192 import CANDIDATES\n"
            "jobs = set()\n"
            "for causal, rows in DISPATCH_D192.items():\n"
            "    for cfg in [c for _, c in rows if c] or [CANDIDATES['g-m32']]:\n"
            "        if cfg.dv:\n"
            "            jobs.add(('dkdv', *cfg.dv, 1, causal))\n"
            "            jobs.add(('dkdv', *cfg.dk, 2, causal))\n"
            "        else:\n"
            "            jobs.add(('dkdv', *cfg.dk, 0, causal))\n"
            "        jobs.add(('dq', *cfg.dq, 0, causal))\n"
            "print(json.dumps([[j, resources(compile_d192(*j))] for j in sorted(jobs)]))\n")
    env = dict(os.environ, TRITON_INTERPRET="0")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(rows) >= 3
    for job, res in rows:
        assert res["spill_stores"] == 0 and res["local_bytes"] == 0, (job, res)
        assert res["mma"].get("HGMMA", 0) > 0 and "HMMA" not in res["mma"], (job, res)
        assert res["smem"] <= 227 * 1024, (job, res)


def _inputs(dtype, seed, heads=3, heads_kv=None, n=384):
    gen = torch.Generator().manual_seed(seed)
    q, do = (torch.randn(2, heads, n, 192, generator=gen).to(dtype).cuda() for _ in range(2))
    k, v = (torch.randn(2, heads_kv or heads, n, 192, generator=gen).to(dtype).cuda()
            for _ in range(2))
    return q, k, v, do


def _reference(q, k, v, do, causal):
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    attention_reference(qr, kr, vr, causal)[0].backward(do.double())
    return qr.grad, kr.grad, vr.grad


def _delta(q, k, v, o, do, causal):
    from kernels_gpu.host import launch
    p = launch.problem_of(q, k, v, causal)
    delta = torch.empty(q.shape[:3], device="cuda", dtype=torch.float32)
    launch.launch_preprocess(p, o, do, delta)
    return delta


@GLUON
@SM90
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("blocks", [(64, 64, 4, 2), (32, 64, 4, 2), (64, 128, 8, 2)],
                         ids=["M64N64w4", "M32N64w4", "M64N128w8"])
def test_the_chunked_dv_and_dk_launches_compute_the_gradients(dtype, blocks, causal):
    """dV (PART 1) and dK (PART 2) of the chunked kernel, each into its own buffer with the
    other part's buffer left untouched (NaN), against float64 autograd; N 384: several query
    tiles, causal programs of different lengths."""
    from kernels_gpu import flash_attention_forward
    from kernels_gpu.host.tolerance import output_tolerance, rel_err

    q, k, v, do = _inputs(dtype, sum(blocks) + causal)
    o, lse = flash_attention_forward(q, k, v, causal)
    delta = _delta(q, k, v, o, do, causal)
    _, rk, rv = _reference(q, k, v, do, causal)
    tol = output_tolerance(dtype, True, backward=True)
    nan = torch.full((2 * 3 * 384, 192), float("nan"), device="cuda", dtype=dtype)
    dk, dv = g.attention_backward_dkdv_d192(q, k, v, do, lse, delta, None, causal, *blocks, 1,
                                            out=(nan.clone(), nan.clone()))
    assert dk.isnan().all() and rel_err(dv, rv) < tol
    dk, dv = g.attention_backward_dkdv_d192(q, k, v, do, lse, delta, None, causal, *blocks, 2,
                                            out=(nan.clone(), nan.clone()))
    assert dv.isnan().all() and rel_err(dk, rk) < tol


@GLUON
@SM90
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("blocks", [(64, 64, 4, 2), (64, 32, 4, 2), (128, 64, 8, 2),
                                    (128, 32, 8, 2)],
                         ids=["M64N64w4", "M64N32w4", "M128N64w8", "M128N32w8"])
def test_the_chunked_dq_computes_the_gradient(dtype, blocks, causal):
    from kernels_gpu import flash_attention_forward
    from kernels_gpu.host.tolerance import output_tolerance, rel_err

    q, k, v, do = _inputs(dtype, sum(blocks) + 2 + causal)
    o, lse = flash_attention_forward(q, k, v, causal)
    dq = g.attention_backward_dq_d192(q, k, v, do, lse, _delta(q, k, v, o, do, causal), None,
                                      causal, *blocks)
    assert rel_err(dq, _reference(q, k, v, do, causal)[0]) < output_tolerance(dtype, True,
                                                                              backward=True)


@GLUON
@SM90
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("table", [None, *g.CANDIDATES], ids=["dispatched", *g.CANDIDATES])
def test_flash_attention_backward_dispatches_d192_to_the_chunked_kernels(dtype, causal, table,
                                                                         monkeypatch):
    """With a DISPATCH_D192 entry (the table as measured, or each candidate the bench timed)
    flash_attention_backward's dQ, dK, dV are the chunked launches', bit for bit, and the
    autograd path's too; all three against float64. Without one the `tl` path runs, and is
    right; grouped heads likewise (below)."""
    from kernels_gpu import flash_attention, flash_attention_backward, flash_attention_forward
    from kernels_gpu.host import launch
    from kernels_gpu.host.tolerance import output_tolerance, rel_err

    if table is not None:
        monkeypatch.setitem(host_dispatch.DISPATCH_D192, causal,
                            [(1 << 62, g.CANDIDATES[table])])
    q, k, v, do = _inputs(dtype, 11 + causal)
    p = launch.problem_of(q, k, v, causal)
    cfg = _d192(p, False)
    refs = _reference(q, k, v, do, causal)
    tol = output_tolerance(dtype, True, backward=True)
    o, lse = flash_attention_forward(q, k, v, causal)
    got = flash_attention_backward(q, k, v, o, lse, do, causal)
    assert max(rel_err(a, r) for a, r in zip(got, refs)) < tol
    if cfg is not None:
        dq, dk, dv = (torch.empty_like(t) for t in (q, k, v))
        g.backward_d192(q, k, v, do, lse, _delta(q, k, v, o, do, causal), 192 ** -0.5, causal,
                        cfg, dq, dk, dv)
        assert all(torch.equal(a, b) for a, b in zip(got, (dq, dk, dv)))
        qa, ka, va = (t.clone().requires_grad_() for t in (q, k, v))
        flash_attention(qa, ka, va, causal).backward(do)
        assert all(torch.equal(a.grad, b) for a, b in zip((qa, ka, va), got))
    # grouped heads (2 and 4 query heads a K/V head): with a table entry the chunked launches
    # on K/V copied out, dK and dV summed over the group in fp32; the `tl` path when switched
    # off; both right, and the autograd path's gradients the public path's, bit for bit
    for heads_kv in (2, 1):
        q, k, v, do = _inputs(dtype, 5 + heads_kv, heads=4, heads_kv=heads_kv)
        p = launch.problem_of(q, k, v, causal)
        assert (_d192(p, False) is None) == (cfg is None)
        refs = _reference(q, k, v, do, causal)
        o, lse = flash_attention_forward(q, k, v, causal)
        got = flash_attention_backward(q, k, v, o, lse, do, causal)
        assert max(rel_err(a, r) for a, r in zip(got, refs)) < tol, heads_kv
        qa, ka, va = (t.clone().requires_grad_() for t in (q, k, v))
        flash_attention(qa, ka, va, causal).backward(do)
        assert all(torch.equal(a.grad, b) for a, b in zip((qa, ka, va), got))
        if cfg is not None:  # the group's sum of the MHA launches on copies of K and V
            g_ = 4 // heads_kv
            ke, ve = (t.repeat_interleave(g_, 1) for t in (k, v))
            dq, dk, dv = (torch.empty_like(q) for _ in range(3))
            dk32, dv32 = (torch.empty_like(q, dtype=torch.float32) for _ in range(2))
            g.backward_d192(q, ke, ve, do, lse, _delta(q, k, v, o, do, causal), 192 ** -0.5,
                            causal, cfg, dq, dk32, dv32)
            assert torch.equal(got[0], dq)
            for mine, part in zip(got[1:], (dk32, dv32)):
                want = part.view(2, heads_kv, g_, *part.shape[2:]).sum(2).to(mine.dtype)
                assert torch.equal(mine, want)
            monkeypatch.setenv("KERNELS_GPU_D192_GROUPS", "0")
            off = flash_attention_backward(q, k, v, o, lse, do, causal)
            monkeypatch.delenv("KERNELS_GPU_D192_GROUPS")
            assert max(rel_err(a, r) for a, r in zip(off, refs)) < tol
