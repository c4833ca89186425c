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
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..asm import Chunks, line_chunks, parse, parse_line, text_chunks
from ..errors import AsmError, Opt, RuntimeFault
from ..isa import MNEMONICS
from ..machine import DEFAULT_MACHINE, Machine
from ..program import ArrayDecl, Program
from ..result import MemoryView, Result, Step, arithmetic_intensity
from . import engines
from .compiled import CompiledPath
from .engines import ENGINES, scalar, tile, units
from .engines.kinds import EXEC, LOAD, MM, MZO, SFU, STORE, VEC
from .inputs import empty_trace, misread_inputs, unset_inputs
from .loop import execute, execute_engines
from .memory import Memory
from .run import Run
from .symbolic import Namer
from .text import run_text

DEFAULT_STEP_LIMIT = 200  # steps shown by default only for programs this short
PROGRAM_CHUNK = 65_536  # instructions of a Program compiled at a time (bounds the compiled code's memory)


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
    ``Result.warnings`` (``sim.inputs``); ``strict_inputs=True`` raises it as a ``DataError``. A read
    that is surely a typo of a given array's name (``A`` where ``a`` is given) is a ``DataError`` always.
    A trace with no instruction is an ``AsmError``.
    """
    machine = machine or DEFAULT_MACHINE
    if registers is not None:
        machine = machine.with_(registers=registers)
    if dtype is not None:
        machine = machine.with_(dtype=dtype)
    if isinstance(program, str):
        program = parse(program, file or "<input>")
    fname = file or (program.file if isinstance(program, Program) else "<input>")
    memory = Memory(seed)
    run = Run(machine, memory, dtype=machine.dtype, symbolic=symbolic, steps=steps, step_limit=step_limit,
               strict=strict_numerics, file=fname, source=lambda line: None)
    engines.setup(run)
    run.data = data
    rnd = None if (symbolic or run.dt.exact) else run.dt.round_array
    for name, values in (data or {}).items():
        if not symbolic:
            memory.give(name, values, round_fn=rnd)
        else:
            memory.declare(name, tuple(np.asarray(values).shape))
    # tile arithmetic raises on every IEEE flag; the tile engine turns them into alarms
    with np.errstate(over="raise", invalid="raise", divide="raise", under="raise"), _no_cyclic_gc():
        if isinstance(program, Program):
            _run_program(run, program, data)
        else:
            try:
                chunks = _chunks(program)
                if run.machine.sram_rule == "paper":  # which registers count is known only from the whole trace
                    chunks = list(chunks)
                    tile.note_paper_registers(run, _instrs_of(chunks, fname))
                run_text(run, chunks)
            except RecursionError:
                raise RuntimeFault("expression too deep for symbolic mode", key="symbolic",
                                   hint=("run without ", Opt("symbolic"))) from None
    if run.step == 0:
        raise empty_trace(fname)
    misread = misread_inputs(run)
    if misread:
        raise misread[0]
    warnings = tuple(unset_inputs(run, strict_inputs))
    if warnings and strict_inputs:
        raise warnings[0]
    return _result(run, machine, fname, warnings)


@contextlib.contextmanager
def _no_cyclic_gc():
    """Pause the cyclic garbage collector while the interpreter loop runs.

    The loop makes no reference cycles (refcounting frees everything it drops), but it does
    keep many small tuples alive (compiled lines, memory cells), and each collection would
    walk all of them: on traces with many distinct lines that doubled the run time. Before it is
    enabled again the objects made meanwhile go to the oldest generation (``freeze``, ``unfreeze``:
    two list moves), where the next young collection would walk every one of them once — only
    where the host froze nothing itself (``unfreeze`` would hand a pre-forking server's frozen
    objects back to the collector)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


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


