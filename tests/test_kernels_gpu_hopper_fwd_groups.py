"""The Gluon forwards on grouped heads (H a multiple of H_kv, MQA H_kv 1), the
warp-specialised forward at d 192 (the head dim as three 64-column chunks, no padding) and its
persistent form: on an sm_90 GPU they compute attention against float64 (O and lse, O poisoned
first), and the public forward dispatches to them (bit for bit) with the backward from their
lse right. Their offline compile (wgmma, no spills) is test_kernels_gpu_hopper.py's, over every
dispatched config."""
from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")

from kernels_gpu_reference import assert_forward_and_backward_match_float64  # noqa: E402

from kernels_gpu import attention_reference  # noqa: E402
from kernels_gpu.kernels.hopper import HAVE_GLUON  # noqa: E402

GLUON = pytest.mark.skipif(not HAVE_GLUON, reason="this Triton has no Gluon")


def _sm90() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


SM90 = pytest.mark.skipif(not _sm90(), reason="the Gluon Hopper kernels need an sm_90 GPU")


def _inputs(seed: int, b: int, h: int, kv: int, n: int, d: int, dtype=torch.float16):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, n, d, generator=g).to(dtype).cuda()
    k, v = (torch.randn(b, kv, n, d, generator=g).to(dtype).cuda() for _ in range(2))
    return q, k, v


def _check(o, lse, q, k, v, causal, dtype) -> None:
    from kernels_gpu.host.tolerance import lse_tolerance, output_tolerance, rel_err

    ref, ref_lse = attention_reference(q, k, v, causal)
    assert not torch.isnan(o).any() and not torch.isnan(lse).any()
    assert rel_err(o, ref) < output_tolerance(dtype, True)
    assert rel_err(lse.view(ref_lse.shape), ref_lse) < lse_tolerance(dtype, True)


@GLUON
@pytest.mark.gpu
@SM90
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("d,heads,kv", [(64, 8, 2), (64, 4, 1), (128, 8, 2), (128, 6, 1)])
def test_the_gluon_forwards_compute_grouped_heads(dtype, d, heads, kv, causal):
    """The one-partition (BLOCK_N 64 and 128) and the warp-specialised forward (each schedule)
    with query head h reading K/V head h // (H / H_kv): O and lse against float64."""
    from kernels_gpu.host.hopper import attention_forward_hopper, attention_forward_ws

    q, k, v = _inputs(d + heads + kv, 2, heads, kv, 640 if d == 128 else 512, d, dtype)
    calls = [lambda out, bn=bn: attention_forward_hopper(q, k, v, block_m=128, block_n=bn,
                                                  num_warps=8, out=out, causal=causal)
             for bn in (64, 128)]
    if q.shape[2] % 128 == 0:
        calls += [lambda out, s=s: attention_forward_ws(q, k, v, block_n=128, schedule=s,
                                                        out=out, causal=causal)
                  for s in ("ws", "lag", "pingpong")]
    for call in calls:
        o = torch.full_like(q, float("nan"))
        lse = torch.full(q.shape[:3], float("nan"), device="cuda")
        call((o, lse.view(-1)))
        _check(o, lse, q, k, v, causal, dtype)


@GLUON
@pytest.mark.gpu
@SM90
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("schedule", ["pws", "plag", "ppingpong"])
@pytest.mark.parametrize("d,heads,kv,stages", [(64, 16, 16, 2), (64, 16, 2, 3), (128, 16, 4, 2),
                                               (128, 8, 1, 2)])
