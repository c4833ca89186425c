"""Which kernel each launch of a forward and backward runs: the `tl` kernels
or the Gluon Hopper kernels that `host/flash_attn.py` dispatches to on sm_90.

`launches(...)` is the list of a problem's kernel launches, in order, each a `Launch`: the
kernel function (the name ncu reports), the label the bench writes (`"tl M128N64w4s3-tma"`,
`"gluon M128N64w8"`, `"gluon M128N128w12 ws-lag-s3"` (`ws-plag-s2` and the other "p"
schedules: the persistent form, `_attn_fwd_ws_persistent`), `"gluon M64N64w4"`, `"gluon M64N64w4 s2
ov1"`) and the tiles its schedule runs. Which kernel runs is `host/dispatch.py`'s `choose`,
the function the public functions call, asked here without a GPU for the GPU's compute
capability given (`capability`; None: no GPU, the interpreter — no Gluon kernel).

What a Gluon launch's schedule is (`Launch.schedule`): the `tl` schedule of the same loops
with the kernel's blocks (the one-partition forward BLOCK_M x BLOCK_N; the warp-specialised
forward 128 query rows — two consumer warpgroups of 64 — x BLOCK_N, the producer's loads once
per program; the dK/dV K, V held, Q, dO streamed; the dQ Q, dO held, K, V streamed), every
(rows, d) tile through TMA, lse and D rows with pointer loads, O and the one-partition dK/dV's
dK, dV by TMA stores, dQ by pointer stores (`schedule.Schedule.tma_tensors`, `tma_stores`).

The chunked d 192 backward (`kernels/hopper_bwd_chunked.py`) is named per launch:
"gluon192 dv M64N128w8s2" (PART 1: K held; Q, dO, lse streamed), "gluon192 dk M64N128w8s2"
(PART 2: K, V held; Q, dO, lse, D streamed), "gluon192 dkdv M64N64w4s2" (PART 0, both), and
"gluon192 dq M128N64w8s2"; a pass's label (`host_labels`, a traffic case's "kernels") joins
the launches of the pass: "gluon192 dv M32N64w4s2 dk M64N128w8s2" (`pass_labels`,
`d192_launches`). TMA boxes of 64 columns on the unpadded (B·H·N, 192) rows: a tile moves
d x elem_bytes bytes a row, as the schedule counts.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..host.configs import KernelConfig
from ..host.dispatch import SM90, WS_ROWS, Choice, choose, choose_for
from .schedule import PREPROCESS_CONFIG, Schedule, launch_config, schedule

__all__ = ["Launch", "launches", "from_label", "case_launches", "host_labels",
           "TL_FUNCTIONS", "d192_labels", "d192_launches", "pass_labels", "D192_FUNCTIONS",
           "GLUON_FUNCTIONS", "SM90"]

TL_FUNCTIONS = {"fwd": "_attn_fwd", "bwd_preprocess": "_attn_bwd_preprocess",
                "bwd_dkdv": "_attn_bwd_dkdv", "bwd_dq": "_attn_bwd_dq"}
GLUON_FUNCTIONS = {"fwd": "_attn_fwd_hopper", "fwd_ws": "_attn_fwd_ws",
                   "fwd_ws_persistent": "_attn_fwd_ws_persistent",
                   "bwd_dkdv": "_attn_bwd_dkdv_hopper", "bwd_dq": "_attn_bwd_dq_hopper"}
WS_WARPS = 12  # two consumer warpgroups and the producer's, padded to a warpgroup
_LABEL = re.compile(r"gluon M(\d+)N(\d+)w(\d+)(?: ws-(ws|lag|pingpong|pws|plag|ppingpong)-s(\d+)"
                    r"| s(\d+) ov(\d+))?")
D192_FUNCTIONS = {"bwd_dkdv": "_attn_bwd_dkdv_d192", "bwd_dq": "_attn_bwd_dq_d192"}
D192_PARTS = {"dkdv": ("bwd_dkdv", 0), "dv": ("bwd_dkdv", 1), "dk": ("bwd_dkdv", 2),
              "dq": ("bwd_dq", 0)}
_BLOCKS = r"M(\d+)N(\d+)w(\d+)s(\d+)"
_D192_LABEL = re.compile(rf"gluon192 (dkdv|dv|dk|dq) {_BLOCKS}")
_D192_KINDS = {"bwd_dkdv": (("dkdv",), ("dv", "dk")), "bwd_dq": (("dq",),)}


@dataclass(frozen=True)
class Launch:
    """One kernel launch: `function` (what ncu names), `label` (the bench's name), the tiles
    (`config`) its loops run, and `part` (1 dV / 2 dK of a dV-apart `tl` dK/dV, else 0)."""

    pass_: str
    function: str
    label: str
    config: KernelConfig
    part: int = 0

    @property
    def gluon(self) -> bool:
        """A Gluon kernel: "gluon ..." or the chunked d 192 backward's "gluon192 ..."."""
        return self.label.startswith(("gluon ", "gluon192 "))

    def schedule(self, n: int, d: int, batch: int = 1, heads: int = 1, causal: bool = False,
                 elem_bytes: int = 2, nk: int | None = None,
                 kv_heads: int | None = None) -> Schedule:
        """The launch's schedule. The chunked d 192 launches of a grouped problem run on K and
        V copied out to the H query heads (host/hopper_d192.run_backward_d192), so they are
        scheduled as H_kv = H; the host's copies, the dK/dV partials' fp32 width and their
        group sum are outside this schedule (as the `tl` split's host sum is)."""
        if self.label.startswith("gluon192 "):
            kv_heads = heads
        return schedule(n, d, batch, heads, causal, pass_=self.pass_, elem_bytes=elem_bytes,
                        config=self.config, nk=nk, kv_heads=kv_heads, part=self.part or None,
                        kernel=self.label if self.gluon else "")


def d192_labels(cfg) -> dict[str, str]:
    """pass -> label of a chunked d 192 backward (a D192Config (dv, dk, dq)): "bwd_dkdv"
    "gluon192 dv M..s.. dk M..s.." (dV apart) or "gluon192 dkdv M..s..", "bwd_dq" "gluon192 dq
    M..s.." (host_labels, a traffic case's "kernels")."""
    dv, dk, dq = cfg
    f = "M{}N{}w{}s{}".format
    kv = f"dv {f(*dv)} dk {f(*dk)}" if dv else f"dkdv {f(*dk)}"
    return {"bwd_dkdv": f"gluon192 {kv}", "bwd_dq": f"gluon192 dq {f(*dq)}"}


def d192_launches(pass_: str, label: str) -> list[Launch]:
    """The launches of a chunked d 192 pass label (`d192_labels`): the dK/dV's one launch
    (PART 0) or two (dV, dK), or the dQ launch, each named by its own label."""
    words = label.split()
    kinds = tuple(words[1::2])
    if (words[:1] != ["gluon192"] or len(words) % 2 == 0
            or kinds not in _D192_KINDS.get(pass_, ())):
        raise ValueError(f"not a chunked d 192 {pass_} label: {label!r} "
                         "(expected like 'gluon192 dv M64N128w8s2 dk M64N128w8s2')")
    return [from_label(pass_, f"gluon192 {kind} {blocks}")
            for kind, blocks in zip(words[1::2], words[2::2])]


def pass_labels(plan: list[Launch]) -> dict[str, str]:
    """pass -> label of the Gluon launches of a plan, as `host_labels` names them (the chunked
    d 192 dV and dK launches as one pass label)."""
    out: dict[str, str] = {}
    for ln in plan:
        if ln.gluon:
            more = ln.label.split(" ", 1)[1] if ln.pass_ in out else ""
            out[ln.pass_] = f"{out[ln.pass_]} {more}" if more else ln.label
    return out


def _gluon_launch(pass_: str, choice: Choice) -> list[Launch]:
    """The Gluon launches of `pass_` in a `choose` answer (two for the chunked d 192 dK/dV
    with dV apart), or [] (the `tl` kernel runs)."""
    if pass_ == "fwd" and "fwd_ws" in choice:
        bn, sched, stages = choice["fwd_ws"]
        return [from_label("fwd", f"gluon M{WS_ROWS}N{bn}w{WS_WARPS} ws-{sched}-s{stages}")]
    if pass_ == "fwd" and "fwd" in choice:
        return [from_label("fwd", "gluon M{}N{}w{}".format(*choice["fwd"]))]
    if pass_ == "bwd_dkdv" and "bwd_dkdv" in choice:
        bm, bn, w, stages, _ = choice["bwd_dkdv"]
        return [Launch(pass_, GLUON_FUNCTIONS[pass_], f"gluon M{bm}N{bn}w{w}",
                       KernelConfig(bm, bn, w, stages, True))]
    if "bwd_d192" in choice and pass_ in ("bwd_dkdv", "bwd_dq"):
        return d192_launches(pass_, d192_labels(choice["bwd_d192"])[pass_])
    if pass_ == "bwd_dq" and "bwd_dq" in choice:
        return [from_label("bwd_dq", "gluon M{}N{}w{} s{} ov{}".format(*choice["bwd_dq"]))]
    return []


def from_label(pass_: str, label: str, config: KernelConfig | None = None) -> Launch:
    """The launch a bench / traffic-case label names: a Gluon label (its function and tiles;
    a one-partition kernel's ring is 2 stages unless the label says; a chunked d 192 launch's
    "dv" / "dk" its part 1 / 2, a dV-apart config), or "tl ..." / anything else with the `tl`
    config that ran (`config`)."""
    d192 = _D192_LABEL.fullmatch(label.strip())
    if d192 is not None:  # one launch of the chunked d 192 backward
        want, part = D192_PARTS[d192.group(1)]
        if pass_ != want:
            raise ValueError(f"{label!r} is a {want} launch, not {pass_}")
        bm, bn, w, stages = (int(g) for g in d192.group(2, 3, 4, 5))
        return Launch(pass_, D192_FUNCTIONS[pass_], label.strip(),
                      KernelConfig(bm, bn, w, stages, True, dv_apart=part > 0), part)
    m = _LABEL.fullmatch(label.strip())
    if m is None:
        if label.startswith("gluon"):
            raise ValueError(f"not a Gluon kernel label: {label!r}")
        if config is None:
            raise ValueError(f"the `tl` {pass_} launch needs its config")
        return Launch(pass_, TL_FUNCTIONS[pass_], "tl " + config.short(), config)
    bm, bn, w = (int(g) for g in m.group(1, 2, 3))
    if m.group(4):
        if pass_ != "fwd":
            raise ValueError(f"the warp-specialised kernel is a forward, not {pass_}")
        persistent = m.group(4) in ("pws", "plag", "ppingpong")  # hopper_ws_persistent
        return Launch(pass_, GLUON_FUNCTIONS["fwd_ws_persistent" if persistent else "fwd_ws"],
                      label.strip(), KernelConfig(bm, bn, w, int(m.group(5)), True))
    if pass_ not in GLUON_FUNCTIONS:
        raise ValueError(f"no Gluon kernel runs the {pass_} launch")
    stages = int(m.group(6)) if m.group(6) else 2
    return Launch(pass_, GLUON_FUNCTIONS[pass_], label.strip(),
                  KernelConfig(bm, bn, w, stages, True))


def launches(n: int, d: int, causal: bool = False, heads: int = 1, kv_heads: int | None = None,
             nk: int | None = None, elem_bytes: int = 2,
             capability: tuple[int, int] | None = SM90, backward: bool = True,
             configs: Mapping[str, KernelConfig] | None = None,
             env: Mapping[str, str] | None = None) -> list[Launch]:
    """The launches of one forward (and backward) through the public functions without explicit
    blocks, in order: the Gluon kernels where `choose` picks them, else the `tl` kernel
    with `configs[pass]` (what ran) or `schedule.launch_config`'s choice. A `tl` dK/dV with
    dv_apart is two launches (dV, dK); one with fused_dq writes dQ itself (no dQ launch) unless
    the Gluon dK/dV runs."""
    choice = choose(n, d, causal, heads, kv_heads, nk, elem_bytes, capability, env)
    configs = dict(configs or {})

    def tl(pass_: str) -> KernelConfig:
        return configs.get(pass_) or launch_config(n, d, causal, pass_=pass_,
                                                   elem_bytes=elem_bytes, nk=nk)

    out = _gluon_launch("fwd", choice) or [from_label("fwd", "tl", tl("fwd"))]
    if not backward:
        return out
    out.append(Launch("bwd_preprocess", TL_FUNCTIONS["bwd_preprocess"],
                      "tl " + PREPROCESS_CONFIG.short(), PREPROCESS_CONFIG))
    dkdv = _gluon_launch("bwd_dkdv", choice)
    if "bwd_d192" in choice:  # the chunked d 192 backward: its dK/dV and dQ launches
        return out + dkdv + _gluon_launch("bwd_dq", choice)
    if dkdv:
        out += dkdv
    else:
        cfg = tl("bwd_dkdv")
        label = "tl " + cfg.short()
        out += ([Launch("bwd_dkdv", TL_FUNCTIONS["bwd_dkdv"], label, cfg, part) for part in (1, 2)]
                if cfg.dv_apart else [Launch("bwd_dkdv", TL_FUNCTIONS["bwd_dkdv"], label, cfg)])
        if cfg.fused_dq:
            return out
    out += _gluon_launch("bwd_dq", choice) or [from_label("bwd_dq", "tl", tl("bwd_dq"))]
    return out


def case_launches(case: Mapping) -> list[Launch]:
    """The launches of a traffic case (`traffic.run_target`'s record: "configs" pass -> the
    `tl` config dict, and "kernels" pass -> label where a Gluon kernel ran)."""
    kernels = case.get("kernels") or {}
    configs = {p: KernelConfig.from_dict(c) for p, c in case["configs"].items()}
    out = []
    for pass_ in ("fwd", "bwd_preprocess", "bwd_dkdv", "bwd_dq"):
        if pass_ == "bwd_preprocess":
            if "bwd_dkdv" in configs or "bwd_dkdv" in kernels:
                out.append(Launch(pass_, TL_FUNCTIONS[pass_], "tl " + PREPROCESS_CONFIG.short(),
                                  PREPROCESS_CONFIG))
            continue
        label = kernels.get(pass_, "")
        if label.startswith("gluon192 "):
            out += d192_launches(pass_, label)
        elif label.startswith("gluon "):
            out.append(from_label(pass_, label))
        elif pass_ in configs:
            cfg = configs[pass_]
            parts = (1, 2) if pass_ == "bwd_dkdv" and cfg.dv_apart else (0,)
            out += [Launch(pass_, TL_FUNCTIONS[pass_], "tl " + cfg.short(), cfg, p) for p in parts]
            if pass_ == "bwd_dkdv" and cfg.fused_dq:  # it wrote dQ: no dQ launch
                return out
    return out


def host_labels(q, k, v, causal) -> dict[str, str]:
    """pass -> label of the Gluon kernels the public functions run for these CUDA tensors with
    no explicit blocks (host/dispatch.py's `choose_for`); absent: `tl`."""
    from ..host import hopper
    from ..host.launch import problem_of

    choice = choose_for(problem_of(q, k, v, causal), False)
    fwd, ws, dkdv, dq = (choice.get(name) for name in ("fwd", "fwd_ws", "bwd_dkdv", "bwd_dq"))
    labels = {"fwd": hopper.ws_label(ws) if ws else fwd and "gluon M{}N{}w{}".format(*fwd),
              "bwd_dkdv": dkdv and "gluon M{}N{}w{}".format(*dkdv),
              "bwd_dq": dq and "gluon M{}N{}w{} s{} ov{}".format(*dq)}
    d192 = choice.get("bwd_d192")
    labels.update(d192_labels(d192) if d192 else {})
    return {pass_: label for pass_, label in labels.items() if label}
