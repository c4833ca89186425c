"""`toym verify-gpu`: the tile simulator and the Triton kernel, on the same inputs.

The kernels run as the public functions run them: without --block-m / --block-n on an sm_90
GPU that is the dispatched Gluon kernels where `host/hopper.py` / `host/hopper_d192.py` pick
them (the one-partition or warp-specialised forward, the Gluon dK/dV and dQ, the chunked d 192
backward), elsewhere the `tl` kernels with each pass's own config; explicit blocks turn the
dispatch off (the `tl` kernels with those blocks). Which
kernel ran is said (`kernels`, from the host's dispatch; `model.dispatch` predicts the same
without a GPU). The tile machine runs FlashAttention-2 with the blocks of the launch it stands
for: the forward's BLOCK_M x BLOCK_N (128 query rows for the warp-specialised kernel), the
backward's dK/dV blocks for dK, dV (a dV-apart pair, as the chunked d 192 Gluon backward: dV
with the dV launch's, dK with the dK launch's), the dQ launch's for dQ: one run per distinct
blocks. The kernel runs on CUDA when there is a GPU, otherwise in Triton's
interpreter on the CPU (small sizes only: the interpreter executes every program in Python). Both see the same
inputs: deterministic values from ``toymachine.sim.memory.random_block`` (the simulator's own
random inputs), rounded to the kernel's dtype before either side sees them.

Compared: O and the log-sum-exp L (forward); dQ, dK, dV (backward, with a random dO).
Tolerances are dtype-aware: ``TOLERANCE[dtype][quantity] × eps(dtype) × max|value|``.
The kernel keeps fp16/bf16 operands for its matrix products and P, accumulating in fp32;
the simulator runs at ``sim_dtype`` (default fp32: the kernel's accumulation format), so
the difference between the two is of the order of the kernel dtype's rounding, which the
constants allow for with a margin. Each side's error against a float64 reference is shown
too, so a mismatch says which side is off.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from toymachine.cost import attention_tile_cost
from toymachine.errors import ConfigError
from toymachine.gen.tile import run_attention
from toymachine.render import Report, Section
from toymachine.render.cells import Num
from toymachine.result import json_value
from toymachine.sim.memory import random_block

from ..host.configs import autotune_enabled
from ..host.flash_attn import (
    INTERPRETER,
    MAX_HEAD_DIM,
    flash_attention_backward,
    flash_attention_forward,
    resolve_config,
)
from ..host.support import gluon_status
from ..model.dispatch import Launch, case_launches, host_labels, launches, pass_labels
from ..model.schedule import predict_traffic

__all__ = ["Comparison", "Verification", "verify", "verification_report", "TOLERANCE"]

TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
EPS = {"fp16": 2.0 ** -10, "bf16": 2.0 ** -7, "fp32": 2.0 ** -10}  # fp32: tf32 dots on the GPU (10-bit mantissa)
# multiples of eps × max|value| allowed between simulator and kernel
TOLERANCE = {"O": 4.0, "L": 4.0, "dQ": 16.0, "dK": 16.0, "dV": 16.0}


@dataclass(frozen=True)
class Comparison:
    quantity: str
    max_abs: float  # max |sim − kernel|
    max_rel: float  # max_abs / max |sim|
    tolerance: float  # allowed max_abs
    sim_vs_ref: float  # max |sim − float64 reference|
    gpu_vs_ref: float  # max |kernel − float64 reference|

    @property
    def ok(self) -> bool:
        return bool(np.isfinite(self.max_abs)) and self.max_abs <= self.tolerance


@dataclass(frozen=True)
class Verification:
    setup: dict  # display text (the report's Setup table)
    comparisons: tuple[Comparison, ...]
    params: dict = field(default_factory=dict)  # the same facts typed, snake_case keys (``to_dict``)

    def to_dict(self) -> dict:
        """``verify-gpu -f json``: numbers as numbers, booleans as booleans, stable snake_case keys."""
        def num(x: float):  # non-finite as "nan"/"inf" strings, as in every toym JSON
            return json_value(float(x))

        return {"ok": self.ok, "setup": dict(self.params),
                "comparisons": [{"quantity": c.quantity, "max_abs": num(c.max_abs), "max_rel": num(c.max_rel),
                                 "tolerance": num(c.tolerance), "sim_vs_ref": num(c.sim_vs_ref),
                                 "gpu_vs_ref": num(c.gpu_vs_ref), "ok": c.ok} for c in self.comparisons]}

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.comparisons)


def _reference(q, k, v, do, causal: bool, scale: float):
    """float64 numpy attention, its log-sum-exp, and (with do) the gradients. q (…, H, n, d);
    k, v (…, H_kv, nk, d): query head h reads K/V head h // (H / H_kv); causal aligned
    bottom-right (query i sees keys j <= i + nk - n), as the kernel and the tile machine."""
    group = q.shape[-3] // k.shape[-3]
    kr, vr = (np.repeat(x, group, axis=-3) for x in (k, v))
    s = scale * q @ np.swapaxes(kr, -1, -2)
    n, nk = q.shape[-2], k.shape[-2]
    if causal:
        visible = np.arange(nk)[None, :] <= np.arange(n)[:, None] + (nk - n)
        s = np.where(visible, s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    l_ = p.sum(-1, keepdims=True)
    p /= l_
    out = {"O": p @ vr, "L": (m + np.log(l_))[..., 0]}
    if do is not None:
        dv = np.swapaxes(p, -1, -2) @ do
        dp = do @ np.swapaxes(vr, -1, -2)
        ds = p * (dp - (do * out["O"]).sum(-1, keepdims=True))
        dk = scale * np.swapaxes(ds, -1, -2) @ q
        grouped = lambda x: x.reshape(*k.shape[:-3], k.shape[-3], group, nk, x.shape[-1]).sum(-3)  # noqa: E731
        out.update(dQ=scale * ds @ kr, dK=grouped(dk), dV=grouped(dv))
    return out


def _closed_form(pass_: str, order: str, **shape) -> dict:
    """The cost model's HBM words for the simulated program (toymachine.cost.tile)."""
    kw: dict[str, Any] = dict(pass_="backward", order=order) if pass_ == "backward" else {}
    c = attention_tile_cost(algo="fa2", **shape, **kw)
    return {"reads": c.reads, "writes": c.writes}


