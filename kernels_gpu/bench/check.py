"""The benchmark's first two steps on the GPU: check every shape against float64 (and SDPA),
and precompile + check every autotuning candidate in its own subprocess.

check(): ours and SDPA (flash backend; the math backend where flash refuses the case) against
a float64 reference computed on the GPU, relative Frobenius error, with the bounds of
kernels_gpu.host.tolerance; every case of the shapes users run: head dims 64 .. 256 (padded ones
too), N a tile multiple or not, causal bottom-right/top-left, N_q != N_k, grouped-query heads,
fp16/bf16/fp32, and the fp8 forward.

precompile(): each candidate config of each (pass, head dim, causal, group, dtype) compiled
and run on a small shape in a subprocess (a compiler crash loses only that one); a candidate
that fails or is wrong is excluded from autotuning (configs.exclude_candidate).
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import subprocess
import sys
import time
from typing import Any

import torch
import torch.nn.functional as F

from ..host import configs as cfgs
from ..host import flash_attn as fa
from ..host.configs import KernelConfig
from ..host.tolerance import lse_tolerance, output_tolerance, rel_err

__all__ = ["check", "compile_one", "precompile", "sdpa", "CHECK_CASES"]

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32,
          "e5m2": torch.float8_e5m2, "e4m3": torch.float8_e4m3fn}

# (d, N_q, N_k, H, H_kv, causal, dtype)
CHECK_CASES: list[tuple[int, int, int, int, int, bool | str, str]] = ([(d, n, n, 4, 4, c, "fp16") for d in (64, 128) for n in (1024, 1000)
                for c in (False, True)]
               + [(d, 1000, 1000, 4, 4, True, "fp16") for d in (80, 96, 192, 256)]
               + [(64, 512, 512, 4, 4, True, "bf16"), (128, 384, 384, 4, 4, False, "bf16"),
                  (64, 256, 256, 4, 4, True, "fp32"),
                  (128, 1024, 4096, 8, 2, True, "fp16"), (128, 2048, 512, 8, 1, True, "fp16"),
                  (64, 777, 1500, 8, 8, "top_left", "bf16"), (96, 1024, 1024, 8, 2, False, "fp16"),
                  (64, 1024, 1024, 4, 4, True, "e5m2"), (128, 2048, 2048, 4, 4, False, "e4m3"),
                  (96, 1024, 1536, 4, 2, True, "e4m3")])


def sdpa(q, k, v, causal, backend=None):
    """torch SDPA with our conventions: grouped heads (enable_gqa), causal bottom-right for
    N_q != N_k (causal_lower_right), is_causal for top-left or square."""
    from torch.nn.attention import sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right

    kw = {}
    if k.shape[1] != q.shape[1]:
        kw["enable_gqa"] = True
    nq, nk = q.shape[2], k.shape[2]
    if causal and (causal == "top_left" or nq == nk):
        kw["is_causal"] = True
    elif causal:
        kw["attn_mask"] = causal_lower_right(nq, nk)
    if backend is None:
        return F.scaled_dot_product_attention(q, k, v, **kw)
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, **kw)


def _grad(t: torch.Tensor) -> torch.Tensor:
    """``t``'s gradient, which a backward pass through it has filled."""
    if t.grad is None:
        raise ValueError("the backward pass left no gradient")
    return t.grad


def _check_case(d, nq, nk, h, hkv, causal, dt, log) -> bool:
    from torch.nn.attention import SDPBackend

    dtype = DTYPES[dt]
    fp8 = dt in ("e5m2", "e4m3")
    base = torch.float16 if fp8 else dtype
    q = torch.randn(2, h, nq, d, device="cuda", dtype=base, requires_grad=not fp8)
    k, v = (torch.randn(2, hkv, nk, d, device="cuda", dtype=base, requires_grad=not fp8)
            for _ in range(2))
    if fp8:
        q, k, v = (t.to(dtype) for t in (q, k, v))
    do = torch.randn(2, h, nq, d, device="cuda", dtype=base)
    qr, kr, vr = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref_o, ref_lse = fa.attention_reference(qr, kr, vr, causal)
    o, lse = fa.flash_attention_forward(q.detach(), k.detach(), v.detach(), causal)
    errs = {"O": rel_err(o, ref_o.detach()), "lse": rel_err(lse, ref_lse.detach())}
    good = errs["O"] < output_tolerance(dtype, True) and errs["lse"] < lse_tolerance(dtype, True)
    them = {}
    if not fp8:
        ref_o.backward(do.double())
        grads = torch.autograd.grad(fa.flash_attention(q, k, v, causal), (q, k, v), do)
        for name, g, r in zip(("dQ", "dK", "dV"), grads, (_grad(qr), _grad(kr), _grad(vr))):
            errs[name] = rel_err(g, r)
            good &= errs[name] < output_tolerance(dtype, True, backward=True)
        backend = SDPBackend.FLASH_ATTENTION if dtype != torch.float32 else None
        try:
            so = sdpa(q, k, v, causal, backend)
        except RuntimeError:  # flash does not take this case: the default dispatch
            so = sdpa(q, k, v, causal)
        them["O"] = rel_err(so, ref_o.detach())
    good &= all(torch.isfinite(t).all().item() for t in (o,))
    cells = " | ".join(f"{errs.get(x, float('nan')):.1e}" for x in ("O", "lse", "dQ", "dK", "dV"))
    log(f"| {d} | {nq} | {nk} | {h}/{hkv} | {causal} | {dt} | {cells} | "
        f"{them.get('O', float('nan')):.1e} | {'yes' if good else 'NO'} |")
    return good


