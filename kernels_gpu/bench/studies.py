"""The kernel studies, as data read by one runner (`study.run`): each times one kernel's
candidate configs (or one pass's variants) at a grid of points beside the `tl` path,
SDPA-flash and cuDNN (medians of do_bench, failures recorded, rows saved after each point).

    python -m kernels_gpu.bench.studies NAME [--out DIR] [--repeats 3] [--dims ..] [--ns ..]
                                             [--causal [1,0]] [the study's options]

NAME: hopper (the Gluon forwards; --ws the warp-specialised schedules), hopper_bwd (the Gluon
dK/dV and dQ), hopper_bwd_ws (the warp-specialised dK/dV and its fused dQ; --public through
the public path), d192 (the chunked d 192 backward's candidates and launches), d256 (the
large-head-dim `tl` backward variants), gqa (the grouped-query backward variants).
`NAME --help` lists a study's options and defaults.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from functools import partial
from typing import Any

import torch

from ..host import configs as cfgs
from ..host import dispatch
from ..host import flash_attn as fa
from ..host import hopper_d192 as g192
from ..host import launch as L
from ..host.configs import KernelConfig
from . import study
from .check import precompile
from .studies_gluon import GLUON_STUDIES
from .study import Point, Study, check_into, finish, rel_max, time_into, time_sdpa_backward

__all__ = ["STUDIES", "main", "d256_variants", "gqa_variants", "gqa_points"]


def _backward_variants(row: dict, variants: dict[str, Any], repeats: int, err=True) -> None:
    """Each variant (a whole backward) run once, its gradients compared with the first's
    (`rel_max`; not with err False), then timed."""
    ref = None
    for name, fn in variants.items():
        if err:
            grads = check_into(row, name, fn, ref, rel_max)
            if grads is None:
                continue
            if ref is None:
                ref, row["err"][name] = [t.float() for t in grads], 0.0
        time_into(row, name, fn, repeats)


# ---- d192: the chunked d 192 backward beside the `tl` kernels padded to 256 on chip ("old"),
# the d 256 path on inputs padded on the host, its launches alone (where the time goes)
DV_BLOCKS = ((64, 64, 4, 2), (32, 64, 4, 2), (64, 128, 8, 2))
DK_BLOCKS = DV_BLOCKS
DQ_BLOCKS = ((64, 64, 4, 2), (64, 32, 4, 2), (128, 64, 8, 2), (128, 32, 8, 2))


def _padded(qd, kd, vd, o, lse, do, causal, d):
    """The d 256 backward on inputs zero-padded to 256 columns on the host, sliced back."""
    pad = [torch.nn.functional.pad(t, (0, 256 - d)) for t in (qd, kd, vd, o, do)]
    grads = fa.flash_attention_backward(pad[0], pad[1], pad[2], pad[3], lse, pad[4], causal,
                                        sm_scale=1.0 / math.sqrt(d))
    return tuple(t[..., :d] for t in grads)


def _d192_launches(row, p, qd, kd, vd, o, lse, do, causal, repeats):
    """Each launch alone, ms: the `tl` path's two, every chunked block config."""
    scale = 1.0 / math.sqrt(p.d)
    t_kv, t_q = fa._backward_timers(p, qd, kd, vd, o, lse, do, scale)
    row["launch_ms"] = {"old dkdv": t_kv(L.resolve_config("bwd_dkdv", p)),
                        "old dq": t_q(L.resolve_config("bwd_dq", p))}
    delta = L.new_empty((p.batch, p.heads, p.nq), qd, torch.float32)
    L.launch_preprocess(p, o, do, delta)
    dk, dv, dq = (torch.empty_like(qd) for _ in range(3))
    row["launch_ms"]["preprocess"] = study.median_ms(
        lambda: L.launch_preprocess(p, o, do, delta), repeats)[0]
    f = "M{}N{}w{}s{}".format
    jobs = [(f"dv {f(*b)}", partial(g192.attention_backward_dkdv_d192, qd, kd, vd, do, lse,
                                    delta, scale, causal, *b, 1, out=(dk, dv)))
            for b in DV_BLOCKS]
    jobs += [(f"dk {f(*b)}", partial(g192.attention_backward_dkdv_d192, qd, kd, vd, do, lse,
                                     delta, scale, causal, *b, 2, out=(dk, dv)))
             for b in DK_BLOCKS]
    jobs += [(f"dq {f(*b)}", partial(g192.attention_backward_dq_d192, qd, kd, vd, do, lse,
                                     delta, scale, causal, *b, out=dq)) for b in DQ_BLOCKS]
    for name, fn in jobs:
        try:
            row["launch_ms"][name] = study.median_ms(fn, repeats)[0]
        except Exception as e:  # noqa: BLE001 - a config that fails is reported
            row["launch_ms"][name] = f"{type(e).__name__}: {str(e)[:160]}"


