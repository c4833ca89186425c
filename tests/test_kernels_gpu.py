"""Tests of kernels_gpu: the Triton FlashAttention-2 against a float64 reference.

On a machine without CUDA the kernels run in Triton's interpreter on CPU tensors: this module
sets TRITON_INTERPRET=1 before kernels_gpu is imported (kernels_gpu does the same on its own;
what matters is that the variable is set before any @triton.jit kernel is defined). Sizes are
small (N <= 128, d <= 64) so the whole module runs in well under a minute on 2 CPU cores. On a
CUDA machine the same tests run on the GPU (`bash kernels_gpu/device/tests.sh`), with the
tolerances of kernels_gpu.host.tolerance for that device (fp32: TF32 dots there).
Shapes beyond the square multi-head case (head dims to 256, N_q != N_k, grouped-query, fp8):
tests/test_kernels_gpu_shapes.py.
"""
from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")

from kernels_gpu import (  # noqa: E402
    INTERPRETER,
    KernelConfig,
    attention_reference,
    flash_attention,
    flash_attention_backward,
    flash_attention_forward,
    resolve_config,
)
from kernels_gpu.host import launch  # noqa: E402
from kernels_gpu.host.tolerance import lse_tolerance, output_tolerance, rel_err  # noqa: E402

DEVICE = "cpu" if INTERPRETER else "cuda"
CUDA = DEVICE == "cuda"


def tol(dtype, backward=False):
    """Relative error allowed vs float64 for this device and dtype (kernels_gpu.host.tolerance says
    why: fp32 runs TF32 dots on a GPU, exact fp32 in the interpreter)."""
    return output_tolerance(dtype, CUDA, backward)


def make_qkv(b, h, n, d, dtype, seed=0, nk=None, h_kv=None):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, n, d, generator=g).to(dtype).to(DEVICE)
    kv = [torch.randn(b, h_kv or h, nk or n, d, generator=g).to(dtype).to(DEVICE)
          for _ in range(2)]
    return [q, *kv]


def reference_grads(q, k, v, do, causal, sm_scale=None):
    qr, kr, vr = (t.detach().double().requires_grad_() for t in (q, k, v))
    o, lse = attention_reference(qr, kr, vr, causal, sm_scale)
    o.backward(do.double())
    return o.detach(), lse.detach(), qr.grad, kr.grad, vr.grad


# (N, block_m, block_n): even tiles, BLOCK_M != BLOCK_N both ways, and N not a tile multiple
SHAPES = [(128, 32, 32), (128, 64, 32), (96, 32, 64), (100, 32, 32), (77, 16, 32)]


@pytest.mark.interpreter
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16],
                         ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n,block_m,block_n", SHAPES)
def test_forward_and_backward_match_float64(dtype, causal, n, block_m, block_n):
    q, k, v = make_qkv(1, 2, n, 32, dtype, seed=n + block_m)
    do = torch.randn(q.shape, generator=torch.Generator().manual_seed(7)).to(dtype).to(DEVICE)
    ref_o, ref_lse, ref_dq, ref_dk, ref_dv = reference_grads(q, k, v, do, causal)

    o, lse = flash_attention_forward(q, k, v, causal, block_m=block_m, block_n=block_n)
    assert o.dtype == dtype and o.shape == q.shape
    assert lse.dtype == torch.float32 and lse.shape == q.shape[:3]
    assert rel_err(o, ref_o) < tol(dtype)
    assert rel_err(lse, ref_lse) < lse_tolerance(dtype, CUDA)

    dq, dk, dv = flash_attention_backward(q, k, v, o, lse, do, causal, block_m=block_m,
                                          block_n=block_n)
    for got, ref in ((dq, ref_dq), (dk, ref_dk), (dv, ref_dv)):
        assert got.dtype == dtype and torch.isfinite(got).all()
        assert rel_err(got, ref) < tol(dtype, backward=True)


