"""What a compiled block's generated code says for one register instruction — shared by the
template blocks (``blocks``) and the line pieces (``line_blocks``): the operations written inline
(the exact float semantics of ``isa``'s functions; others are called) and the statement that
bails to the interpreter loop on every slow path; a template block's first reads of cells."""

from __future__ import annotations

__all__ = ["ARITY", "op_statement", "initial_reads"]

import math
import operator

from ..isa import _mac, fmax
from .engines.kinds import BINARY, COPY, TERNARY, UNARY

# operations written inline (exact float semantics of isa's functions); others are called
_INLINE = {operator.add: "{0} + {1}", operator.sub: "{0} - {1}", operator.mul: "{0} * {1}",
           operator.truediv: "{0} / {1}", fmax: "({0} if ({0} >= {1} or {0} != {0}) else {1})",
           math.exp: "_exp({0})", _mac: "{0} * {1} + {2}"}


ARITY = {UNARY: 1, COPY: 1, BINARY: 2, TERNARY: 3}  # a register kind → how many source registers


def op_statement(kind: int, code: tuple, reg, bind) -> str:
    """The generated statement(s) of one register instruction (a COPY, or an operation inline or
    through its bound function): it writes ``r<dest>`` and bails (``raise _B``) on an empty source,
    a non-finite result, or a zero where the instruction alarms on one — the loop then runs it and
    raises what it raises. ``reg`` names a source register, ``bind`` a constant in the function's
    environment. Shared by template blocks and line pieces (``line_blocks``)."""
    srcs = [reg(s) for s in code[4:4 + ARITY[kind]]]
    d = f"r{code[3]}"
    if kind == COPY:
        return f"if {srcs[0]} is None: raise _B\n{d} = {srcs[0]}"
    form = _INLINE.get(code[2])
    expr = form.format(*srcs) if form else f"{bind(code[2], 'F')}({', '.join(srcs)})"
    zero = f" or {d} == 0.0" if code[-1][2] else ""
    return f"{d} = {expr}\nif {d} - {d} != 0.0{zero}: raise _B"


def initial_reads(run, bail: Exception):
    """``(init, runs_of)`` for the blocks (``sim.blocks``): ``init(arr, idx)`` gives a cell read before
    anything wrote it (as ``sim.loop``'s ``_initial``; a NaN input raises ``bail`` so the loop raises the alarm); ``runs_of(arr)``
    is a 1-D array's ``(runs, size)`` of initial values, rounded to the dtype (``Array.initial_runs``),
    that a block reads first reads from (None where there are none): ``init`` makes the runs."""
    rnd = run.round
    rounded: dict = {}  # Array → its runs of initial values rounded to the dtype (a dtype that rounds)

    def init(arr, idx: tuple):
        v = arr.initial(idx)
        if rnd is not None:
            v = rnd(v)
            runs = rounded.get(arr)
            if runs is not None:
                size = arr.initial_runs()[1]
                k = idx[0] // size
                if k not in runs:
                    values = list(map(rnd, arr.initial_runs()[0][k]))
                    if all(x == x for x in values):  # a run holding a NaN stays calls: each bails
                        runs[k] = values
        if v != v:  # not stored: the loop reads it again and raises the alarm
            raise bail
        arr.cells[idx] = v
        return v

    def runs_of(arr):
        runs = arr.initial_runs()
        if runs is None or rnd is None:
            return runs
        return rounded.setdefault(arr, {}), runs[1]

    return init, runs_of