def _d192_row(pt: Point, args) -> dict:
    q, k, v, do = study.inputs(pt, grad=True)
    qd, kd, vd = q.detach(), k.detach(), v.detach()
    o, lse = fa.flash_attention_forward(qd, kd, vd, pt.causal)
    p = L.problem_of(qd, kd, vd, pt.causal)
    disp = dispatch.choose_for(p, False).get("bwd_d192")
    row = dict(pt.row(), dispatch=disp.label() if isinstance(disp, g192.D192Config) else None)
    variants: dict[str, Any] = {
        "old": partial(fa.flash_attention_backward, qd, kd, vd, o, lse, do, pt.causal,
                       dkdv_config=L.resolve_config("bwd_dkdv", p),
                       dq_config=L.resolve_config("bwd_dq", p)),
        "pad256": partial(_padded, qd, kd, vd, o, lse, do, pt.causal, pt.d),
        "public": partial(fa.flash_attention_backward, qd, kd, vd, o, lse, do, pt.causal)}
    for name in (c for c in args.candidates.split(",") if c):
        variants[name] = partial(g192.run_backward_d192, p, qd, kd, vd, o, lse, do,
                                 1.0 / math.sqrt(pt.d), g192.CANDIDATES[name],
                                 lambda what, ts, launch, p_: launch())
    _backward_variants(row, variants, args.repeats)
    time_sdpa_backward(row, q, k, v, do, pt.causal, args.repeats)
    if not args.no_launches:
        _d192_launches(row, p, qd, kd, vd, o, lse, do, pt.causal, args.repeats)
    return finish(row, pt, "bwd")


def _d192_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--candidates", default=",".join(g192.CANDIDATES))
    ap.add_argument("--no-launches", action="store_true")


# ---- d256: variants of the large-head-dim `tl` backward: the TUNED pair, other dK/dV configs
# with the TUNED dQ, other dQ configs with the TUNED dK/dV, dK/dV configs with the fused dQ
# (`-fq`: dS K added to an fp32 dQ with atomics inside the dK/dV loop, no dQ launch)
DKDV = ("M64N64w8s2-tma,M32N64w8s2-tma,M64N32w8s2-tma,M64N32w8s3-tma,"
        "M64N32w8s2-tma-fq,M16N64w8s2-tma-fq,M32N64w8s2-tma-fq,M64N64w8s2-tma-fq")
DQ = "M128N32w8s2-tma,M64N64w8s2-tma,M128N16w8s3-tma,M64N32w4s2-tma,M128N32w8s3-tma"


def d256_variants(d: int, causal: bool, n: int, dkdv: list, dq: list, dq_base=None) -> dict:
    """name -> (dK/dV config, dQ config); names 'tuned', 'dkdv <cfg>' (with dq_base, default
    the TUNED dQ), 'dq <cfg>' (with the TUNED dK/dV)."""
    base_kv = cfgs.tuned_config("bwd_dkdv", d, causal, n)
    base_q = cfgs.tuned_config("bwd_dq", d, causal, n)
    out = {"tuned": (base_kv, base_q)}
    for c in dkdv:
        if c != base_kv or (dq_base or base_q) != base_q:
            out[f"dkdv {c.short()}"] = (c, dq_base or base_q)
    for c in dq:
        if c != base_q:
            out[f"dq {c.short()}"] = (base_kv, c)
    return out


def _d256_configs(args) -> tuple[list, list, KernelConfig | None]:
    return ([KernelConfig.from_short(s) for s in args.dkdv.split(",") if s],
            [KernelConfig.from_short(s) for s in args.dq.split(",") if s],
            KernelConfig.from_short(args.dq_base) if args.dq_base else None)


def _d256_before(points: list[Point], args) -> None:
    if args.no_precompile:
        return
    jobs = {}
    for pt in points:
        for kv, q in d256_variants(pt.d, pt.causal, pt.n, *_d256_configs(args)).values():
            for pass_, cfg in (("bwd_dkdv", kv), ("bwd_dq", q)):
                jobs[(pass_, pt.d, pt.causal, cfg)] = {
                    "pass": pass_, "d": pt.d, "causal": pt.causal, "group": 1,
                    "dtype": "fp16", "config": cfg.to_dict()}
    precompile(list(jobs.values()), log=lambda s: print(s, flush=True))


def _d256_row(pt: Point, args) -> dict:
    q, k, v, do = study.inputs(pt, grad=True)
    qd, kd, vd = q.detach(), k.detach(), v.detach()
    o, lse = fa.flash_attention_forward(qd, kd, vd, pt.causal)
    row = pt.row()
    variants = d256_variants(pt.d, pt.causal, pt.n, *_d256_configs(args))
    _backward_variants(row, {name: partial(fa.flash_attention_backward, qd, kd, vd, o, lse, do,
                                           pt.causal, dkdv_config=ckv, dq_config=cq)
                             for name, (ckv, cq) in variants.items()}, args.repeats)
    p = L.problem_of(qd, kd, vd, pt.causal)
    t_kv, t_q = fa._backward_timers(p, qd, kd, vd, o, lse, do, fa.softmax_scale(None, pt.d))
    row["launch_ms"] = {"bwd_dkdv": t_kv(variants["tuned"][0]), "bwd_dq": t_q(variants["tuned"][1])}
    time_sdpa_backward(row, q, k, v, do, pt.causal, args.repeats)
    return finish(row, pt, "bwd")


