"""The Gluon dK/dV and dQ (kernels/hopper_bwd.py) with their outputs stored through shared
memory and TMA (`tma_out`): offline they compile to wgmma without spills; on an sm_90 GPU they
write what the plain-store launches write, against float64."""
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
from kernels_gpu.kernels.hopper import HAVE_GLUON  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLUON = pytest.mark.skipif(not HAVE_GLUON, reason="this Triton has no Gluon")


def _sm90() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


@GLUON
@pytest.mark.slow  # offline sm_90 compiles (ptxas)
def test_the_tma_store_backward_launches_compile_to_wgmma_without_spills():
    code = ("import json\n"
            "from kernels_gpu.bench.compile_check import compile_bwd, resources\n"
            "print(json.dumps([resources(compile_bwd(128, 64, 64, 4, causal=c, dq=dq,\n"
            "                  overlap=True, tma_out=True)) for c in (0, 1) for dq in (0, 1)]))\n")
    env = dict(os.environ, TRITON_INTERPRET="0")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(rows) == 4
    for row in rows:
        assert row["spill_stores"] == 0 and row["local_bytes"] == 0, row
        assert row["mma"].get("HGMMA", 0) > 0 and "HMMA" not in row["mma"], row


@GLUON
@pytest.mark.gpu
@pytest.mark.skipif(not _sm90(), reason="the Gluon Hopper kernels need an sm_90 GPU")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("d,kv,q_cfg", [(128, (64, 64, 4, 2, 1), (64, 64, 4, 2, 1)),
                                        (64, (32, 128, 8, 2, 0), (128, 64, 8, 2, 0))])
def test_the_tma_store_backward_launches_compute_the_gradients(dtype, d, kv, q_cfg, causal):
    """dK, dV and dQ with TMA stores equal the plain-store launches' bit for bit, and the
    float64 gradients within the backward's bound; the buffers poisoned first."""
    from kernels_gpu import flash_attention_forward
    from kernels_gpu.host import hopper
    from kernels_gpu.host.tolerance import output_tolerance, rel_err

    g = torch.Generator().manual_seed(d + causal)
    q, k, v, do = (torch.randn(2, 3, 512, d, generator=g).to(dtype).cuda() for _ in range(4))
    o, lse = flash_attention_forward(q, k, v, causal)
    delta = (o.float() * do.float()).sum(-1)
    got = []
    for tma in (False, True):
        dk, dv, dq = (torch.full_like(q, float("nan")).view(-1, d) for _ in range(3))
        hopper.attention_backward_dkdv_hopper(q, k, v, do, lse, delta, None, causal, *kv,
                                              out=(dk, dv), tma_out=tma)
        hopper.attention_backward_dq_hopper(q, k, v, do, lse, delta, None, causal, *q_cfg,
                                            out=dq, tma_out=tma)
        got.append((dq.view_as(q), dk.view_as(q), dv.view_as(q)))
    assert all(torch.equal(a, b) for a, b in zip(*got))
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    ref_o, _ = attention_reference(qr, kr, vr, causal)
    ref_o.backward(do.double())
    tol = output_tolerance(dtype, True, backward=True)
    assert max(rel_err(a, r.grad) for a, r in zip(got[1], (qr, kr, vr))) < tol