def verify(*, n: int = 128, d: int = 64, batch: int = 1, heads: int = 1, causal: bool = False,
           dtype: str = "fp16", block_m: int | None = None, block_n: int | None = None, pass_: str = "forward",
           seed: int = 0, scale: float | None = None, sim_dtype: str = "fp32", nk: int | None = None,
           kv_heads: int | None = None) -> Verification:
    """Run simulator and kernel on the same inputs; compare their outputs. ``nk``: keys (default
    n; causal aligned bottom-right), ``kv_heads``: K/V heads (default ``heads``; grouped-query)."""
    if dtype not in TORCH_DTYPES:
        raise ConfigError(f"unknown kernel dtype '{dtype}'", hint=f"choose one of {', '.join(TORCH_DTYPES)}")
    if not 1 <= d <= MAX_HEAD_DIM:
        raise ConfigError(f"the kernel supports head dims 1 to {MAX_HEAD_DIM}, not d = {d}",
                          hint="e.g. --d 64, 96 or 128 (a d that is not a power of two is padded on chip)")
    if pass_ not in ("forward", "backward"):
        raise ConfigError(f"unknown pass '{pass_}'", hint="use --pass forward or --pass backward")
    nk = n if nk is None else nk
    kv_heads = heads if kv_heads is None else kv_heads
    for name, value in (("n", n), ("nk", nk), ("batch", batch), ("heads", heads), ("kv-heads", kv_heads)):
        if value < 1:
            raise ConfigError(f"--{name} must be at least 1, got {value}")
    if heads % kv_heads:
        raise ConfigError(f"--heads {heads} is not a multiple of --kv-heads {kv_heads}",
                          hint="grouped-query attention: each K/V head serves heads / kv_heads query heads")
    if causal and nk < n:
        raise ConfigError(f"causal with --nk {nk} < --n {n}: the tile machine refuses it (aligned "
                          f"bottom-right, the first {n - nk} query rows see no key)",
                          hint="use --nk >= --n with --causal (the kernel itself returns O = 0 there)")
    for name, block in (("block-m", block_m), ("block-n", block_n)):
        if block is not None and (block < 16 or block & (block - 1)):
            raise ConfigError(f"--{name} must be a power of two ≥ 16 (a tensor-core tile), got {block}")
    device = "cpu" if INTERPRETER else "cuda"
    tdtype = TORCH_DTYPES[dtype]
    shapes = {"Q": (batch, heads, n, d), "dO": (batch, heads, n, d), "K": (batch, kv_heads, nk, d),
              "V": (batch, kv_heads, nk, d)}

    def inputs(name):  # the simulator's random inputs, rounded to the kernel's dtype
        return torch.from_numpy(random_block(seed, name, shapes[name])).to(tdtype)

    q, k, v, do = (inputs(x) for x in ("Q", "K", "V", "dO"))
    q64, k64, v64, do64 = (t.double().numpy() for t in (q, k, v, do))
    tau = 1.0 / math.sqrt(d) if scale is None else float(scale)
    qd, kd, vd, dod = (t.to(device) for t in (q, k, v, do))

    explicit = block_m is not None or block_n is not None
    if explicit:  # the `tl` kernels with the given blocks (the forward's config fills the other)
        cfg = resolve_config("fwd", qd, causal, block_m, block_n, k=kd)
        block_m, block_n = cfg.block_m, cfg.block_n
    plan, labels = _plan(qd, kd, vd, causal, pass_, block_m, block_n, dtype, explicit)
    blocks = _sim_blocks(plan)
    bm, bn = blocks["O"]
    o_gpu, lse_gpu = flash_attention_forward(qd, kd, vd, causal=causal, sm_scale=tau, block_m=block_m,
                                             block_n=block_n)
    gpu = {"O": o_gpu.double().cpu().numpy(), "L": lse_gpu.double().cpu().numpy()}
    order = "col"
    run: dict[str, Any] = dict(algo="fa2", causal=causal, scale=tau, dtype=sim_dtype)
    sim = run_attention(q64, k64, v64, None, block_m=bm, block_n=bn, order=order, **run)
    if pass_ == "backward":
        dq, dk, dv = flash_attention_backward(qd, kd, vd, o_gpu, lse_gpu, dod, causal=causal, sm_scale=tau,
                                              block_m=block_m, block_n=block_n)
        gpu.update(dQ=dq.double().cpu().numpy(), dK=dk.double().cpu().numpy(), dV=dv.double().cpu().numpy())
        order = _kernel_order()
        bwd_blocks = blocks["dK"]
        runs = {bwd_blocks: run_attention(q64, k64, v64, do64, block_m=bwd_blocks[0], block_n=bwd_blocks[1],
                                          order=order, **run)}
        sim["backward"] = runs[bwd_blocks]["backward"]
        for x in ("dQ", "dK", "dV"):  # each from a run with the blocks of the launch that writes it
            if blocks[x] not in runs:
                runs[blocks[x]] = run_attention(q64, k64, v64, do64, block_m=blocks[x][0], block_n=blocks[x][1],
                                                order=order, **run)
            sim[x] = runs[blocks[x]][x]
    ref = _reference(q64, k64, v64, do64 if pass_ == "backward" else None, causal, tau)
    comparisons = []
    for name in ("O", "L") + (("dQ", "dK", "dV") if pass_ == "backward" else ()):
        s, g, r = np.asarray(sim[name]).reshape(gpu[name].shape), gpu[name], ref[name].reshape(gpu[name].shape)
        diff = float(np.max(np.abs(s - g)))
        top = float(np.max(np.abs(s)))
        comparisons.append(Comparison(name, diff, diff / top if top else diff,
                                      TOLERANCE[name] * EPS[dtype] * max(top, 1.0),
                                      float(np.max(np.abs(s - r))), float(np.max(np.abs(g - r)))))
    fwd = sim["forward"]
    cost_shape: dict[str, Any] = dict(n=n, d=d, batch=batch, heads=heads, causal=causal, block_m=bm, block_n=bn, scale=tau,
                      **({"nk": nk, "kv_heads": kv_heads} if (nk, kv_heads) != (n, heads) else {}))
    cost_fwd = _closed_form("forward", order, **cost_shape)
    cost_bwd = None
    if pass_ == "backward":
        cost_shape.update(block_m=blocks["dK"][0], block_n=blocks["dK"][1])
        cost_bwd = _closed_form("backward", order, **cost_shape)
    elem = 4 if dtype == "fp32" else 2
    shape: dict[str, Any] = dict(batch=batch, heads=heads, causal=causal, elem_bytes=elem, nk=nk, kv_heads=kv_heads)
    traffic = [predict_traffic(ln.schedule(n, d, **shape)) for ln in plan]
    kv = "" if (nk, kv_heads) == (n, heads) else f" (K/V: heads {kv_heads} × N {nk})"
    setup: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "CPU (Triton interpreter)",
        "shape": f"batch {batch} × heads {heads} × N {n} × d {d}{kv}", "causal": causal, "kernel dtype": dtype,
        "simulator dtype": sim_dtype, "blocks": f"BLOCK_M {bm} × BLOCK_N {bn}", "scale": tau, "seed": seed,
        "kernels": "; ".join(f"{ln.function} ({ln.label}{_part(ln)}, {t.read_bytes} B read, {t.write_bytes} B written)"
                             for ln, t in zip(plan, traffic)),
        "dispatch": _dispatch_text(explicit, labels, plan),
        "pass": pass_ + (f" (simulator order: {order})" if pass_ == "backward" else ""),
        "simulated HBM (forward)": f"{fwd.dram_reads} elements read, {fwd.dram_writes} written",
        "closed-form HBM (forward)": f"{cost_fwd['reads']} read, {cost_fwd['writes']} written",
    }
    if pass_ == "backward" and cost_bwd is not None:
        bwd = sim["backward"]
        setup["blocks"] += "".join(
            f"; {ln.pass_}{_part(ln)} BLOCK_M {ln.config.block_m} × BLOCK_N {ln.config.block_n}"
            for ln in plan if ln.pass_ in ("bwd_dkdv", "bwd_dq"))
        setup["simulated HBM (backward)"] = f"{bwd.dram_reads} elements read, {bwd.dram_writes} written"
        setup["closed-form HBM (backward)"] = f"{cost_bwd['reads']} read, {cost_bwd['writes']} written"
    alarms = [f"{side}: {a.kind} at step {a.step} ({a.instruction})" for side in ("forward", "backward")
              if side in sim for a in sim[side].alarms]
    if alarms:
        setup["simulator alarms"] = "; ".join(alarms)
    params = {"device": setup["device"], "interpreter": device != "cuda", "batch": batch, "heads": heads, "n": n,
              "nk": nk, "kv_heads": kv_heads, "d": d, "causal": causal, "dtype": dtype, "sim_dtype": sim_dtype, "block_m": bm, "block_n": bn,
              "scale": tau, "seed": seed, "pass": pass_, "sim_order": order if pass_ == "backward" else None,
              "sim_hbm_forward": {"reads": fwd.dram_reads, "writes": fwd.dram_writes},
              "sim_hbm_backward": ({"reads": sim["backward"].dram_reads, "writes": sim["backward"].dram_writes}
                                   if pass_ == "backward" else None),
              "cost_hbm_forward": cost_fwd, "cost_hbm_backward": cost_bwd, "sim_alarms": alarms,
              "dispatch": not explicit, "model_dispatch_agrees": _agrees(labels, n, d, causal, heads, kv_heads, nk, elem,
                                                                    pass_ == "backward"),
              "launches": [{"pass": ln.pass_, "part": ln.part, "function": ln.function, "kernel": ln.label,
                            "block_m": ln.config.block_m, "block_n": ln.config.block_n,
                            "read_bytes": t.read_bytes, "write_bytes": t.write_bytes}
                           for ln, t in zip(plan, traffic)]}
    return Verification(setup, tuple(comparisons), params)


