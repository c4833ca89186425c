"""``toym verify-gpu``: the tile simulator and the bundled Triton kernel on the same inputs
(``kernels_gpu.bench.verify``; needs the ``gpu`` extra). Exit 0 they agree, 1 they don't, 2 an error."""

from __future__ import annotations

__all__ = ["verify_gpu_command"]

import json
from enum import Enum

import typer

from ..errors import ConfigError
from ..render import render_report
from ..render.terminal import terminal_width
from .common import DType, Format, format_option, guard, output_option, write_output


class KernelDType(str, Enum):
    fp16 = "fp16"
    bf16 = "bf16"
    fp32 = "fp32"


class Pass(str, Enum):
    forward = "forward"
    backward = "backward"


def verify_gpu_command(
    n: int = typer.Option(128, "--n", help="Sequence length (the CPU interpreter is slow: keep it ≤ 256 there)."),
    d: int = typer.Option(64, "--d", help="Head dimension, 1 to 256 (not a power of two: padded on chip "
                                          "by the kernel)."),
    nk: int | None = typer.Option(None, "--nk", help="Keys/values length Nk ≠ n (cross-attention; causal "
                                                         "aligned bottom-right). Default n."),
    batch: int = typer.Option(1, "--batch", help="Batch size."),
    heads: int = typer.Option(1, "--heads", help="Number of (query) heads."),
    kv_heads: int | None = typer.Option(None, "--kv-heads", help="K/V heads (grouped-query: heads % kv_heads "
                                                                     "== 0; 1 = multi-query). Default heads."),
    causal: bool = typer.Option(False, "--causal/--no-causal", help="Causal mask."),
    dtype: KernelDType = typer.Option(KernelDType.fp16, "--dtype", help="The kernel's input/output dtype."),
    block_m: int | None = typer.Option(None, "--block-m", help="Query rows per tile. Default: none given, so the "
                                                                  "dispatched kernels run, each launch with its own "
                                                                  "blocks (Gluon on sm_90); blocks turn the dispatch off."),
    block_n: int | None = typer.Option(None, "--block-n", help="Key rows per tile. Default: none given, so the "
                                                                  "dispatched kernels run, each launch with its own "
                                                                  "blocks (Gluon on sm_90); blocks turn the dispatch off."),
    pass_: Pass = typer.Option(Pass.forward, "--pass", help="forward: O and log-sum-exp; backward: also dQ, dK, dV."),
    seed: int = typer.Option(0, "--seed", help="Seed of the inputs (the simulator's deterministic random values)."),
    scale: float | None = typer.Option(None, "--scale", help="Softmax scale (default 1/√d)."),
    sim_dtype: DType = typer.Option(DType["fp32"], "--sim-dtype", help="The simulator's number format (default fp32, "
                                                                     "the kernel's accumulation format)."),
    fmt: Format = format_option(),
    output: str | None = output_option(),
) -> None:
    """Run the tile simulator and the bundled Triton kernel on the same inputs and compare
    O, the log-sum-exp (and dQ, dK, dV): exit 0 when they agree, 1 when they don't.

    On CUDA when a GPU is present, else in Triton's interpreter on the CPU (needs the gpu extra)."""
    with guard(fmt):
        try:
            from kernels_gpu.bench.verify import verification_report, verify
        except ImportError as exc:
            raise ConfigError(f"verify-gpu needs torch and triton ({exc.name or exc} is missing)",
                              hint="pip install -e '.[gpu]'  (torch >= 2.8 and triton >= 3.4)") from None
        result = verify(n=n, d=d, batch=batch, heads=heads, causal=causal, dtype=dtype.value, block_m=block_m,
                        block_n=block_n, pass_=pass_.value, seed=seed, scale=scale, sim_dtype=sim_dtype.value,
                        nk=nk, kv_heads=kv_heads)
        if fmt.value == "json":  # typed: numbers, booleans, snake_case keys (Verification.to_dict)
            text = json.dumps(result.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        else:
            text = render_report(verification_report(result), fmt.value,
                                 width=terminal_width() if output in (None, "-") else None)
        write_output(text, output)
    if not result.ok:
        raise typer.Exit(1)
