"""Symbolic values: registers hold expressions over the inputs instead of numbers.

``toym run --symbolic`` runs a trace in this domain so a lecturer can regenerate the
seed's register-state tables (a₀₀, a₀₀·b₀₀, e^(x₀−m), c₀₀ …). Expressions are
immutable and hash-consed by structure; rendering abbreviates as the seed does:

* a MAX over every element of one input vector prints as ``m``;
* a sum (MAC/ADD chain) that is later stored whole to an output prints as that
  output's name (``c₀₀``), in every step that holds it.
"""

from __future__ import annotations

__all__ = ["Expr", "leaf", "SYMBOLIC_OPS", "Namer", "render", "subscript", "const"]

from collections.abc import Callable

_SUB = str.maketrans("0123456789-", "₀₁₂₃₄₅₆₇₈₉₋")


def subscript(index: tuple[int, ...]) -> str:
    if any(i >= 10 for i in index):
        return ",".join(str(i).translate(_SUB) for i in index)
    return "".join(str(i).translate(_SUB) for i in index)


class Expr:
    """A node: ``op`` is 'leaf', 'const', '+', '−', '·', '/', 'exp', 'max'."""

    __slots__ = ("op", "args", "name", "_hash", "_leaves")

    def __init__(self, op: str, args: tuple = (), name: str | None = None):
        self.op = op
        self.args = args
        self.name = name
        self._hash = hash((op, args, name))
        self._leaves: frozenset | None = None

    def __eq__(self, other) -> bool:
        return (self is other) or (isinstance(other, Expr) and self._hash == other._hash
                                   and self.op == other.op and self.name == other.name and self.args == other.args)

    def __hash__(self) -> int:
        return self._hash

    def leaves(self) -> frozenset:
        if self._leaves is None:
            if self.op == "leaf":
                self._leaves = frozenset([self])
            elif self.op == "const":  # a number (a fill value such as −inf): no inputs below it
                self._leaves = frozenset()
            else:
                acc: set = set()
                for a in self.args:
                    acc |= a.leaves()
                self._leaves = frozenset(acc)
        return self._leaves

    def __repr__(self) -> str:
        return f"Expr({render(self)!r})"

    def __str__(self) -> str:
        return render(self)


def leaf(array: str, index: tuple[int, ...]) -> Expr:
    return Expr("leaf", (array,) + tuple(index), array + subscript(tuple(index)))


def const(value: float) -> Expr:
    from ..program import format_value

    return Expr("const", (value,), format_value(value))


def _flat(op: str, a: Expr, b: Expr) -> Expr:
    items = (a.args if a.op == op else (a,)) + (b.args if b.op == op else (b,))
    return Expr(op, items)


def _max(a: Expr, b: Expr) -> Expr:
    if a == b:
        return a
    items = []
    for x in (a.args if a.op == "max" else (a,)) + (b.args if b.op == "max" else (b,)):
        if x not in items:
            items.append(x)
    if all(x.op == "leaf" for x in items):
        items.sort(key=lambda x: x.args)
    return Expr("max", tuple(items))


def _is_const(e: Expr, value: float) -> bool:
    return e.op == "const" and e.args[0] == value


def _sub(a: Expr, b: Expr) -> Expr:
    if a == b:
        return const(0.0)
    if _is_const(b, 0.0):
        return a
    return Expr("−", (a, b))


def _exp(a: Expr) -> Expr:
    if _is_const(a, 0.0):
        return const(1.0)
    return Expr("exp", (a,))


def _mul(a: Expr, b: Expr) -> Expr:
    if _is_const(a, 1.0):
        return b
    if _is_const(b, 1.0):
        return a
    return _flat("·", a, b)


def _add(a: Expr, b: Expr) -> Expr:
    if _is_const(a, 0.0):
        return b
    if _is_const(b, 0.0):
        return a
    return _flat("+", a, b)


def _div(a: Expr, b: Expr) -> Expr:
    if _is_const(b, 1.0):
        return a
    return Expr("/", (a, b))


SYMBOLIC_OPS: dict[str, Callable] = {
    "MAC_Z": lambda a, b: _flat("·", a, b),
    "MAC": lambda a, b, c: Expr("+", (c.args if c.op == "+" else (c,)) + (_flat("·", a, b),)),
    "MAX": _max,
    "SUB": _sub,
    "ADD": _add,
    "MUL": _mul,
    "DIV": _div,
    "EXP": _exp,
    "MOV": lambda a: a,
}

_PREC = {"leaf": 9, "const": 9, "exp": 9, "max": 9, "·": 5, "/": 5, "+": 3, "−": 3}


class Namer:
    """Display names for whole expressions (outputs, full-vector maxima)."""

    def __init__(self, names: dict[Expr, str] | None = None, inputs: dict[str, int] | None = None):
        self.names = dict(names or {})
        self.inputs = inputs or {}  # 1-D input array → length, for the "m" rule

    def name_of(self, e: Expr) -> str | None:
        got = self.names.get(e)
        if got is not None:
            return got
        if e.op == "max" and self.inputs:
            lv = e.leaves()
            arrays = {x.args[0] for x in lv}
            if len(arrays) == 1:
                arr = next(iter(arrays))
                if arr in self.inputs and len(lv) == self.inputs[arr] and all(len(x.args) == 2 for x in lv):
                    return "m"
        return None


def render(e: Expr, namer: Namer | None = None, limit: int = 0) -> str:
    memo: dict = {}

    def go(x: Expr) -> str:
        got = memo.get(x)
        if got is not None:
            return got
        nm = namer.name_of(x) if namer else None
        if nm is not None:
            s = nm
        elif x.op in ("leaf", "const"):
            assert x.name is not None  # leaf() and const() always name their node
            s = x.name
        elif x.op == "exp":
            inner = go(x.args[0])
            s = f"e^{inner}" if x.args[0].op in ("leaf", "const") or (namer and namer.name_of(x.args[0])) else f"e^({inner})"
        elif x.op == "max":
            s = f"max({', '.join(go(a) for a in x.args)})"
        else:
            parts = []
            for i, a in enumerate(x.args):
                t = go(a)
                pa = 9 if (namer and namer.name_of(a)) else _PREC[a.op]
                need = pa < _PREC[x.op] or (i > 0 and x.op in ("−", "/") and pa == _PREC[x.op])
                parts.append(f"({t})" if need else t)
            s = x.op.join(parts) if x.op != "+" else " + ".join(parts)
        memo[x] = s
        return s

    out = go(e)
    if limit and len(out) > limit:
        out = out[: limit - 1] + "…"
    return out
