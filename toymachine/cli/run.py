"""``toym run`` (a trace → its step table and cost summary) and ``toym isa`` (the instruction
reference, generated from the ISA table)."""

from __future__ import annotations

__all__ = ["run_command", "isa_command"]

from typing import Optional

import typer

from ..api import run_file
from ..render import render, render_report
from ..render.isa import isa_report
from .common import DType, Format, guard, write_output


def run_command(
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
    with guard():
        result = run_file(file, machine=machine, registers=registers, data=data, seed=seed, symbolic=symbolic,
                          steps=steps, dtype=dtype.value if dtype else None, strict_numerics=strict_numerics)
        write_output(render(result, fmt.value, steps=steps is not False), output)


def isa_command(fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output format.")) -> None:
    """Print the instruction-set reference (generated from the ISA table)."""
    write_output(render_report(isa_report(), fmt.value), None)
