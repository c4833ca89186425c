"""flash_attention as a torch custom operator (kernels_gpu::flash_attn_fwd / _bwd): fake tensors,
torch.library.opcheck, torch.compile(fullgraph=True), torch.export, CUDA-graph capture, and the
SDPA-signature drop-in trained inside a nanoGPT-style block against torch's SDPA.

On a machine without CUDA the kernels run in Triton's interpreter (tiny sizes); the GPU tests
need a CUDA device."""
from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

from kernels_gpu import (  # noqa: E402
    SDPAUnsupported,
    attention_reference,
    flash_attention,
    scaled_dot_product_attention,
)
from kernels_gpu.host.tolerance import output_tolerance, rel_err  # noqa: E402

CUDA = torch.cuda.is_available()
DEV = "cuda" if CUDA else "cpu"
GPU = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
CPU_ONLY = pytest.mark.skipif(CUDA, reason="the interpreter's tiny-size check (CPU machines)")


def _qkv(b=1, h=2, hkv=None, n=32, d=16, dtype=torch.float32, seed=0, grad=False):
    g = torch.Generator().manual_seed(seed)
    hkv = h if hkv is None else hkv
    shapes = ((b, h, n, d), (b, hkv, n, d), (b, hkv, n, d))
    return tuple(torch.randn(s, generator=g).to(dtype).to(DEV).requires_grad_(grad)
                 for s in shapes)


def test_the_operators_are_registered_with_their_schemas():
    fwd = torch.ops.kernels_gpu.flash_attn_fwd.default._schema
    bwd = torch.ops.kernels_gpu.flash_attn_bwd.default._schema
    assert [a.name for a in fwd.arguments] == ["q", "k", "v", "causal", "sm_scale", "block_m",
                                               "block_n"]
    assert len(fwd.returns) == 2 and len(bwd.returns) == 3
    assert [a.name for a in bwd.arguments][:6] == ["do", "q", "k", "v", "o", "lse"]


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_fake_tensors_give_the_outputs_shapes_and_dtypes(dtype):
    """Under FakeTensorMode no kernel runs: o has q's shape and dtype, lse (B, H, N_q) fp32,
    the backward's grads their inputs' shapes (grouped heads: dk, dv have K/V's)."""
    with FakeTensorMode():
        q = torch.empty(2, 4, 48, 32, dtype=dtype, device=DEV)
        k = torch.empty(2, 2, 40, 32, dtype=dtype, device=DEV)
        o, lse = torch.ops.kernels_gpu.flash_attn_fwd(q, k, k, "top_left", None, None, None)
        assert o.shape == q.shape and o.dtype == dtype
        assert lse.shape == (2, 4, 48) and lse.dtype == torch.float32
        dq, dk, dv = torch.ops.kernels_gpu.flash_attn_bwd(o, q, k, k, o, lse, "none", 0.5,
                                                          None, None)
        assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == k.shape


@pytest.mark.slow
def test_fake_tensors_refuse_bad_shapes_before_any_kernel():
    with FakeTensorMode():
        q = torch.empty(1, 3, 16, 16, device=DEV)
        k = torch.empty(1, 2, 16, 16, device=DEV)
        with pytest.raises(ValueError, match="multiple of key/value heads"):
            torch.ops.kernels_gpu.flash_attn_fwd(q, k, k, "none", None, None, None)


def test_a_bad_causal_value_is_a_value_error():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="causal must be"):
        flash_attention(q, k, v, causal="upper")


@pytest.mark.interpreter
@pytest.mark.slow
@pytest.mark.parametrize("causal", ["none", "bottom_right", "top_left"])
def test_opcheck_passes(causal):
    """torch.library.opcheck: the schema, the fake implementation against the real one, the
    autograd registration and AOT dispatch (static and dynamic shapes)."""
    q, k, v = _qkv(n=24, grad=True)
    torch.library.opcheck(torch.ops.kernels_gpu.flash_attn_fwd.default,
                          (q, k, v, causal, None, None, None))
    o, lse = torch.ops.kernels_gpu.flash_attn_fwd(q.detach(), k.detach(), v.detach(), causal,
                                                  None, None, None)
    torch.library.opcheck(torch.ops.kernels_gpu.flash_attn_bwd.default,
                          (torch.randn_like(o), q.detach(), k.detach(), v.detach(), o, lse,
                           causal, None, None, None))


def _model_fn(q, k, v):
    return flash_attention(q, k, v, causal=True)


