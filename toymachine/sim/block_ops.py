"""What a compiled block's generated code says for one register instruction — shared by the
template blocks (``blocks``) and the line pieces (``line_blocks``): the operations written inline
(the exact float semantics of ``isa``'s functions; others are called) and the statement that
bails to the interpreter loop on every slow path."""

from __future__ import annotations

__all__ = ["ARITY", "op_statement"]

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
