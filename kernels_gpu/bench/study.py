"""The one runner of the kernel studies (`python -m kernels_gpu.bench.studies NAME`) and the
harness they share. A study is data (`Study`: its grid, its options, the row of one point);
`run` parses the common options (--out, --repeats, --dims, --ns, --causal) and the study's,
makes the points, writes the rows after each point (`save_rows`: a study cut off mid-way
leaves the points it finished) and the Markdown table at the end. Each figure is the median of
`repeats` do_bench medians; a variant that fails (out of shared memory, a backend without
grouped heads) is recorded in the row, not raised."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from .check import sdpa

__all__ = ["Point", "Study", "run", "inputs", "median_ms", "time_into", "check_into",
           "rel_norm", "rel_max", "time_sdpa_backward", "finish", "render", "render_points",
           "save_rows", "needs_cuda"]


@dataclass(frozen=True)
class Point:
    """One point of a study: fp16 (B, H, N, d) queries, (B, H_kv, N, d) keys and values."""
    d: int
    n: int
    causal: bool
    batch: int
    heads: int = 32
    heads_kv: int = 32

    def row(self) -> dict[str, Any]:
        return {"d": self.d, "n": self.n, "batch": self.batch, "heads": self.heads,
                "heads_kv": self.heads_kv, "causal": self.causal, "ms": {}, "runs": {},
                "err": {}}


def grid_points(args: argparse.Namespace) -> list[Point]:
    """d, then causal, then N over the options; B·N = 16k tokens, H 32."""
    return [Point(d, n, c, max(1, 16384 // n))
            for d in (int(x) for x in args.dims.split(","))
            for c in (x == "1" for x in args.causal.split(","))
            for n in (int(x) for x in args.ns.split(","))]


@dataclass(frozen=True)
class Study:
    """A study: what it times (`doc`, the help's first line), its default grid, the row of
    one point, and optionally its own options, points, a step before the points (compiling
    the candidates) and the Markdown table of its rows (written as STEM.md)."""
    doc: str
    row: Callable[[Point, argparse.Namespace], dict]
    stem: Callable[[argparse.Namespace], str]
    dims: str = "64,128"
    ns: str | None = "1024,4096,16384"
    causal: str = "0,1"
    options: Callable[[argparse.ArgumentParser], None] | None = None
    points: Callable[[argparse.Namespace], list[Point]] = grid_points
    before: Callable[[list[Point], argparse.Namespace], None] | None = None
    table: Callable[[list[dict]], str] | None = None
    extra: Callable[[argparse.Namespace], dict] | None = None  # top-level fields of the file


def run(name: str, study: Study, argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m kernels_gpu.bench.studies {name}",
                                 description=study.doc)
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dims", default=study.dims)
    ap.add_argument("--ns", default=study.ns)
    ap.add_argument("--causal", nargs="?", const="1", default=study.causal,
                    help="1, 0 or both (1,0); alone: causal only")
    if study.options:
        study.options(ap)
    args = ap.parse_args(argv)
    if not needs_cuda(name):
        return 2
    os.makedirs(args.out, exist_ok=True)
    points = study.points(args)
    if study.before:
        study.before(points, args)
    rows: list[dict] = []
    for pt in points:
        row = study.row(pt, args)
        rows.append(row)
        print(f"d={pt.d} N={pt.n} causal={int(pt.causal)} H/H_kv={pt.heads}/{pt.heads_kv}: "
              + ", ".join(f"{k} {ms:.3f}" for k, ms in row["ms"].items()) + " ms | err "
              + ", ".join(f"{k} {e if isinstance(e, str) else f'{e:.1e}'}"
                          for k, e in row["err"].items()), flush=True)
        save_rows(args.out, study.stem(args), rows, **(study.extra(args) if study.extra else {}))
        torch.cuda.empty_cache()
    if study.table:
        with open(os.path.join(args.out, study.stem(args) + ".md"), "w") as f:
            f.write(study.table(rows))
    return 0


def inputs(pt: Point, grad: bool) -> tuple[torch.Tensor, ...]:
    """q, k, v, dO of a point: seeded normal fp16 on the GPU; q, k, v require grad if `grad`."""
    torch.manual_seed(pt.n + pt.d + pt.causal + pt.heads_kv)
    q, do = (torch.randn(pt.batch, pt.heads, pt.n, pt.d, device="cuda", dtype=torch.float16)
             for _ in range(2))
    k, v = (torch.randn(pt.batch, pt.heads_kv, pt.n, pt.d, device="cuda", dtype=torch.float16)
            for _ in range(2))
    return (*(t.requires_grad_(grad) for t in (q, k, v)), do)


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


def time_into(row: dict, name: str, fn, repeats: int, rep: int = 50) -> float:
    """row["ms"][name], row["runs"][name] = fn's median_ms, or NaN and the error."""
    runs: list[float] | list[str]
    try:
        ms, runs = median_ms(fn, repeats, rep)
    except Exception as e:  # noqa: BLE001 - a variant that fails is reported, the study goes on
        ms, runs = float("nan"), [f"{type(e).__name__}: {str(e)[:160]}"]
    row["ms"][name], row["runs"][name] = ms, runs
    return ms


def rel_norm(got, ref) -> float:
    """The largest ‖x − r‖ / ‖r‖ over the pairs of tensors."""
    return max(float((x.float() - r.float()).norm() / r.float().norm())
               for x, r in zip(got, ref))


def rel_max(got, ref) -> float:
    """The largest max|x − r| / max|r| over the pairs of tensors."""
    return max(float((x.float() - r.float()).abs().max()) / max(float(r.float().abs().max()),
                                                                1e-6)
               for x, r in zip(got, ref))


def check_into(row: dict, name: str, fn, ref, err=rel_norm):
    """fn's outputs (synchronized), row["err"][name] = err(outputs, ref) (none without a ref);
    None, the error recorded in row["err"] (and NaN in row["ms"]), if fn raises."""
    try:
        got = fn()
        torch.cuda.synchronize()
        if ref is not None:
            row["err"][name] = err(got, ref)
        return got
    except Exception as e:  # noqa: BLE001 - a variant that fails is reported
        row["err"][name] = f"{type(e).__name__}: {str(e)[-300:]}"
        row["ms"][name], row["runs"][name] = float("nan"), [row["err"][name]]
        return None


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


def finish(row: dict, pt: Point, pass_: str) -> dict:
    """row["tflops"] of every timed variant (the pass's FLOPs over its ms)."""
    from .run import attention_flops

    flops = attention_flops(pt.batch, pt.heads, pt.n, pt.d, pt.causal, pass_)
    row["tflops"] = {k: flops / ms * 1e-9 for k, ms in row["ms"].items()}
    return row


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
                tail.append("" if e is None or isinstance(e, str) else f"{e:.1e}")
            lines.append("| " + " | ".join([*cells(r), *tail]) + " |")
    return "\n".join(lines) + "\n"


def render_points(rows: list[dict]) -> str:
    """`render` of a study keyed by (d, N, causal), with each variant's "err" (the d 256 and
    d 192 backward studies)."""
    return render(rows, ["d", "N", "causal"], lambda r: [
        str(r["d"]), str(r["n"]), "yes" if r["causal"] else "no"], err=True)


def render_grouped(rows: list[dict]) -> str:
    """`render` of a study keyed by (d, N, causal, H / H_kv) (the grouped-query study)."""
    return render(rows, ["d", "N", "causal", "H/H_kv"], lambda r: [
        str(r["d"]), str(r["n"]), "yes" if r["causal"] else "no",
        f"{r['heads']}/{r['heads_kv']}"])