def _compiled_equals_eager(compiled, q, k, v) -> None:
    """The compiled function's output and gradients (for one random dO) equal eager's bit for
    bit: the same kernels run inside the operator."""
    out = compiled(q, k, v)
    do = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v), do)
    ref = _model_fn(q, k, v)
    ref_grads = torch.autograd.grad(ref, (q, k, v), do)
    assert torch.equal(out, ref)
    for g, r in zip(grads, ref_grads, strict=False):
        assert torch.equal(g, r)


@pytest.mark.interpreter
@pytest.mark.slow
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_compile_fullgraph_traces_forward_and_backward_like_eager(dynamic):
    """torch.compile(fullgraph=True) raises on any graph break; the compiled forward and its
    gradients equal the eager ones (the same kernels run inside the operator). On CPU the
    aot_eager backend (AOT autograd, no code generation); on a GPU, inductor."""
    torch._dynamo.reset()
    backend = "inductor" if CUDA else "aot_eager"
    dtype = torch.float16 if CUDA else torch.float32
    q, k, v = _qkv(n=128 if CUDA else 32, d=64 if CUDA else 16, dtype=dtype, grad=True)
    _compiled_equals_eager(torch.compile(_model_fn, fullgraph=True, backend=backend,
                                         dynamic=dynamic), q, k, v)


@pytest.mark.interpreter
def test_dynamo_sees_one_operator_and_no_graph_break():
    """Dynamo's own account of the trace: one graph, no break, the forward operator in it."""
    torch._dynamo.reset()
    q, k, v = _qkv()
    explained = torch._dynamo.explain(_model_fn)(q, k, v)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    code = explained.graphs[0].code
    assert "kernels_gpu.flash_attn_fwd" in code


@pytest.mark.interpreter
@pytest.mark.slow
def test_torch_export_exports_the_operator():
    class Attn(nn.Module):
        def forward(self, q, k, v):
            return flash_attention(q, k, v, causal="top_left")

    q, k, v = _qkv()
    ep = torch.export.export(Attn(), (q, k, v))
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert any("kernels_gpu.flash_attn_fwd" in t for t in targets), targets
    assert torch.equal(ep.module()(q, k, v), Attn()(q, k, v))


# --- the SDPA signature -------------------------------------------------------------------------

@pytest.mark.interpreter
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("gqa", [False, True])
def test_sdpa_signature_matches_torch_sdpa(is_causal, gqa):
    q, k, v = _qkv(h=4, hkv=2 if gqa else 4, n=32, d=16)
    ours = scaled_dot_product_attention(q, k, v, is_causal=is_causal, enable_gqa=gqa)
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                         is_causal=is_causal, enable_gqa=gqa)
    assert rel_err(ours, ref) < output_tolerance(q.dtype, CUDA)


@pytest.mark.interpreter
def test_sdpa_scale_is_the_softmax_scale():
    q, k, v = _qkv()
    ours = scaled_dot_product_attention(q, k, v, scale=0.3)
    ref, _ = attention_reference(q.double(), k.double(), v.double(), False, 0.3)
    assert rel_err(ours, ref) < output_tolerance(q.dtype, CUDA)


@pytest.mark.parametrize("call,argument", [
    (lambda q, k, v: dict(attn_mask=torch.ones(32, 32, dtype=torch.bool, device=DEV)),
     "attn_mask"),
    (lambda q, k, v: dict(dropout_p=0.1), "dropout_p"),
    (lambda q, k, v: dict(query=q[0]), "query"),
    (lambda q, k, v: dict(value=v[..., :8]), "value"),
    (lambda q, k, v: dict(key=k[:, :1], value=v[:, :1]), "enable_gqa"),
])
def test_sdpa_names_what_it_does_not_compute_and_falls_back_by_the_switch(call, argument,
                                                                         monkeypatch):
    """Unsupported arguments: SDPAUnsupported naming the argument (before any kernel runs);
    fallback=True or KERNELS_GPU_SDPA_FALLBACK=1: torch's result exactly."""
    q, k, v = _qkv()
    args = dict(query=q, key=k, value=v)
    args.update(call(q, k, v))
    with pytest.raises(SDPAUnsupported) as err:
        scaled_dot_product_attention(**args)
    assert err.value.argument == argument and err.value.suggestion
    if argument in ("dropout_p", "enable_gqa"):
        return  # dropout is random; torch itself refuses unequal heads without enable_gqa
    want = F.scaled_dot_product_attention(**args)
    assert torch.equal(scaled_dot_product_attention(**args, fallback=True), want)
    monkeypatch.setenv("KERNELS_GPU_SDPA_FALLBACK", "1")
    assert torch.equal(scaled_dot_product_attention(**args), want)


# --- a nanoGPT-style block trained with each attention -------------------------------------------