def _d256_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--dkdv", default=DKDV)
    ap.add_argument("--dq", default=DQ)
    ap.add_argument("--dq-base", default=None, help="the dQ config beside the dK/dV variants")
    ap.add_argument("--no-precompile", action="store_true")


# ---- gqa: dK/dV with the head-group loop in one program (split 1, each autotune candidate)
# against the group split over programs (split = group: the MHA code per query head, fp32
# partials summed; split = group / 2); B 4, H 32
GQA_BATCH = 4


def gqa_points(args) -> list[Point]:
    """(d, causal, N, H_kv) points; --ns / --kvs (if given) keep only those N / H_kv."""
    ns = None if args.ns is None else {int(x) for x in args.ns.split(",")}
    kvs = None if args.kvs is None else {int(x) for x in args.kvs.split(",")}
    out = []
    for d in (int(x) for x in args.dims.split(",")):
        dn = (2048, 4096, 8192) if d == 64 else (4096, 8192)
        dkv = (8, 4, 1) if d == 64 else (8, 1)
        out += [Point(d, n, c, GQA_BATCH, 32, kv)
                for c in (x == "1" for x in args.causal.split(",")) for n in dn
                for kv in dkv if (ns is None or n in ns) and (kvs is None or kv in kvs)]
    return out


def gqa_variants(d: int, causal: bool, n: int, group: int) -> dict[str, KernelConfig]:
    base = cfgs.tuned_config("bwd_dkdv", d, causal, n)
    if base is None:
        raise ValueError(f"no tuned bwd_dkdv config at d = {d}, n = {n}")
    out = {"loop (before)": replace(base, split=1)}
    if d == 64:
        for c in cfgs.candidates("bwd_dkdv", d, 2, causal):
            if c != base:
                out[f"loop {c.short()}"] = replace(c, split=1)
    out["split group"] = replace(base, split=group)
    if group >= 4:
        out["split group/2"] = replace(base, split=group // 2)
    return out


def _gqa_before(points: list[Point], args) -> None:
    jobs = {}
    for pt in points:
        g = pt.heads // pt.heads_kv
        for cfg in gqa_variants(pt.d, pt.causal, pt.n, g).values():
            jobs[(pt.d, pt.causal, g, cfg)] = {"pass": "bwd_dkdv", "d": pt.d,
                                               "causal": pt.causal, "group": g,
                                               "dtype": "fp16", "config": cfg.to_dict()}
    precompile(list(jobs.values()), log=lambda s: print(s, flush=True))


def _gqa_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--kvs", help="only these H_kv (comma-separated)")


def _gqa_row(pt: Point, args) -> dict:
    q, k, v, do = study.inputs(pt, grad=True)
    qd, kd, vd = q.detach(), k.detach(), v.detach()
    o, lse = fa.flash_attention_forward(qd, kd, vd, pt.causal)
    dq_cfg = L.resolve_config("bwd_dq", L.problem_of(qd, kd, vd, pt.causal))
    row = pt.row()
    _backward_variants(row, {
        name: partial(fa.flash_attention_backward, qd, kd, vd, o, lse, do, pt.causal,
                      dkdv_config=cfg, dq_config=dq_cfg)
        for name, cfg in gqa_variants(pt.d, pt.causal, pt.n, pt.heads // pt.heads_kv).items()},
        args.repeats, err=False)
    time_sdpa_backward(row, q, k, v, do, pt.causal, args.repeats)
    return finish(row, pt, "bwd")


STUDIES: dict[str, Study] = {
    **GLUON_STUDIES,
    "d192": Study("the chunked Gluon d 192 backward beside the `tl` kernels padded to 256",
                  _d192_row, lambda a: "d192", dims="192", ns="1024,2048,4096,8192,16384",
                  causal="1,0", options=_d192_options, table=study.render_points),
    "d256": Study("variants of the large-head-dim backward", _d256_row, lambda a: "d256",
                  dims="256", ns="4096,8192,16384", causal="1,0", options=_d256_options,
                  before=_d256_before, table=study.render_points),
    "gqa": Study("the grouped-query backward: the head-group loop against the group split",
                 _gqa_row, lambda a: "gqa", ns=None, causal="1,0", points=gqa_points,
                 options=_gqa_options,
                 before=_gqa_before, table=study.render_grouped,
                 extra=lambda a: {"batch": GQA_BATCH}),
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in STUDIES:
        print(__doc__.strip(), file=sys.stderr)
        if args and args[0] not in ("-h", "--help"):
            print(f"error: unknown study {args[0]!r}; one of {', '.join(STUDIES)}",
                  file=sys.stderr)
            return 2
        return 0 if args else 2
    return study.run(args[0], STUDIES[args[0]], args[1:])


if __name__ == "__main__":
    sys.exit(main())
