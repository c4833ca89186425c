"""Global-memory traffic of the FlashAttention-2 kernels: the tile simulator's prediction vs ncu.

    python -m kernels_gpu.model.traffic                                               # stored H200 run
    python -m kernels_gpu.model.traffic --profile [--configs bench.json] [--out DIR]   # on the GPU
    python -m kernels_gpu.model.traffic --parse ncu.csv --cases traffic_cases.json [--out DIR]

The prediction, `simulated_traffic(...)` (model/tile_traffic.py), runs the tile machine on the
launch's own schedule; `model.dispatch` says which kernel each launch of a case ran (the `tl`
kernels with their configs, or the Gluon kernels the host dispatches to on sm_90), and so which
schedule and which TMA loads the prediction takes.

Without arguments the stored measurements (data/ncu_traffic.csv, data/traffic_cases.json:
the H200 run of PERFORMANCE.md) are put beside the prediction and printed; nothing is written
unless --out is given. --profile runs this module's --target under Nsight Compute: for each
case (d 64/128, N 1k/4k, causal or not; fp16, batch 4 x 32 heads) one forward and one
backward, i.e. exactly four kernel launches (_attn_fwd, _attn_bwd_preprocess, _attn_bwd_dkdv,
_attn_bwd_dq), and reads per launch:
  l1tex__t_sectors_pipe_lsu_mem_global_op_ld  sectors (32 B) the SMs' pointer loads request
                                              (TMA copies bypass this pipe)
  lts__t_sectors_srcunit_tex_op_{read,write}  L2 sectors requested by the SMs (L1/TEX and TMA)
  lts__t_sectors_op_{read,write}              L2 sectors from every unit (the far L2 partition
                                              counts a line again: srcunit_ltcfabric)
  dram__bytes_{read,write}                    what reached HBM (after L2 reuse)
  l1tex__t_sectors_pipe_lsu_mem_local_op_st   sectors of local-memory stores (register spills)
ncu flushes the caches before each kernel (--cache-control all), with --clock-control none.
--dispatch runs each case through the public functions with no configs, so that the Gluon
kernels run where the host dispatches them (their names: _attn_fwd_hopper, _attn_fwd_ws,
_attn_fwd_ws_persistent, _attn_bwd_dkdv_hopper, _attn_bwd_dq_hopper; at d 192 the chunked backward's
_attn_bwd_dkdv_d192, twice when dV is apart, and _attn_bwd_dq_d192); the case records which
("kernels").
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys

from ..host.configs import KernelConfig
from . import data
from .dispatch import case_launches, host_labels, pass_labels
from .dispatch import launches as dispatched_launches
from .tile_traffic import TILE_PROGRAM, LaunchPrediction, simulated_traffic

__all__ = ["LaunchPrediction", "simulated_traffic", "TILE_PROGRAM", "parse_ncu_csv", "compare",
           "render", "stored_rows", "profile", "run_target", "main"]

BATCH, HEADS = 4, 32
CASES = [(d, n, c) for d in (64, 128) for n in (1024, 4096) for c in (False, True)]
KERNEL_NAMES = {"_attn_fwd": "fwd", "_attn_bwd_preprocess": "bwd_preprocess",
                "_attn_bwd_dkdv": "bwd_dkdv", "_attn_bwd_dq": "bwd_dq"}
WANTED_METRICS = ("lts__t_sectors_srcunit_tex_op_read", "lts__t_sectors_srcunit_tex_op_write",
                  "lts__t_sectors_op_read", "lts__t_sectors_op_write",
                  "lts__t_sectors_srcunit_ltcfabric_op_read",
                  "l1tex__t_sectors_pipe_lsu_mem_global_op_ld",
                  "dram__bytes_read", "dram__bytes_write", "gpu__time_duration",
                  "l1tex__t_sectors_pipe_lsu_mem_local_op_st")
SECTOR_BYTES = 32


def _configs_from_bench(path: str | None) -> dict:
    """(d, n, causal) -> {pass: KernelConfig} as chosen in a bench run (bench.json)."""
    if not path or not os.path.exists(path):
        return {}
    with open(path) as f:
        rows = json.load(f)["rows"]
    return {(r["d"], r["n"], r["causal"]):
            {p: KernelConfig.from_dict(c) for p, c in r["configs"].items()}
            for r in rows if "configs" in r and r.get("grid", "main") == "main"}


def run_target(out: str, configs_path: str | None, only: list | None = None,
               fwd_config: str | None = None, fwd_only: bool = False,
               dispatch: bool = False) -> None:
    """The profiled program: four launches per case (one with fwd_only), nothing else _attn*.
    dispatch: through the public functions without configs, so the host's dispatch picks the
    Gluon kernels where it does (recorded as "kernels", beside the `tl` configs; "model_agrees":
    model.dispatch predicts the same labels)."""
    import torch

    from ..host import flash_attn as fa

    chosen = _configs_from_bench(configs_path)
    cases = []
    for d, n, causal, *kv in (only or CASES):
        nk = kv[0] if kv else n
        kv_heads = kv[1] if len(kv) > 1 else HEADS
        torch.manual_seed(0)
        q, do = (torch.randn(BATCH, HEADS, n, d, device="cuda", dtype=torch.float16)
                 for _ in range(2))
        k, v = (torch.randn(BATCH, kv_heads, nk, d, device="cuda", dtype=torch.float16)
                for _ in range(2))
        square = (nk, kv_heads) == (n, HEADS)
        cfg = (chosen.get((d, n, causal)) if square else None) or {
            p: fa.resolve_config(p, q, causal, k=k) for p in ("fwd", "bwd_dkdv", "bwd_dq")}
        if fwd_config:
            cfg = {**cfg, "fwd": KernelConfig.from_short(fwd_config)}
        extra = {}
        if dispatch:  # the public path: the host's dispatch chooses every launch's kernel
            o, lse = fa.flash_attention_forward(q, k, v, causal)
            if not fwd_only:
                fa.flash_attention_backward(q, k, v, o, lse, do, causal)
            kernels = host_labels(q, k, v, causal)
            model = pass_labels(dispatched_launches(
                n, d, causal, HEADS, kv_heads, nk, capability=torch.cuda.get_device_capability()))
            extra = {"kernels": kernels, "model_agrees": model == kernels}
        else:
            o, lse = fa.flash_attention_forward(q, k, v, causal, config=cfg["fwd"])
            if not fwd_only:
                fa.flash_attention_backward(q, k, v, o, lse, do, causal,
                                            dkdv_config=cfg["bwd_dkdv"], dq_config=cfg["bwd_dq"])
        torch.cuda.synchronize()
        cases.append({"d": d, "n": n, "causal": causal,
                      **({} if square else {"nk": nk, "kv_heads": kv_heads}),
                      "configs": {p: fa.honour_config(p, q, c, causal, k=k).to_dict()
                                  for p, c in cfg.items()}, **extra})
    with open(os.path.join(out, "traffic_cases.json"), "w") as f:
        json.dump(cases, f, indent=1)


def available_metrics() -> list[str]:
    txt = subprocess.run(["ncu", "--query-metrics", "--chip", "gh100"], capture_output=True,
                         text=True).stdout
    have = {line.split()[0] for line in txt.splitlines() if line.strip()}
    return [m for m in WANTED_METRICS if m in have]


def profile(out: str, configs_path: str | None, only: list[str] | None = None,
            dispatch: bool = False) -> str:
    metrics = available_metrics() or ["lts__t_sectors_srcunit_tex_op_read",
                                      "lts__t_sectors_srcunit_tex_op_write",
                                      "dram__bytes_read", "dram__bytes_write"]
    print("ncu metrics:", metrics, flush=True)
    cmd = ["ncu", "--clock-control", "none", "--cache-control", "all", "--print-units", "base",
           "--csv", "--kernel-name", "regex:_attn", "--metrics",
           ",".join(m + ".sum" for m in metrics),
           sys.executable, "-m", "kernels_gpu.model.traffic", "--target", "--out", out]
    if configs_path:
        cmd += ["--configs", configs_path]
    for case in only or ():
        cmd += ["--only", case]
    cmd += ["--dispatch"] if dispatch else []
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


def _function(name: str) -> str:
    """The kernel function of an ncu "Kernel Name" ("_attn_fwd_ws", "void f(...)" -> "f")."""
    return name.split("(")[0].split()[-1] if name.strip() else ""


def compare(launches: list[dict], cases: list[dict]) -> list[dict]:
    """Pair launches with cases (model.dispatch.case_launches: 4 per case, 5 with dV apart; the
    Gluon kernel a case records where one ran) and put the simulator's prediction for the
    kernel and config that ran beside each (bytes, whole launch)."""
    rows, at = [], 0
    launches = [ln for ln in launches if _kernel_pass(ln["kernel"])]
    for case in cases:
        for launch in case_launches(case):
            if at >= len(launches):
                break
            ln, at = launches[at], at + 1
            if _function(ln["kernel"]) != launch.function:
                raise ValueError(f"launch {ln['id']} is {ln['kernel']}, expected "
                                 f"{launch.function}: the ncu csv and the cases file do not "
                                 f"belong together")
            pass_, part = launch.pass_, launch.part
            pred = simulated_traffic(case["n"], case["d"], BATCH, HEADS, case["causal"],
                                     pass_=pass_, config=launch.config, nk=case.get("nk"),
                                     kv_heads=case.get("kv_heads"), part=part or None,
                                     kernel=launch.label if launch.gluon else "")
            m = ln["metrics"]

            def get(name, scale=1.0, m=m):
                v = m.get(name + ".sum")
                return None if v is None else v * scale
            rows.append({
                "d": case["d"], "n": case["n"], "causal": case["causal"], "pass": pass_, "part": part,
                **{key: case[key] for key in ("nk", "kv_heads") if key in case},
                "config": pred.config.short(),
                **({"kernel": launch.label, "tma_stores": list(pred.tma_stores)}
                   if launch.gluon else {}),
                "function": launch.function,
                "pred_read": pred.read_bytes, "pred_write": pred.write_bytes,
                "pred_pointer_read": pred.pointer_read_bytes,
                "pred_compulsory_read": pred.compulsory_read_bytes,
                "pred_tensors": {t: list(rw) for t, rw in pred.tensors.items()},
                "tma_tensors": list(pred.tma_tensors),
                "l2_tex_read": get("lts__t_sectors_srcunit_tex_op_read", SECTOR_BYTES),
                "l2_tex_write": get("lts__t_sectors_srcunit_tex_op_write", SECTOR_BYTES),
                "l2_all_read": get("lts__t_sectors_op_read", SECTOR_BYTES),
                "l2_all_write": get("lts__t_sectors_op_write", SECTOR_BYTES),
                "l2_fabric_read": get("lts__t_sectors_srcunit_ltcfabric_op_read", SECTOR_BYTES),
                "l1_ld_read": get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld", SECTOR_BYTES),
                "l1_local_st": get("l1tex__t_sectors_pipe_lsu_mem_local_op_st", SECTOR_BYTES),
                "dram_read": get("dram__bytes_read"), "dram_write": get("dram__bytes_write"),
                "time_ns": get("gpu__time_duration")})
    return rows


def _mb(x):
    return "-" if x is None else f"{x / 1e6:.1f}"


def _ratio(a, b):
    if a is None or b in (None, 0):
        return "-"
    return "exact" if a == b else f"{a / b:.2f}"


def _launch(r: dict) -> str:
    causal = "yes" if r["causal"] else "no"
    n = str(r["n"]) + (f"/{r['nk']}" if r.get("nk", r["n"]) != r["n"] else "")
    n += f" H {HEADS}/{r['kv_heads']}" if r.get("kv_heads", HEADS) != HEADS else ""
    config = r.get("kernel") or r["config"]  # a Gluon kernel's label, else the `tl` config
    return f"| {r['pass']}{('', ' (dV)', ' (dK)')[r.get('part', 0)]} | {r['d']} | {n} | {causal} | {config} |"


def render(rows: list[dict]) -> str:
    """Markdown, MB (1e6 B) per launch: a reads table and a writes table, the simulator's
    prediction beside ncu's counters."""
    reads = ["Reads:", "",
             "| launch | d | N | causal | config | predicted | L2 read (tex) | pred / L2 | "
             "pred. pointer loads | SM ld (L1) | pred / L1 | DRAM read | pred. compulsory | "
             "DRAM / compulsory | time us |", "|" + "---|" * 15]
    writes = ["Writes:", "",
              "| launch | d | N | causal | config | predicted | L2 write (tex) | pred / L2 | "
              "L2 write (all) | DRAM write |", "|" + "---|" * 10]
    for r in rows:
        t = r.get("time_ns")
        reads.append(
            f"{_launch(r)} {_mb(r['pred_read'])} | {_mb(r['l2_tex_read'])} | "
            f"{_ratio(r['pred_read'], r['l2_tex_read'])} | {_mb(r['pred_pointer_read'])} | "
            f"{_mb(r.get('l1_ld_read'))} | {_ratio(r['pred_pointer_read'], r.get('l1_ld_read'))} | "
            f"{_mb(r['dram_read'])} | {_mb(r['pred_compulsory_read'])} | "
            f"{_ratio(r['dram_read'], r['pred_compulsory_read'])} | "
            f"{'-' if t is None else f'{t / 1e3:.0f}'} |")
        writes.append(
            f"{_launch(r)} {_mb(r['pred_write'])} | {_mb(r['l2_tex_write'])} | "
            f"{_ratio(r['pred_write'], r['l2_tex_write'])} | {_mb(r['l2_all_write'])} | "
            f"{_mb(r['dram_write'])} |")
    return "\n".join(reads + [""] + writes)