def _plan(qd, kd, vd, causal: bool, pass_: str, block_m, block_n, dtype: str,
          explicit: bool) -> tuple[list[Launch], dict | None]:
    """(the launches the public functions run for these tensors, in order; the Gluon labels the
    host's dispatch gives — None where no dispatch is made: interpreter, explicit blocks,
    autotuning). The launches follow the host's labels; `tl` ones carry their resolved config."""
    passes = ("fwd", "bwd_dkdv", "bwd_dq") if pass_ == "backward" else ("fwd",)
    configs = {p: resolve_config(p, qd, causal, block_m, block_n, k=kd).to_dict() for p in passes}
    labels = None if (INTERPRETER or explicit or autotune_enabled()) else host_labels(qd, kd, vd, causal)
    if labels is not None:  # the passes this run launches (a forward-only run: no backward's)
        labels = {p: label for p, label in labels.items() if p in passes}
    return case_launches({"configs": configs, "kernels": labels or {}}), labels


def _agrees(labels: dict | None, n: int, d: int, causal: bool, heads: int, kv_heads: int, nk: int,
            elem_bytes: int, backward: bool) -> bool | None:
    """model.dispatch (no GPU) predicts the host's Gluon kernels for this problem (None: no
    dispatch was made)."""
    if labels is None:
        return None
    major, minor = torch.cuda.get_device_capability()
    cap = (major, minor)
    model = pass_labels(launches(n, d, causal, heads, kv_heads, nk, elem_bytes, cap, backward))
    return model == {p: label for p, label in labels.items() if backward or p == "fwd"}


