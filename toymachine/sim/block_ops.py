"""What a compiled block's generated code says — shared by the template blocks (``block_compile``)
and the line pieces (``line_blocks``): ``WordStatements`` writes a block of word instructions
(registers as locals, the register prologue and epilogue, each STORE, each register instruction
through ``op_statement``: the operations inline with the exact float semantics of ``isa``'s
functions, others called, a bail to the interpreter loop on every slow path); the two kinds of
block differ only in how an index is bound and how a cell is first read (their hooks). Also a
block's first reads of cells (``initial_reads``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["ARITY", "WordStatements", "op_statement", "initial_reads"]

import math
import operator

from ..isa import _mac, fmax
from .engines.kinds import BINARY, COPY, LOAD, LOAD_T, SKIP, STORE, STORE_T, TERNARY, UNARY

if TYPE_CHECKING:
    from .run import Run

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


class WordStatements:
    """The statements of a block of word instructions: ``top`` (registers read into locals
    ``r<slot>``, each array's cells as a local ``C<n>``), ``body`` and ``tail`` (the registers
    written back). ``env`` is the generated function's namespace (``bind`` puts a constant in it).
    The hooks: ``index(k, code, a)`` — the expression of LOAD/STORE ``codes[k]``'s index (``a``: the
    array's name in ``env``; it may append checks to ``body``); ``load(k, code, a, idx, dest)`` — the
    statements that read the cell into ``r<dest>`` (first reads included); ``skip(code)`` — a
    blank or comment line. ``write`` returns False (and the block is not compiled) where a code is
    not a scalar word instruction or a STORE to an array comes before a LOAD from it."""

    def __init__(self, env: dict):
        self.env = env
        self.names: dict[int, str] = {}  # id of a bound object → its name in env
        self.loaded: set[int] = set()  # register slots read from regs at the top
        self.written: set[int] = set()
        self.stored: set[int] = set()  # arrays stored to so far (id)
        self.arrays: dict[str, str] = {}  # array's env name → its cells' local name
        self.body: list[str] = []

    def bind(self, obj, prefix: str) -> str:
        name = self.names.get(id(obj))
        if name is None:
            name = self.names[id(obj)] = f"{prefix}{len(self.names)}"
            self.env[name] = obj
        return name

    def reg(self, slot: int) -> str:
        if slot not in self.written:
            self.loaded.add(slot)
        return f"r{slot}"

    def cells(self, arr) -> str:
        a = self.bind(arr, "A")
        self.arrays.setdefault(a, "C" + a[1:])
        return a

    def write(self, codes: list, index, load, skip=None) -> bool:
        body = self.body
        for k, code in enumerate(codes):
            kind = code[0]
            if kind == SKIP:
                if skip is not None:
                    skip(code)
            elif kind == LOAD or kind == LOAD_T:
                arr = code[2]
                if id(arr) in self.stored:
                    return False
                a = self.cells(arr)
                body.append(load(k, code, a, index(k, code, a), code[4]))
                self.written.add(code[4])
            elif kind == STORE or kind == STORE_T:
                a = self.cells(code[2])
                self.stored.add(id(code[2]))
                idx = index(k, code, a)
                v = self.reg(code[4])
                body.append(f"if {v} is None: raise _B\nC{a[1:]}[{idx}] = {v}")
            elif kind in ARITY:
                body.append(op_statement(kind, code, self.reg, self.bind))
                self.written.add(code[3])
            else:
                return False
        return True

    def top(self) -> list[str]:
        return [f"r{s} = regs[{s}]" for s in sorted(self.loaded)] + [f"{c} = {a}.cells" for a, c in self.arrays.items()]

    def tail(self) -> list[str]:
        return [f"regs[{s}] = r{s}" for s in sorted(self.written)] + ["H[0] += 1"]


def initial_reads(run: Run, bail: Exception):
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
