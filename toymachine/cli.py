"""The ``toym`` command line: options → one library call → render.

Exit status: 0 success, 1 a requested check found a mismatch, 2 any error (usage,
assembly, machine limit, runtime fault). Errors print as ``file:line:col`` with the
offending line and a caret, never a traceback.
"""

from __future__ import annotations

__all__ = ["app", "main"]

import contextlib
import os
import sys
import tempfile
from enum import Enum
from typing import Iterator, Optional

import typer

from . import __version__
from .errors import ToyMachineError

app = typer.Typer(
    name="toym",
    help="toymachine: an instruction-set simulator and cost model for the toy machine that teaches "
         "FlashAttention. Run traces, count cycles and DRAM traffic, print the seed's tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text as written, re-wrapped to the terminal (no rich markup)
    context_settings={"help_option_names": ["-h", "--help"]},
)


class Format(str, Enum):
    table = "table"
    markdown = "markdown"
    csv = "csv"
    json = "json"
    latex = "latex"
    html = "html"


class DType(str, Enum):
    fp64 = "fp64"
    fp32 = "fp32"
    fp16 = "fp16"
    bf16 = "bf16"


def _fail(err: ToyMachineError) -> None:
    typer.echo(err.render(), err=True)
    raise typer.Exit(2)


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Map every user-caused error to its rendered message and exit status 2."""
    try:
        yield
    except ToyMachineError as err:
        _fail(err)
    except BrokenPipeError:  # `toym run … | head`
        with contextlib.suppress(Exception):
            sys.stdout = open(os.devnull, "w")
        raise typer.Exit(0)


def write_output(text: str, path: Optional[str]) -> None:
    """Print, or write ``path`` atomically (no half-written file on error)."""
    if path is None or path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    directory = os.path.dirname(os.path.abspath(path)) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=".toym-", dir=directory)
    except OSError as exc:
        from .errors import ConfigError, Location

        raise ConfigError(f"cannot write {path}: {exc.strerror}", loc=Location(path),
                          hint="check that the directory exists and is writable") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _version(value: bool) -> None:
    if value:
        typer.echo(f"toym {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Show the version and exit.")) -> None:
    pass


@app.command()
def run(
    file: str = typer.Argument(..., help="Assembly trace to run (.asm), or - for standard input."),
    machine: Optional[str] = typer.Option(None, "--machine", "-m", help="Machine YAML file or preset name (toy, toy3, toy4, toy6 …)."),
    registers: Optional[int] = typer.Option(None, "--registers", "-r", min=1, help="Register count (overrides the machine's)."),
    data: Optional[str] = typer.Option(None, "--data", "-d", help="Input arrays: YAML (name: nested list), .npy or .npz."),
    seed: int = typer.Option(0, "--seed", help="Seed for the deterministic random values of arrays read but never given."),
    symbolic: bool = typer.Option(False, "--symbolic", help="Registers show expressions over the inputs (a₀₀·b₀₀, e^(x₀−m)) instead of numbers."),
    steps: Optional[bool] = typer.Option(None, "--steps/--no-steps", help="Show the per-step register table (default: only for runs of at most 200 steps)."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output format."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write to FILE instead of standard output."),
    dtype: Optional[DType] = typer.Option(None, "--dtype", help="Register/DRAM number format (default: the machine's, fp64)."),
    strict_numerics: bool = typer.Option(False, "--strict-numerics", help="Stop with an error (exit 2) at the first numerical alarm."),
) -> None:
    """Run a trace and print its per-step register table and cost summary."""
    from .api import run_file
    from .render import render

    with guard():
        result = run_file(file, machine=machine, registers=registers, data=data, seed=seed, symbolic=symbolic,
                          steps=steps, dtype=dtype.value if dtype else None, strict_numerics=strict_numerics)
        write_output(render(result, fmt.value, steps=steps is not False), output)


@app.command()
def isa(fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output format.")) -> None:
    """Print the instruction-set reference (generated from the ISA table)."""
    from .docs import isa_report
    from .render import render_report

    write_output(render_report(isa_report(), fmt.value), None)


class KernelDType(str, Enum):
    fp16 = "fp16"
    bf16 = "bf16"
    fp32 = "fp32"


class Pass(str, Enum):
    forward = "forward"
    backward = "backward"


@app.command("verify-gpu")
def verify_gpu(
    n: int = typer.Option(128, "--n", help="Sequence length (the CPU interpreter is slow: keep it ≤ 256 there)."),
    d: int = typer.Option(64, "--d", help="Head dimension (16, 32, 64, 128)."),
    batch: int = typer.Option(1, "--batch", help="Batch size."),
    heads: int = typer.Option(1, "--heads", help="Number of heads."),
    causal: bool = typer.Option(False, "--causal/--no-causal", help="Causal mask."),
    dtype: KernelDType = typer.Option(KernelDType.fp16, "--dtype", help="The kernel's input/output dtype."),
    block_m: Optional[int] = typer.Option(None, "--block-m", help="Query rows per tile (default: the kernel's config)."),
    block_n: Optional[int] = typer.Option(None, "--block-n", help="Key rows per tile (default: the kernel's config)."),
    pass_: Pass = typer.Option(Pass.forward, "--pass", help="forward: O and log-sum-exp; backward: also dQ, dK, dV."),
    seed: int = typer.Option(0, "--seed", help="Seed of the inputs (the simulator's deterministic random values)."),
    scale: Optional[float] = typer.Option(None, "--scale", help="Softmax scale (default 1/√d)."),
    sim_dtype: DType = typer.Option(DType.fp32, "--sim-dtype", help="The simulator's number format (default fp32, "
                                                                     "the kernel's accumulation format)."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output format."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write to FILE instead of standard output."),
) -> None:
    """Run the tile simulator and the bundled Triton kernel on the same inputs and compare
    O, the log-sum-exp (and dQ, dK, dV): exit 0 when they agree, 1 when they don't.

    On CUDA when a GPU is present, else in Triton's interpreter on the CPU (needs the gpu extra)."""
    from .render import render_report

    with guard():
        try:
            from kernels_gpu.verify import verification_report, verify
        except ImportError as exc:
            from .errors import ConfigError

            raise ConfigError(f"verify-gpu needs torch and triton ({exc.name or exc} is missing)",
                              hint="pip install -e '.[gpu]'  (torch 2.13.0 and triton 3.6.0)") from None
        result = verify(n=n, d=d, batch=batch, heads=heads, causal=causal, dtype=dtype.value, block_m=block_m,
                        block_n=block_n, pass_=pass_.value, seed=seed, scale=scale, sim_dtype=sim_dtype.value)
        write_output(render_report(verification_report(result), fmt.value), output)
    if not result.ok:
        raise typer.Exit(1)


from .cli_gen import SWEEP_CONTEXT, gen_app, sweep_command  # noqa: E402  (registered once the app exists)

app.add_typer(gen_app, name="gen")
app.command("sweep", context_settings=SWEEP_CONTEXT)(sweep_command)

from .cli_numerics import numerics_command  # noqa: E402

app.command("numerics")(numerics_command)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
