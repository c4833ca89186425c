"""Compile the kernels for a GPU that is not here, and read what the compiler made of them.

    TRITON_INTERPRET=0 python -m kernels_gpu.bench.compile_check [--arch 90] [--dims 64,128,256]

Triton's wheel carries ptxas and cuobjdump, so a kernel compiles to sm_90 machine code on a
machine without a GPU. For every autotuning candidate (configs.candidates) of every pass and
head-dim bucket this prints registers per thread, spill stores (local memory), shared memory
and the matrix instructions in the SASS (HGMMA/QGMMA = Hopper's wgmma; HMMA = the older
mma.sync path). Needs no GPU: candidates that spill or fail to compile can be
dropped before a GPU is asked for. Needs TRITON_INTERPRET=0 in the
environment: kernels_gpu switches to the interpreter on a machine without CUDA otherwise.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import Counter

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from ..host import configs as cfgs  # noqa: E402
from ..host.configs import KernelConfig  # noqa: E402
from ..kernels import INTERPRETER, _attn_bwd_dkdv, _attn_bwd_dq, _attn_fwd  # noqa: E402

__all__ = ["compile_kernel", "resources", "main"]

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


def _descriptors(d: int, **rows: int) -> dict[str, str]:
    """The signature of the Gluon kernels' TMA descriptor arguments (name → rows a block): fp16
    (N, d) row-major tensors read in NVMMA-swizzled blocks of (rows, d), at d 192 (rows, 64)."""
    import torch
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    from triton.runtime.jit import mangle_type

    t = torch.empty(1024, d, dtype=torch.float16)
    cols = 64 if d == 192 else d  # d 192: boxes of 64 columns (three a row)
    return {k: mangle_type(TensorDescriptor(t, [1024, d], [d, 1], [b, cols],
                                            gl.NVMMASharedLayout.get_default_for([b, cols],
                                                                                 gl.float16)))
            for k, b in rows.items()}


HOPPER_CONFIGS = ((64, 128, 128, 8), (64, 128, 64, 8), (128, 128, 128, 8), (128, 128, 64, 8))


def compile_hopper(d: int, block_m: int, block_n: int, num_warps: int, arch: int = 90,
                   causal: bool = False):
    """The Gluon Hopper forward (kernels.hopper) compiled for sm_<arch>, fp16, offline."""
    from triton.experimental.gluon._runtime import GluonASTSource

    from ..kernels.hopper import _attn_fwd_hopper

    sig = _descriptors(d, q_desc=block_m, k_desc=block_n, v_desc=block_n, o_desc=block_m)
    consts = {"BLOCK_M": block_m, "BLOCK_N": block_n, "HEAD_DIM": d, "num_warps": num_warps,
              "CAUSAL": causal}
    sig.update(LSE="*fp32", qk_scale="fp32", N="i32", GROUP="i32",
               **{k: "constexpr" for k in consts})
    return triton.compile(GluonASTSource(_attn_fwd_hopper, sig, consts),
                          target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps})


WS_CONFIGS = tuple((d, bn, sched) for d in (64, 128) for bn in (128, 64)
                   for sched in ("ws", "lag", "pingpong"))


def compile_ws(d: int, block_n: int, schedule: str, arch: int = 90, causal: bool = False,
               stages: int = 2, consumer_regs: int = 240):
    """The warp-specialised Gluon forward (kernels.hopper_ws) compiled for sm_<arch>, fp16."""
    from triton.experimental.gluon._runtime import GluonASTSource

    from ..host.hopper import WS_MAXNREG
    from ..kernels.hopper_ws import SCHEDULES, WG_ROWS, _attn_fwd_ws

    sig = _descriptors(d, q_desc=WG_ROWS, k_desc=block_n, v_desc=block_n, o_desc=WG_ROWS)
    consts = {"BLOCK_N": block_n, "HEAD_DIM": d, "STAGES": stages, "CAUSAL": causal,
              "SCHEDULE": SCHEDULES[schedule], "CONSUMER_REGS": consumer_regs, "num_warps": 4}
    sig.update(LSE="*fp32", qk_scale="fp32", N="i32", GROUP="i32",
               **{k: "constexpr" for k in consts})
    return triton.compile(GluonASTSource(_attn_fwd_ws, sig, consts),
                          target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": 4, "maxnreg": WS_MAXNREG})


def compile_ws_persistent(d: int, block_n: int, schedule: str, arch: int = 90,
                          causal: bool = False, stages: int = 2, consumer_regs: int = 240):
    """The persistent warp-specialised forward (kernels.hopper_ws_persistent), sm_<arch>,
    fp16; `schedule` one of host.hopper.PERSISTENT."""
    from triton.experimental.gluon._runtime import GluonASTSource

    from ..host.hopper import PERSISTENT, WS_MAXNREG
    from ..kernels.hopper_ws import WG_ROWS
    from ..kernels.hopper_ws_persistent import _attn_fwd_ws_persistent

    sig = _descriptors(d, q_desc=WG_ROWS, k_desc=block_n, v_desc=block_n, o_desc=WG_ROWS)
    consts = {"BLOCK_N": block_n, "HEAD_DIM": d, "STAGES": stages, "CAUSAL": causal,
              "SCHEDULE": PERSISTENT[schedule], "CONSUMER_REGS": consumer_regs, "num_warps": 4}
    sig.update(LSE="*fp32", qk_scale="fp32", N="i32", GROUP="i32", BH="i32",
               **{k: "constexpr" for k in consts})
    return triton.compile(GluonASTSource(_attn_fwd_ws_persistent, sig, consts),
                          target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": 4, "maxnreg": WS_MAXNREG})


def compile_bwd(d: int, block_m: int, block_n: int, num_warps: int = 8, arch: int = 90,
                causal: bool = False, dq: bool = False, stages: int = 2,
                overlap: bool = False, tma_out: bool = False):
    """The Gluon dK/dV (dq: the dQ) of kernels.hopper_bwd compiled for sm_<arch>, fp16;
    `tma_out`: the outputs through shared memory and TMA stores (TMA descriptors)."""
    from triton.experimental.gluon._runtime import GluonASTSource

    from ..kernels.hopper_bwd import _attn_bwd_dkdv_hopper, _attn_bwd_dq_hopper

    sig = _descriptors(d, q_desc=block_m, k_desc=block_n, v_desc=block_n, do_desc=block_m)
    consts = {"BLOCK_M": block_m, "BLOCK_N": block_n, "HEAD_DIM": d, "CAUSAL": causal,
              "STAGES": stages, "OVERLAP": int(overlap), "num_warps": num_warps,
              "TMA_OUT": bool(tma_out)}
    outs = {"DQ": "*fp16"} if dq else {"DK": "*fp16", "DV": "*fp16"}
    if tma_out:
        outs = _descriptors(d, DQ=block_m) if dq else _descriptors(d, DK=block_n, DV=block_n)
    sig.update(**outs, LSE="*fp32", DELTA="*fp32", sm_scale="fp32", N="i32",
               **{k: "constexpr" for k in consts})
    fn = _attn_bwd_dq_hopper if dq else _attn_bwd_dkdv_hopper
    return triton.compile(GluonASTSource(fn, sig, consts),
                          target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps})


BWD_WS_CONFIGS = tuple((st, ov, 0, 0) for st in (2, 3) for ov in (0, 1, 2)) + tuple(
    (2, ov, vec, 0) for ov in (0, 1) for vec in (1, 2, 4)) + ((2, 1, 4, 1), (2, 0, 4, 1))


def compile_bwd_ws(d: int, stages: int = 2, overlap: int = 1, arch: int = 90,
                   causal: bool = False, block_m: int = 64, consumer_regs: int = 240,
                   fused_dq: int = 0, dq_split: int = 0):
    """The warp-specialised Gluon dK/dV (kernels.hopper_bwd_ws) compiled for sm_<arch>, fp16."""
    from triton.experimental.gluon._runtime import GluonASTSource

    from ..host.hopper import WS_MAXNREG
    from ..kernels.hopper_bwd_ws import WG_ROWS, _attn_bwd_dkdv_ws

    sig = _descriptors(d, q_desc=block_m, k_desc=WG_ROWS, v_desc=WG_ROWS, do_desc=block_m)
    consts = {"HEAD_DIM": d, "STAGES": stages, "CAUSAL": causal, "OVERLAP": overlap,
              "FUSED_DQ": int(fused_dq), "DQ_SPLIT": int(dq_split), "CONSUMER_REGS": consumer_regs, "num_warps": 4}
    sig.update(DK="*fp16", DV="*fp16", DQA="*fp32", LSE="*fp32", DELTA="*fp32", sm_scale="fp32", N="i32",
               **{k: "constexpr" for k in consts})
    return triton.compile(GluonASTSource(_attn_bwd_dkdv_ws, sig, consts),
                          target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": 4, "maxnreg": WS_MAXNREG})


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
    args = ap.parse_args(argv)
    if INTERPRETER:
        print("run with TRITON_INTERPRET=0 in the environment (the kernels are interpreter "
              "functions now)", file=sys.stderr)
        return 2
    if args.ws_bwd:
        print("| kernel | d | config | regs | local B | STL | smem B | matrix instr. |")
        print("|---|---|---|---|---|---|---|---|")
        for causal in (False, True):
            for st, ov, fused, split in BWD_WS_CONFIGS:
                r = resources(compile_bwd_ws(128, st, ov, args.arch, causal, fused_dq=fused,
                                             dq_split=split))
                mma = ", ".join(f"{k} {v}" for k, v in sorted(r["mma"].items()))
                name = "gluon dkdv ws causal" if causal else "gluon dkdv ws"
                print(f"| {name} | 128 | M64 s{st} ov{ov}{f' +dq red{fused}' if fused else ''}{' split' if split else ''} | "
                      f"{r['regs']} | {r['local_bytes']} | {r['spill_stores']} | {r['smem']} | "
                      f"{mma} |", flush=True)
        return 0
    if args.ws:
        print("| kernel | d | config | regs | local B | STL | smem B | matrix instr. |")
        print("|---|---|---|---|---|---|---|---|")
        for causal in (False, True):
            for d, bn, sched in WS_CONFIGS:
                try:
                    r = resources(compile_ws(d, bn, sched, args.arch, causal))
                    mma = ", ".join(f"{k} {v}" for k, v in sorted(r["mma"].items()))
                    row = (f"{r['regs']} | {r['local_bytes']} | {r['spill_stores']} | "
                           f"{r['smem']} | {mma}")
                except Exception as e:  # noqa: BLE001 - report and go on
                    row = f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:160]} | | | |"
                name = "gluon ws causal" if causal else "gluon ws"
                print(f"| {name} | {d} | N{bn} {sched} | {row} |", flush=True)
        return 0
    if args.hopper:
        print("| kernel | d | config | regs | local B | STL | smem B | matrix instr. |")
        print("|---|---|---|---|---|---|---|---|")
        for causal in (False, True):
            for d, bm, bn, w in HOPPER_CONFIGS:
                r = resources(compile_hopper(d, bm, bn, w, args.arch, causal))
                mma = ", ".join(f"{k} {v}" for k, v in sorted(r["mma"].items()))
                name = "gluon fwd causal" if causal else "gluon fwd"
                print(f"| {name} | {d} | M{bm}N{bn}w{w} | {r['regs']} | {r['local_bytes']} | "
                      f"{r['spill_stores']} | {r['smem']} | {mma} |", flush=True)
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
                        r = resources(compile_kernel(pass_, cfg, d, dtype, arch=args.arch))
                        mma = ", ".join(f"{k} {v}" for k, v in sorted(r["mma"].items()))
                        row = (f"{r['regs']} | {r['local_bytes']} | {r['spill_stores']} | "
                               f"{r['smem']} | {mma}")
                    except Exception as e:  # noqa: BLE001 - report and go on
                        row = f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:120]} | | | |"
                    print(f"| {pass_} | {d} | {dtype} | {cfg.short()} | {row} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