@pytest.mark.interpreter
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [16, 64])
def test_head_dims_and_custom_scale(causal, d):
    q, k, v = make_qkv(2, 1, 64, d, torch.float16, seed=d)
    do = torch.randn_like(q)
    scale = 0.3
    ref_o, ref_lse, ref_dq, ref_dk, ref_dv = reference_grads(q, k, v, do, causal, scale)
    o, lse = flash_attention_forward(q, k, v, causal, sm_scale=scale, block_m=32, block_n=16)
    dq, dk, dv = flash_attention_backward(q, k, v, o, lse, do, causal, sm_scale=scale,
                                          block_m=32, block_n=16)
    assert rel_err(o, ref_o) < 2e-3 and rel_err(lse, ref_lse) < 1e-5
    assert max(rel_err(dq, ref_dq), rel_err(dk, ref_dk), rel_err(dv, ref_dv)) < 3e-3


@pytest.mark.interpreter
@pytest.mark.parametrize("causal", [False, True])
def test_tma_descriptor_path(causal):
    """The TensorDescriptor (Hopper TMA) path; the interpreter emulates the descriptors."""
    if not INTERPRETER and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA needs sm_90")
    q, k, v = make_qkv(2, 2, 128, 32, torch.float16, seed=3)
    do = torch.randn_like(q)
    ref_o, _, ref_dq, ref_dk, ref_dv = reference_grads(q, k, v, do, causal)
    cfg = KernelConfig(64, 32, 4, 2, use_tma=True)
    assert resolve_config("fwd", q, causal, 64, 32).use_tma is False  # explicit blocks: pointers
    o, lse = flash_attention_forward(q, k, v, causal, config=cfg)
    dq, dk, dv = flash_attention_backward(q, k, v, o, lse, do, causal, dkdv_config=cfg,
                                          dq_config=KernelConfig(32, 64, 4, 2, use_tma=True))
    assert rel_err(o, ref_o) < 2e-3
    assert max(rel_err(dq, ref_dq), rel_err(dk, ref_dk), rel_err(dv, ref_dv)) < 3e-3


def test_tma_is_dropped_where_tiles_would_cross_heads():
    """A streamed tile through a flattened (B*H*N, d) descriptor would read the next head's
    rows when N is not a multiple of it: the config then runs with pointer loads."""
    cfg = KernelConfig(64, 32, 4, 2, use_tma=True)
    q, k, v = make_qkv(1, 2, 96, 32, torch.float16, seed=4, nk=80)
    p = launch.problem_of(q, k, v, False)
    assert launch.honour("fwd", p, cfg).use_tma is False        # N_k 80 % 32 != 0
    assert launch.honour("bwd_dkdv", p, cfg).use_tma is False   # N_q 96 % 64 != 0
    q, k, v = make_qkv(1, 2, 128, 32, torch.float16, seed=4, nk=96)
    p = launch.problem_of(q, k, v, False)
    assert launch.honour("fwd", p, cfg).use_tma is True and \
        launch.honour("bwd_dkdv", p, cfg).use_tma is True
    q, k, v = make_qkv(1, 2, 128, 80, torch.float16, seed=4)  # pad columns: pointers
    assert launch.honour("fwd", launch.problem_of(q, k, v, False), cfg).use_tma is False


def test_config_names_round_trip():
    for text in ("M128N64w4s3", "M64N64w4s2-tma", "M256N64w8s3-tma"):
        assert KernelConfig.from_short(text).short() == text
    with pytest.raises(ValueError):
        KernelConfig.from_short("M128x64")


@pytest.mark.interpreter
def test_autograd_function_and_default_config():
    q, k, v = make_qkv(1, 2, 64, 32, torch.float32, seed=11)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    do = torch.randn_like(q)
    o = flash_attention(q, k, v, causal=True)  # default config
    o.backward(do)
    ref_o, _, ref_dq, ref_dk, ref_dv = reference_grads(q, k, v, do, True)
    assert rel_err(o.detach(), ref_o) < tol(torch.float32)
    assert max(rel_err(q.grad, ref_dq), rel_err(k.grad, ref_dk),
               rel_err(v.grad, ref_dv)) < tol(torch.float32, backward=True)


@pytest.mark.interpreter
@pytest.mark.parametrize("nq,nk,h,h_kv,d,causal", [
    (100, 100, 2, 2, 16, False), (77, 50, 4, 2, 24, True), (40, 72, 2, 1, 80, "top_left")],
    ids=["ragged", "cross-gqa-padded-d", "cross-mqa-top-left"])
