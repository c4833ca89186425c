"""The shapes users run, against float64: head dims 16 .. 256 (padded on chip where not a power
of two), N_q != N_k (cross-attention, causal bottom-right or top-left), grouped-query and
multi-query attention, forward and backward; and the fp8 forward (e5m2, e4m3).

Interpreter-sized here (N <= 128: seconds per case on a CPU); on a CUDA machine the same tests
run on the GPU, plus `test_bigger_shapes_on_the_gpu` (N up to 2048, every head dim).
"""
from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")

from kernels_gpu import (  # noqa: E402
    FP8_DTYPES,
    INTERPRETER,
    attention_reference,
    flash_attention,
    flash_attention_backward,
    flash_attention_forward,
)
from kernels_gpu.host.tolerance import lse_tolerance, output_tolerance, rel_err  # noqa: E402

DEVICE = "cpu" if INTERPRETER else "cuda"
CUDA = DEVICE == "cuda"
F16 = torch.float16


def inputs(b, h, h_kv, nq, nk, d, dtype=F16, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, nq, d, generator=g)
    k, v = (torch.randn(b, h_kv, nk, d, generator=g) for _ in range(2))
    do = torch.randn(b, h, nq, d, generator=g)
    return [t.to(dtype).to(DEVICE) for t in (q, k, v, do)]


def check(q, k, v, do, causal, dtype=F16, **blocks):
    """Forward and backward against float64; returns the errors (for the message)."""
    qr, kr, vr = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref_o, ref_lse = attention_reference(qr, kr, vr, causal)
    ref_o.backward(do.double())
    o, lse = flash_attention_forward(q, k, v, causal, **blocks)
    dq, dk, dv = flash_attention_backward(q, k, v, o, lse, do, causal, **blocks)
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
    errs = {"O": rel_err(o, ref_o.detach()), "lse": rel_err(lse, ref_lse.detach()),
            "dQ": rel_err(dq, qr.grad), "dK": rel_err(dk, kr.grad), "dV": rel_err(dv, vr.grad)}
    assert errs["O"] < output_tolerance(dtype, CUDA), errs
    assert errs["lse"] < lse_tolerance(dtype, CUDA), errs
    for name in ("dQ", "dK", "dV"):
        assert errs[name] < output_tolerance(dtype, CUDA, backward=True), errs
    return errs


@pytest.mark.interpreter
@pytest.mark.parametrize("d", [16, 32, 80, 96, 192, 256])
def test_head_dims(d):
    """d not a power of two (80, 96, 192) runs padded to 128 / 256 with masked columns; 256 is
    the largest. Ragged N (72) and causal, so the row masks meet the column masks."""
    check(*inputs(1, 2, 2, 72, 72, d, seed=d), True, block_m=32, block_n=32)


@pytest.mark.interpreter
@pytest.mark.parametrize("causal", [False, True, "top_left"], ids=["full", "bottom-right",
                                                                    "top-left"])
@pytest.mark.parametrize("nq,nk", [(48, 96), (96, 40), (1, 64), (64, 1)])
def test_cross_attention(nq, nk, causal):
    """N_q != N_k. Bottom-right with N_q > N_k leaves the first N_q - N_k rows with no key:
    O = 0 and lse = -inf there (the reference agrees, and rel_err demands equal -inf)."""
    q, k, v, do = inputs(2, 2, 2, nq, nk, 32, seed=nq + nk)
    check(q, k, v, do, causal, block_m=32, block_n=16)
    if causal is True and nq > nk:
        o, lse = flash_attention_forward(q, k, v, causal)
        empty = nq - nk
        assert (o[:, :, :empty] == 0).all() and (lse[:, :, :empty] == float("-inf")).all()


@pytest.mark.interpreter
@pytest.mark.parametrize("h,h_kv", [(4, 2), (4, 1), (6, 3)], ids=["gqa", "mqa", "gqa-3"])
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_query_attention(h, h_kv, causal):
    """K/V with fewer heads than Q: query head h reads K/V head h // (H / H_kv); dK and dV sum
    the gradients of every query head of the group."""
    check(*inputs(2, h, h_kv, 64, 80, 32, seed=h * h_kv), causal, block_m=32, block_n=32)


