"""The performance page's candidates toward cuDNN, from the declared H200 launch studies
(data/hopper_fwd_h200.json): each candidate's status with its figures computed from the runs,
and the forward the dispatch picks against cuDNN and SDPA-flash beside the `tl` forward, all in
the same runs. No GPU; the same data gives the same text.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

from ..host import dispatch
from ..model import data

__all__ = ["BUNDLE", "DISPATCHED", "candidates", "forward_table", "study_column"]

BUNDLE = "hopper_fwd_h200.json"
# the runs of the forward as dispatched ("ours"), then runs whose column of the kernel the
# dispatch picks replaces "ours" at their points (where the dispatched runs timed another)
DISPATCHED = ("hopper_dispatched_d128_h200", "hopper_dispatched_d128_causal_h200",
              "hopper_dispatched_d192_h200", "hopper_dispatched_d192_causal_h200")
LATER = ("hopper_ws_d128_dense_causal_h200",)
# the persistent schedules against the one-launch-a-tile ones (same runs)
PERSISTENT_RUNS = ("hopper_ws_gqa_h200_run2", "hopper_ws_gqa_causal_h200_run2")
TMA_RUN = "hopper_bwd_tma_out_h200"


def _rows(part: str) -> list[dict[str, Any]]:
    return data.part(BUNDLE, part)["rows"]


def _kv(r: dict) -> int:
    """A row's K/V heads (the study rows name them heads_kv, the earlier ones kv_heads)."""
    return r.get("heads_kv", r.get("kv_heads", r["heads"]))


def _key(r: dict) -> tuple:
    return (r["d"], bool(r["causal"]), _kv(r), r["n"])


def study_column(n: int, d: int, causal: bool, heads: int, kv_heads: int) -> str | None:
    """The hopper study's column of the forward `dispatch.choose` runs at this point (fp16,
    sm_90): "ws N128 lag s3", "gluon M128N64w8"; None where the `tl` forward runs."""
    choice = dispatch.choose(n, d, causal, heads, kv_heads)
    if "fwd_ws" in choice:
        return "ws N{} {} s{}".format(*choice["fwd_ws"])
    if "fwd" in choice:
        return "gluon M{}N{}w{}".format(*choice["fwd"])
    return None


def _points() -> dict[tuple, dict[str, Any]]:
    """(d, causal, H_kv, N) -> {"ours", "tl", "flash", "cudnn"} ms of the dispatched forward."""
    out: dict[tuple, dict[str, Any]] = {}
    for part in DISPATCHED:
        for r in _rows(part):
            ms = r["ms"]
            out[_key(r)] = {"ours": ms["ours"], "tl": ms["ours (tl)"], "flash": ms["flash"],
                            "cudnn": ms["cudnn"], "run": part}
    for part in LATER:
        for r in _rows(part):
            col = study_column(r["n"], r["d"], bool(r["causal"]), r["heads"], _kv(r))
            if col in r["ms"] and _key(r) in out:
                ms = r["ms"]
                out[_key(r)] = {"ours": ms[col], "tl": ms["ours (tl)"], "flash": ms["flash"],
                                "cudnn": ms["cudnn"], "run": part}
    return out


def _span(xs: Iterable[float]) -> str:
    xs = sorted(xs)
    return f"{xs[0]:.2f} – {xs[-1]:.2f}" if xs[0] != xs[-1] else f"{xs[0]:.2f}"


def forward_table() -> list[str]:
    """The forward as dispatched × cuDNN and × SDPA-flash, and the `tl` forward × cuDNN, per
    point, with a line of ranges a head dim and kind of heads."""
    pts = _points()
    lines = ["| d | causal | H_kv | N | fwd × cuDNN | fwd × flash | `tl` fwd × cuDNN |",
             "|---|---|---|---|---|---|---|"]
    for (d, causal, kv, n), p in sorted(pts.items()):
        mark = " *" if p["run"] in LATER else ""
        lines.append(f"| {d} | {'yes' if causal else 'no'} | {kv} | {n} | "
                     f"{p['cudnn'] / p['ours']:.2f}{mark} | {p['flash'] / p['ours']:.2f} | "
                     f"{p['cudnn'] / p['tl']:.2f} |")
    lines.append("")
    for d in sorted({k[0] for k in pts}):
        for group, name in ((lambda kv: kv == 32, "dense"), (lambda kv: kv < 32, "grouped")):
            mine = [p for k, p in pts.items() if k[0] == d and group(k[2])]
            if mine:
                c = [p["cudnn"] / p["ours"] for p in mine]
                lines.append(
                    f"* d {d} {name}: fwd × cuDNN {_span(c)} ({sum(x >= 1.0 for x in c)} of "
                    f"{len(c)} ≥ 1.0); × flash {_span(p['flash'] / p['ours'] for p in mine)}; "
                    f"the `tl` forward × cuDNN {_span(p['cudnn'] / p['tl'] for p in mine)}")
    later = sorted({p["run"] for p in pts.values() if p["run"] in LATER})
    if later:
        lines.append(f"* `*`: the kernel the dispatch picks there, from "
                     f"{', '.join(f'`{x}`' for x in later)}, which timed it beside the "
                     "persistent forward (the one the `hopper_dispatched` runs timed there, "
                     "and slower)")
    return lines


