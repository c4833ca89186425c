"""How far the kernels may be from a float64 reference, by (device, dtype): one table for the
tests, `bench --check` and the GPU test script.

Measure: relative Frobenius error ||x - ref|| / ||ref|| against attention in float64 on the
same (already rounded) inputs. Why each bound is what it is:

* fp32 in Triton's interpreter (CPU): the dots are exact fp32 products with fp32 sums, so only
  summation order differs from float64: ~1e-7 measured; bound 1e-5.
* fp32 on a CUDA GPU: tl.dot on fp32 operands runs TF32 on the tensor cores (operands rounded to
  a 10-bit mantissa, unit roundoff 2^-11 ~ 4.9e-4): measured 1.1e-3 - 1.9e-3 for O, dQ, dK, dV
  on an H200 (N 256 - 1024) and 1.4e-4 for lse; bounds 5e-3 (outputs) and 1e-3 (lse). The
  interpreter has no TF32, which is why one bound cannot serve both (the interpreter's 1e-5 fails
  fp32 tests on CUDA).
* fp16 (both): P and dS are rounded to fp16 (11-bit mantissa) before their dots: measured
  2.5e-4 - 3.1e-4; bound 2e-3 (outputs), 1e-5 (lse, computed in fp32 from fp32 scores).
* bf16 (both): 8-bit mantissa: measured 2.0e-3 - 6.8e-3; bound 2e-2.
* fp8 forward: P is rounded to the inputs' fp8 format for the PV product (e4m3: 3-bit mantissa,
  unit roundoff u = 2^-4; e5m2: 2 bits, u = 2^-3), and small P fall into fp8's subnormals:
  measured 0.045 (e4m3) and 0.063 (e5m2) at N 64; bound u + u/2 (0.094, 0.19).
Backward errors get 1.5x the forward bound (three chained products instead of two).
"""
from __future__ import annotations

import torch

__all__ = ["output_tolerance", "lse_tolerance", "rel_err"]

_FP8_U = {"float8_e4m3fn": 2.0 ** -4, "float8_e5m2": 2.0 ** -3}


def output_tolerance(dtype: torch.dtype, cuda: bool, backward: bool = False) -> float:
    """Bound on the relative error of O (or, backward=True, of dQ, dK, dV)."""
    name = str(dtype).removeprefix("torch.")
    if name in _FP8_U:
        tol = 1.5 * _FP8_U[name]
    else:
        tol = {"float32": 5e-3 if cuda else 1e-5, "float16": 2e-3, "bfloat16": 2e-2}[name]
    return 1.5 * tol if backward else tol


def lse_tolerance(dtype: torch.dtype, cuda: bool) -> float:
    """Bound on the relative error of the log-sum-exp (fp32 in every kernel)."""
    return 1e-3 if (cuda and dtype == torch.float32) else 1e-5


def rel_err(a: torch.Tensor, ref: torch.Tensor) -> float:
    """||a - ref|| / ||ref|| in float64, over the finite entries of ref (a row that sees no key
    has lse = -inf in both, which must match exactly: checked apart)."""
    a, ref = a.double(), ref.double().to(a.device)
    finite = torch.isfinite(ref)
    if not finite.all():
        if not torch.equal(a[~finite], ref[~finite]):
            return float("inf")
        a, ref = a[finite], ref[finite]
    den = ref.norm().item()
    num = (a - ref).norm().item()
    return num / den if den else num