def check(log=print, cases=CHECK_CASES) -> bool:
    """Every case against float64 (exit status 1 of the bench if one fails)."""
    torch.manual_seed(0)
    log("| d | N_q | N_k | H/H_kv | causal | dtype | O | lse | dQ | dK | dV | SDPA O | ok |")
    log("|" + "---|" * 13)
    ok = True
    for case in cases:
        try:
            d, nq, nk, h, hkv, causal, dt = case
            ok &= _check_case(d, nq, nk, h, hkv, causal, dt, log)
        except Exception as e:  # noqa: BLE001 - report and go on with the other cases
            ok = False
            log(f"| {' | '.join(map(str, case))} | ERROR {type(e).__name__}: {str(e)[:300]} |")
    return ok


def compile_one(spec: dict) -> dict:
    """Compile + run one candidate on a small even shape and check it against float64."""
    pass_, d, causal = spec["pass"], spec["d"], spec["causal"]
    group, dt = spec.get("group", 1), spec.get("dtype", "fp16")
    cfg = KernelConfig.from_dict(spec["config"])
    torch.manual_seed(1)
    n, h = 256, max(2, group)
    dtype = DTYPES[dt]
    q = torch.randn(1, h, n, d, device="cuda", dtype=torch.float16)
    k, v, do = (torch.randn(1, h // group, n, d, device="cuda", dtype=torch.float16)
                for _ in range(3))
    do = torch.randn_like(q)
    if dt != "fp16":
        q, k, v = (t.to(dtype) for t in (q, k, v))
    t0 = time.time()
    if pass_ == "fwd":
        o, lse = fa.flash_attention_forward(q, k, v, causal, config=cfg)
        ref, _ = fa.attention_reference(q, k, v, causal)
        err, tol = rel_err(o, ref), 2 * output_tolerance(dtype, True)
    else:
        o, lse = fa.flash_attention_forward(q, k, v, causal, block_m=64, block_n=64)
        kw: dict[str, Any] = {"dkdv_config": cfg} if pass_ == "bwd_dkdv" else {"dq_config": cfg}
        dq, dk, dv = fa.flash_attention_backward(q, k, v, o, lse, do, causal, **kw)
        qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
        fa.attention_reference(qr, kr, vr, causal)[0].backward(do.double())
        err = max(rel_err(dk, _grad(kr)), rel_err(dv, _grad(vr))) if pass_ == "bwd_dkdv" else \
            rel_err(dq, _grad(qr))
        if cfg.fused_dq:  # the dK/dV launch wrote dQ too
            err = max(err, rel_err(dq, _grad(qr)))
        tol = 2 * output_tolerance(dtype, True, backward=True)
    torch.cuda.synchronize()
    return {"err": err, "tol": tol, "seconds": time.time() - t0}


def precompile(specs: list[dict], log=print, workers: int = 14) -> list[dict]:
    """compile_one for every spec, each in a subprocess; failing candidates are excluded."""
    def run(spec):
        t0 = time.time()
        try:
            r = subprocess.run([sys.executable, "-m", "kernels_gpu.bench", "--compile-one",
                                json.dumps(spec)], capture_output=True, text=True, timeout=300)
            lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
            res = json.loads(lines[-1][7:]) if lines else {"error": (r.stderr or "")[-400:]}
        except subprocess.TimeoutExpired:
            res = {"error": "timeout"}
        res["wall"] = time.time() - t0
        return {**spec, **res}

    t0 = time.time()
    with cf.ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(run, specs))
    for r in results:
        cfg = KernelConfig.from_dict(r["config"])
        bad = "error" in r or not (r["err"] < r["tol"])
        if bad:
            eb = {"fp32": 4, "e5m2": 1, "e4m3": 1}.get(r.get("dtype", "fp16"), 2)
            cfgs.exclude_candidate(r["pass"], r["d"], r["causal"], cfg, eb)
        status = ("EXCLUDED " + str(r.get("error", f"err={r.get('err')}"))[-300:]) if bad else \
            f"ok err={r['err']:.1e}"
        log(f"  precompile {r['pass']:8s} d={r['d']} causal={int(r['causal'])} "
            f"group={r.get('group', 1)} {r.get('dtype', 'fp16')} {cfg.short():20s} "
            f"{r['wall']:5.1f}s {status}")
    log(f"precompiled {len(specs)} candidates in {time.time() - t0:.0f}s")
    return results
