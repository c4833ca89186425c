"""The interpreter loop: run a segment of compiled code tuples, count, record steps.

``execute(run, codes, first, lines)`` runs ``codes`` in order; the source line of ``codes[i]``
is ``first + i`` (consecutive lines: a chunk of a text trace, a generated program) or
``lines[first + i]`` (a parsed program's instruction lines) — computed only on slow paths.

The scalar engine's kinds run inline (the hot path); every other engine's ``EXEC`` closure is
called with ``(run, line)``. ``LOAD_T``/``STORE_T`` are text mode's *templates*: one code for
all the lines ``LOAD x[…], R0`` that differ only in the index, which the loop takes from
``run.next_index`` (the chunk's integer indices, in order; ``sim.text``). ``SKIP`` is a blank or
comment line (it takes the indices written in it). Nothing is kept per executed instruction
unless step rows are recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

__all__ = ["execute", "execute_engines"]

from ..errors import RuntimeFault
from ..isa import _mac
from ..result import Step
from .engines import scalar
from .engines.kinds import BINARY, COPY, LOAD, LOAD_T, SKIP, STORE, STORE_T, TERNARY, UNARY
from .symbolic import Expr, const, leaf

if TYPE_CHECKING:
    from .run import Run


def execute(run: Run, codes: list, first: int, lines=None) -> None:
    """Run the code tuples ``codes`` (see the module docstring for ``first`` and ``lines``)."""
    regs = run.regs
    counts = run.counts
    check = not run.symbolic
    symbolic = run.symbolic
    record = run.record
    rows = run.steps
    limit = run.step_limit
    step = run.step
    shift = -step - 1  # codes[step + shift] is the current instruction (SKIPs add one)
    reads = writes = 0
    event = scalar.numeric_event
    nxt = run.next_index
    fma = _mac
    for code in codes:
        step += 1
        kind = code[0]
        counts[code[1]] += 1
        if kind == LOAD:
            arr = code[2]
            v = arr.cells.get(code[3])
            if v is None:
                run.step = step
                v = _initial(run, arr, code[3], code, _line(first, lines, step + shift))
            reads += 1
            regs[code[4]] = v
        elif kind == BINARY:
            x = regs[code[4]]
            y = regs[code[5]]
            try:
                r = code[2](x, y)
            except Exception as exc:  # None operand, x/0, overflow
                run.step = step
                r = event(run, _line(first, lines, step + shift), code, (x, y), None, exc)
            else:
                if check and (r - r != 0.0 or (r == 0.0 and code[-1][2])):
                    run.step = step
                    r = event(run, _line(first, lines, step + shift), code, (x, y), r)
            regs[code[3]] = r
        elif kind == LOAD_T:  # text mode: the index is the line's, taken from the chunk's index stream
            arr = code[2]
            if code[3] == 1:
                idx: tuple[int, ...] = (nxt(),)
                if idx[0] >= arr.shape[0]:  # past the shape known so far: grow it, or fault
                    if arr.fixed:
                        _fault(run, arr, idx, _line(first, lines, step + shift), 0)
                    arr.shape[0] = idx[0] + 1
            elif code[3] == 2:
                idx = (nxt(), nxt())
                shape = arr.shape
                if idx[0] >= shape[0] or idx[1] >= shape[1]:
                    _grow(run, arr, idx, _line(first, lines, step + shift), 0)
            else:
                idx = tuple([nxt() for _ in range(code[3])])
                _grow(run, arr, idx, _line(first, lines, step + shift), 0)
            v = arr.cells.get(idx)
            if v is None:
                run.step = step
                v = _initial(run, arr, idx, code, _line(first, lines, step + shift))
            reads += 1
            regs[code[4]] = v
        elif kind == UNARY:
            x = regs[code[4]]
            if x is None:
                run.empty_register(_line(first, lines, step + shift), code, (x,))
            try:
                r = code[2](x)
            except Exception as exc:
                run.step = step
                r = event(run, _line(first, lines, step + shift), code, (x,), None, exc)
            else:
                if check and (r - r != 0.0 or (r == 0.0 and code[-1][2])):
                    run.step = step
                    r = event(run, _line(first, lines, step + shift), code, (x,), r)
            regs[code[3]] = r
        elif kind == COPY:
            x = regs[code[4]]
            if x is None:
                run.empty_register(_line(first, lines, step + shift), code, (x,))
            regs[code[3]] = x
        elif kind == TERNARY:
            x = regs[code[4]]
            y = regs[code[5]]
            z = regs[code[6]]
            try:
                r = x * y + z if code[2] is fma else code[2](x, y, z)  # MAC, exact: no call
            except Exception as exc:
                run.step = step
                r = event(run, _line(first, lines, step + shift), code, (x, y, z), None, exc)
            else:
                if check and (r - r != 0.0 or (r == 0.0 and code[-1][2])):
                    run.step = step
                    r = event(run, _line(first, lines, step + shift), code, (x, y, z), r)
            regs[code[3]] = r
        elif kind == STORE_T or kind == STORE:
            arr = code[2]
            if kind == STORE:
                idx = code[3]
            elif code[3] == 1:
                idx = (nxt(),)
                if idx[0] >= arr.shape[0]:
                    if arr.fixed:
                        _fault(run, arr, idx, _line(first, lines, step + shift), 1)
                    arr.shape[0] = idx[0] + 1
            elif code[3] == 2:
                idx = (nxt(), nxt())
                shape = arr.shape
                if idx[0] >= shape[0] or idx[1] >= shape[1]:
                    _grow(run, arr, idx, _line(first, lines, step + shift), 1)
            else:
                idx = tuple([nxt() for _ in range(code[3])])
                _grow(run, arr, idx, _line(first, lines, step + shift), 1)
            v = regs[code[4]]
            if v is None:
                run.empty_register(_line(first, lines, step + shift), code, (v,))
            arr.cells[idx] = v
            writes += 1
            if symbolic and isinstance(v, Expr) and v.op == "+":
                run.outputs.setdefault(v, cast(str, leaf(arr.name, idx).name))  # leaf() always names its node
        elif kind == SKIP:  # a blank or comment line: no step, but it takes its indices
            step -= 1
            shift += 1
            for _ in range(code[2]):
                nxt()
            continue
        else:  # EXEC: another engine's instruction (the tile machine's, …) does all its work
            run.step = step
            code[2](run, first + step + shift if lines is None else lines[first + step + shift])
        if record:
            if step <= limit or run.record_all:
                line = _line(first, lines, step + shift)
                rows.append(Step(step, line, run.text_of(code, line), tuple(regs)))
            else:
                record = run.record = False
                run.steps_dropped = True
                rows.clear()
    run.step = step
    run.reads += reads
    run.writes += writes


def execute_engines(run: Run, codes: list, first: int, lines=None) -> None:
    """``execute`` for a segment of other engines' instructions only (every code ``EXEC``: a
    tile program) while no step rows are recorded — the same steps, counts and lines, without
    the scalar kinds' tests in front of each call."""
    counts = run.counts
    step = run.step
    line = first - 1  # the line of codes[i] is first + i (or lines[first + i])
    if lines is None:
        for code in codes:
            step += 1
            line += 1
            counts[code[1]] += 1
            run.step = step
            code[2](run, line)
    else:
        for i, code in enumerate(codes, first):
            step += 1
            counts[code[1]] += 1
            run.step = step
            code[2](run, lines[i])
    run.step = step


def _initial(run: Run, arr, idx: tuple, code: tuple, line: int):
    """A cell read before anything wrote it: the array's fill or its deterministic random input
    (symbolic: the input's name), rounded to the dtype; a NaN input raises the NaN alarm."""
    if run.symbolic:
        return leaf(arr.name, idx) if arr.fill is None else const(arr.fill)
    v = arr.initial(idx)
    if run.round is not None:
        v = run.round(v)
    arr.cells[idx] = v
    if v != v:
        run.alarm("nan", line, code, (), v)
    return v


def _grow(run: Run, arr, idx: tuple, line: int, operand: int) -> None:
    """An index past the shape known so far: an implied shape grows, a fixed one faults."""
    if arr.check_index(idx) is not None:
        _fault(run, arr, idx, line, operand)


def _line(first: int, lines, i: int) -> int:
    return first + i if lines is None else lines[first + i]


def _fault(run: Run, arr, idx: tuple, line: int, operand: int) -> None:
    """An index outside a declared/given array's shape."""
    raise RuntimeFault(arr.check_index(idx), loc=run.loc(line, operand),
                       hint="declared/given arrays have a fixed shape; check the index or the .data")
