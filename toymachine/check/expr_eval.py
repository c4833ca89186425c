"""The expression language's evaluator: a parsed expression (``check.expr``) → its numpy value,
every result's size bounded before numpy allocates it (a problem file is hostile input too)."""

from __future__ import annotations

__all__ = ["evaluate"]

import math
from collections.abc import Callable, Mapping

import numpy as np

from ..limits import LIMITS
from .expr import Binary, Call, ExprError, Name, Node, Num, Transpose, Unary


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


_ELEMENTWISE: dict[str, Callable] = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt}
_BINARY: dict[str, Callable] = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "@": np.matmul}


def _bounded(node: Binary, a, b) -> None:
    """Refuse, before numpy allocates it, a result too big (a [n, 1] + b [1, n] is n² elements)."""
    sa, sb = np.shape(a), np.shape(b)
    if node.op == "@":
        if not sa or not sb:
            raise ValueError("@ needs arrays on both sides, not a scalar (use * to scale)")
        out = np.broadcast_shapes(sa[:-2], sb[:-2]) + sa[-2:-1] + sb[-1:] if len(sb) > 1 else sa[:-1]
        work = math.prod(out) * sa[-1]
    else:
        out = np.broadcast_shapes(sa, sb)
        work = 0
    elements, multiply_adds = LIMITS["expr_elements"], LIMITS["expr_work"]  # limits.py: one value everywhere
    cap, work_cap = elements.value(), multiply_adds.value()
    if math.prod(out) > cap or work > work_cap:
        over = elements.lift_hint(math.prod(out)) if math.prod(out) > cap else multiply_adds.lift_hint(work)
        raise ExprError(f"'{node.op}' of shapes {sa} and {sb} is too big to evaluate (at most {int(cap):,} "
                        f"elements and {int(work_cap):,} multiply-adds)", node.pos, hint=over)


def _int_arg(node: Node, value, what: str, low: int = -64, high: int = 64) -> int:
    if np.ndim(value) != 0 or not np.isfinite(value) or float(value) != int(value):
        raise ExprError(f"{what} must be a whole number", node.pos)
    if not low <= int(value) <= high:
        raise ExprError(f"{what}={int(value)} is out of range ({low}..{high})", node.pos)
    return int(value)


def evaluate(node: Node, env: Mapping[str, np.ndarray]) -> np.ndarray:
    """The expression's value (float64 ndarray; 0-d for a scalar). Shape errors raise
    ``ExprError`` at the operator or call that failed."""
    with np.errstate(all="ignore"):
        return np.asarray(_eval(node, env), dtype=np.float64)


def _eval(node: Node, env: Mapping[str, np.ndarray]):
    if isinstance(node, Num):
        return np.float64(node.value)
    if isinstance(node, Name):
        if node.name not in env:
            raise ExprError(f"unknown name '{node.name}'", node.pos, len(node.name),
                            hint=f"names are the problem's inputs: {', '.join(env) or '(none)'}")
        return np.asarray(env[node.name], dtype=np.float64)
    if isinstance(node, Unary):
        return -_eval(node.operand, env)
    if isinstance(node, Transpose):
        return np.transpose(_eval(node.operand, env))
    if isinstance(node, Binary):
        a, b = _eval(node.left, env), _eval(node.right, env)
        try:
            _bounded(node, a, b)
            return _BINARY[node.op](a, b)
        except ValueError as exc:
            raise ExprError(f"'{node.op}' cannot combine shapes {np.shape(a)} and {np.shape(b)}: {exc}", node.pos) from None
    if isinstance(node, Call):
        args = [_eval(a, env) for a in node.args]
        kw = {k: (v, _eval(v, env)) for k, v in node.keywords}
        axis = _int_arg(kw["axis"][0], kw["axis"][1], "axis") if "axis" in kw else None
        x = args[0]
        try:
            if node.function in _ELEMENTWISE:
                return _ELEMENTWISE[node.function](x)
            if node.function == "max":
                return np.maximum(x, args[1]) if len(args) == 2 else np.max(x, axis=axis)
            if node.function == "sum":
                return np.sum(x, axis=axis)
            if node.function == "mean":
                return np.mean(x, axis=axis)
            if node.function == "var":
                ddof = _int_arg(kw["ddof"][0], kw["ddof"][1], "ddof", 0, 1 << 31) if "ddof" in kw else 1
                n = np.size(x) if axis is None else np.shape(x)[axis] if -np.ndim(x) <= axis < np.ndim(x) else 1
                if ddof >= n:
                    raise ValueError(f"ddof={ddof} leaves no degrees of freedom ({n} element{'s' if n != 1 else ''})")
                return np.var(x, axis=axis, ddof=ddof)
            if np.ndim(x) == 0:
                raise ValueError("softmax needs an array (a scalar has no axis)")
            return _softmax(x, -1 if axis is None else axis)
        except (ValueError, OverflowError, IndexError) as exc:  # numpy's AxisError is a ValueError
            raise ExprError(f"{node.function}(): {exc}", node.pos, node.length) from None
    raise TypeError(node)  # pragma: no cover - the parser makes only the nodes above
