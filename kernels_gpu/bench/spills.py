"""Register spills of a `tl` dK/dV launch, offline: where the compiled sm_90 code stores to
local memory, and the bytes those stores write in one launch (the write gap
ncu measured beside the traffic model, which counts only the kernels' tensors).

    TRITON_INTERPRET=0 python -m kernels_gpu.bench.spills [--out DIR]

For each case (default: the grouped split d 64, H 32/8, causal, N 4096, M64N128w4s3-tma-sp4,
and the same config on H 32 MHA; B 4, fp16), the dK/dV kernel is compiled for sm_90 as the JIT
compiles it (`GROUP`, `SPLIT`, the fp32 partials, and the JIT's 16-divisibility of the pointers
and of N_q, N_k, H), its SASS read: the loops are the backward branches before the last EXIT
(the blocks after it are mbarrier retry paths), the loop with more SEL instructions is the
causal mask's (the diagonal tiles), the other the full tiles'. Every STL (4 bytes a thread, 8
for STL.64, 16 for STL.128) inside a loop is counted once per iteration, the others once per
program (an upper bound: a store on a skipped path counts too). Iterations per program come
from the launch's schedule (`model.schedule`): the diagonal tiles and the full ones of each
program. Bytes = STL bytes x threads x iterations, summed over programs; each warp's 4-byte STL
writes 128 contiguous bytes (whole sectors). The result is put beside the stored ncu runs:
`l2_tex_write - pred_write` of the same launch (data/traffic_gluon_h100.json, which also
has ncu's local-memory store sectors, l1_local_st; data/traffic_h200.json, the H200 run).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import asdict, dataclass

from ..host.configs import KernelConfig
from ..model import data
from ..model.schedule import schedule

__all__ = ["SassLoop", "parse_sass", "loops", "stl_bytes", "iterations", "spill_bytes",
           "compile_dkdv", "CASES", "main"]

# (label, d, n, heads, kv_heads, causal, config, stored ncu run, its launch)
CASES = [("grouped split (H 32/8)", 64, 4096, 32, 8, True, "M64N128w4s3-tma-sp4",
          "traffic_gluon_h100.json", "H100"),
         ("MHA (H 32)", 64, 4096, 32, 32, True, "M64N128w4s3-tma", "traffic_h200.json", "H200")]
BATCH = 4
_INS = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_STL = re.compile(r"(?:^|\s)STL(\.(?:64|128|U8|S8|U16|S16))?\s")
_WIDTH = {None: 4, ".64": 8, ".128": 16, ".U8": 1, ".S8": 1, ".U16": 2, ".S16": 2}


@dataclass(frozen=True)
class SassLoop:
    start: int          # address of the loop head (the backward branch's target)
    end: int            # address of the backward branch
    stl_bytes: int      # bytes one thread stores to local memory in one iteration
    sel: int            # SEL / FSEL instructions in the body (the causal mask's selects)


def parse_sass(text: str) -> list[tuple[int, str]]:
    """(address, instruction) of every instruction cuobjdump --dump-sass prints."""
    return [(int(m.group(1), 16), m.group(2).strip()) for m in _INS.finditer(text)]


def stl_bytes(instr: str) -> int:
    """Bytes a thread stores to local memory with this instruction (0: not an STL)."""
    m = _STL.search(" " + instr + " ")
    return _WIDTH[m.group(1)] if m else 0


def loops(ins: list[tuple[int, str]]) -> tuple[list[SassLoop], int]:
    """(the loops: backward branches before the last EXIT; the STL bytes a thread stores
    outside every loop, once per program)."""
    exits = [a for a, t in ins if re.search(r"(?:^|\s)EXIT$", t)]
    last = max(exits) if exits else max(a for a, _ in ins)
    found = []
    for addr, text in ins:
        m = re.search(r"\bBRA (0x[0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr < last:
            start = int(m.group(1), 16)
            body = [t for a, t in ins if start <= a <= addr]
            found.append(SassLoop(start, addr, sum(stl_bytes(t) for t in body),
                                  sum(1 for t in body if "SEL" in t.split()[0 if "@" not in t else 1])))
    inside = {a for lp in found for a, _ in ins if lp.start <= a <= lp.end}
    outside = sum(stl_bytes(t) for a, t in ins if a not in inside and a < last)
    return found, outside


def iterations(d: int, n: int, heads: int, kv_heads: int, causal: bool,
               cfg: KernelConfig) -> tuple[int, int, int]:
    """(programs, masked iterations, full iterations) of the dK/dV launch, summed over its
    programs: per program the query tiles it streams (model.schedule), those crossing the
    diagonal (causal) apart; a program streams heads / kv_heads / split query heads."""
    s = schedule(n, d, BATCH, heads, causal, pass_="bwd_dkdv", config=cfg, kv_heads=kv_heads)
    bm, bn = cfg.block_m, cfg.block_n
    masked = full = 0
    for start_n, starts in zip(s.held_rows, s.streamed_starts):
        diag_hi = min(-(-(start_n + bn) // bm) * bm, n) if causal else 0
        m = sum(1 for st in starts if st < diag_hi)
        masked, full = masked + m, full + len(starts) - m
    rows = BATCH * kv_heads * s.split
    repeats = heads // kv_heads // s.split
    return s.grid[0] * s.grid[1], masked * rows * repeats, full * rows * repeats


def spill_bytes(sass: str, d: int, n: int, heads: int, kv_heads: int, causal: bool,
                cfg: KernelConfig) -> dict:
    """The launch's local-memory store bytes from its SASS and its schedule (docstring)."""
    if heads // kv_heads // cfg.split > 1:
        raise ValueError("a program that loops over several query heads repeats its per-head "
                         "stores: not modelled here (GROUP == SPLIT or MHA only)")
    found, outside = loops(parse_sass(sass))
    inner = sorted(found, key=lambda lp: lp.end - lp.start)[:2 if causal else 1]
    masked_loop = max(inner, key=lambda lp: lp.sel) if causal else None
    full_loop = next(lp for lp in inner if lp is not masked_loop)
    programs, it_masked, it_full = iterations(d, n, heads, kv_heads, causal, cfg)
    threads = 32 * cfg.num_warps
    per = {"once per program": outside * threads * programs,
           "masked loop": (masked_loop.stl_bytes * threads * it_masked) if masked_loop else 0,
           "full loop": full_loop.stl_bytes * threads * it_full}
    return {"programs": programs, "iterations_masked": it_masked, "iterations_full": it_full,
            "stl_bytes_thread": {"once per program": outside,
                                 "masked loop": masked_loop.stl_bytes if masked_loop else 0,
                                 "full loop": full_loop.stl_bytes},
            "bytes": per, "total_bytes": sum(per.values()),
            "loops": [asdict(lp) for lp in inner]}


