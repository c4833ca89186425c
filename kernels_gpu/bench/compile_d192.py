"""Compile the d 192 chunked Gluon backward (kernels.hopper_bwd_chunked) for sm_90 offline and
print what the compiler made of each config: registers, spill stores, shared memory, wgmma.

    TRITON_INTERPRET=0 python -m kernels_gpu.bench.compile_d192 [--configs dkdv:64:64:4:2:1,...]

A config is `kernel:BLOCK_M:BLOCK_N:warps:stages[:part]` (kernel dkdv or dq; part 0 dK and dV,
1 dV alone, 2 dK alone), each compiled non-causal and causal. No GPU needed: configs that
spill or need more shared memory than an SM has are dropped before a GPU is asked for.
"""
from __future__ import annotations

import argparse
import sys

import triton
from triton.backends.compiler import GPUTarget

from ..kernels import INTERPRETER
from .compile_check import resources

__all__ = ["CONFIGS", "compile_d192", "main"]

# the configs the bench times (host/hopper_d192.py CANDIDATES) and the both-parts kernel
CONFIGS = ("dkdv:64:64:4:2:1", "dkdv:64:64:4:2:2", "dkdv:64:64:4:2:0", "dkdv:32:64:4:2:1",
           "dkdv:32:64:4:2:2", "dkdv:64:128:8:2:1", "dkdv:64:128:8:2:2", "dq:64:64:4:2",
           "dq:64:32:4:2", "dq:128:64:8:2", "dq:128:32:8:2")


def _descriptors(**rows: int) -> dict[str, str]:
    """Signatures of TMA descriptors on fp16 (N, 192) tensors read in (rows, 64) boxes."""
    import torch
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    from triton.runtime.jit import mangle_type

    t = torch.empty(1024, 192, dtype=torch.float16)
    return {k: mangle_type(TensorDescriptor(
        t, [1024, 192], [192, 1], [b, 64], gl.NVMMASharedLayout.get_default_for([b, 64],
                                                                                 gl.float16)))
        for k, b in rows.items()}


def compile_d192(kernel: str, block_m: int, block_n: int, num_warps: int, stages: int,
                 part: int = 0, causal: bool = False, arch: int = 90):
    """One config of the chunked dK/dV (kernel 'dkdv') or dQ ('dq'), fp16, for sm_<arch>."""
    from triton.experimental.gluon._runtime import GluonASTSource

    from ..kernels.hopper_bwd_chunked import _attn_bwd_dkdv_d192, _attn_bwd_dq_d192

    sig = _descriptors(q_desc=block_m, k_desc=block_n, v_desc=block_n, do_desc=block_m)
    consts = {"BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": causal, "STAGES": stages,
              "num_warps": num_warps}
    if kernel == "dkdv":
        consts["PART"] = part
        outs = {"DK": "*fp16", "DV": "*fp16"}
    else:
        outs = {"DQ": "*fp16"}
    sig.update(**outs, LSE="*fp32", DELTA="*fp32", sm_scale="fp32", N="i32",
               **{k: "constexpr" for k in consts})
    fn = _attn_bwd_dkdv_d192 if kernel == "dkdv" else _attn_bwd_dq_d192
    return triton.compile(GluonASTSource(fn, sig, consts), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": num_warps})


def parse(spec: str) -> tuple:
    """'dkdv:64:64:4:2:1' -> ('dkdv', 64, 64, 4, 2, 1); a dq spec gets part 0."""
    kernel, *nums = spec.split(":")
    vals = [int(x) for x in nums]
    return (kernel, *vals, *([0] * (6 - 1 - len(vals))))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--arch", type=int, default=90)
    args = ap.parse_args(argv)
    if INTERPRETER:
        print("run with TRITON_INTERPRET=0 in the environment", file=sys.stderr)
        return 2
    print("| kernel | causal | config | regs | local B | STL | smem B | matrix instr. |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in args.configs.split(","):
        kernel, bm, bn, w, st, part = parse(spec)
        for causal in (False, True):
            try:
                r = resources(compile_d192(kernel, bm, bn, w, st, part, causal, args.arch))
                mma = ", ".join(f"{k} {v}" for k, v in sorted(r["mma"].items()))
                row = (f"{r['regs']} | {r['local_bytes']} | {r['spill_stores']} | "
                       f"{r['smem']} | {mma}")
            except Exception as e:  # noqa: BLE001 - report and go on
                row = f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:160]} | | | |"
            name = kernel + (f" part {part}" if kernel == "dkdv" else "")
            print(f"| {name} | {'yes' if causal else 'no'} | M{bm}N{bn}w{w}s{st} | {row} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