def _part(ln: Launch) -> str:
    """The suffix " dV" / " dK" of a `tl` dV-apart launch (a chunked d 192 label says it)."""
    return "" if ln.gluon else ("", " dV", " dK")[ln.part]


def _sim_blocks(plan: list[Launch]) -> dict[str, tuple[int, int]]:
    """quantity -> (BLOCK_M, BLOCK_N) of the launch that writes it: O, L the forward's; dK,
    dV the dK/dV launch's (a dV-apart pair: dV part 1's, dK part 2's); dQ the dQ launch's (the
    dK/dV's when it writes dQ itself). The simulator runs each with those blocks."""
    out: dict[str, tuple[int, int]] = {}
    for ln in plan:
        bl = (ln.config.block_m, ln.config.block_n)
        if ln.pass_ == "fwd":
            out.update(O=bl, L=bl)
        elif ln.pass_ == "bwd_dkdv":
            out.update({"dV": bl} if ln.part == 1 else {"dK": bl} if ln.part == 2 else {"dK": bl, "dV": bl})
            if ln.config.fused_dq:
                out["dQ"] = bl
        elif ln.pass_ == "bwd_dq":
            out["dQ"] = bl
    return out


def _dispatch_text(explicit: bool, labels: dict | None, plan: list[Launch]) -> str:
    if explicit:
        return "off (explicit blocks: the tl kernels)"
    if labels is None:
        return "none (Triton interpreter: the tl kernels)" if INTERPRETER else "off (autotuning)"
    gluon = [ln.pass_ for ln in plan if ln.gluon]
    if gluon:
        return "on: " + ", ".join(gluon) + " on Gluon kernels"
    usable, why = gluon_status()
    return "on: the tl kernels here" + ("" if usable else f" ({why})")


def _kernel_order() -> str:
    """The tile generator's order closest to the kernel's backward (split if it has it)."""
    from toymachine.gen import tile

    return "split" if "split" in getattr(tile, "ORDERS", ()) else "col"


def verification_report(v: Verification) -> Report:
    rows = tuple((c.quantity, Num(c.max_abs, 3), Num(c.max_rel, 3), Num(c.tolerance, 3), Num(c.sim_vs_ref, 3),
                  Num(c.gpu_vs_ref, 3), "ok" if c.ok else "MISMATCH") for c in v.comparisons)
    compare = Section("Simulator vs kernel", ("Quantity", "max |sim − gpu|", "max rel", "tolerance",
                                              "sim vs fp64 ref", "gpu vs fp64 ref", "result"), rows,
                      align=("l", "r", "r", "r", "r", "r", "l"))
    setup = Section("Setup", ("Item", "Value"), tuple((k, val) for k, val in v.setup.items()))
    verdict = "agree" if v.ok else "DO NOT agree"
    return Report("verify-gpu", (compare, setup), (f"simulator and kernel {verdict}",))