def stored_rows(csv_name: str = "ncu_traffic.csv",
                cases_name: str = "traffic_cases.json") -> list[dict]:
    """A declared ncu run (data/: its CSV and its cases) beside the prediction; by default the
    H200 run of the `tl` kernels."""
    return compare(parse_ncu_csv(data.load_text(csv_name)), data.load_json(cases_name))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="directory for traffic.json / traffic.md (--profile: default "
                                  "$OUT or ./traffic_out; otherwise nothing is written without it)")
    ap.add_argument("--target", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--profile", action="store_true", help="measure on the GPU under ncu")
    ap.add_argument("--configs", help="bench.json whose chosen configs to profile")
    ap.add_argument("--parse", help="an ncu --csv output to compare with the prediction")
    ap.add_argument("--cases", help="traffic_cases.json written by the profiled run")
    ap.add_argument("--only", action="append",
                    help="d,n,causal[,nk,kv_heads] (repeatable): cases to run (32 query heads)")
    ap.add_argument("--fwd-config", help="force the forward config, e.g. M64N64w4s3-tma")
    ap.add_argument("--fwd-only", action="store_true")
    ap.add_argument("--dispatch", action="store_true",
                    help="run the public path with no configs: the host's dispatch (Gluon "
                         "kernels on sm_90) picks each launch's kernel")
    args = ap.parse_args(argv)
    out = args.out
    if args.target or args.profile:
        out = out or os.environ.get("OUT", "traffic_out")
        os.makedirs(out, exist_ok=True)
    if args.target:
        only = [tuple(int(x) for x in o.split(",")) for o in args.only] if args.only else None
        only = [(d, n, bool(c), *kv) for d, n, c, *kv in only] if only else None
        run_target(out, args.configs, only, args.fwd_config, args.fwd_only, args.dispatch)
        return 0
    if args.profile:
        csv_path = profile(out, args.configs, args.only, args.dispatch)
        cases_path = os.path.join(out, "traffic_cases.json")
    elif args.parse:
        if not args.cases:
            ap.error("--parse needs --cases (the traffic_cases.json of the same run)")
        csv_path, cases_path = args.parse, args.cases
    else:
        csv_path, cases_path = data.path("ncu_traffic.csv"), data.path("traffic_cases.json")
    with open(csv_path) as f:
        launches = parse_ncu_csv(f.read())
    with open(cases_path) as f:
        cases = json.load(f)
    rows = compare(launches, cases)
    table = render(rows)
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "traffic.json"), "w") as f:
            json.dump(rows, f, indent=1)
        with open(os.path.join(out, "traffic.md"), "w") as f:
            f.write(table + "\n")
    print(table, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