def compile_dkdv(cfg: KernelConfig, d: int, group: int, causal: bool, arch: int = 90):
    """The `tl` dK/dV compiled for sm_<arch> as the JIT compiles this launch (fp16, even
    tiles, N_q = N_k): GROUP, SPLIT, fp32 partials when split, 16-divisible pointers / N / H."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from . import compile_check as cc

    dp = max(16, 1 << (d - 1).bit_length())
    consts = dict(GROUP=group, HEAD_DIM=d, HEAD_DIM_P=dp, BLOCK_M=cfg.block_m,
                  BLOCK_N=cfg.block_n, CAUSAL=causal, EVEN_M=True, EVEN_N=True,
                  EMPTY_ROWS=False, USE_TMA=cfg.use_tma, DOT_F32=False, OFF_POS=False,
                  FUSED_DQ=cfg.fused_dq, SPLIT=cfg.split, PART=0)
    sig = cc._signature("bwd_dkdv", "fp16", cfg, dp, consts)
    if cfg.split > 1:
        sig["DK"] = sig["DV"] = "*fp32"
    fn = cc.KERNELS["bwd_dkdv"]
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names)
             if sig.get(name, "").startswith("*") or name in ("NQ", "NK", "H", "CAUSAL_OFF")}
    return triton.compile(ASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})


def _sass(kernel) -> str:
    import subprocess
    import tempfile

    from .compile_check import BIN

    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(kernel.asm["cubin"])
        f.flush()
        return subprocess.run([os.path.join(BIN, "cuobjdump"), "--dump-sass", f.name],
                              capture_output=True, text=True, check=True).stdout


def measured_gap(run: str, d: int, n: int, causal: bool, kv_heads: int, config: str) -> dict:
    """The stored ncu run's dK/dV launch: L2 (tex) write bytes and the prediction's."""
    for r in data.load_json(run):
        if (r["pass"], r["d"], r["n"], r["causal"], r.get("kv_heads", 32), r["config"]) == \
                ("bwd_dkdv", d, n, causal, kv_heads, config):
            return {"l2_tex_write": r["l2_tex_write"], "pred_write": r["pred_write"],
                    "gap": r["l2_tex_write"] - r["pred_write"], "local_st": r.get("l1_local_st")}
    raise LookupError(f"no dK/dV launch {config} d {d} N {n} in {run}")


def render(rows: list[dict]) -> str:
    out = ["| launch | config | STL bytes / thread (once, masked loop, full loop) | programs | "
           "iterations (masked, full) | predicted spill stores MB | measured write gap MB "
           "(L2 tex - model) | ncu local stores MB | predicted / gap |", "|" + "---|" * 9]
    for r in rows:
        s, g = r["spills"], r["measured"]
        b = s["stl_bytes_thread"]
        local = "-" if g["local_st"] is None else f"{g['local_st'] / 1e6:.1f}"
        out.append(f"| {r['label']} | {r['config']} | {b['once per program']}, {b['masked loop']}, "
                   f"{b['full loop']} | {s['programs']} | {s['iterations_masked']}, "
                   f"{s['iterations_full']} | {s['total_bytes'] / 1e6:.1f} | "
                   f"{g['gap'] / 1e6:.1f} ({r['gpu']}) | {local} | "
                   f"{s['total_bytes'] / g['gap']:.3f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_gpu.bench.spills",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="directory for spills_sm90.json / .md (default: print only)")
    args = ap.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET", "0") != "0":
        print("set TRITON_INTERPRET=0: the offline compile needs the compiler, not the "
              "interpreter", file=sys.stderr)
        return 2
    from .compile_check import resources

    rows = []
    for label, d, n, heads, kv_heads, causal, config, run, gpu in CASES:
        cfg = KernelConfig.from_short(config)
        kernel = compile_dkdv(cfg, d, heads // kv_heads, causal)
        res = resources(kernel)
        rows.append({"label": label, "d": d, "n": n, "heads": heads, "kv_heads": kv_heads,
                     "causal": causal, "config": config, "gpu": gpu, "regs": res["regs"],
                     "stl_instructions": res["spill_stores"], "spills": spill_bytes(_sass(kernel), d, n, heads,
                                                                  kv_heads, causal, cfg),
                     "measured": measured_gap(run, d, n, causal, kv_heads, config)})
        print(render(rows[-1:]), flush=True)
    table = render(rows)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "spills_sm90.json"), "w") as f:
            json.dump(rows, f, indent=1)
        with open(os.path.join(args.out, "spills_sm90.md"), "w") as f:
            f.write(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