def _persistent_col(column: str) -> bool:
    """A study column of a persistent schedule ("ws N128 plag s2")."""
    return column.split()[2] in ("pws", "plag", "ppingpong")


def _persistent() -> str:
    """The persistent schedules against the best one-launch-a-tile kernel at N 1k, same
    runs."""
    ratios: list[float] = []
    flat: list[float] = []
    for part in PERSISTENT_RUNS:
        for r in _rows(part):
            if r["n"] != 1024:
                continue
            ms = r["ms"]
            pers = min(v for k, v in ms.items() if k.startswith("ws N") and _persistent_col(k))
            one = min(v for k, v in ms.items() if (k.startswith("ws N") and not
                                                   _persistent_col(k)) or k.startswith("gluon M"))
            ratios.append(ms["cudnn"] / pers)
            flat.append(ms["cudnn"] / one)
    return (f"at N 1k with grouped heads (d 128, H_kv 8 and 1, causal or not) the best "
            f"persistent schedule {_span(ratios)} × cuDNN against {_span(flat)} for the best "
            "one-launch-a-tile kernel (one-partition or warp-specialised); at N 4k - 16k within "
            "the runs' spread or behind, and dense causal at N 1k - 2k behind (see `*`)")


def _tma() -> str:
    """The TMA stores' launch times against the plain stores', same runs."""
    kv: list[float] = []
    dq: list[float] = []
    whole: list[float] = []
    for r in _rows(TMA_RUN):
        ms = r["ms"]
        for name, out in (("dkdv", kv), ("dq", dq)):
            plain = next(k for k in ms if k.startswith(f"gluon {name} ") and not
                         k.endswith(" tma"))
            out.append(ms[plain] / ms[plain + " tma"])
        whole.append(ms["backward"] / ms["backward tma"])
    return (f"dK/dV launch {_span(kv)} × its plain-store time (the plain stores also spilled "
            f"6 registers at d 128), dQ launch {_span(dq)} ×, the three-launch backward "
            f"{_span(whole)} × (d 64 and 128, N 1k – 16k, causal or not); dispatched for the "
            "Gluon dK/dV (d 128), not for the dQ")


def candidates() -> list[tuple[str, str]]:
    """(candidate, status) rows: what was built and measured, with figures from the runs."""
    cmd = data.entry(BUNDLE).parts
    pts = _points()
    gqa = [p["cudnn"] / p["ours"] for k, p in pts.items() if k[0] == 128 and k[2] < 32]
    gqa_tl = [p["cudnn"] / p["tl"] for k, p in pts.items() if k[0] == 128 and k[2] < 32]
    d192 = [p["cudnn"] / p["ours"] for k, p in pts.items() if k[0] == 192]
    d192_tl = [p["cudnn"] / p["tl"] for k, p in pts.items() if k[0] == 192]
    return [
        ("Forward: grouped heads (the Gluon forwards read K/V head h // (H / H_kv); MQA too)",
         f"built, dispatched: d 128 grouped fwd × cuDNN {_span(gqa)} (median "
         f"{statistics.median(gqa):.2f}) against {_span(gqa_tl)} for the `tl` forward, same "
         f"runs (`{cmd['hopper_dispatched_d128_h200']}` [--causal])"),
        ("Forward: d 192 native (the warp-specialised forward on three 64-column chunks, no "
         "padding to 256)",
         f"built, dispatched: fwd × cuDNN {_span(d192)} (median "
         f"{statistics.median(d192):.2f}) against {_span(d192_tl)} for the `tl` forward padded "
         f"to 256; short of 1.0: BLOCK_N 64 is the largest key tile whose 2-stage K/V ring fits "
         f"beside Q (BLOCK_N 128 spills with one stage), so each Q K^T is a 64-wide wgmma "
         f"(`{cmd['hopper_ws_d192_h200']}` [--causal])"),
        ("Forward: persistent warp-specialised (one program an SM over the (query tile, head) "
         "items; kernels/hopper_ws_persistent.py)",
         f"built, dispatched at d 128 N ≤ 1k (grouped and causal: N ≤ 2k): {_persistent()} "
         f"(`{cmd['hopper_ws_gqa_h200_run2']}` [--causal])"),
        ("Backward: dK, dV and dQ stored through shared memory and TMA instead of plain stores "
         "from the wgmma accumulator layout",
         f"built (TMA_OUT): {_tma()} (`{cmd[TMA_RUN]}`)"),
        ("Backward: dQ reduced in bulk (FA3's shared-memory accumulation, one bulk async reduce "
         "a tile through inline PTX)",
         "not built: here dQ is a launch of its own (no per-tile partial dQ to reduce); it "
         "needs the dQ fused into the dK/dV (the warp-specialised kernel's FUSED_DQ, whose fp32 "
         "atomics measured within the spread) and the shared-memory tile's address in the "
         "inline PTX of `cp.reduce.async.bulk`"),
        ("Backward: fewer GEMMs a tile (dP and dS^T K reused across the warpgroups)",
         "not built"),
        ("Backward: warp-specialised dK/dV (kernels/hopper_bwd_ws.py), with and without the "
         "fused dQ by atomics",
         "built and measured: within the spread of the one-partition kernel, so not dispatched "
         "(the launch studies of data/gluon_studies_h100.json, hopper_bwd_ws parts)"),
    ]