def test_the_persistent_forward_computes_attention(d, heads, kv, schedule, stages, causal):
    """The persistent warp-specialised forward against float64: 4 x heads x 5 query tiles of
    128 rows, more work items than SMs, so that each program runs several and the ring, the
    turns and the Q and O buffers carry over from item to item."""
    from kernels_gpu.host.hopper import attention_forward_ws

    q, k, v = _inputs(d + heads + stages, 4, heads, kv, 640, d)
    assert 4 * heads * 5 > torch.cuda.get_device_properties(0).multi_processor_count
    o = torch.full_like(q, float("nan"))
    lse = torch.full(q.shape[:3], float("nan"), device="cuda")
    attention_forward_ws(q, k, v, block_n=128, schedule=schedule, stages=stages,
                         out=(o, lse.view(-1)), causal=causal)
    _check(o, lse, q, k, v, causal, torch.float16)


@GLUON
@pytest.mark.gpu
@SM90
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("schedule,stages", [("ws", 2), ("lag", 2), ("pingpong", 2),
                                             ("lag", 3), ("pingpong", 3)])
@pytest.mark.parametrize("heads,kv", [(3, 3), (4, 1)])
def test_the_d192_forward_computes_attention(dtype, schedule, stages, heads, kv, causal):
    """d 192 on three 64-column chunks, each schedule, dense and MQA; N 640 = 5 programs of 128
    rows and 10 key tiles of 64, so the ring wraps and causal programs have 2 - 10 tiles."""
    from kernels_gpu.host.hopper import attention_forward_ws

    q, k, v = _inputs(stages + heads, 2, heads, kv, 640, 192, dtype)
    o = torch.full_like(q, float("nan"))
    lse = torch.full(q.shape[:3], float("nan"), device="cuda")
    attention_forward_ws(q, k, v, block_n=64, schedule=schedule, stages=stages,
                         out=(o, lse.view(-1)), causal=causal)
    _check(o, lse, q, k, v, causal, dtype)


@GLUON
@pytest.mark.gpu
@SM90
def test_the_d192_forward_refuses_what_it_cannot_run():
    from kernels_gpu.host.hopper import attention_forward_ws

    q, k, v = _inputs(0, 1, 2, 2, 256, 192)
    with pytest.raises(ValueError):
        attention_forward_ws(q, k, v, block_n=128)  # d 192 takes BLOCK_N 64 only
    q, k, v = _inputs(0, 1, 3, 2, 256, 128)
    with pytest.raises(ValueError):
        attention_forward_ws(q, k, v, block_n=128)  # 3 query heads on 2 K/V heads


@GLUON
@pytest.mark.gpu
@SM90
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d,heads,kv,n", [(128, 8, 2, 1024), (128, 4, 1, 256), (64, 8, 1, 1024),
                                          (192, 4, 4, 1024), (192, 4, 1, 512),
                                          (128, 4, 2, 1000), (192, 4, 2, 200)])
def test_flash_attention_dispatches_grouped_and_d192_forwards(d, heads, kv, n, causal):
    """The public forward runs the Gluon forward `choose` names (bit for bit against the
    direct call), or the `tl` kernel where N is ragged; O, lse and the gradients through
    autograd (the backward the dispatch picks) against float64."""
    from kernels_gpu import flash_attention_forward
    from kernels_gpu.host import dispatch, hopper, launch

    q, k, v = _inputs(n + d, 1, heads, kv, n, d)
    do = torch.randn_like(q)
    choice = dispatch.choose_for(launch.problem_of(q, k, v, causal), False)
    o, lse = flash_attention_forward(q, k, v, causal)
    if n % 128:
        assert "fwd" not in choice and "fwd_ws" not in choice
    elif "fwd_ws" in choice:
        assert torch.equal(o, hopper.attention_forward_ws(q, k, v, None, *choice["fwd_ws"],
                                                          causal=causal))
    else:
        bm, bn, w = choice["fwd"]
        assert torch.equal(o, hopper.attention_forward_hopper(q, k, v, None, bm, bn, w,
                                                              causal=causal))
    if n % 128 == 0 and (d in (64, 128) or kv == heads):
        assert "fwd" in choice or "fwd_ws" in choice
    assert_forward_and_backward_match_float64(q, k, v, do, causal, o, lse)