@pytest.mark.interpreter
@pytest.mark.parametrize("split", [1, 2, 4], ids=["group-loop", "half-groups", "one-head"])
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_dkdv_split_over_programs(split, causal):
    """The grouped dK/dV with a head group of 4 split over 1 (the group loop in one program),
    2 (two heads each, fp32 partials summed) or 4 programs (the MHA code per query head):
    the same gradients, against float64; and against each other to fp32 rounding."""
    from kernels_gpu import KernelConfig

    q, k, v, do = inputs(1, 8, 2, 64, 80, 32, seed=11)
    cfg = KernelConfig(32, 32, 4, 1, False, split=split)
    o, lse = flash_attention_forward(q, k, v, causal, block_m=32, block_n=32)
    dq, dk, dv = flash_attention_backward(q, k, v, o, lse, do, causal, dkdv_config=cfg,
                                          dq_config=KernelConfig(32, 32, 4, 1, False))
    qr, kr, vr = (t.detach().double().requires_grad_() for t in (q, k, v))
    attention_reference(qr, kr, vr, causal)[0].backward(do.double())
    tol = output_tolerance(F16, CUDA, backward=True)
    assert rel_err(dk, kr.grad) < tol and rel_err(dv, vr.grad) < tol
    loop = KernelConfig(32, 32, 4, 1, False, split=1)
    _, dk1, dv1 = flash_attention_backward(q, k, v, o, lse, do, causal, dkdv_config=loop,
                                           dq_config=KernelConfig(32, 32, 4, 1, False))
    assert rel_err(dk, dk1) < 4e-3 and rel_err(dv, dv1) < 4e-3


@pytest.mark.interpreter
@pytest.mark.parametrize("variant", ["dv", "fq", "sp2-dv"])
@pytest.mark.parametrize("causal", [False, True])
def test_dkdv_variants_match_the_two_accumulator_kernel(variant, causal):
    """dV apart from dK (`-dv`: two launches, one accumulator each, the d 256 TUNED choice) and
    the fused dQ (`-fq`: dS K added to an fp32 dQ with atomics, no dQ launch) give the
    gradients of the plain dK/dV + dQ launches, against float64; ragged N_q (72), N_k != N_q,
    a padded head dim (24) and grouped heads (4 / 2, split over programs in `sp2-dv`)."""
    from kernels_gpu import KernelConfig

    q, k, v, do = inputs(1, 4, 2, 72, 56, 24, seed=5)
    plain = KernelConfig(32, 32, 4, 1, False)
    cfg = KernelConfig.from_short(f"M32N32w4s1-{variant}")
    assert cfg.short() == f"M32N32w4s1-{variant}"
    o, lse = flash_attention_forward(q, k, v, causal, block_m=32, block_n=32)
    got = flash_attention_backward(q, k, v, o, lse, do, causal, dkdv_config=cfg,
                                   dq_config=plain)
    want = flash_attention_backward(q, k, v, o, lse, do, causal, dkdv_config=plain,
                                    dq_config=plain)
    qr, kr, vr = (t.detach().double().requires_grad_() for t in (q, k, v))
    attention_reference(qr, kr, vr, causal)[0].backward(do.double())
    tol = output_tolerance(F16, CUDA, backward=True)
    for g, w, r in zip(got, want, (qr.grad, kr.grad, vr.grad)):
        assert rel_err(g, r) < tol
        assert rel_err(g, w) < 4e-3


@pytest.mark.parametrize("nq,nk", [(64, 64), (40, 100), (100, 40), (1, 7), (7, 1), (33, 33)])
@pytest.mark.parametrize("causal", [False, True, "top_left"])
def test_visible_pairs_count_the_mask(nq, nk, causal):
    """Problem.visible_pairs (the work CUDA-graph replay is sized by) = the pairs the reference
    mask keeps, counted element by element."""
    from kernels_gpu.host import launch

    is_causal, off = launch.causal_offset(causal, nq, nk)
    p = launch.Problem(1, 1, 1, nq, nk, 16, F16, is_causal, off)
    i = torch.arange(nq)[:, None]
    j = torch.arange(nk)[None, :]
    kept = (j <= i + off) if is_causal else torch.ones(nq, nk, dtype=torch.bool)
    assert p.visible_pairs == int(kept.sum())


def test_split_is_a_divisor_of_the_group_and_named():
    """A split that does not divide the head group is cut to one that does (gcd); MHA runs
    unsplit; the config's name carries the split and reads back."""
    from kernels_gpu import KernelConfig
    from kernels_gpu.host import launch

    p = launch.Problem(1, 6, 2, 64, 64, 32, F16, False, 0)  # group of 3
    cfg = KernelConfig(32, 32, 4, 1, False, split=2)
    assert launch.honour("bwd_dkdv", p, cfg).split == 1
    assert launch.honour("bwd_dkdv", p, KernelConfig(32, 32, 4, 1, False, split=6)).split == 3
    assert launch.honour("bwd_dq", p, KernelConfig(32, 32, 4, 1, False, split=3)).split == 1
    assert KernelConfig.from_short("M64N128w4s3-tma-sp4") == KernelConfig(64, 128, 4, 3, True, 4)
    assert KernelConfig(64, 128, 4, 3, False, 8).short() == "M64N128w4s3-sp8"
    with pytest.raises(ValueError):
        KernelConfig.from_short("M64N128w4s3-sp0")


