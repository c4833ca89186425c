"""The public backward against its own launches called directly, interleaved (causal d 128
N 16k once took 14.07 ms through `flash_attention_backward` and 12.63 ms as the bench's direct
launches; not seen non-causal). Each round times, in a rotated
order, (a) `flash_attention_backward`, (b) the same dispatched launches with new output
buffers each call, (c) with buffers made once, (d) the autograd path (`flash_attention(...)
.backward`), so that order and clock drift cannot make a gap. Prints a Markdown table and
writes JSON (`--out`).

    python -m kernels_gpu.bench.pathgap --n 4096,16384 --rounds 5 --out pathgap.json
"""
from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

import torch

from ..host import dispatch, hopper
from ..host import flash_attn as fa
from ..host import launch as L


def variants(d: int, n: int, causal: bool) -> dict:
    b, h = max(1, 16384 // n), 32
    torch.manual_seed(n + causal)
    q, k, v, do = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16)
                   for _ in range(4))
    o, lse = fa.flash_attention_forward(q, k, v, causal)
    p = L.problem_of(q, k, v, causal)
    scale = fa.softmax_scale(None, d)
    choice = dispatch.choose_for(p, False)
    kv, dqc = choice.get("bwd_dkdv"), choice.get("bwd_dq")
    dq_cfg = L.honour("bwd_dq", p, L.resolve_config("bwd_dq", p))
    fixed: dict[str, Any] = dict(delta=L.new_empty((b, h, n), q, torch.float32), dq=torch.empty_like(q),
                 dk=torch.empty_like(k), dv=torch.empty_like(v))

    def direct(bufs=None):
        bufs = bufs or dict(delta=L.new_empty((b, h, n), q, torch.float32),
                            dq=torch.empty_like(q), dk=torch.empty_like(k),
                            dv=torch.empty_like(v))
        L.launch_preprocess(p, o, do, bufs["delta"])
        hopper.attention_backward_dkdv_hopper(q, k, v, do, lse, bufs["delta"], scale, causal,
                                              *kv, out=(bufs["dk"].view(-1, d),
                                                        bufs["dv"].view(-1, d)))
        if dqc is not None:
            hopper.attention_backward_dq_hopper(q, k, v, do, lse, bufs["delta"], scale, causal,
                                                *dqc, out=bufs["dq"].view(-1, d))
        else:
            L.launch_dq(p, q, k, v, do, bufs["dq"], lse, bufs["delta"], scale, dq_cfg)

    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
    out = fa.flash_attention(qg, kg, vg, causal)
    return {"public": lambda: fa.flash_attention_backward(q, k, v, o, lse, do, causal),
            "direct, new buffers": direct,
            "direct, fixed buffers": lambda: direct(fixed),
            "autograd": lambda: torch.autograd.grad(out, (qg, kg, vg), do, retain_graph=True),
            "_meta": {"dkdv": kv, "dq": dqc, "tl_dq": dq_cfg.short(), "batch": b}}


def main(argv=None) -> int:
    import triton
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--n", default="4096,16384")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    rows = []
    for n in [int(x) for x in a.n.split(",")]:
        for causal in (True, False):
            fns = variants(a.d, n, causal)
            meta = fns.pop("_meta")
            names = list(fns)
            runs: dict[str, list[float]] = {k: [] for k in names}
            for r in range(a.rounds):
                for k in names[r % len(names):] + names[:r % len(names)]:
                    runs[k].append(triton.testing.do_bench(fns[k], warmup=10, rep=50,
                                                           return_mode="median"))
            rows.append({"d": a.d, "n": n, "causal": causal, **meta, "runs": runs,
                         "ms": {k: statistics.median(v) for k, v in runs.items()}})
            print(f"d={a.d} N={n} causal={int(causal)} " + ", ".join(
                f"{k} {statistics.median(v):.3f} (min {min(v):.3f} max {max(v):.3f})"
                for k, v in runs.items()), flush=True)
    print("| d | N | causal | " + " | ".join(names) + " | public ÷ direct |")
    print("|---|---|---|" + "---|" * (len(names) + 1))
    for row in rows:
        print(f"| {row['d']} | {row['n']} | {'yes' if row['causal'] else 'no'} | " + " | ".join(
            f"{row['ms'][k]:.3f}" for k in names) +
            f" | {row['ms']['public'] / row['ms']['direct, new buffers']:.3f} |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
