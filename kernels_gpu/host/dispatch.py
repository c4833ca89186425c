"""Which kernel each pass of a forward and backward runs: the tables and the one function that
reads them (`choose`).

The public functions (`host/flash_attn.py`), the time model's launch list
(`model/dispatch.py`), the traffic model, verify-gpu and the bench all ask `choose`; nothing
else decides. It needs no GPU: the problem's shape, the compute capability (None: no GPU or
the interpreter, where no Gluon kernel runs) and the environment switches are its inputs, so
the model answers for an sm_90 GPU on any machine.

A pass absent from the answer runs the `tl` kernel with its tuned config (`host/configs.py`).
The tables hold what measured faster than the `tl` kernel (PERFORMANCE.md has the figures and
the commands that produce them):

* DISPATCH / DISPATCH_CAUSAL: head dim -> (BLOCK_M, BLOCK_N, warps) of the one-partition Gluon
  forward (kernels.hopper): 1.05 - 1.24 x the `tl` forward at d 64 and 128, causal or not;
  grouped heads (H a multiple of H_kv, MQA too) run it and the warp-specialised one as well.
* DISPATCH_WS: (head dim, causal) -> [(largest N, (BLOCK_N, schedule, stages) or None)], the
  warp-specialised forward (kernels.hopper_ws), before the one-partition one; the first row
  whose largest N covers N_q; a schedule "p...": its persistent form (one program an SM
  walking the (query tile, head) items; kernels.hopper_ws_persistent), which led at N 1k (the
  prologue and epilogue no longer alone: 1.03 - 1.19 x cuDNN with grouped heads against
  0.88 - 0.93 for the one-launch-a-tile kernels) and tied at 4k. Causal and dense it lost at
  N 1k - 2k (0.87 - 0.88 x cuDNN against 0.94 - 0.96 for the one-partition kernel: its
  heaviest-first order across heads spreads the K/V tiles in flight over every head, where a
  group's heads share them), so DISPATCH_WS_GROUPED holds the grouped-head rows that differ
  and is read first when H_kv < H. d 64 is absent: there it lost to the one-partition kernel.
  d 192
  runs it alone (the head dim as three 64-column chunks; the one-partition kernel has no d 192):
  1.4 - 1.5 x the `tl` forward padded to 256 (data/hopper_fwd_h200.json: its schedules and
  ring depths within 1 - 8 % of each other; ping-pong 2 stages led non-causal, lag causal).
* DISPATCH_DKDV: head dim -> (BLOCK_M, BLOCK_N, warps, ring stages, overlap) of the Gluon dK/dV
  (kernels.hopper_bwd): 1.09 - 1.34 x the `tl` dK/dV launch at d 128; at d 64 within +-7 %, so
  not there. Overlap 1 (dP^T issued with S^T, under P^T's exponentials); a 3-stage ring needs
  131 KB of shared memory (one program per SM instead of two) and lost. The host runs it with
  dK and dV stored through shared memory and TMA (tma_out): 0 - 12 % faster than its plain
  stores, which also spilled (data/hopper_fwd_h200.json, part hopper_bwd_tma_out); the Gluon
  dQ's TMA store was mixed (-15 % to +6 %), so the dQ keeps its plain stores.
* DISPATCH_DQ: (head dim, causal) -> the Gluon dQ's config, only beside the Gluon dK/dV: causal
  d 128 (the backward 1.02 - 1.06 x); non-causal within +-3 %, so not there.
* DISPATCH_DKDV_WS: (head dim, causal) -> [(largest N, (BLOCK_M, stages, overlap, fused dQ,
  split) or None)], the warp-specialised dK/dV (kernels.hopper_bwd_ws) instead of the
  one-partition one. Empty: no configuration measured faster.
* DISPATCH_D192: causal -> [(largest N, host.hopper_d192.D192Config or None)], the chunked
  d 192 backward (kernels.hopper_bwd_chunked; grouped heads on K/V copied out): 1.18 - 1.34 x
  SDPA-flash at N 1k - 16k; below N 1k nothing was measured.

Switches: KERNELS_GPU_HOPPER=0 turns every Gluon kernel off, KERNELS_GPU_WS=0 the
warp-specialised forward, KERNELS_GPU_WS_BWD=0 the warp-specialised dK/dV,
KERNELS_GPU_D192_GROUPS=0 the chunked d 192 backward for grouped heads.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import torch

from . import support
from .hopper_d192 import CANDIDATES, D192Config

__all__ = ["DISPATCH", "DISPATCH_CAUSAL", "DISPATCH_WS", "DISPATCH_WS_GROUPED", "DISPATCH_DKDV", "DISPATCH_DQ",
           "DISPATCH_DKDV_WS", "DISPATCH_D192", "Choice", "SM90", "WS_ROWS", "choose",
           "choose_for", "capability_now"]

SM90 = (9, 0)
WS_ROWS = 128  # query (or key) rows of a warp-specialised program: two warpgroups of 64

FwdConfig = tuple[int, int, int]
WsConfig = tuple[int, str, int]
BwdConfig = tuple[int, int, int, int, int]

DISPATCH: dict[int, FwdConfig] = {64: (128, 128, 8), 128: (128, 64, 8)}
DISPATCH_CAUSAL: dict[int, FwdConfig] = {64: (128, 128, 8), 128: (128, 64, 8)}
DISPATCH_WS: dict[tuple[int, bool], list[tuple[int, WsConfig | None]]] = {
    (128, False): [(512, None), (1024, (128, "ppingpong", 2)), (4096, (128, "lag", 3)),
                   (1 << 62, (128, "lag", 2))],
    (128, True): [(2048, None), (4096, (128, "pingpong", 3)), (1 << 62, (128, "pingpong", 2))],
    (192, False): [(1 << 62, (64, "pingpong", 2))],
    (192, True): [(1 << 62, (64, "lag", 2))]}
DISPATCH_WS_GROUPED: dict[tuple[int, bool], list[tuple[int, WsConfig | None]]] = {
    (128, True): [(512, None), (2048, (128, "ppingpong", 2)), (4096, (128, "pingpong", 3)),
                  (1 << 62, (128, "pingpong", 2))]}
DISPATCH_DKDV: dict[int, BwdConfig] = {128: (64, 64, 4, 2, 1)}
DISPATCH_DQ: dict[tuple[int, bool], BwdConfig] = {(128, True): (64, 64, 4, 2, 1)}
DISPATCH_DKDV_WS: dict[tuple[int, bool], list[tuple[int, tuple[int, ...] | None]]] = {}
DISPATCH_D192: dict[bool, list[tuple[int, D192Config | None]]] = {
    False: [(1023, None), (1 << 62, CANDIDATES["g-n128"])],
    True: [(1023, None), (1 << 62, CANDIDATES["g-n128"])]}

# pass -> config: "fwd" (DISPATCH), "fwd_ws" (DISPATCH_WS), "bwd_dkdv" (DISPATCH_DKDV),
# "bwd_dkdv_ws" (DISPATCH_DKDV_WS), "bwd_dq" (DISPATCH_DQ), "bwd_d192" (DISPATCH_D192)
Choice = dict[str, tuple[Any, ...]]  # D192Config is a NamedTuple


def _first_row(rows: list[tuple[int, Any]], n: int) -> Any:
    """The config of the first (largest N, config) row whose largest N covers n, else None."""
    return next((cfg for largest, cfg in rows if n <= largest), None)


def choose(n: int, d: int, causal: bool = False, heads: int = 1, kv_heads: int | None = None,
           nk: int | None = None, elem_bytes: int = 2,
           capability: tuple[int, int] | None = SM90,
           env: Mapping[str, str] | None = None) -> Choice:
    """The passes of one problem (N_q = n, N_k = nk, head dim d, query and K/V heads,
    elem_bytes 2: fp16 / bf16) that run on a Gluon kernel, and each one's config, for a launch
    with no explicit blocks or config on a GPU of this compute capability (None: none, or the
    interpreter). `env` holds the switches (default os.environ)."""
    env = os.environ if env is None else env
    nk = n if nk is None else nk
    kv_heads = heads if kv_heads is None else kv_heads
    if (capability is None or capability[0] != 9 or nk != n
            or elem_bytes != 2 or env.get("KERNELS_GPU_HOPPER", "1") == "0"
            or not support.gluon_status(env=env)[0]):  # this Triton's Gluon verified (host/support.py)
        return {}
    out: Choice = {}
    fwd = (DISPATCH_CAUSAL if causal else DISPATCH).get(d)
    grouped_ok = heads % kv_heads == 0  # grouped heads: query head h reads K/V head h // G
    if grouped_ok and fwd is not None and n % max(fwd[:2]) == 0:
        out["fwd"] = fwd
    key = (d, bool(causal))
    ws = _first_row((DISPATCH_WS_GROUPED.get(key) if kv_heads < heads else None)
                    or DISPATCH_WS.get(key, []), n)
    if (ws is not None and grouped_ok and env.get("KERNELS_GPU_WS", "1") != "0"
            and n % max(WS_ROWS, ws[0]) == 0):
        out["fwd_ws"] = ws
    if kv_heads == heads and "fwd" in out:  # the Gluon backward launches take H_kv = H
        dkdv = DISPATCH_DKDV.get(d)
        if dkdv is not None and n % max(dkdv[:2]) == 0:
            out["bwd_dkdv"] = dkdv
            dq = DISPATCH_DQ.get((d, bool(causal)))
            if dq is not None and n % max(dq[:2]) == 0:
                out["bwd_dq"] = dq
            kv_ws = _first_row(DISPATCH_DKDV_WS.get((d, bool(causal)), []), n)
            if (kv_ws is not None and env.get("KERNELS_GPU_WS_BWD", "1") != "0"
                    and n % WS_ROWS == 0):
                out["bwd_dkdv_ws"] = kv_ws
    if "bwd_dkdv" not in out and d == 192 and (
            kv_heads == heads or env.get("KERNELS_GPU_D192_GROUPS", "1") != "0"):
        d192 = _first_row(DISPATCH_D192.get(bool(causal), []), n)
        if d192 is not None and not any(n % b for blk in d192 if blk for b in blk[:2]):
            out["bwd_d192"] = d192
    return out


def capability_now(interpreter: bool) -> tuple[int, int] | None:
    """The current CUDA device's compute capability; None in the interpreter or with no GPU."""
    if interpreter or not torch.cuda.is_available():
        return None
    from .launch import _capability

    return _capability(torch.cuda.current_device())


def choose_for(p: Any, interpreter: bool) -> Choice:
    """`choose` for a launch.Problem on the current device (no Gluon pass, and one
    GluonFallbackWarning, where this Triton's Gluon is not verified: host/support.py)."""
    capability = capability_now(interpreter)
    if capability is not None and capability[0] == 9 and not support.gluon_usable():
        return {}
    return choose(p.nq, p.d, bool(p.causal), p.heads, p.heads_kv, p.nk, p.dtype.itemsize,
                  capability)