def test_a_group_loop_that_would_underfill_the_gpu_is_split():
    """LOOP_MIN_PROGRAMS: a d 64 non-causal group of >= 16 heads whose loop would run fewer
    programs than the floor is split (one head a program there); enough programs, a small
    group, a bucket without a floor, or an unknown grid keep TUNED_SPLIT's choice."""
    from kernels_gpu.host import launch
    from kernels_gpu.host.configs import LOOP_MIN_PROGRAMS, TUNED_SPLIT, dkdv_split

    floor, per_program = LOOP_MIN_PROGRAMS[(64, False)]
    big = max(n for n, _, _ in TUNED_SPLIT[(64, False)] if n < 1 << 40) * 2  # past the N rows
    assert dkdv_split(32, 64, False, big) == 1  # the loop, as the table says
    assert dkdv_split(32, 64, False, big, floor - 1) == 32 // per_program
    assert dkdv_split(32, 64, False, big, floor) == 1
    assert dkdv_split(8, 64, False, big, 1) == 1  # a group of 8: the loop fits
    assert dkdv_split(32, 128, False, big, 1) == dkdv_split(32, 128, False, big)
    # through resolve_config: the loop's grid is B * H_kv * ceil(N_k / BLOCK_N)
    for batch, want_split in ((1, True), (64, False)):
        p = launch.Problem(batch, 32, 1, big, big, 64, F16, False, 0)
        cfg = launch.resolve_config("bwd_dkdv", p)
        programs = batch * -(-big // cfg.block_n)
        assert (cfg.split > 1) == (programs < floor) == want_split, (batch, cfg)


@pytest.mark.interpreter
def test_causal_alignments_match_sdpa():
    """bottom-right = SDPA with torch.nn.attention.bias.causal_lower_right (flash-attn's
    convention); top-left = SDPA's is_causal=True; grouped heads = SDPA's enable_gqa."""
    from torch.nn.attention.bias import causal_lower_right

    sdpa = torch.nn.functional.scaled_dot_product_attention
    q, k, v, _ = inputs(1, 4, 2, 40, 64, 32, dtype=torch.float32, seed=9)
    q64, k64, v64 = (t.double().cpu() for t in (q, k, v))
    kr, vr = (t.repeat_interleave(2, dim=1) for t in (k64, v64))
    expect = {True: sdpa(q64, kr, vr, attn_mask=causal_lower_right(40, 64)),
              "top_left": sdpa(q64, kr, vr, is_causal=True),
              False: sdpa(q64, kr, vr)}
    for causal, want in expect.items():
        ref, _ = attention_reference(q64, k64, v64, causal)
        assert torch.allclose(ref, want, atol=1e-12)
        o, _ = flash_attention_forward(q, k, v, causal)
        assert rel_err(o, want) < output_tolerance(torch.float32, CUDA)


@pytest.mark.interpreter
def test_autograd_with_grouped_heads_and_cross_lengths():
    q, k, v, do = inputs(1, 4, 2, 48, 64, 64, seed=3)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    flash_attention(q, k, v, causal=True).backward(do)
    qr, kr, vr = (t.detach().double().requires_grad_() for t in (q, k, v))
    attention_reference(qr, kr, vr, True)[0].backward(do.double())
    tol = output_tolerance(F16, CUDA, backward=True)
    assert max(rel_err(q.grad, qr.grad), rel_err(k.grad, kr.grad),
               rel_err(v.grad, vr.grad)) < tol


# ---------------------------------------------------------------------------- fp8 forward
FP8 = pytest.mark.skipif(not FP8_DTYPES, reason="this torch has no float8 dtypes")


def fp8_ok():
    return INTERPRETER or torch.cuda.get_device_capability()[0] >= 9 or \
        torch.cuda.get_device_capability() == (8, 9)


@pytest.mark.interpreter
@FP8
@pytest.mark.parametrize("dtype", FP8_DTYPES, ids=lambda t: str(t).removeprefix("torch."))
@pytest.mark.parametrize("nq,nk,d,causal", [(64, 64, 32, True), (96, 40, 80, False),
                                            (48, 128, 64, True)])
def test_fp8_forward(dtype, nq, nk, d, causal):
    """Seed 004's "Triton [FP8]": fp8 Q, K, V; P rounded to the same fp8 format for PV; O in
    fp16. Against float64 on the same (fp8) inputs, with a bound from fp8's unit roundoff."""
    if not fp8_ok():
        pytest.skip("fp8 dots need sm_89+")
    q, k, v, _ = inputs(1, 2, 2, nq, nk, d, dtype=torch.float32, seed=nq + d)
    q, k, v = (t.to(dtype) for t in (q, k, v))
    ref_o, ref_lse = attention_reference(q, k, v, causal)
    o, lse = flash_attention_forward(q, k, v, causal, block_m=32, block_n=32)
    assert o.dtype == torch.float16 and lse.dtype == torch.float32
    assert rel_err(o, ref_o) < output_tolerance(dtype, CUDA)
    assert rel_err(lse, ref_lse) < 1e-5  # scores are exact products of fp8 values, fp32 sums


@pytest.mark.interpreter
@FP8
def test_fp8_v_layouts_descale_and_no_backward():
    """V given already transposed in memory (the tutorial's permute-contiguous-permute) is read
    without a copy and gives the same O; descale multiplies the scores by dq*dk and O by dv;
    the backward is refused."""
    if not fp8_ok():
        pytest.skip("fp8 dots need sm_89+")
    dt = FP8_DTYPES[-1]
    q, k, v, _ = inputs(1, 2, 2, 64, 64, 32, dtype=torch.float32, seed=1)
    q8, k8 = q.to(dt), k.to(dt)
    v8 = v.to(dt)
    vt8 = v.transpose(-1, -2).contiguous().transpose(-1, -2).to(dt)
    assert vt8.transpose(-1, -2).is_contiguous()
    o1, _ = flash_attention_forward(q8, k8, v8, True, out_dtype=torch.float32)
    o2, _ = flash_attention_forward(q8, k8, vt8, True, out_dtype=torch.float32)
    assert torch.equal(o1, o2) and o1.dtype == torch.float32
    o3, _ = flash_attention_forward(q8, k8, v8, True, out_dtype=torch.float32,
                                    descale=(2.0, 0.5, 3.0))
    assert torch.allclose(o3, 3 * o1, rtol=1e-6, atol=1e-6)  # dq * dk = 1: same P
    with pytest.raises(ValueError, match="forward only"):
        flash_attention_backward(q8, k8, v8, o1.half(), torch.zeros(1, 2, 64),
                                 torch.zeros_like(o1), True)


# ------------------------------------------------------------------ bigger, on the GPU only
BIG = [(2, 8, 8, 1024, 1024, d, c) for d in (64, 96, 128, 256) for c in (False, True)] + [
    (2, 8, 2, 1000, 2048, 128, True), (2, 8, 1, 2048, 1000, 80, True),
    (2, 16, 4, 777, 777, 192, False), (1, 8, 8, 4096, 512, 32, "top_left")]


@pytest.mark.gpu
@pytest.mark.skipif(INTERPRETER, reason="GPU-sized: minutes in the interpreter")
@pytest.mark.parametrize("b,h,h_kv,nq,nk,d,causal", BIG)
@pytest.mark.parametrize("dtype", [F16, torch.bfloat16], ids=["fp16", "bf16"])
def test_bigger_shapes_on_the_gpu(b, h, h_kv, nq, nk, d, causal, dtype):
    """The tuned default configs (TMA where allowed) on GPU-sized problems, forward and
    backward, against float64 computed on the GPU."""
    check(*inputs(b, h, h_kv, nq, nk, d, dtype=dtype, seed=nq + d), causal, dtype=dtype)


@pytest.mark.gpu
@pytest.mark.skipif(INTERPRETER or not FP8_DTYPES, reason="GPU-sized fp8")
@pytest.mark.parametrize("d,causal", [(64, False), (128, True), (96, True)])
def test_bigger_fp8_on_the_gpu(d, causal):
    if not fp8_ok():
        pytest.skip("fp8 dots need sm_89+")
    for dt in FP8_DTYPES:
        q, k, v, _ = inputs(2, 8, 8, 2048, 2048, d, dtype=torch.float32, seed=d)
        q, k, v = (t.to(dt) for t in (q, k, v))
        ref_o, _ = attention_reference(q, k, v, causal)
        o, _ = flash_attention_forward(q, k, v, causal)
        assert rel_err(o, ref_o) < output_tolerance(dt, CUDA)
