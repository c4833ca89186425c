"""``simulate(program, machine, data) -> Result``: the one place a run is set up and finished.

``simulate`` runs a ``Program`` (or assembly text, or an iterable of source lines, streamed)
and returns a ``Result``. It streams: nothing is kept per executed instruction unless step
rows are asked for, so a ten-million instruction trace runs in flat memory.

Values are floats (rounded to the machine's dtype on every register write and DRAM store)
or, with ``symbolic=True``, expressions over the inputs. Numerical events — the first
overflow, NaN and division by zero — become alarms; underflow to zero is counted (it is
normal in a softmax).

Costs: every instruction costs ``machine.op_cycles(op)``; a machine that gives rates adds
the units' work (``Machine.work_cycles``): words moved, matmul, vector and special-function
FLOPs. The engines (``sim.engines``) say what an instruction does; ``sim.loop`` runs them.
"""

from __future__ import annotations

__all__ = ["simulate", "DEFAULT_STEP_LIMIT"]

import contextlib
import gc
from typing import Callable, Iterable

import numpy as np

from ..asm import parse
from ..errors import RuntimeFault
from ..isa import MNEMONICS
from ..machine import DEFAULT_MACHINE, Machine
from ..program import Program
from ..result import MemoryView, Result, Step
from .engines import ENGINES, scalar
from .engines.kinds import MM, SFU, VEC
from .inputs import empty_trace, unset_inputs
from .loop import execute
from .memory import Memory
from .run import Run
from .symbolic import Namer

DEFAULT_STEP_LIMIT = 200  # steps shown by default only for programs this short


def simulate(program: Program | str | Iterable[str], machine: Machine | None = None,
             data: dict | None = None, *, registers: int | None = None, seed: int = 0,
             symbolic: bool = False, steps: bool | None = None, step_limit: int = DEFAULT_STEP_LIMIT,
             dtype: str | None = None, strict_numerics: bool = False, strict_inputs: bool = False,
             file: str | None = None) -> Result:
    """Run ``program`` on ``machine`` and return its ``Result``.

    ``program`` is a ``Program``, assembly text, or an iterable of source lines (streamed:
    a file object is read line by line and never held whole).
    ``data`` maps array names to nested lists / arrays (overrides ``.data``).
    ``steps``: True keeps every step row, False none, None keeps them only for runs of
    at most ``step_limit`` steps.
    An array read but never given gets deterministic random values and a warning in
    ``Result.warnings`` (``sim.inputs``); ``strict_inputs=True`` raises it as a ``DataError``.
    A trace with no instruction is an ``AsmError``.
    """
    machine = machine or DEFAULT_MACHINE
    if registers is not None:
        machine = machine.with_(registers=registers)
    if dtype is not None:
        machine = machine.with_(dtype=dtype)
    if isinstance(program, str):
        program = parse(program, file or "<input>")
    is_program = isinstance(program, Program)
    fname = file or (program.file if is_program else "<input>")
    memory = Memory(seed)
    run = Run(machine, memory, dtype=machine.dtype, symbolic=symbolic, steps=steps, step_limit=step_limit,
               strict=strict_numerics, file=fname, source=lambda line: None)
    run.data = data
    rnd = None if (symbolic or run.dt.exact) else run.dt.round_array
    for name, values in (data or {}).items():
        if not symbolic:
            memory.give(name, values, round_fn=rnd)
        else:
            memory.declare(name, tuple(np.asarray(values).shape))
    if is_program:
        text = program.source
        if text is None:  # a generated program: quote lines as to_text() writes them (made on demand)
            first = len(program.header) + len(program.arrays) + 1
            lines = range(first, first + len(program.instrs))
            run.source = _generated_lines(program)
        else:
            lines = [ins.line for ins in program.instrs]
            run.source = lambda line: text[line - 1] if 0 < line <= len(text) else None
        for decl in program.arrays:
            run.declare(decl, data)
        cache = _compile_program(run, program, lines)
        with np.errstate(**_TILE_FPE), _no_cyclic_gc():
            execute(run, lines, cache, text_mode=False)
    else:
        run.source = lambda line: run.current[1] if run.current[0] == line else None
        try:
            with np.errstate(**_TILE_FPE), _no_cyclic_gc():
                execute(run, program, {}, text_mode=True)
        except RecursionError:
            raise RuntimeFault("expression too deep for symbolic mode", hint="run without --symbolic") from None
    if run.step == 0:
        raise empty_trace(fname)
    warnings = tuple(unset_inputs(run, strict_inputs))
    if warnings and strict_inputs:
        raise warnings[0]
    return _result(run, machine, fname, warnings)


