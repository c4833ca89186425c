"""The tile machine's predicted time for each kernel launch, beside the measured one.

The prediction is the tile machine's, on the preset of the GPU that ran (h200 for an H200,
calibrated from measurement; h100 otherwise, datasheet rates). For one launch with the kernel's
own BLOCK_M / BLOCK_N, the closed form `toymachine.cost.attention_tile_cost` (which the tests
hold equal to the tile simulator, instruction for instruction) gives the FLOPs on the tensor
cores, the other FLOPs, the exp/log elements and the HBM words, and the preset turns them into
seconds by its one formula (`Machine.work_cycles`):

    compute = matmul FLOPs / tensor rate + other FLOPs / vector rate + exp2s / SFU rate
              (the units do not overlap: the seed's in-order tile machine)
    hbm     = compulsory words (every array the launch touches, once) x bytes / HBM rate
    l2      = the tile program's words (each tile load counted each time) x bytes / L2 rate
    predicted = max(compute, hbm, l2) + one launch's latency (per kernel launched)

Why two memory terms: the tile machine has no cache, so the words it moves are what the SMs
request. On the GPU the re-reads of K and V (forward, dQ) and of Q and dO (dK/dV) are served by
the L2 (ncu measured DRAM reads = the compulsory bytes in 31 of 32 launches, data/traffic_h200.json), so
HBM sees only the compulsory words and the rest costs L2 bandwidth (measured, calibration.json).
`roofline_s` is the tile machine's own estimate, max(all tile words at the HBM rate, compute):
what the model says with no L2, printed beside for comparison.

FLOPs use the padded head dim (the tensor cores run d_p-wide tiles); bytes use the real one.

Given the config that ran (`config=` / `dkdv_config=`, `dq_config=`), each loop launch then goes
through the schedule (`model/occupancy.py`): the rate time above is spread
over the launch's programs in proportion to their loop iterations, and the programs run on
SMs x programs-per-SM slots (greedy, in launch order). Per iteration a slot takes

    occ x max(rate per SM-iteration, chain / (1 + overlap x (occ - 1)))
    chain = (tensor + vector + sfu) x (1 + exposed) per SM-iteration

(occ: programs per SM from the config's registers and shared memory; one program's matrix
and softmax work run in series plus the latency it cannot hide, `exposed`; a co-resident
program overlaps a fraction `overlap` of it), and each program adds `fixed_s` (the held tile
in, the pipeline's fill, the stores). predicted = makespan + launch. The constants (`TERMS`:
the forward; the dK/dV launches; the dQ launch) are fitted on declared subsets: the forward's
and the dK/dV's on the H100 frontier grid's `FIT_SUBSET` (`python -m
kernels_gpu.bench.fit_model`, checked on the rest), the dQ's on the launch studies' `tl` dQ
(`gluon.GLUON_FIT_SUBSET`, `fit_model --gluon`), then the dK/dV's with it held.

Where a Gluon kernel ran (`kernel=` / `dkdv_kernel=` / `dq_kernel=`, model/gluon.py: the bench
row's `fwd_kernel`, `bwd_dkdv_kernel`, `bwd_dq_kernel`), its tiles, its programs per SM and
its schedule (gluon.KINDS) replace the `tl` config's: the one-partition kernels run the chain
above with `GLUON_TERMS` (less the GEMM the backward's OVERLAP hides, `overlap_hidden`); the
warp-specialised forward is a two-stage pipeline hiding a fraction of the shorter of its
matrix and softmax stages (`overlapped_time`, gluon.PIPELINE). Both fitted on the launch
studies (gluon.GLUON_FIT_SUBSET); the dispatch runs are held out. The other Gluon backward
kernels run the chain by their KINDS row (`chain_time`): the warp-specialised dK/dV two chains
a program (`lanes`), its fused dQ 5 / 4 of the tensor time plus the fp32 reductions at their
form's throughput (model/gluon_bwd.py); the chunked d 192 launches on unpadded d 192 work
(`_one(pad=False)`), a dK/dV pass their dV and dK launches in turn (`predict_backward`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from toymachine.cost import attention_tile_cost

from ..kernels.common import padded_head_dim
from . import gluon, gluon_bwd
from .gluon import overlap_hidden, overlapped_time
from .occupancy import program_resources, program_row, programs_per_sm, schedule_time
from .rates import CALIBRATION_FILE, calibration, calibration_file, l2_rate, machine_for  # noqa: F401
from .schedule import schedule

__all__ = ["Prediction", "predict_forward", "predict_backward", "predict_launch", "sequence",
           "machine_for",
           "calibration", "CALIBRATION_FILE", "ScheduleTerms", "TERMS", "FIT_SUBSET",
           "GLUON_TERMS", "TERMS_OF", "overlap_hidden", "overlapped_time",
           "scheduled", "schedule_time", "chain_time"]

PREPROCESS_BLOCK = 128  # launch.launch_preprocess's BLOCK_M on a GPU


@dataclass(frozen=True)
class Prediction:
    tensor_s: float
    vector_s: float
    sfu_s: float
    hbm_s: float        # compulsory words at the HBM rate
    l2_s: float         # the tile program's words at the L2 rate
    launch_s: float     # launches x measured empty-launch time
    roofline_s: float   # the tile machine as is: max(tile words at HBM rate, compute)
    total_s: float      # the prediction: max(compute, hbm, l2) + launch, or with a config
    #                     the makespan of its programs + launch; summed over launches
    bound: str          # the largest term ("compute", "hbm", "l2"; "+"-joined over launches)
    schedule_s: float = 0.0  # what the schedule adds to the rate time (quantisation, fixed
    #                          cost, exposed latency; negative where programs overlap)
    occupancy: str = ""      # programs per SM of each launch with a config ("+"-joined)

    @property
    def compute_s(self) -> float:
        return self.tensor_s + self.vector_s + self.sfu_s

    def to_dict(self) -> dict:
        return {**asdict(self), "compute_s": self.compute_s}


def _launch_prediction(tensor_s, vector_s, sfu_s, hbm_s, l2_s, launch_s, roofline_s
                       ) -> Prediction:
    terms = {"compute": tensor_s + vector_s + sfu_s, "hbm": hbm_s, "l2": l2_s}
    bound = max(terms, key=terms.__getitem__)
    return Prediction(tensor_s, vector_s, sfu_s, hbm_s, l2_s, launch_s, roofline_s,
                      terms[bound] + launch_s, bound)


def sequence(parts: list[Prediction]) -> Prediction:
    """Launches that run one after another (the backward's three): every term adds up."""
    fields = ("tensor_s", "vector_s", "sfu_s", "hbm_s", "l2_s", "launch_s", "roofline_s",
              "total_s", "schedule_s")
    sums = {f: sum(getattr(p, f) for p in parts) for f in fields}
    return Prediction(**sums, bound="+".join(p.bound for p in parts),
                      occupancy="+".join(p.occupancy or "-" for p in parts))


@dataclass(frozen=True)
class ScheduleTerms:
    """The schedule's constants for one pass (module docstring)."""
    fixed_s: float   # per program: prologue (held tiles in, pipeline fill) and epilogue
    exposed: float   # a program's serial time per iteration over its matrix + softmax time - 1
    overlap: float   # the fraction of a co-resident program's serial time that overlaps


# Fitted by `python -m kernels_gpu.bench.fit_model` (least squares of log(predicted /
# measured), grid search) on FIT_SUBSET of data/frontier_h100.json (an H100);
# a CPU test checks them. The forward's overlap is determined by its d 64 points alone (the
# only forward launch with 3 programs per SM whose softmax is not hidden behind the L2 time).
# "bwd_dq" (the dQ launch) is fitted first, on the `tl` dQ launches of the launch studies
# (gluon.GLUON_FIT_SUBSET: timed alone, N 1k and 16k; `fit_model --gluon`), then "bwd" (the
# dK/dV launches) on FIT_SUBSET with it held (one "bwd" for both, 5 us, 0.2, 0.375, put the
# `tl` dQ launch alone at 0.81 - 1.37 x its measured time and the `tl` dK/dV at 0.68 - 1.10:
# errors that cancel in the whole `tl` backward, not beside a Gluon dK/dV).
TERMS = {"fwd": ScheduleTerms(fixed_s=0.0, exposed=0.1, overlap=0.125),
         "bwd": ScheduleTerms(fixed_s=8e-6, exposed=0.3, overlap=0.25),
         "bwd_dq": ScheduleTerms(fixed_s=3e-6, exposed=0.0, overlap=0.375)}
FIT_SUBSET = "N_q = N_k in {1024, 4096, 16384}"  # held out: N 2048, 8192 and N_q != N_k
# The same three constants for the one-partition Gluon kernels (their chain: TMA and wgmma
# waited at mbarriers, not the `tl` pipeline), fitted by `python -m kernels_gpu.bench.fit_model
# --gluon` on gluon.GLUON_FIT_SUBSET (the launch studies at N 1k and 16k).
GLUON_TERMS = {"fwd": ScheduleTerms(fixed_s=0.5e-6, exposed=0.0, overlap=0.125),
               "bwd": ScheduleTerms(fixed_s=5e-6, exposed=0.2, overlap=0.125),
               "bwd_dq": ScheduleTerms(fixed_s=3e-6, exposed=0.15, overlap=0.25),
               # the other Gluon backward kernels (gluon.KINDS' `terms`): the warp-
               # specialised dK/dV (fused dQ or not), the d 192 dV, dK and dQ launches
               "bwd_ws": ScheduleTerms(fixed_s=6e-6, exposed=0.95, overlap=0.75),
               "d192_dv": ScheduleTerms(fixed_s=3e-6, exposed=0.45, overlap=0.125),
               "d192_dk": ScheduleTerms(fixed_s=4e-6, exposed=0.55, overlap=0.0),
               "d192_dq": ScheduleTerms(fixed_s=4e-6, exposed=0.4, overlap=0.0)}
TERMS_OF = {"fwd": "fwd", "bwd_dkdv": "bwd", "bwd_dq": "bwd_dq"}  # a launch's pass -> its terms


def scheduled(rate: Prediction, sched, config, terms: ScheduleTerms, sms: int = 132,
              part: int | None = None, kernel: gluon.GluonKernel | None = None,
              pipeline: gluon.PipelineTerms | None = None,
              chain: ScheduleTerms | None = None, hbm_Bps: float = 0.0) -> Prediction:
    """One loop launch's prediction through its schedule (module docstring): `rate` is the
    tile machine's, `sched` the launch's Schedule, `config` its KernelConfig, `terms` the `tl`
    chain's constants; `kernel` the Gluon kernel that ran (model/gluon.py KINDS: its
    occupancy; the warp-specialised forward's pipeline with `pipeline`'s constants,
    gluon.PIPELINE if None; the others the chain with `chain`'s, GLUON_TERMS[its kind's] if
    None: `chain_time`), None for the `tl` kernel. `hbm_Bps`: the fused dQ's accumulator."""
    per, rows = program_row(sched)
    iterations = sum(per) * rows
    if iterations == 0:
        return rate
    if kernel is None:
        regs, smem, _ = program_resources(sched.pass_, sched.head_dim, sched.causal, config,
                                          part, sched.elem_bytes)
        occ = programs_per_sm(regs, smem, config.num_warps)
    else:
        regs, smem, _ = gluon.resources(kernel, sched.head_dim, sched.causal, sched.elem_bytes)
        occ = programs_per_sm(regs, smem, kernel.num_warps)
    kind = gluon.KINDS[kernel.kind] if kernel is not None else None
    if kernel is not None and kind is not None and kind.schedule == "pipeline":
        pipeline = gluon.PIPELINE if pipeline is None else pipeline
        # persistent: every item's prologue and epilogue but the first under its neighbours'
        fixed = 0.0 if kernel.persistent else pipeline.fixed_s
        t = overlapped_time(rate, per, rows, occ, fixed, sms,
                            pipeline.hidden[kernel.pipeline_schedule], pipeline.balance)
    else:
        if kernel is not None and kind is not None:
            terms = chain or GLUON_TERMS[kind.terms or TERMS_OF[kernel.pass_]]
        geo = (sched.n, sched.head_dim, sched.batch, sched.heads, sched.causal,
               sched.elem_bytes)
        t = chain_time(rate, per, rows, occ, terms, sms, kernel, geo, hbm_Bps)
    return replace(rate, total_s=t, schedule_s=t - rate.total_s, occupancy=str(occ))


def chain_time(rate: Prediction, per: list[int], rows: int, occ: int, terms: ScheduleTerms,
               sms: int = 132, kernel: gluon.GluonKernel | None = None, geo: tuple = (),
               hbm_Bps: float = 0.0, atomic: dict | None = None) -> float:
    """Seconds of one chain launch: the `tl` kernel's (kernel None), or a Gluon kernel's by
    its KINDS row: the tensor time x `products`, `lanes` chains a program, less the OVERLAP's
    hidden GEMM; a fused dQ adds its atomics (gluon_bwd.atomic_s; `geo` = (n, d, batch,
    heads, causal, elem_bytes), `atomic` the throughputs, ATOMIC_BPS if None)."""
    if kernel is None:
        return schedule_time(rate, per, rows, occ, terms, sms)
    kind = gluon.KINDS[kernel.kind]
    rate = replace(rate, tensor_s=rate.tensor_s * kind.products)
    t = schedule_time(rate, per, rows, occ, terms, sms, overlap_hidden(rate, kernel),
                      kind.lanes)
    if kind.atomics:
        if not hbm_Bps:
            raise ValueError(f"{kernel.label}: the fused dQ's accumulator needs the HBM rate")
        n, d, batch, heads, causal, eb = geo
        t += gluon_bwd.atomic_s(kernel.fused, n, d, batch, heads, causal, kernel.block_m,
                                hbm_Bps, rate.launch_s, atomic, eb)
    return t


_HEAD_ARRAYS = {"Q", "O", "dO", "dQ"}  # (B, H, n, d); K, V, dK, dV: (B, H_kv, nk, d); L, D: (B, H, n)


def _compulsory_words(traffic, *, n, nk, d, batch, heads, kv_heads) -> int:
    """Every array the program touches, read once and written once: what DRAM must move when
    L2 serves every re-read (ncu: DRAM reads = this, data/traffic_h200.json)."""
    size = {"q": batch * heads * n * d, "kv": batch * kv_heads * nk * d, "row": batch * heads * n}
    total = 0
    for name, (reads, writes) in traffic.items():
        kind = "q" if name in _HEAD_ARRAYS else "kv" if name in ("K", "V", "dK", "dV") else "row"
        total += size[kind] * ((reads > 0) + (writes > 0))
    return total


def _one(machine, l2_Bps: float, launch_s: float, *, n: int, nk: int | None, d: int,
         batch: int, heads: int, causal: bool, block_m: int, block_n: int, pass_: str,
         phase: str | None = None, kv_heads: int | None = None, pad: bool = True
         ) -> Prediction:
    """One launch at the tile machine's rates; `pad` False: FLOPs on the real head dim (the
    chunked d 192 kernels: three 64-column chunks, no padding)."""
    nk = n if nk is None else nk
    kv_heads = heads if kv_heads is None else kv_heads
    kw: dict[str, Any] = dict(n=n, batch=batch, heads=heads, causal=causal, algo="fa2", pass_=pass_,
              **({"order": "split", "phase": phase} if phase else {}),
              **({"nk": nk, "kv_heads": kv_heads} if (nk, kv_heads) != (n, heads) else {}))
    work = attention_tile_cost(d=padded_head_dim(d) if pad else d, block_m=block_m, block_n=block_n, **kw)
    bytes_ = attention_tile_cost(d=d, block_m=block_m, block_n=block_n, **kw)
    once = _compulsory_words(bytes_.traffic, n=n, nk=nk, d=d, batch=batch, heads=heads,
                             kv_heads=kv_heads)
    c = machine.work_cycles(words=0, matmul=work.flops_matmul,
                            vector=work.flops_other - work.sfu_ops, sfu=work.sfu_ops)
    wb, hz = machine.word_bytes, machine.clock_hz
    tile_bytes = (bytes_.reads + bytes_.writes) * wb
    hbm_Bps = machine.hbm_bytes_per_cycle * hz
    compute = (c["tensor"] + c["vector"] + c["sfu"]) / hz
    return _launch_prediction(c["tensor"] / hz, c["vector"] / hz, c["sfu"] / hz,
                              once * wb / hbm_Bps, tile_bytes / l2_Bps,
                              launch_s, max(tile_bytes / hbm_Bps, compute))


def predict_forward(machine, calib: dict, *, n: int, d: int, batch: int, heads: int,
                    causal: bool, block_m: int, block_n: int, nk: int | None = None,
                    kv_heads: int | None = None, config=None, terms: dict = TERMS,
                    kernel: gluon.GluonKernel | None = None) -> Prediction:
    """One forward launch with the kernel's blocks (nk: keys, kv_heads: K/V heads); with its
    KernelConfig, through the schedule (module docstring). `kernel`: the Gluon forward that
    ran (model/gluon.py); its tiles and schedule replace the blocks and config."""
    if kernel is not None:
        config, block_m, block_n = kernel.config, kernel.block_m, kernel.block_n
    rate = _one(machine, l2_rate(calib), calib["launch_s"], n=n, nk=nk, d=d, batch=batch,
                heads=heads, causal=causal, block_m=block_m, block_n=block_n, pass_="forward",
                kv_heads=kv_heads, pad=kernel is None)  # a Gluon forward: d 192 in 64-col chunks
    if config is None:
        return rate
    sched = schedule(n, d, batch, heads, causal, pass_="fwd", config=config, nk=nk,
                     kv_heads=kv_heads, elem_bytes=machine.word_bytes)
    return scheduled(rate, sched, config, terms["fwd"], calib.get("sms") or 132,
                     kernel=kernel)


def predict_backward(machine, calib: dict, *, n: int, d: int, batch: int, heads: int,
                     causal: bool, dkdv: tuple[int, int], dq: tuple[int, int],
                     nk: int | None = None, kv_heads: int | None = None,
                     dkdv_split: int = 1, dkdv_apart: bool = False, dkdv_config=None,
                     dq_config=None, terms: dict = TERMS,
                     dkdv_kernel: gluon.GluonKernel | None = None,
                     dq_kernel: gluon.GluonKernel | None = None) -> Prediction:
    """The three backward launches (preprocess, dK/dV, dQ) with their blocks (BM, BN), one
    after another. dkdv_split > 1 (a grouped-query head group split over programs): the dK/dV
    launch is the tile program with H_kv * split K/V heads (each program streams its share of
    the group past its own copy of the K/V tile), writing fp32 partials; then the host's sum
    reads them and writes dK, dV (one more launch, HBM-bound). dkdv_apart (the d 256 kernel,
    KernelConfig.dv_apart): the dK/dV launch is two, the tile machine's dv and dk phases (dV:
    Q K^T and P^T dO; dK: Q K^T, dO V^T, dS^T Q), one accumulator each. With dkdv_config and
    dq_config (the KernelConfigs that ran) the dK/dV and dQ launches go through the schedule
    (module docstring); the preprocess and the split's sum stay rate-bound launches.
    dkdv_kernel: the Gluon dK/dV that ran (model/gluon.py): its tiles, occupancy and config
    replace dkdv and dkdv_config (no split; the chunked d 192 pass: its dV and dK launches;
    a fused dQ: no dQ launch); dq_kernel: the Gluon dQ, likewise (`predict_launch` each)."""
    if dq_kernel is not None:
        dq, dq_config = (dq_kernel.block_m, dq_kernel.block_n), dq_kernel.config
    if dkdv_kernel is not None:
        dkdv, dkdv_config = (dkdv_kernel.block_m, dkdv_kernel.block_n), dkdv_kernel.config
        dkdv_split, dkdv_apart = 1, False
    kv = heads if kv_heads is None else kv_heads
    args: dict[str, Any] = dict(n=n, nk=nk, d=d, batch=batch, heads=heads, causal=causal, pass_="backward",
                kv_heads=kv_heads)
    l2, launch = l2_rate(calib), calib["launch_s"]
    dkdv_args: dict[str, Any] = dict(args, kv_heads=kv * dkdv_split) if dkdv_split > 1 else args
    parts = [_one(machine, l2, launch, block_m=PREPROCESS_BLOCK, block_n=PREPROCESS_BLOCK,
                  phase="preprocess", **args)]
    sms = calib.get("sms") or 132
    geo: dict[str, Any] = dict(nk=nk, kv_heads=kv_heads, elem_bytes=machine.word_bytes)
    copied = (dkdv_kernel is not None and dkdv_kernel.family == "d192" and kv < heads)
    one: dict[str, Any] = dict(n=n, d=d, batch=batch, heads=heads, causal=causal, nk=nk,
               kv_heads=heads if copied else kv_heads, terms=terms)
    if copied:  # grouped d 192: K, V copied out to the H query heads (host/hopper_d192.py)
        parts.append(_kv_copy(machine, launch, batch=batch, kv_heads=kv, heads=heads,
                              nk=n if nk is None else nk, d=d))
    for k in (dkdv_kernel.launches or (dkdv_kernel,)) if dkdv_kernel is not None else ():
        parts.append(predict_launch(machine, calib, k, **one))  # Gluon: each launch its own
    for i, ph in enumerate(() if dkdv_kernel is not None else ("dv", "dk") if dkdv_apart
                           else ("dkdv",)):
        p = _one(machine, l2, launch, block_m=dkdv[0], block_n=dkdv[1], phase=ph, **dkdv_args)
        if dkdv_config is not None:
            part = i + 1 if dkdv_apart else None
            sched = schedule(n, d, batch, heads, causal, pass_="bwd_dkdv", config=dkdv_config,
                             part=part, **geo)
            p = scheduled(p, sched, dkdv_config, terms["bwd"], sms, part, dkdv_kernel)
        parts.append(p)
    if dkdv_kernel is not None and dkdv_kernel.fused:  # dQ in the dK/dV launch
        return sequence(parts)
    if copied:  # ... and the dK/dV written per query head in fp32, summed over each group
        parts.append(_split_sum(machine, launch, batch=batch, kv_heads=kv, split=heads // kv,
                                nk=n if nk is None else nk, d=d))
    if dq_kernel is not None:
        return sequence(parts + [predict_launch(machine, calib, dq_kernel, **one)])
    p = _one(machine, l2, launch, block_m=dq[0], block_n=dq[1], phase="dq", **args)
    if dq_config is not None:
        sched = schedule(n, d, batch, heads, causal, pass_="bwd_dq", config=dq_config, **geo)
        p = scheduled(p, sched, dq_config, terms.get("bwd_dq", terms["bwd"]), sms,
                      kernel=dq_kernel)
    parts.append(p)
    if dkdv_split > 1:
        parts.append(_split_sum(machine, launch, batch=batch, kv_heads=kv, split=dkdv_split,
                                nk=n if nk is None else nk, d=d))
    return sequence(parts)


def predict_launch(machine, calib: dict, kernel: gluon.GluonKernel, *, n: int, d: int,
                   batch: int, heads: int, causal: bool, nk: int | None = None,
                   kv_heads: int | None = None, terms: dict = TERMS,
                   pipeline: gluon.PipelineTerms | None = None) -> Prediction:
    """One launch of a Gluon kernel alone (the launch studies, bench/hopper*.py): the forward,
    the dK/dV or the dQ, through its schedule."""
    if kernel.launches:
        raise ValueError(f"{kernel.label!r} is {len(kernel.launches)} launches: predict each")
    phase = gluon.phase(kernel)
    rate = _one(machine, l2_rate(calib), calib["launch_s"], n=n, nk=nk, d=d, batch=batch,
                heads=heads, causal=causal, block_m=kernel.block_m, block_n=kernel.block_n,
                pass_="forward" if phase is None else "backward", phase=phase,
                kv_heads=kv_heads, pad=kernel.family != "d192" and phase is not None)
    sched = schedule(n, d, batch, heads, causal, pass_=kernel.pass_, config=kernel.config,
                     nk=nk, kv_heads=kv_heads, elem_bytes=machine.word_bytes,
                     part=kernel.part or None)
    return scheduled(rate, sched, kernel.config, terms["fwd" if phase is None else "bwd"],
                     calib.get("sms") or 132, kernel=kernel, pipeline=pipeline,
                     hbm_Bps=machine.hbm_bytes_per_cycle * machine.clock_hz)


def _kv_copy(machine, launch_s: float, *, batch: int, kv_heads: int, heads: int, nk: int,
             d: int) -> Prediction:
    """K and V copied out from H_kv to H heads (the grouped chunked d 192 backward): read
    once, written H / H_kv times, in the dtype; HBM-bound, 2 torch launches."""
    bytes_ = 2 * batch * nk * d * machine.word_bytes * (kv_heads + heads)
    hbm = bytes_ / (machine.hbm_bytes_per_cycle * machine.clock_hz)
    return _launch_prediction(0.0, 0.0, 0.0, hbm, 0.0, 2 * launch_s, hbm)


def _split_sum(machine, launch_s: float, *, batch: int, kv_heads: int, split: int, nk: int,
               d: int) -> Prediction:
    """The host's sum of the split dK/dV partials: fp32 (2, B, H_kv, split, N_k, d) read,
    (2, B, H_kv, N_k, d) fp32 written, then copied into dK, dV (read fp32, write the dtype):
    HBM-bound, 4 torch launches."""
    elems = 2 * batch * kv_heads * nk * d
    bytes_ = elems * (4 * split + 4 + 4 + machine.word_bytes)
    hbm = bytes_ / (machine.hbm_bytes_per_cycle * machine.clock_hz)
    return _launch_prediction(0.0, 0.0, 0.0, hbm, 0.0, 4 * launch_s, hbm)
