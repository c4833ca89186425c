"""The Python API the CLI is a thin layer over.

>>> from toymachine import parse, simulate
>>> r = simulate(parse(".data x = [1, 2]\\nLOAD x[0], R0\\nLOAD x[1], R1\\nADD R0, R1, R2\\nSTORE R2, y[0]"))
>>> r.memory["y"], r.cycles
([3.0], 5)
"""

from __future__ import annotations

__all__ = ["Ran", "RunOptions", "run_file", "run_text", "run_path", "render_run", "sweep_table"]

import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .asm import Chunks, binary_chunks, decode_source, open_error, parse, text_chunks
from .errors import Location, Namer, field_words
from .limits import LIMITS
from .machine import Machine, resolve_machine
from .params import check_int
from .program import Program
from .result import Result
from .sim import simulate
from .sim.datafile import load_data

if TYPE_CHECKING:
    from .gen.registry import GeneratorSpec
    from .render.report import Report

PAGE = "html"  # the format whose page replays the steps and lists the source


@dataclass(frozen=True)
class RunOptions:
    """What ``toym run`` decides before a trace runs: the one set of options the command line and
    the playground both fill in (``seed``: the random values of arrays read but never given;
    ``steps=None``: step rows kept only for short runs; ``strict_inputs``: such an array is an
    error; ``strict_numerics``: the first numerical alarm is an error)."""

    registers: int | None = None
    seed: int = 0
    symbolic: bool = False
    steps: bool | None = None
    dtype: str | None = None
    strict_numerics: bool = False
    strict_inputs: bool = False

    def __post_init__(self) -> None:
        if self.registers is not None:
            check_int("registers", self.registers, 1)

    def simulator_kwargs(self, fmt: str | None, step_limit: int | None) -> dict:
        kwargs: dict = dict(registers=self.registers, seed=self.seed, symbolic=self.symbolic, steps=self.steps,
                            dtype=self.dtype, strict_numerics=self.strict_numerics,
                            strict_inputs=self.strict_inputs)
        if fmt == PAGE:  # the step viewer keeps the steps it can replay
            from .render.stepview import MAX_STEPS

            kwargs["step_limit"] = MAX_STEPS
        elif step_limit is not None:
            kwargs["step_limit"] = step_limit
        return kwargs


@dataclass(frozen=True)
class Ran:
    """A run and, where the output lists the source (the step viewer), the program it parsed."""

    result: Result
    program: Program | None = None


def _arrays(data: str | dict | None, strict_inputs: bool) -> tuple[dict | None, list]:
    if isinstance(data, dict):
        return data, []
    arrays, warns = load_data(data) if data else (None, [])
    if warns and strict_inputs:
        raise warns[0]
    return arrays, warns


def run_path(path: str, options: RunOptions = RunOptions(), *, machine: str | Machine | None = None,
             data: str | dict | None = None, fmt: str | None = None,
             progress: Callable[[int, int], None] | None = None, step_limit: int | None = None) -> Ran:
    """Run a trace file (``-`` = standard input) for output ``fmt``. The file is streamed, except
    for the step viewer, which lists the source: then it is read and parsed once, and that
    program runs. ``progress(done, total)`` is called as the file is read (bytes of the file; for
    standard input characters, total 0)."""
    mach = machine if isinstance(machine, Machine) else resolve_machine(machine)
    arrays, data_warns = _arrays(data, options.strict_inputs)
    kwargs = options.simulator_kwargs(fmt, step_limit)
    if path == "-":
        chunks = binary_chunks(sys.stdin.buffer, "<stdin>")
        return Ran(_with(simulate(Chunks(_counted(chunks, None, 0, progress) if progress else chunks), mach, arrays,
                                  file="<stdin>", **kwargs), data_warns))
    try:
        with open(path, "rb") as probe:
            head = probe.read(8192)
        if b"\x00" in head:
            decode_source(head, path)  # raises: a binary file
        fh = open(path, encoding="utf-8", newline=None)
    except OSError as exc:
        raise open_error(path, exc) from None
    with fh:
        try:
            size = os.path.getsize(path)
            LIMITS["trace_bytes"].check(size, f"trace {path}", loc=Location(path))
            if fmt == PAGE:
                program = parse(_read_all(fh, size, progress), path)
                return Ran(_with(simulate(program, mach, arrays, file=path, **kwargs), data_warns), program)
            chunks = text_chunks(fh)
            if progress:
                chunks = _counted(chunks, getattr(fh, "buffer", None), size, progress)
            return Ran(_with(simulate(Chunks(chunks), mach, arrays, file=path, **kwargs), data_warns))
        except UnicodeDecodeError:
            with open(path, "rb") as raw:
                decode_source(raw.read(), path)  # raises with the line and column
            raise


def _read_all(fh, size: int, progress: Callable[[int, int], None] | None) -> str:
    text = fh.read()
    if progress:
        progress(size, size)
    return text


