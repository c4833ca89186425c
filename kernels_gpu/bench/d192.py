"""The d 192 backward study: the chunked Gluon backward
(kernels.hopper_bwd_chunked, head dim as 3 x 64 columns, no padding) beside the `tl` kernels
padded to 256 on chip (the `tl` path, column "old"), the d 256 path on inputs padded to 256 on the host,
SDPA-flash and cuDNN, in one run on the GPU.

    python -m kernels_gpu.bench.studies d192 [--out DIR] [--ns 1024,...,16384] [--causal 1,0]
                                     [--repeats 3] [--candidates g-n64,g-m32,...]

Each point (fp16, H 32, B = 16384 / N, the frontier grid): the whole backward of every variant
(median of `--repeats` do_bench medians), its largest gradient difference to the `tl` path's,
and the launches alone (the `tl` path's dK/dV and dQ, each chunked dV / dK / dQ block config) to
say where the time goes. Writes d192.json and d192.md.
"""
from __future__ import annotations

import argparse
import math
import os
from functools import partial
from typing import Any

import torch

from ..host import dispatch
from ..host import flash_attn as fa
from ..host import hopper_d192 as g
from ..host import launch as L
from . import study
from .run import attention_flops

H = 32
TOKENS = 16384
D = 192
DV_BLOCKS = ((64, 64, 4, 2), (32, 64, 4, 2), (64, 128, 8, 2))
DK_BLOCKS = ((64, 64, 4, 2), (32, 64, 4, 2), (64, 128, 8, 2))
DQ_BLOCKS = ((64, 64, 4, 2), (64, 32, 4, 2), (128, 64, 8, 2), (128, 32, 8, 2))


def _padded(qd, kd, vd, o, lse, do, causal):
    """The d 256 backward on inputs zero-padded to 256 columns on the host, sliced back."""
    pad = [torch.nn.functional.pad(t, (0, 256 - D)) for t in (qd, kd, vd, o, do)]
    grads = fa.flash_attention_backward(pad[0], pad[1], pad[2], pad[3], lse, pad[4], causal,
                                        sm_scale=1.0 / math.sqrt(D))
    return tuple(t[..., :D] for t in grads)


