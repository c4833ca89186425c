"""The harness the kernel studies share (`python -m kernels_gpu.bench.studies NAME`): variants
of one point timed beside SDPA-flash and cuDNN, each figure the median of `repeats` do_bench
medians; a variant that fails (out of shared memory, a backend without grouped heads) is
recorded in the row, not raised; the rows written after each point (`save_rows`)."""
from __future__ import annotations

import json
import os
import statistics
import sys
from functools import partial
from typing import Any

import torch

from .check import sdpa

__all__ = ["median_ms", "time_into", "time_sdpa_backward", "render", "render_points",
           "save_rows", "needs_cuda"]


def needs_cuda(name: str) -> bool:
    """True on a CUDA machine; else says so on stderr (the study then exits 2)."""
    if torch.cuda.is_available():
        return True
    print(f"the {name} study needs a CUDA GPU", file=sys.stderr)
    return False


def save_rows(out: str, stem: str, rows: list[dict], **extra: Any) -> None:
    """out/stem.json = {"env", **extra, "rows"}, written whole (a temporary file replaced), so a
    study cut off mid-way leaves the points it finished."""
    from .run import environment

    os.makedirs(out, exist_ok=True)
    tmp = os.path.join(out, stem + ".tmp")
    with open(tmp, "w") as f:
        json.dump({"env": environment(), **extra, "rows": rows}, f, indent=1)
    os.replace(tmp, os.path.join(out, stem + ".json"))


def median_ms(fn, repeats: int, rep: int = 50) -> tuple[float, list[float]]:
    """(median, all) of `repeats` triton do_bench medians of fn (ms)."""
    import triton
    runs = [triton.testing.do_bench(fn, warmup=10, rep=rep, return_mode="median")
            for _ in range(repeats)]
    return statistics.median(runs), runs


def time_into(row: dict, name: str, fn, repeats: int) -> float:
    """row["ms"][name], row["runs"][name] = fn's median_ms, or NaN and the error."""
    runs: list[float] | list[str]
    try:
        ms, runs = median_ms(fn, repeats)
    except Exception as e:  # noqa: BLE001 - a variant that fails is reported, the study goes on
        ms, runs = float("nan"), [f"{type(e).__name__}: {str(e)[:160]}"]
    row["ms"][name], row["runs"][name] = ms, runs
    return ms


def time_sdpa_backward(row: dict, q, k, v, do, causal: bool, repeats: int) -> None:
    """The backward of SDPA-flash and cuDNN (through autograd, as the bench does) into row;
    q, k, v require grad. A backend without grouped heads gets K/V expanded to H heads."""
    from torch.nn.attention import SDPBackend

    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION),
                          ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            try:
                out = sdpa(q, k, v, causal, backend)
            except RuntimeError:
                g = q.shape[1] // k.shape[1]
                if g == 1:
                    raise
                out = sdpa(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1), causal,
                           backend)
            time_into(row, name, partial(torch.autograd.grad, out, (q, k, v), do,
                                         retain_graph=True), repeats)
            del out
        except Exception as e:  # noqa: BLE001
            row["ms"][name], row["runs"][name] = float("nan"), [str(e)[:200]]


def render(rows: list[dict], cols: list[str], cells, err: bool = False) -> str:
    """Markdown: per row and variant, `cols` (the point: cells(row) gives their values), the
    variant, ms, TFLOP/s and the ratio to SDPA-flash and cuDNN (and, err, the row's "err")."""
    head = cols + ["variant", "ms", "TFLOP/s", "x flash", "x cuDNN"] + (["rel. diff"] if err
                                                                        else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        for name, ms in r["ms"].items():
            tail = [name, f"{ms:.3f}", f"{r['tflops'][name]:.0f}",
                    f"{r['ms']['flash'] / ms:.2f}", f"{r['ms']['cudnn'] / ms:.2f}"]
            if err:
                e = r.get("err", {}).get(name)
                tail.append("" if e is None else f"{e:.1e}")
            lines.append("| " + " | ".join([*cells(r), *tail]) + " |")
    return "\n".join(lines) + "\n"


def render_points(rows: list[dict]) -> str:
    """`render` of a study keyed by (d, N, causal), with each variant's "err" (the d 256 and
    d 192 backward studies)."""
    return render(rows, ["d", "N", "causal"], lambda r: [
        str(r["d"]), str(r["n"]), "yes" if r["causal"] else "no"], err=True)
