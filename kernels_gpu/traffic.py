"""Global-memory traffic of the FlashAttention-2 kernels: predicted from the schedule vs ncu.

    python -m kernels_gpu.traffic --profile [--configs bench.json] [--out DIR]   # on the GPU
    python -m kernels_gpu.traffic --parse ncu.csv --cases traffic_cases.json    # anywhere

--profile runs this module's --target under Nsight Compute: for each case (d 64/128, N 1k/4k,
causal or not; fp16, batch 4 x 32 heads) one forward and one backward, i.e. exactly four kernel
launches (_attn_fwd, _attn_bwd_preprocess, _attn_bwd_dkdv, _attn_bwd_dq), and reads per launch:
  lts__t_sectors_srcunit_tex_op_{read,write}  L2 sectors (32 B) requested by the SMs' L1/TEX
  lts__t_sectors_op_{read,write}              L2 sectors from every unit (TMA included)
  dram__bytes_{read,write}                    what reached HBM (after L2 reuse)
ncu flushes the caches before each kernel (--cache-control all), with --clock-control none.
The prediction is `schedule.predict_traffic` (each tile load counted once per program that
issues it): compare it with the L2-level numbers; DRAM shows how much L2 reuse saves.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys

from .configs import KernelConfig
from .schedule import predict_traffic, schedule

BATCH, HEADS = 4, 32
CASES = [(d, n, c) for d in (64, 128) for n in (1024, 4096) for c in (False, True)]
KERNELS = ("fwd", "bwd_preprocess", "bwd_dkdv", "bwd_dq")  # launch order per case
KERNEL_NAMES = {"_attn_fwd": "fwd", "_attn_bwd_preprocess": "bwd_preprocess",
                "_attn_bwd_dkdv": "bwd_dkdv", "_attn_bwd_dq": "bwd_dq"}
WANTED_METRICS = ("lts__t_sectors_srcunit_tex_op_read", "lts__t_sectors_srcunit_tex_op_write",
                  "lts__t_sectors_op_read", "lts__t_sectors_op_write",
                  "lts__t_sectors_srcunit_ltcfabric_op_read",
                  "l1tex__t_sectors_pipe_lsu_mem_global_op_ld",
                  "dram__bytes_read", "dram__bytes_write", "gpu__time_duration")
SECTOR_BYTES = 32


def _configs_from_bench(path: str | None) -> dict:
    """(d, n, causal) -> {pass: KernelConfig} as chosen in a bench run (bench.json)."""
    if not path or not os.path.exists(path):
        return {}
    with open(path) as f:
        rows = json.load(f)["rows"]
    return {(r["d"], r["n"], r["causal"]):
            {p: KernelConfig.from_dict(c) for p, c in r["configs"].items()}
            for r in rows if "configs" in r}


def run_target(out: str, configs_path: str | None, only: list | None = None,
               fwd_config: str | None = None, fwd_only: bool = False) -> None:
    """The profiled program: four launches per case (one with fwd_only), nothing else _attn*."""
    import torch

    from . import flash_attn as fa

    chosen = _configs_from_bench(configs_path)
    cases = []
    for d, n, causal in (only or CASES):
        torch.manual_seed(0)
        q, k, v, do = (torch.randn(BATCH, HEADS, n, d, device="cuda", dtype=torch.float16)
                       for _ in range(4))
        cfg = chosen.get((d, n, causal)) or {p: fa.resolve_config(p, q, causal)
                                             for p in ("fwd", "bwd_dkdv", "bwd_dq")}
        if fwd_config:
            cfg = {**cfg, "fwd": KernelConfig.from_short(fwd_config)}
        o, lse = fa.flash_attention_forward(q, k, v, causal, config=cfg["fwd"])
        if not fwd_only:
            fa.flash_attention_backward(q, k, v, o, lse, do, causal,
                                        dkdv_config=cfg["bwd_dkdv"], dq_config=cfg["bwd_dq"])
        torch.cuda.synchronize()
        cases.append({"d": d, "n": n, "causal": causal,
                      "configs": {p: fa._honour(c, n).to_dict() for p, c in cfg.items()}})
    with open(os.path.join(out, "traffic_cases.json"), "w") as f:
        json.dump(cases, f, indent=1)


def available_metrics() -> list[str]:
    txt = subprocess.run(["ncu", "--query-metrics", "--chip", "gh100"], capture_output=True,
                         text=True).stdout
    have = {line.split()[0] for line in txt.splitlines() if line.strip()}
    return [m for m in WANTED_METRICS if m in have]


def profile(out: str, configs_path: str | None) -> str:
    metrics = available_metrics() or ["lts__t_sectors_srcunit_tex_op_read",
                                      "lts__t_sectors_srcunit_tex_op_write",
                                      "dram__bytes_read", "dram__bytes_write"]
    print("ncu metrics:", metrics, flush=True)
    cmd = ["ncu", "--clock-control", "none", "--cache-control", "all", "--print-units", "base",
           "--csv", "--kernel-name", "regex:_attn", "--metrics",
           ",".join(m + ".sum" for m in metrics),
           sys.executable, "-m", "kernels_gpu.traffic", "--target", "--out", out]
    if configs_path:
        cmd += ["--configs", configs_path]
    r = subprocess.run(cmd, capture_output=True, text=True)
    csv_path = os.path.join(out, "ncu_traffic.csv")
    with open(csv_path, "w") as f:
        f.write(r.stdout)
    if r.returncode != 0:
        print(r.stderr[-3000:], flush=True)
    return csv_path


def parse_ncu_csv(text: str) -> list[dict]:
    """ncu --csv (details page): one row per (launch, metric) -> one dict per launch."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]  # drop ncu's ==PROF== lines
    launches: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        lid = row["ID"]
        entry = launches.setdefault(lid, {"id": int(lid), "kernel": row["Kernel Name"],
                                          "metrics": {}})
        value = row["Metric Value"].replace(",", "")
        try:
            entry["metrics"][row["Metric Name"]] = float(value)
        except ValueError:
            pass
    return sorted(launches.values(), key=lambda e: e["id"])