def run_text(text: str, name: str, options: RunOptions = RunOptions(), *, machine: str | Machine | None = None,
             data: str | dict | None = None, fmt: str | None = None) -> Ran:
    """Run a trace given as text and named ``name`` in messages, for output ``fmt``: what
    ``run_path`` does with a file holding ``text`` (the step viewer parses it once and lists it)."""
    mach = machine if isinstance(machine, Machine) else resolve_machine(machine)
    arrays, data_warns = _arrays(data, options.strict_inputs)
    kwargs = options.simulator_kwargs(fmt, None)
    if fmt == PAGE:
        program = parse(text, name)
        return Ran(_with(simulate(program, mach, arrays, file=name, **kwargs), data_warns), program)
    chunks = text_chunks(io.StringIO(text, newline=None))
    return Ran(_with(simulate(Chunks(chunks), mach, arrays, file=name, **kwargs), data_warns))


def render_run(ran: Ran, fmt: str, *, steps: bool | None = None, json_fields: str | None = None,
               memory: bool = True, memory_max: int | None = None, width: int | None = None,
               name: Namer = field_words) -> str:
    """A run's output in ``fmt``, as ``toym run`` prints it: ``steps=False`` leaves the step rows
    out; JSON: ``json_fields`` (comma-separated) selects keys, arrays over ``memory_max`` elements
    are summarised (None: whole), ``memory=False`` leaves them out, the warnings say parameters as
    ``name`` does (the front's words: the CLI's flags); ``width``: a table's."""
    from .render import render

    if memory_max is not None:
        check_int("memory_max", memory_max, 0)
    fields = [f for f in json_fields.split(",") if f.strip()] if json_fields is not None else None
    return render(ran.result, fmt, steps=steps is not False, fields=fields, memory=memory, memory_max=memory_max,
                  width=width, program=ran.program, name=name)


def run_file(path: str, *, machine: str | Machine | None = None, registers: int | None = None,
             data: str | dict | None = None,
             seed: int = 0, symbolic: bool = False, steps: bool | None = None, dtype: str | None = None,
             strict_numerics: bool = False, strict_inputs: bool = False,
             progress: Callable[[int, int], None] | None = None, step_limit: int | None = None) -> Result:
    """Run a trace file (``-`` = standard input), streaming its lines.

    ``strict_inputs``: an array read but never given is an error (``DataError``), not a
    warning in ``Result.warnings``. ``progress(done, total)`` is called as the file is read
    (bytes of the file; for standard input characters, total 0). ``steps=None`` keeps the step
    rows of runs of at most ``step_limit`` steps (default: the simulator's, 200). ``machine`` may
    be a ``Machine`` and ``data`` the arrays themselves (``toym run --problem``: the exercise's)."""
    options = RunOptions(registers=registers, seed=seed, symbolic=symbolic, steps=steps, dtype=dtype,
                         strict_numerics=strict_numerics, strict_inputs=strict_inputs)
    return run_path(path, options, machine=machine, data=data, progress=progress, step_limit=step_limit).result


def sweep_table(spec: GeneratorSpec, grid: dict[str, str], *, machine: Machine | None = None,
                columns: str | None = None, jobs: int = 1, executor: str = "local", scheduler: str | None = None,
                on_point: Callable[[int, int], None] | None = None, strict: bool = False) -> tuple[Report, list[Any]]:
    """``toym sweep``'s table: the generator ``spec`` run over ``grid`` (parameter → its values'
    text, ``2,4,8`` or ``3..6``), one row per point, narrowed to ``columns`` (comma-separated names
    of the one column vocabulary, aliases too) — and the rows, for a plot or the exit status. An
    infeasible point is a row saying why unless ``strict``."""
    from .experiments.columns import column_key
    from .experiments.sweep import sweep, sweep_report
    from .render.columns import select_columns

    rows = sweep(spec, grid, machine=machine, on_point=on_point, jobs=jobs, executor=executor, scheduler=scheduler,
                 strict=strict)
    report = sweep_report(rows, spec)
    if columns is not None:
        report = select_columns(report, [column_key(c, [p.name for p in spec.params]) for c in columns.split(",")])
    return report, rows


def _with(result: Result, warnings: list) -> Result:
    """``result`` with the data file's warnings first."""
    if not warnings:
        return result
    import dataclasses

    return dataclasses.replace(result, warnings=tuple(warnings) + tuple(result.warnings))


def _counted(chunks: Iterable[str], raw, total: int, progress: Callable[[int, int], None]) -> Iterator[str]:
    """``chunks`` again, calling ``progress(done, total)`` after each — bytes of a file read so far
    (``raw``: its binary buffer; total: its size), or characters of a stream (total 0: unknown)."""
    done = 0
    for chunk in chunks:
        yield chunk
        done = min(raw.tell(), total) if raw is not None else done + len(chunk)
        progress(done, total)
    progress(total or done, total)