def test_every_output_element_is_written(monkeypatch, nq, nk, h, h_kv, d, causal):
    """Every buffer the launches write is poisoned with NaN before the kernels run (the
    allocator launch.new_empty is swapped for one that fills NaN); afterwards no NaN may be
    left, and the values must still be the reference's. Ragged tiles, padded head dims,
    grouped heads, N_q != N_k, empty causal rows: the masks that must not skip a row."""
    def poisoned(shape, like, dtype=None):
        return torch.full(shape, float("nan"), device=like.device, dtype=dtype or like.dtype)

    monkeypatch.setattr(launch, "new_empty", poisoned)
    q, k, v = make_qkv(1, h, nq, d, torch.float16, seed=5, nk=nk, h_kv=h_kv)
    do = torch.randn_like(q)
    ref_o, ref_lse, ref_dq, ref_dk, ref_dv = reference_grads(q, k, v, do, causal)
    for bm, bn in ((32, 32), (64, 16)):
        o, lse = flash_attention_forward(q, k, v, causal, block_m=bm, block_n=bn)
        dq, dk, dv = flash_attention_backward(q, k, v, o, lse, do, causal, block_m=bm,
                                              block_n=bn)
        assert not torch.isnan(lse).any()
        for t in (o, dq, dk, dv):
            assert torch.isfinite(t).all()
        assert rel_err(o, ref_o) < tol(torch.float16) and rel_err(lse, ref_lse) < 1e-5
        for got, ref in ((dq, ref_dq), (dk, ref_dk), (dv, ref_dv)):
            assert rel_err(got, ref) < tol(torch.float16, backward=True)


@pytest.mark.gpu
@pytest.mark.skipif(INTERPRETER, reason="CUDA graphs need a GPU")
def test_repeated_backward_replays_a_graph_with_the_same_results():
    """The third backward with the same buffers replays the captured CUDA graph of the three
    launches (kernels_gpu.host.graphs); it must give the eager call's bits, and new inputs in the
    same buffers must give new results (the graph reads the buffers, it does not replay
    values)."""
    from kernels_gpu.host import graphs

    graphs.clear()
    q, k, v = (t.requires_grad_() for t in make_qkv(2, 4, 256, 64, torch.float16, seed=12))
    do = torch.randn_like(q)
    o = flash_attention(q, k, v, causal=True)
    first = [g.clone() for g in torch.autograd.grad(o, (q, k, v), do, retain_graph=True)]
    before = graphs.stats()
    for _ in range(4):  # results dropped before the next call: the allocator hands the same
        same = [torch.equal(a, b)  # buffers back, so the key repeats (as in a training loop)
                for a, b in zip(first, torch.autograd.grad(o, (q, k, v), do, retain_graph=True))]
        assert all(same)
    assert graphs.stats()["replayed"] > before["replayed"]
    do.copy_(torch.randn_like(do))  # same buffer, new values
    ref = reference_grads(q, k, v, do, True)[2:]
    now = torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
    assert max(rel_err(a, r) for a, r in zip(now, ref)) < tol(torch.float16, backward=True)


def test_bad_inputs_raise_clear_errors():
    q, k, v = make_qkv(1, 1, 32, 300, torch.float32)
    with pytest.raises(ValueError, match="head dim"):
        flash_attention_forward(q, k, v)
    q, k, v = make_qkv(1, 1, 32, 16, torch.float32)
    with pytest.raises(ValueError, match="shape"):
        flash_attention_forward(q, k, v[:, :, :16])
    with pytest.raises(ValueError, match="power of two"):
        flash_attention_forward(q, k, v, block_m=48)
    with pytest.raises(ValueError, match="dtype"):
        flash_attention_forward(q, k.half(), v)
    with pytest.raises(ValueError, match="causal"):
        flash_attention_forward(q, k, v, causal="diagonal")
    with pytest.raises(ValueError, match="positive"):
        flash_attention_forward(q, k, v, sm_scale=-1.0)
    q, k, v = make_qkv(1, 3, 32, 16, torch.float16, h_kv=2)
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        flash_attention_forward(q, k, v)