def _launches(row, p, qd, kd, vd, o, lse, do, causal, repeats):
    """Each launch alone, ms: the `tl` path's two, every chunked block config."""
    scale = 1.0 / math.sqrt(D)
    t_kv, t_q = fa._backward_timers(p, qd, kd, vd, o, lse, do, scale)
    row["launch_ms"] = {"old dkdv": t_kv(L.resolve_config("bwd_dkdv", p)),
                        "old dq": t_q(L.resolve_config("bwd_dq", p))}
    delta = torch.empty(p.batch, p.heads, p.nq, device="cuda", dtype=torch.float32)
    L.launch_preprocess(p, o, do, delta)
    dk, dv, dq = (torch.empty(p.batch * p.heads * p.nq, D, device="cuda",
                              dtype=qd.dtype) for _ in range(3))
    row["launch_ms"]["preprocess"] = study.median_ms(
        lambda: L.launch_preprocess(p, o, do, delta), repeats)[0]
    jobs = [(f"dv M{b[0]}N{b[1]}w{b[2]}s{b[3]}", lambda b=b: g.attention_backward_dkdv_d192(
        qd, kd, vd, do, lse, delta, scale, causal, *b, 1, out=(dk, dv))) for b in DV_BLOCKS]
    jobs += [(f"dk M{b[0]}N{b[1]}w{b[2]}s{b[3]}", lambda b=b: g.attention_backward_dkdv_d192(
        qd, kd, vd, do, lse, delta, scale, causal, *b, 2, out=(dk, dv))) for b in DK_BLOCKS]
    jobs += [(f"dq M{b[0]}N{b[1]}w{b[2]}s{b[3]}", lambda b=b: g.attention_backward_dq_d192(
        qd, kd, vd, do, lse, delta, scale, causal, *b, out=dq)) for b in DQ_BLOCKS]
    for name, fn in jobs:
        try:
            row["launch_ms"][name] = study.median_ms(fn, repeats)[0]
        except Exception as e:  # noqa: BLE001 - a config that fails is reported
            row["launch_ms"][name] = f"{type(e).__name__}: {str(e)[:160]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_gpu.bench.studies d192",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--ns", default="1024,2048,4096,8192,16384")
    ap.add_argument("--causal", default="1,0")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--candidates", default=",".join(g.CANDIDATES))
    ap.add_argument("--no-launches", action="store_true")
    args = ap.parse_args(argv)
    if not study.needs_cuda("d192"):
        return 2
    os.makedirs(args.out, exist_ok=True)
    cands = {c: g.CANDIDATES[c] for c in args.candidates.split(",") if c}
    rows = []
    for causal in (c == "1" for c in args.causal.split(",")):
        for n in (int(x) for x in args.ns.split(",")):
            b = TOKENS // n
            torch.manual_seed(n)
            q = torch.randn(b, H, n, D, device="cuda", dtype=torch.float16, requires_grad=True)
            k, v = (torch.randn_like(q).requires_grad_() for _ in range(2))
            do = torch.randn_like(q)
            row: dict[str, Any] = {"d": D, "n": n, "batch": b, "causal": causal, "heads": H, "ms": {},
                   "runs": {}, "err": {}, "dispatch": None}
            qd, kd, vd = q.detach(), k.detach(), v.detach()
            o, lse = fa.flash_attention_forward(qd, kd, vd, causal)
            p = L.problem_of(qd, kd, vd, causal)
            old_cfgs: dict[str, Any] = dict(dkdv_config=L.resolve_config("bwd_dkdv", p),
                            dq_config=L.resolve_config("bwd_dq", p))
            disp = dispatch.choose_for(p, False).get("bwd_d192")
            row["dispatch"] = disp.label() if isinstance(disp, g.D192Config) else None
            # each variant's call, its tensors bound now (they are freed at the end of the loop)
            variants: dict[str, Any] = {
                "old": partial(fa.flash_attention_backward, qd, kd, vd, o, lse, do, causal,
                               **old_cfgs),
                "pad256": partial(_padded, qd, kd, vd, o, lse, do, causal),
                "public": partial(fa.flash_attention_backward, qd, kd, vd, o, lse, do, causal)}
            for name, cfg in cands.items():
                variants[name] = partial(g.run_backward_d192, p, qd, kd, vd, o, lse, do,
                                         1.0 / math.sqrt(D), cfg,
                                         lambda what, ts, launch, p_: launch())
            ref = None
            for name, fn in variants.items():
                try:
                    grads = fn()
                    if ref is None:
                        ref = [t.float() for t in grads]
                    row["err"][name] = max(float((t.float() - r).abs().max()) /
                                           max(float(r.abs().max()), 1e-6)
                                           for t, r in zip(grads, ref))
                    del grads
                except Exception as e:  # noqa: BLE001 - reported, the study goes on
                    row["ms"][name], row["runs"][name] = float("nan"), [
                        f"{type(e).__name__}: {str(e)[:160]}"]
                    continue
                study.time_into(row, name, fn, args.repeats)
            study.time_sdpa_backward(row, q, k, v, do, causal, args.repeats)
            if not args.no_launches:
                _launches(row, p, qd, kd, vd, o, lse, do, causal, args.repeats)
            flops = attention_flops(b, H, n, D, causal, "bwd")
            row["tflops"] = {k_: flops / ms * 1e-9 for k_, ms in row["ms"].items()}
            rows.append(row)
            ours = {nm: ms for nm, ms in row["ms"].items()
                    if nm not in ("flash", "cudnn") and ms == ms}
            best = min(ours, key=ours.__getitem__)
            print(f"N={n} causal={int(causal)}: old {row['ms']['old']:.3f} flash "
                  f"{row['ms']['flash']:.3f} cudnn {row['ms']['cudnn']:.3f} | best {best} "
                  f"{ours[best]:.3f} = {row['ms']['flash'] / ours[best]:.2f}x flash | "
                  + " ".join(f"{k_}={v_ if isinstance(v_, str) else round(v_, 3)}"
                             for k_, v_ in row.get("launch_ms", {}).items()), flush=True)
            study.save_rows(args.out, "d192", rows)
            del q, k, v, do, o, lse, qd, kd, vd, ref
            torch.cuda.empty_cache()
    with open(os.path.join(args.out, "d192.md"), "w") as f:
        f.write(render(rows))
    return 0


render = study.render_points  # backward ms of every variant, against flash and cuDNN