def _run_program(run: Run, program: Program, data: dict | None) -> None:
    """Compile and run a ``Program`` in chunks of instructions. Generators share one ``Instr``
    for a repeated register instruction, so each compiles once (by identity); LOAD/STORE compile
    through the scalar engine's templates. A chunk compiles before it runs: when a block access
    makes an array dense, the chunk is compiled again (its word accesses then go to the dense
    copy) — all of it before any of it runs."""
    text = program.source
    instrs = program.instrs
    if text is None:  # a generated program: quote lines as to_text() writes them (made on demand)
        first, lines = len(program.header) + len(program.arrays) + 1, None
        run.source = _generated_lines(program)
    else:
        first, lines = 0, [ins.line for ins in instrs]
        run.source = lambda line: text[line - 1] if 0 < line <= len(text) else None
    for decl in program.arrays:
        run.declare(decl, data)
    if run.machine.sram_rule == "paper":
        tile.note_paper_registers(run, instrs)
    by_id: dict[int, tuple] = {}
    fast = CompiledPath(run) if lines is None else None  # a generated program: the compiled path may run it
    for start in range(0, len(instrs), PROGRAM_CHUNK):
        chunk = instrs[start:start + PROGRAM_CHUNK]
        if fast is not None and fast.run_program_chunk(chunk, first + start):
            continue
        while True:
            codes: list[Any] = list(map(by_id.get, map(id, chunk)))  # None: not compiled yet
            k = -1
            try:
                while True:
                    k = codes.index(None, k + 1)
                    ins = chunk[k]
                    code = by_id.get(id(ins))  # compiled at an earlier occurrence in this chunk
                    if code is None:
                        line = first + start + k if lines is None else lines[start + k]
                        code = scalar.compile_memory(run, ins, line) or engines.compile_instr(run, ins, line)
                        if run.flush:
                            break
                        if code[0] != LOAD and code[0] != STORE:  # a LOAD/STORE Instr is rarely seen twice
                            by_id[id(ins)] = code
                    codes[k] = code
            except ValueError:  # no miss left: the chunk is compiled
                break
            run.flush = False
            by_id.clear()
            run.memory_templates.clear()
        if not run.record and all(code[0] == EXEC for code in codes):  # a tile program: no scalar kinds
            execute_engines(run, codes, first + start if lines is None else start, lines)
        else:
            execute(run, codes, first + start if lines is None else start, lines)


def _instrs_of(chunks: list[str], fname: str):
    """The LOAD/STORE instructions of a trace's text (parse errors wait for the run, in order)."""
    for text in chunks:
        for line in text.split("\n"):
            head = line.lstrip()[:5].upper()
            if head.startswith(("LOAD", "STORE")) and ":" in line:
                try:
                    ins = parse_line(line, 0, fname)
                except AsmError:
                    continue
                if ins is not None and not isinstance(ins, ArrayDecl):
                    yield ins


def _chunks(source) -> Iterable[str]:
    """Text in chunks of whole lines: from a ``Chunks`` stream, a text file object, or an
    iterable of lines."""
    if isinstance(source, Chunks):
        return source
    if hasattr(source, "read"):
        return text_chunks(source)
    return line_chunks(source)


def _result(run: Run, machine: Machine, fname: str, warnings: tuple = ()) -> Result:
    nm = len(MNEMONICS)
    ops = {m: run.counts[i] + run.counts[nm + i] for i, m in enumerate(MNEMONICS) if run.counts[i] + run.counts[nm + i]}
    issue = sum(machine.op_cycles(m) * n for m, n in ops.items())
    flops = list(run.flops)
    scalar.scalar_flops(run.counts, flops)
    work = machine.work_cycles(words=run.reads + run.writes, matmul=flops[MM], vector=flops[VEC], sfu=flops[SFU],
                               matmul_outputs=flops[MZO])
    if machine.has_units:  # tile instructions cost their unit's cycles instead (tile LOAD/STORE: DMA, overlapped)
        assert run.units is not None  # the units engine keeps them on such a machine
        issue -= sum(machine.op_cycles(m) * run.counts[nm + i] for i, m in enumerate(MNEMONICS) if machine.unit_of(m))
        words = run.reads + run.writes - run.tile_reads - run.tile_writes  # scalar LOAD/STORE words
        work = {"hbm": words * machine.word_bytes / machine.hbm_bytes_per_cycle
                if words and machine.hbm_bytes_per_cycle else 0,
                "mxu": run.units[units.MXU_CYCLES], "vpu": run.units[units.VPU_CYCLES]}
    cycles = issue + sum(work.values()) if any(work.values()) else issue
    if machine.whole_cycles and float(cycles).is_integer():  # a cycle-level machine: whole cycles, printed so
        cycles = int(cycles)
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
    extra["intensity"] = arithmetic_intensity(flops[MM] + flops[VEC] + flops[SFU], run.reads + run.writes,
                                              machine.word_bytes)
    namer = None
    if run.symbolic:
        inputs = {n: a.shape[0] for n, a in run.memory.arrays.items() if a.read and a.shape and len(a.shape) == 1}
        namer = Namer(run.outputs, inputs)
    return Result(
        file=fname, machine=machine.to_dict(), cycles=cycles, instructions=run.step, ops=ops,
        dram_reads=run.reads, dram_writes=run.writes, word_bytes=machine.word_bytes,
        register_names=names, registers=regs, memory=memory, steps=steps, steps_dropped=run.steps_dropped,
        alarms=tuple(run.alarms), underflows=run.underflows, first_underflow=run.first_underflow,
        symbolic=run.symbolic, dtype=run.dt.name,
        written_arrays=tuple(sorted(n for n, a in run.memory.arrays.items() if a.written)), extra=extra,
        warnings=warnings, namer=namer)


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
