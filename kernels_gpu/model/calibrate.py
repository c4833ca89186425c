"""Measure the GPU's sustained rates, the numbers the tile machine's preset is calibrated with.

    python -m kernels_gpu.model.calibrate [--out DIR]        # on a CUDA GPU; writes calibration.json

Each rate is measured the way METHOD.md asks (CUDA events, warm-up, median of repeats, random
data, sizes far beyond L2 unless L2 is what is measured):

* dram_copy_Bps: a 2 GiB device-to-device copy, bytes read + written per second (HBM);
* l2_copy_Bps: a 16 MiB copy repeated back to back without flushing (fits the 50/60 MB L2);
  its launches leave gaps, so it understates the L2;
* l2_read_Bps: one Triton launch whose programs read a 24 MiB fp16 buffer (L2-resident) over
  and over in (64, 128) tiles, as the attention kernels read their K/V tiles: bytes the SMs
  load per second from L2 (what the tile program's re-reads cost);
* fp16_mm_flops, bf16_mm_flops: an 8192^3 matrix product through torch (cuBLAS), 2 mnk FLOPs;
* fp8_mm_flops: the same with float8_e4m3fn operands through torch._scaled_mm, if present;
* exp2_per_s: a Triton kernel whose threads run chains of x = exp2(x * a + b) (one MUFU.EX2 and
  one FFMA each), elements * steps per second: the special-function unit the softmax uses;
* fma_flops: the same with x = x * a + b (2 FLOPs each): the FP32 pipe;
* launch_s: do_bench of an empty Triton kernel: what a zero-work launch costs in a timing;
* clocks: the SM clock nvidia-smi reports right after the matrix product, and its maximum.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

import torch
import triton
import triton.language as tl

__all__ = ["measure", "main"]


def events_ms(fn, reps: int, warmup: int = 3) -> float:
    """Median ms of fn() timed with CUDA events, no cache flush between calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


@triton.jit
def _exp2_chain(X, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    for _ in range(STEPS):
        x = tl.math.exp2(x * -0.5 + 0.25)  # stays in (0, 1.2): no overflow, no denormals
    tl.store(X + offs, x)


@triton.jit
def _fma_chain(X, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    for _ in range(STEPS):
        x = x * 0.999 + 0.001
    tl.store(X + offs, x)


@triton.jit
def _l2_read(X, OUT, N_TILES, REPS: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    acc = tl.zeros([ROWS, COLS], tl.float32)
    for r in range(REPS):
        tile = (pid * 7 + r * 13) % N_TILES  # a different L2-resident tile each step
        acc += tl.load(X + tile * ROWS * COLS + rows[:, None] * COLS + cols[None, :]).to(tl.float32)
    tl.store(OUT + pid, tl.sum(acc))


@triton.jit
def _empty(X):
    pass


def _l2_read_rate() -> float:
    rows, cols, reps = 64, 128, 256
    n_tiles = (24 << 20) // (rows * cols * 2)  # 24 MiB: half the H100's L2, 40 % of the H200's
    x = torch.randn(n_tiles * rows * cols, device="cuda", dtype=torch.float16)
    programs = 132 * 16
    out = torch.empty(programs, device="cuda")
    ms = events_ms(lambda: _l2_read[(programs,)](x, out, n_tiles, REPS=reps, ROWS=rows,
                                                  COLS=cols, num_warps=4), reps=10)
    return programs * reps * rows * cols * 2 / (ms * 1e-3)


def _chain_rate(kernel, ops_per_step: int) -> float:
    block, steps = 1024, 4096
    x = torch.rand(132 * 64 * block, device="cuda")  # 64 programs per SM: enough warps in flight
    grid = (x.numel() // block,)
    ms = events_ms(lambda: kernel[grid](x, STEPS=steps, BLOCK=block, num_warps=4), reps=10)
    return x.numel() * steps * ops_per_step / (ms * 1e-3)


def _mm_flops(dtype: torch.dtype, n: int = 8192) -> float:
    a = torch.randn(n, n, device="cuda").to(dtype)
    b = torch.randn(n, n, device="cuda").to(dtype)
    if dtype in (torch.float16, torch.bfloat16):
        fn = lambda: a @ b  # noqa: E731
    else:  # fp8: cuBLASLt wants B column-major; per-tensor scales of 1
        bt = b.t().contiguous().t()
        one = torch.ones((), device="cuda")
        fn = lambda: torch._scaled_mm(a, bt, scale_a=one, scale_b=one,  # noqa: E731
                                      out_dtype=torch.bfloat16)
    ms = events_ms(fn, reps=20)
    return 2.0 * n ** 3 / (ms * 1e-3)


def _clocks() -> dict:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=20).stdout.strip().splitlines()[0]
        sm, sm_max, mem = (float(x) for x in out.split(","))
        return {"sm_mhz_after_mm": sm, "sm_max_mhz": sm_max, "mem_mhz": mem}
    except Exception as e:  # noqa: BLE001 - clocks are context, not a rate
        return {"error": str(e)[:200]}


def _dram_copy_rate() -> float:
    """Bytes/s of a 2 GiB device-to-device copy (its 4 GiB are freed on return)."""
    big = torch.empty(1 << 30, dtype=torch.float16, device="cuda").uniform_()
    dst = torch.empty_like(big)
    copy_ms = events_ms(lambda: dst.copy_(big), 20)
    return 2 * big.numel() * 2 / (copy_ms * 1e-3)


def measure() -> dict:
    """Every rate of the module docstring, as a dict (SI units: bytes/s, FLOP/s, s)."""
    props = torch.cuda.get_device_properties(0)
    res = {"gpu": torch.cuda.get_device_name(0), "sms": props.multi_processor_count,
           "l2_bytes": getattr(props, "L2_cache_size", None),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "torch": torch.__version__, "triton": triton.__version__}
    res["dram_copy_Bps"] = _dram_copy_rate()
    small = torch.rand(1 << 22, device="cuda")  # 16 MiB
    sdst = torch.empty_like(small)
    reps = 200

    def many():
        for _ in range(reps):
            sdst.copy_(small)
    res["l2_copy_Bps"] = reps * 2 * small.numel() * 4 / (events_ms(many, 10) * 1e-3)
    res["l2_read_Bps"] = _l2_read_rate()
    res["fp16_mm_flops"] = _mm_flops(torch.float16)
    res["clocks"] = _clocks()
    res["bf16_mm_flops"] = _mm_flops(torch.bfloat16)
    if hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn"):
        try:
            res["fp8_mm_flops"] = _mm_flops(torch.float8_e4m3fn)
        except Exception as e:  # noqa: BLE001 - not every build has fp8 cuBLASLt
            res["fp8_mm_error"] = str(e)[:200]
    res["exp2_per_s"] = _chain_rate(_exp2_chain, 1)
    res["fma_flops"] = _chain_rate(_fma_chain, 2)
    x = torch.empty(1, device="cuda")
    res["launch_s"] = triton.testing.do_bench(lambda: _empty[(1,)](x), warmup=25, rep=100,
                                              return_mode="median") * 1e-3
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("kernels_gpu.model.calibrate needs a CUDA GPU", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    res = measure()
    with open(os.path.join(args.out, "calibration.json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    for k, v in sorted(res.items()):
        print(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