class Block(nn.Module):
    """nanoGPT's transformer block: pre-norm causal self-attention and an MLP, `attn` the SDPA."""

    def __init__(self, dim: int, heads: int, attn) -> None:
        super().__init__()
        self.heads, self.attn = heads, attn
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.c_attn, self.c_proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = self.attn(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.c_proj(y)
        return x + self.mlp(self.ln2(x))


def _train(attn, steps: int, dim: int, heads: int, t: int, compile_: bool = False) -> list[float]:
    torch.manual_seed(0)
    model = Block(dim, heads, attn).to(DEV)
    head = nn.Linear(dim, dim).to(DEV)
    params = [*model.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=1e-2)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, t, dim, generator=g).to(DEV)
    target = torch.randn(2, t, dim, generator=g).to(DEV)
    step = torch.compile(lambda x: head(model(x)), fullgraph=True) if compile_ else \
        (lambda x: head(model(x)))
    losses = []
    for _ in range(steps):
        loss = F.mse_loss(step(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.interpreter
@pytest.mark.slow
def test_a_nanogpt_block_trains_with_sdpa_losses():
    """Five AdamW steps of the same block, same init and data: the losses with this kernel equal
    torch's SDPA's to rounding (fp32; on a GPU the kernel's dots are tf32), and they fall."""
    size = dict(dim=128, heads=2, t=256) if CUDA else dict(dim=32, heads=2, t=16)
    ours = _train(scaled_dot_product_attention, 5, **size)
    ref = _train(F.scaled_dot_product_attention, 5, **size)
    tol = 2e-3 if CUDA else 1e-5
    assert ours[-1] < ours[0]
    for a, b in zip(ours, ref, strict=False):
        assert abs(a - b) <= tol * abs(b), (ours, ref)


@GPU
@pytest.mark.gpu
def test_a_compiled_nanogpt_block_trains_like_eager():
    size = dict(dim=128, heads=2, t=256)
    eager = _train(scaled_dot_product_attention, 5, **size)
    torch._dynamo.reset()
    compiled = _train(scaled_dot_product_attention, 5, compile_=True, **size)
    for a, b in zip(compiled, eager, strict=False):
        assert abs(a - b) <= 1e-3 * abs(b), (compiled, eager)


@GPU
@pytest.mark.gpu
@pytest.mark.parametrize("d,causal", [(64, False), (128, True)])
def test_reduce_overhead_captures_the_operator_in_cuda_graphs(d, causal):
    """mode='reduce-overhead' (inductor's CUDA graphs): forward and backward replay and give
    the eager results; the graphs were captured (cudagraph trees' counter)."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    q, k, v = _qkv(b=2, h=4, n=512, d=d, dtype=torch.float16, grad=True)

    def f(q, k, v):
        return flash_attention(q, k, v, causal=causal).float().square().sum()

    compiled = torch.compile(f, mode="reduce-overhead", fullgraph=True)
    for _ in range(3):  # warm-up, record, replay
        out = compiled(q, k, v)
        grads = torch.autograd.grad(out, (q, k, v))
    ref = f(q, k, v)
    ref_grads = torch.autograd.grad(ref, (q, k, v))
    assert torch.equal(out, ref)
    for g, r in zip(grads, ref_grads, strict=False):
        assert torch.equal(g, r)
    assert counters["inductor"]["cudagraph_skips"] == 0


@GPU
@pytest.mark.gpu
def test_compiled_hopper_path_matches_eager_on_the_dispatched_kernels():
    """d 128 causal N 1k fp16: on an sm_90 GPU the Gluon kernels the dispatch picks run inside
    the compiled graph (inductor), bit for bit the eager results."""
    torch._dynamo.reset()
    q, k, v = _qkv(b=1, h=4, n=1024, d=128, dtype=torch.float16, grad=True)
    _compiled_equals_eager(torch.compile(_model_fn, fullgraph=True), q, k, v)


@pytest.mark.interpreter
@pytest.mark.slow
@CPU_ONLY
def test_the_how_to_page_shows_what_the_example_prints():
    """docs/how-to/use-in-a-model.md shows `python examples/use_in_a_model.py` and, in the
    block right under it, exactly what it prints (on a CPU: the interpreter)."""
    import re
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    page = open(os.path.join(root, "docs", "how-to", "use-in-a-model.md"), encoding="utf-8").read()
    m = re.search(r"```bash\npython examples/use_in_a_model.py\n```\n\n```text\n(.*?)```", page,
                  re.S)
    assert m, "the page shows the command and its output block"
    env = dict(os.environ, PYTHONPATH=root)
    r = subprocess.run([sys.executable, "examples/use_in_a_model.py"], cwd=root, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout == m.group(1)
