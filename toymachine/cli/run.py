"""``toym run`` (a trace → its step table and cost summary) and ``toym isa`` (the instruction
reference, generated from the ISA table)."""

from __future__ import annotations

__all__ = ["run_command", "isa_command"]

from typing import TYPE_CHECKING

import typer

from ..render.jsonout import MEMORY_MAX
from .common import (
    DType,
    Format,
    format_option,
    guard,
    machine_option,
    output_option,
    progress_bar,
    progress_option,
    show_progress,
    warn,
    write_output,
)
from .vocabulary import flag_words

if TYPE_CHECKING:
    from ..machine import Machine


def run_command(
    file: str = typer.Argument(..., help="Assembly trace to run (.asm), or - for standard input."),
    machine: str | None = machine_option(),
    registers: int | None = typer.Option(None, "--registers", "-r", min=1, help="Register count (overrides the machine's)."),
    data: str | None = typer.Option(None, "--data", "-d", help="Input arrays: YAML (name: nested list), .npy or .npz."),
    seed: int = typer.Option(0, "--seed", help="Seed for the deterministic random values of arrays read but never given."),
    symbolic: bool = typer.Option(False, "--symbolic", help="Registers show expressions over the inputs (a₀₀·b₀₀, e^(x₀−m)) instead of numbers."),
    steps: bool | None = typer.Option(None, "--steps/--no-steps", help="Show the per-step register table (default: only for runs of at most 200 steps)."),
    fmt: Format = format_option(),
    output: str | None = output_option(),
    dtype: DType | None = typer.Option(None, "--dtype", help="Register/DRAM number format (default: the machine's, fp64)."),
    strict: bool = typer.Option(False, "--strict", help="An array read but never given (no .data, --data, .array) is an "
                                                        "error (exit 2), not a warning."),
    strict_numerics: bool = typer.Option(False, "--strict-numerics", help="Stop with an error (exit 2) at the first numerical alarm."),
    json_fields: str | None = typer.Option(None, "--json-fields", help="JSON: only these keys, comma-separated "
                                                                          "(cycles,dram,ops; dram.reads reaches inside)."),
    no_memory: bool = typer.Option(False, "--no-memory", help="JSON: leave out the arrays' contents (memory)."),
    memory_max: int = typer.Option(MEMORY_MAX, "--memory-max", min=0, help="JSON: arrays (and tile registers) with more "
                                   "elements than this are summarised (shape, min, max, mean, NaN/inf counts)."),
    full_memory: bool = typer.Option(False, "--full-memory", help="JSON: every array whole, however big."),
    progress: bool | None = progress_option(),
    problem: str | None = typer.Option(None, "--problem", "-p", help="Run on this problem's machine with its "
                                          "inputs (the first random draw of --seed, default the problem's)."),
    student: str | None = typer.Option(None, "--student", help="With --problem: the student's variant."),
) -> None:
    """Run a trace and print its per-step register table and cost summary.

    --format html writes the step viewer: one offline page that steps through the run (runs of
    up to 5,000 steps keep their steps by default; --steps for longer ones)."""
    from ..api import (  # what a run needs, loaded as it runs (toym --help: none)
        RunOptions,
        render_run,
        run_path,
    )
    from ..errors import ToyMachineError

    options = RunOptions(registers=registers, seed=seed, symbolic=symbolic, steps=steps,
                         dtype=dtype.value if dtype else None, strict_numerics=strict_numerics, strict_inputs=strict)
    with guard(fmt):
        mach: str | Machine | None = machine
        arrays: str | dict | None = data
        exercise = None  # the problem's machine
        if student is not None and problem is None:  # a variant of no problem: say so, do not run another
            from ..errors import ConfigError

            raise ConfigError("--student picks the student's variant of a problem, and no --problem is given",
                              hint="add --problem FILE: the exercise whose variant --student picks")
        if problem is not None:
            exercise, arrays = _exercise(problem, student, machine, data, seed)
            mach = exercise
        with progress_bar(f"run {file}", show_progress(progress)) as update:
            try:
                ran = run_path(file, options, machine=mach, data=arrays, fmt=fmt.value, progress=update)
            except ToyMachineError as err:
                n = exercise.registers if exercise is not None else None
                if n is not None and err.key == "registers":
                    err.suggestion = None  # the machine is the exercise's: no option fixes it
                    err.hint = (f"the exercise ({problem}) gives {n} registers (R0–R{n - 1}): reuse a register "
                                f"once its value is no longer needed")
                raise
        warn(ran.result.warnings)
        text = render_run(ran, fmt.value, steps=steps, json_fields=json_fields, memory=not no_memory,
                          memory_max=None if full_memory else memory_max, width=_width(fmt, output),
                          name=flag_words)
        write_output(text, output)


def _exercise(problem: str, student: str | None, machine: str | None, data: str | None,
              seed: int) -> tuple[Machine, dict]:
    """The problem's machine and its inputs (trial 0 of ``seed``, or of the problem's seed)."""
    from ..check import load_problem
    from ..check.grader import draw_inputs
    from ..errors import ConfigError

    if machine is not None or data is not None:
        raise ConfigError("--problem sets the machine and the inputs; leave out --machine and --data",
                          hint="toym check --machine grades on another machine")
    loaded = load_problem(problem, student=student or None)
    return loaded.machine, draw_inputs(loaded, seed or loaded.seed, 0)


def _width(fmt: Format, output: str | None) -> int | None:
    """The terminal's width for a table on standard output (only a table wraps)."""
    if fmt.value != "table" or output not in (None, "-"):
        return None
    from ..render.terminal import terminal_width

    return terminal_width()


def isa_command(fmt: Format = format_option(), output: str | None = output_option()) -> None:
    """Print the instruction-set reference (generated from the ISA table)."""
    from ..render import render_report
    from ..render.isa import isa_report
    from ..render.terminal import terminal_width

    with guard(fmt):
        width = terminal_width() if output in (None, "-") else None
        write_output(render_report(isa_report(), fmt.value, width=width), output)