@contextlib.contextmanager
def _no_cyclic_gc():
    """Pause the cyclic garbage collector while the interpreter loop runs.

    The loop makes no reference cycles (refcounting frees everything it drops), but it does
    keep many small tuples alive (compiled lines, memory cells), and each collection would
    walk all of them: on traces with many distinct lines that doubled the run time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# tile arithmetic raises on every IEEE flag; the tile engine turns them into alarms
_TILE_FPE = dict(over="raise", invalid="raise", divide="raise", under="raise")


def _generated_lines(program: Program) -> Callable[[int], str | None]:
    """Line n of ``program.to_text()`` without writing the whole text."""
    header, arrays, instrs = program.header, program.arrays, program.instrs

    def line_text(line: int) -> str | None:
        i = line - 1
        if 0 <= i < len(header):
            return f"; {header[i]}".rstrip() if header[i] else ";"
        i -= len(header)
        if 0 <= i < len(arrays):
            return arrays[i].to_text()
        i -= len(arrays)
        if 0 <= i < len(instrs):
            return str(instrs[i])
        return None

    return line_text


def _compile_program(run: Run, program: Program, lines) -> dict:
    """line → code tuple. Generators reuse one ``Instr`` object for a repeated instruction,
    so each object compiles once. If a block access makes an array dense after word
    accesses to it were compiled, compile again (they now go through the dense copy)."""
    while True:
        compiled: dict[int, tuple] = {}
        cache = {}
        for line, ins in zip(lines, program.instrs):
            code = compiled.get(id(ins))
            if code is None:
                code = compiled[id(ins)] = run.compile(ins, line)
                if run.flush:
                    break
            cache[line] = code
        else:
            return cache
        run.flush = False


def _result(run: Run, machine: Machine, fname: str, warnings: tuple = ()) -> Result:
    nm = len(MNEMONICS)
    ops = {m: run.counts[i] + run.counts[nm + i] for i, m in enumerate(MNEMONICS) if run.counts[i] + run.counts[nm + i]}
    issue = sum(machine.op_cycles(m) * n for m, n in ops.items())
    flops = list(run.flops)
    scalar.scalar_flops(run.counts, flops)
    work = machine.work_cycles(words=run.reads + run.writes, matmul=flops[MM], vector=flops[VEC], sfu=flops[SFU])
    cycles = issue + sum(work.values()) if any(work.values()) else issue
    order = sorted(range(len(run.names)), key=lambda i: _reg_key(run.names[i]))
    names = tuple(run.names[i] for i in order)
    steps = None
    if run.record or run.steps:
        steps = tuple(Step(s.step, s.line, s.instruction, tuple(s.registers[i] if i < len(s.registers) else None for i in order))
                      for s in run.steps)
    arrays = {name: arr for name, arr in sorted(run.memory.arrays.items())
              if not (run.symbolic and not arr.written and not arr.cells)}
    memory = MemoryView(arrays, _symbolic_nested if run.symbolic else None)  # lists made on first access
    regs = {run.names[i]: run.regs[i] for i in order}
    extra = {}
    for engine in ENGINES:
        extra.update(engine.report(run, machine, issue, flops, work, arrays))
    result = Result(
        file=fname, machine=machine.to_dict(), cycles=cycles, instructions=run.step, ops=ops,
        dram_reads=run.reads, dram_writes=run.writes, word_bytes=machine.word_bytes,
        register_names=names, registers=regs, memory=memory, steps=steps, steps_dropped=run.steps_dropped,
        alarms=tuple(run.alarms), underflows=run.underflows, first_underflow=run.first_underflow,
        symbolic=run.symbolic, dtype=run.dt.name,
        written_arrays=tuple(sorted(n for n, a in run.memory.arrays.items() if a.written)), extra=extra,
        warnings=warnings)
    if run.symbolic:
        inputs = {n: a.shape[0] for n, a in run.memory.arrays.items() if a.read and a.shape and len(a.shape) == 1}
        namer = Namer(run.outputs, inputs)
        object.__setattr__(result, "namer", namer)
    return result


def _symbolic_nested(arr):
    shape = arr.shape or []

    def build(prefix, axis):
        if axis == len(shape):
            v = arr.cells.get(prefix)
            return None if v is None else v
        return [build(prefix + (i,), axis + 1) for i in range(shape[axis])]

    return build((), 0)


def _reg_key(name: str):
    head, digits = name[0], name[1:]
    return (0 if head == "R" else 1, head, int(digits) if digits.isdigit() else 0, name)
