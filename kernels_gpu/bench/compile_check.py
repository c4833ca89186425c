"""Compile the kernels for a GPU that is not here, and read what the compiler made of them.

    TRITON_INTERPRET=0 python -m kernels_gpu.bench.compile_check [--arch 90] [--dims 64,128,256]
    TRITON_INTERPRET=0 python -m kernels_gpu.bench.compile_check --hopper | --ws | --ws-bwd
    TRITON_INTERPRET=0 python -m kernels_gpu.bench.compile_check --d192 [--configs ..] [--json PATH]

Triton's wheel carries ptxas and cuobjdump, so a kernel compiles to sm_90 machine code on a
machine without a GPU. For every autotuning candidate (configs.candidates) of every pass and
head-dim bucket this prints registers per thread, spill stores (local memory), shared memory
and the matrix instructions in the SASS (HGMMA/QGMMA = Hopper's wgmma; HMMA = the older
mma.sync path). Needs no GPU: candidates that spill or fail to compile can be
dropped before a GPU is asked for. Needs TRITON_INTERPRET=0 in the
environment: kernels_gpu switches to the interpreter on a machine without CUDA otherwise.
`--hopper`, `--ws`, `--ws-bwd` and `--d192` do the same for the Gluon kernels: the
one-partition forward, the warp-specialised forward and dK/dV, and the chunked d 192 backward
(a config `kernel:BLOCK_M:BLOCK_N:warps:stages[:part]`, kernel dkdv or dq; part 0 dK and dV,
1 dV alone, 2 dK alone; `--json PATH` writes them as the declared data file).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from ..host import configs as cfgs  # noqa: E402
from ..host.configs import KernelConfig  # noqa: E402
from ..kernels import INTERPRETER, _attn_bwd_dkdv, _attn_bwd_dq, _attn_fwd  # noqa: E402

__all__ = ["compile_kernel", "resources", "compile_hopper", "compile_ws", "compile_bwd",
           "compile_bwd_ws", "compile_d192", "D192_CONFIGS", "main"]

BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
KERNELS = {"fwd": _attn_fwd, "bwd_dkdv": _attn_bwd_dkdv, "bwd_dq": _attn_bwd_dq}
SCALARS = {"sm_scale": "fp32", "out_scale": "fp32", "NQ": "i32", "NK": "i32", "H": "i32",
           "CAUSAL_OFF": "i32"}
TYPES = {"fp16": "fp16", "bf16": "bf16", "fp32": "fp32", "e5m2": "fp8e5", "e4m3": "fp8e4nv"}


def _signature(pass_: str, dtype: str, cfg: KernelConfig, dp: int, consts: dict) -> dict:
    fn = KERNELS[pass_]
    t = TYPES[dtype]
    streamed = {"fwd": ("K", "V"), "bwd_dq": ("K", "V"), "bwd_dkdv": ("Q", "DO")}[pass_]
    rows = cfg.block_m if pass_ == "bwd_dkdv" else cfg.block_n
    sig = {}
    for name in fn.arg_names:
        if name in consts:
            sig[name] = "constexpr"
        elif name in SCALARS:
            sig[name] = SCALARS[name]
        elif name in ("LSE", "Delta") or (name == "DQ" and pass_ == "bwd_dkdv"):
            sig[name] = "*fp32"
        elif cfg.use_tma and name in streamed:
            shape = [dp, rows] if (name == "V" and dtype in ("e5m2", "e4m3")) else [rows, dp]
            sig[name] = f"tensordesc<{t}[{shape[0]},{shape[1]}]>"
        elif name == "O" and dtype in ("e5m2", "e4m3"):
            sig[name] = "*fp16"
        else:
            sig[name] = "*" + t
    return sig


def compile_kernel(pass_: str, cfg: KernelConfig, d: int = 128, dtype: str = "fp16",
                   causal: bool = True, arch: int = 90, part: int | None = None):
    """The compiled kernel (triton CompiledKernel) for sm_<arch>, even tiles, no padding.
    `part` (dK/dV with dv_apart): 1 the dV launch, 2 the dK launch (default)."""
    dp = max(16, 1 << (d - 1).bit_length())
    consts = dict(GROUP=1, HEAD_DIM=d, HEAD_DIM_P=dp, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n,
                  CAUSAL=causal, EVEN_M=True, EVEN_N=True, EMPTY_ROWS=False,
                  USE_TMA=cfg.use_tma, DOT_F32=False)
    if pass_ == "fwd":
        consts["V_TRANS"] = dtype in ("e5m2", "e4m3")
    if pass_ == "bwd_dkdv":
        consts["OFF_POS"] = False
        consts["FUSED_DQ"] = cfg.fused_dq
        consts["SPLIT"] = 1
        consts["PART"] = (part or 2) if cfg.dv_apart else 0
    src = ASTSource(KERNELS[pass_], _signature(pass_, dtype, cfg, dp, consts), consts)
    return triton.compile(src, target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})


def resources(kernel) -> dict:
    """Registers, spill bytes, shared memory and matrix instructions of a compiled kernel."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:  # one file per call: tests compile in parallel
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(kernel.asm["cubin"])
        usage = subprocess.run([os.path.join(BIN, "cuobjdump"), "--dump-resource-usage", path],
                               capture_output=True, text=True).stdout
        sass = subprocess.run([os.path.join(BIN, "cuobjdump"), "--dump-sass", path],
                              capture_output=True, text=True).stdout
    reg = re.search(r"REG:(\d+)", usage)
    local = re.search(r"LOCAL:(\d+)", usage)
    mma = Counter(m.split(".")[0] for m in re.findall(r"\b[HQ]G?MMA\.[\w.]+", sass))
    return {"regs": int(reg.group(1)) if reg else None,
            "local_bytes": int(local.group(1)) if local else None,
            "spill_stores": len(re.findall(r"\bSTL\b", sass)),
            "smem": kernel.metadata.shared, "mma": dict(mma),
            # register counts the warp-specialised kernels' partitions set (setmaxnreg)
            "setmaxnreg": sorted(set(re.findall(
                r"USETMAXREG\.\w+\.CTAPOOL (?:UP0, )?(0x[0-9a-f]+)", sass)))}