def _kernel_pass(name: str) -> str | None:
    for prefix, p in KERNEL_NAMES.items():
        if name.startswith(prefix) or f" {prefix}" in name or name.split("(")[0] == prefix:
            return p
    return None


def compare(launches: list[dict], cases: list[dict]) -> list[dict]:
    """Pair launches with cases (4 per case, in order) and put predictions beside them."""
    rows = []
    launches = [ln for ln in launches if _kernel_pass(ln["kernel"])]
    for i, case in enumerate(cases):
        for j, pass_ in enumerate(KERNELS):
            if 4 * i + j >= len(launches):
                break
            ln = launches[4 * i + j]
            assert _kernel_pass(ln["kernel"]) == pass_, (ln["kernel"], pass_)
            cfgs = case["configs"]
            cfg = KernelConfig.from_dict(cfgs[pass_]) if pass_ in cfgs else None
            s = schedule(case["n"], case["d"], BATCH, HEADS, case["causal"], pass_=pass_,
                         config=cfg)
            pred = predict_traffic(s)
            m = ln["metrics"]

            def get(name, scale=1.0):
                v = m.get(name + ".sum")
                return None if v is None else v * scale
            rows.append({
                "d": case["d"], "n": case["n"], "causal": case["causal"], "pass": pass_,
                "config": s.config.short(),
                "pred_read": pred.read_bytes, "pred_write": pred.write_bytes,
                "l2_tex_read": get("lts__t_sectors_srcunit_tex_op_read", SECTOR_BYTES),
                "l2_tex_write": get("lts__t_sectors_srcunit_tex_op_write", SECTOR_BYTES),
                "l2_all_read": get("lts__t_sectors_op_read", SECTOR_BYTES),
                "l2_all_write": get("lts__t_sectors_op_write", SECTOR_BYTES),
                "l2_fabric_read": get("lts__t_sectors_srcunit_ltcfabric_op_read", SECTOR_BYTES),
                "l1_ld_read": get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld", SECTOR_BYTES),
                "dram_read": get("dram__bytes_read"), "dram_write": get("dram__bytes_write"),
                "time_ns": get("gpu__time_duration")})
    return rows


def _mb(x):
    return "-" if x is None else f"{x / 1e6:.1f}"


def _ratio(a, b):
    return "-" if a is None or b in (None, 0) else f"{a / b:.2f}"


def render(rows: list[dict]) -> str:
    """Markdown: MB (1e6 B) read and written per launch, predicted vs measured at each level."""
    out = ["| pass | d | N | causal | config | pred read | SM ld (L1) | L2 read (tex) | "
           "L2 fabric | DRAM read | pred / L2 tex | pred write | L2 write (tex / all) | "
           "DRAM write | pred / L2 tex write | time us |", "|" + "---|" * 16]
    for r in rows:
        t = r.get("time_ns")
        out.append(
            f"| {r['pass']} | {r['d']} | {r['n']} | {'yes' if r['causal'] else 'no'} | "
            f"{r['config']} | {_mb(r['pred_read'])} | {_mb(r.get('l1_ld_read') or None)} | "
            f"{_mb(r['l2_tex_read'])} | {_mb(r.get('l2_fabric_read'))} | {_mb(r['dram_read'])} | "
            f"{_ratio(r['pred_read'], r['l2_tex_read'])} | {_mb(r['pred_write'])} | "
            f"{_mb(r['l2_tex_write'])} / {_mb(r['l2_all_write'])} | {_mb(r['dram_write'])} | "
            f"{_ratio(r['pred_write'], r['l2_tex_write'])} | "
            f"{'-' if t is None else f'{t / 1e3:.0f}'} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "traffic_out"))
    ap.add_argument("--target", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--configs", help="bench.json whose chosen configs to profile")
    ap.add_argument("--parse", help="an ncu --csv output to compare with the prediction")
    ap.add_argument("--cases", help="traffic_cases.json written by the profiled run")
    ap.add_argument("--only", action="append", help="d,n,causal (repeatable): cases to run")
    ap.add_argument("--fwd-config", help="force the forward config, e.g. M64N64w4s3-tma")
    ap.add_argument("--fwd-only", action="store_true")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.target:
        only = [tuple(int(x) for x in o.split(",")) for o in args.only] if args.only else None
        only = [(d, n, bool(c)) for d, n, c in only] if only else None
        run_target(args.out, args.configs, only, args.fwd_config, args.fwd_only)
        return 0
    if args.profile:
        csv_path = profile(args.out, args.configs)
        cases_path = os.path.join(args.out, "traffic_cases.json")
    elif args.parse:
        csv_path, cases_path = args.parse, args.cases
    else:
        ap.error("give --profile (GPU) or --parse CSV --cases JSON")
    with open(csv_path) as f:
        launches = parse_ncu_csv(f.read())
    with open(cases_path) as f:
        cases = json.load(f)
    rows = compare(launches, cases)
    table = render(rows)
    with open(os.path.join(args.out, "traffic.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(args.out, "traffic.md"), "w") as f:
        f.write(table + "\n")
    print(table, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
