"""One check the kernel tests share: a forward's O and lse, and the public autograd backward from
the same inputs, against the float64 reference (fp16 tolerances of kernels_gpu.host.tolerance)."""
from __future__ import annotations

import torch

from kernels_gpu import attention_reference, flash_attention
from kernels_gpu.host.tolerance import lse_tolerance, output_tolerance, rel_err


def assert_forward_and_backward_match_float64(q, k, v, do, causal: bool, o, lse) -> None:
    """``o`` and ``lse`` (the forward's, from q, k, v) within fp16's forward tolerances of float64;
    then ``flash_attention``'s backward of ``do`` within its backward tolerance."""
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    ref_o, ref_lse = attention_reference(qr, kr, vr, causal)
    assert rel_err(o, ref_o.detach()) < output_tolerance(torch.float16, True)
    assert rel_err(lse, ref_lse.detach()) < lse_tolerance(torch.float16, True)
    ref_o.backward(do.double())
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    flash_attention(q, k, v, causal).backward(do)
    tol = output_tolerance(torch.float16, True, backward=True)
    assert max(rel_err(q.grad, qr.grad), rel_err(k.grad, kr.grad),
               rel_err(v.grad, vr.grad)) < tol