def _descriptors(d: int, cols: int | None = None, **rows: int) -> dict[str, str]:
    """The signature of the Gluon kernels' TMA descriptor arguments (name → rows a block): fp16
    (N, d) row-major tensors read in NVMMA-swizzled blocks of (rows, cols) (default: all d)."""
    import torch
    from triton.runtime.jit import mangle_type

    from ..host.launch_common import gluon_descriptors

    t = torch.empty(1024, d, dtype=torch.float16)
    descs = gluon_descriptors(torch.float16, *((t, b) for b in rows.values()), cols=cols)
    return {k: mangle_type(desc) for k, desc in zip(rows, descs)}


def _gluon(fn, sig: dict, consts: dict, arch: int, **options):
    """fn (a Gluon kernel) compiled for sm_<arch> with the descriptor signature `sig`, the fp32
    / i32 scalars and pointers it adds, and the constexprs `consts`."""
    from triton.experimental.gluon._runtime import GluonASTSource

    sig.update({k: "constexpr" for k in consts})
    return triton.compile(GluonASTSource(fn, sig, consts), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": consts["num_warps"], **options})


HOPPER_CONFIGS = ((64, 128, 128, 8), (64, 128, 64, 8), (128, 128, 128, 8), (128, 128, 64, 8))


def compile_hopper(d: int, block_m: int, block_n: int, num_warps: int, arch: int = 90,
                   causal: bool = False):
    """The Gluon Hopper forward (kernels.hopper) compiled for sm_<arch>, fp16, offline."""
    from ..kernels.hopper import _attn_fwd_hopper

    sig = _descriptors(d, q_desc=block_m, k_desc=block_n, v_desc=block_n, o_desc=block_m)
    sig.update(LSE="*fp32", qk_scale="fp32", N="i32", GROUP="i32")
    return _gluon(_attn_fwd_hopper, sig, {"BLOCK_M": block_m, "BLOCK_N": block_n,
                                          "HEAD_DIM": d, "num_warps": num_warps,
                                          "CAUSAL": causal}, arch)


WS_CONFIGS = tuple((d, bn, sched) for d in (64, 128) for bn in (128, 64)
                   for sched in ("ws", "lag", "pingpong"))


def compile_ws(d: int, block_n: int, schedule: str, arch: int = 90, causal: bool = False,
               stages: int = 2, consumer_regs: int = 240):
    """The warp-specialised Gluon forward (kernels.hopper_ws) compiled for sm_<arch>, fp16
    (d 192: boxes of 64 columns, three a row)."""
    from ..host.launch_common import WS_MAXNREG
    from ..kernels.hopper_ws import SCHEDULES, WG_ROWS, _attn_fwd_ws

    sig = _descriptors(d, 64 if d == 192 else None, q_desc=WG_ROWS, k_desc=block_n,
                       v_desc=block_n, o_desc=WG_ROWS)
    sig.update(LSE="*fp32", qk_scale="fp32", N="i32", GROUP="i32")
    return _gluon(_attn_fwd_ws, sig, {"BLOCK_N": block_n, "HEAD_DIM": d, "STAGES": stages,
                                      "CAUSAL": causal, "SCHEDULE": SCHEDULES[schedule],
                                      "CONSUMER_REGS": consumer_regs, "num_warps": 4},
                  arch, maxnreg=WS_MAXNREG)


def compile_ws_persistent(d: int, block_n: int, schedule: str, arch: int = 90,
                          causal: bool = False, stages: int = 2, consumer_regs: int = 240):
    """The persistent warp-specialised forward (kernels.hopper_ws_persistent), sm_<arch>,
    fp16; `schedule` one of host.hopper.PERSISTENT."""
    from ..host.hopper import PERSISTENT
    from ..host.launch_common import WS_MAXNREG
    from ..kernels.hopper_ws import WG_ROWS
    from ..kernels.hopper_ws_persistent import _attn_fwd_ws_persistent

    sig = _descriptors(d, q_desc=WG_ROWS, k_desc=block_n, v_desc=block_n, o_desc=WG_ROWS)
    sig.update(LSE="*fp32", qk_scale="fp32", N="i32", GROUP="i32", BH="i32")
    return _gluon(_attn_fwd_ws_persistent, sig, {
        "BLOCK_N": block_n, "HEAD_DIM": d, "STAGES": stages, "CAUSAL": causal,
        "SCHEDULE": PERSISTENT[schedule], "CONSUMER_REGS": consumer_regs, "num_warps": 4},
        arch, maxnreg=WS_MAXNREG)


def compile_bwd(d: int, block_m: int, block_n: int, num_warps: int = 8, arch: int = 90,
                causal: bool = False, dq: bool = False, stages: int = 2,
                overlap: bool = False, tma_out: bool = False):
    """The Gluon dK/dV (dq: the dQ) of kernels.hopper_bwd compiled for sm_<arch>, fp16;
    `tma_out`: the outputs through shared memory and TMA stores (TMA descriptors)."""
    from ..kernels.hopper_bwd import _attn_bwd_dkdv_hopper, _attn_bwd_dq_hopper

    sig = _descriptors(d, q_desc=block_m, k_desc=block_n, v_desc=block_n, do_desc=block_m)
    sig.update(**_bwd_scalars(dq))
    if tma_out:
        sig.update(_descriptors(d, DQ=block_m) if dq else _descriptors(d, DK=block_n,
                                                                       DV=block_n))
    return _gluon(_attn_bwd_dq_hopper if dq else _attn_bwd_dkdv_hopper, sig,
                  {"BLOCK_M": block_m, "BLOCK_N": block_n, "HEAD_DIM": d, "CAUSAL": causal,
                   "STAGES": stages, "OVERLAP": int(overlap), "num_warps": num_warps,
                   "TMA_OUT": bool(tma_out)}, arch)


def _bwd_scalars(dq: bool) -> dict[str, str]:
    """The one-partition backward kernels' arguments after the descriptors."""
    outs = {"DQ": "*fp16"} if dq else {"DK": "*fp16", "DV": "*fp16"}
    return dict(**outs, LSE="*fp32", DELTA="*fp32", sm_scale="fp32", N="i32")


BWD_WS_CONFIGS = tuple((st, ov, 0, 0) for st in (2, 3) for ov in (0, 1, 2)) + tuple(
    (2, ov, vec, 0) for ov in (0, 1) for vec in (1, 2, 4)) + ((2, 1, 4, 1), (2, 0, 4, 1))


def compile_bwd_ws(d: int, stages: int = 2, overlap: int = 1, arch: int = 90,
                   causal: bool = False, block_m: int = 64, consumer_regs: int = 240,
                   fused_dq: int = 0, dq_split: int = 0):
    """The warp-specialised Gluon dK/dV (kernels.hopper_bwd_ws) compiled for sm_<arch>, fp16."""
    from ..host.launch_common import WS_MAXNREG
    from ..kernels.hopper_bwd_ws import WG_ROWS, _attn_bwd_dkdv_ws

    sig = _descriptors(d, q_desc=block_m, k_desc=WG_ROWS, v_desc=WG_ROWS, do_desc=block_m)
    sig.update(DK="*fp16", DV="*fp16", DQA="*fp32", LSE="*fp32", DELTA="*fp32",
               sm_scale="fp32", N="i32")
    return _gluon(_attn_bwd_dkdv_ws, sig, {
        "HEAD_DIM": d, "STAGES": stages, "CAUSAL": causal, "OVERLAP": overlap,
        "FUSED_DQ": int(fused_dq), "DQ_SPLIT": int(dq_split), "CONSUMER_REGS": consumer_regs,
        "num_warps": 4}, arch, maxnreg=WS_MAXNREG)


# the chunked d 192 configs the bench times (host/hopper_d192.py CANDIDATES) and the
# both-parts kernel, `kernel:BLOCK_M:BLOCK_N:warps:stages[:part]`
D192_CONFIGS = ("dkdv:64:64:4:2:1", "dkdv:64:64:4:2:2", "dkdv:64:64:4:2:0", "dkdv:32:64:4:2:1",
                "dkdv:32:64:4:2:2", "dkdv:64:128:8:2:1", "dkdv:64:128:8:2:2", "dq:64:64:4:2",
                "dq:64:32:4:2", "dq:128:64:8:2", "dq:128:32:8:2")


def compile_d192(kernel: str, block_m: int, block_n: int, num_warps: int, stages: int,
                 part: int = 0, causal: bool = False, arch: int = 90):
    """One config of the chunked d 192 dK/dV (kernel 'dkdv') or dQ ('dq') of
    kernels.hopper_bwd_chunked, fp16, for sm_<arch>: descriptors of (rows, 64) boxes."""
    from ..kernels.hopper_bwd_chunked import CHUNK, _attn_bwd_dkdv_d192, _attn_bwd_dq_d192

    sig = _descriptors(192, CHUNK, q_desc=block_m, k_desc=block_n, v_desc=block_n,
                       do_desc=block_m)
    sig.update(**_bwd_scalars(kernel == "dq"))
    consts = {"BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": causal, "STAGES": stages,
              "num_warps": num_warps}
    if kernel == "dkdv":
        consts["PART"] = part
    return _gluon(_attn_bwd_dkdv_d192 if kernel == "dkdv" else _attn_bwd_dq_d192, sig,
                  consts, arch)


def parse_d192(spec: str) -> tuple:
    """'dkdv:64:64:4:2:1' -> ('dkdv', 64, 64, 4, 2, 1); a dq spec gets part 0."""
    kernel, *nums = spec.split(":")
    vals = [int(x) for x in nums]
    return (kernel, *vals, *([0] * (5 - len(vals))))


def _row(r: dict) -> str:
    mma = ", ".join(f"{k} {v}" for k, v in sorted(r["mma"].items()))
    return f"{r['regs']} | {r['local_bytes']} | {r['spill_stores']} | {r['smem']} | {mma}"


def _gluon_jobs(args) -> list[tuple[str, str, str, Callable[[], Any]]]:
    """(kernel, d or causal, config, compile thunk) of the Gluon mode asked for."""
    jobs: list[tuple[str, str, str, Callable[[], Any]]] = []
    for causal in (False, True):
        cz = " causal" if causal else ""
        if args.hopper:
            jobs += [(f"gluon fwd{cz}", str(d), f"M{bm}N{bn}w{w}",
                      partial(compile_hopper, d, bm, bn, w, args.arch, causal))
                     for d, bm, bn, w in HOPPER_CONFIGS]
        elif args.ws:
            jobs += [(f"gluon ws{cz}", str(d), f"N{bn} {sched}",
                      partial(compile_ws, d, bn, sched, args.arch, causal))
                     for d, bn, sched in WS_CONFIGS]
        elif args.ws_bwd:
            jobs += [(f"gluon dkdv ws{cz}", "128", f"M64 s{st} ov{ov}"
                      + (f" +dq red{fused}" if fused else "") + (" split" if split else ""),
                      partial(compile_bwd_ws, 128, st, ov, args.arch, causal, fused_dq=fused,
                              dq_split=split))
                     for st, ov, fused, split in BWD_WS_CONFIGS]
    if args.d192:  # one row a config, non-causal then causal
        for spec in args.configs.split(","):
            kernel, bm, bn, w, st, part = parse_d192(spec)
            name = kernel + (f" part {part}" if kernel == "dkdv" else "")
            jobs += [(name, "yes" if causal else "no", f"M{bm}N{bn}w{w}s{st}",
                      partial(compile_d192, kernel, bm, bn, w, st, part, causal, args.arch))
                     for causal in (False, True)]
    return jobs


def _d192_json(jobs_done: list[tuple[tuple, dict]], path: str) -> None:
    """The chunked d 192 compile as the declared data file (`data/resources_gluon_d192_sm90.
    json`): each launch config's resources keyed "part|M..N..w..s..|causal" (part dq for
    the dQ)."""
    kernels = {}
    for (name, causal, config), r in jobs_done:
        part = "dq" if name == "dq" else name.rsplit(" ", 1)[-1]
        kernels[f"{part}|{config}|{int(causal == 'yes')}"] = {
            "local_bytes": r["local_bytes"], "regs": r["regs"], "smem": r["smem"],
            "spill_stores": r["spill_stores"],
            "mma": ", ".join(f"{k} {v}" for k, v in sorted(r["mma"].items()))}
    how = ("TRITON_INTERPRET=0 python -m kernels_gpu.bench.compile_check --d192 --json PATH: "
           "every chunked d 192 launch config the bench times, non-causal and causal, fp16, "
           "sm_90, Triton's own ptxas (no GPU)")
    with open(path, "w") as f:
        json.dump({"how": how, "kernels": kernels}, f, indent=1, sort_keys=True)
        f.write("\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--dims", default="64,128,256")
    ap.add_argument("--dtypes", default="fp16")
    ap.add_argument("--passes", default=",".join(cfgs.PASSES))
    ap.add_argument("--hopper", action="store_true", help="the Gluon Hopper forward instead")
    ap.add_argument("--ws", action="store_true",
                    help="the warp-specialised Gluon forward (kernels.hopper_ws) instead")
    ap.add_argument("--ws-bwd", action="store_true",
                    help="the warp-specialised Gluon dK/dV (kernels.hopper_bwd_ws) instead")
    ap.add_argument("--d192", action="store_true",
                    help="the chunked d 192 backward (kernels.hopper_bwd_chunked) instead")
    ap.add_argument("--configs", default=",".join(D192_CONFIGS),
                    help="--d192: kernel:BLOCK_M:BLOCK_N:warps:stages[:part], comma-separated")
    ap.add_argument("--json", help="--d192: also write the resources as the data file PATH")
    args = ap.parse_args(argv)
    if INTERPRETER:
        print("run with TRITON_INTERPRET=0 in the environment (the kernels are interpreter "
              "functions now)", file=sys.stderr)
        return 2
    jobs = _gluon_jobs(args)
    if jobs:
        second = "causal" if args.d192 else "d"
        print(f"| kernel | {second} | config | regs | local B | STL | smem B | matrix instr. |")
        print("|---|---|---|---|---|---|---|---|")
        done = []
        for name, second, config, thunk in jobs:
            try:
                r = resources(thunk())
                done.append(((name, second, config), r))
                row = _row(r)
            except Exception as e:  # noqa: BLE001 - report and go on
                row = f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:160]} | | | |"
            print(f"| {name} | {second} | {config} | {row} |", flush=True)
        if args.json and args.d192:
            _d192_json(done, args.json)
        return 0
    print("| pass | d | dtype | config | regs | local B | STL | smem B | matrix instr. |")
    print("|---|---|---|---|---|---|---|---|---|")
    for pass_ in args.passes.split(","):
        for d in (int(x) for x in args.dims.split(",")):
            for dtype in args.dtypes.split(","):
                if pass_ != "fwd" and dtype in ("e5m2", "e4m3"):
                    continue
                eb = {"fp32": 4, "e5m2": 1, "e4m3": 1}.get(dtype, 2)
                for cfg in cfgs.candidates(pass_, d, eb):
                    try:
                        row = _row(resources(compile_kernel(pass_, cfg, d, dtype,
                                                            arch=args.arch)))
                    except Exception as e:  # noqa: BLE001 - report and go on
                        row = f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:120]} | | | |"
                    print(f"| {pass_} | {d} | {dtype} | {cfg.short()} | {row} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
