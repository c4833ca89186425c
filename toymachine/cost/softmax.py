"""Softmax on the scalar machine (seed 000, "Softmax", Problems 4 and 5): closed-form costs of
``toymachine.gen.scalar.softmax`` and the lower bound."""

from __future__ import annotations

__all__ = ["SOFTMAX_REGISTERS", "softmax_cost", "softmax_bound"]

from .common import Bound, Cost, compulsory, ops_of

SOFTMAX_REGISTERS = {"naive": 2, "safe": 3, "online": 4}


def softmax_cost(n: int, algo: str = "online") -> Cost:
    """naive (2 passes, no max):  LOAD 2n, EXP 2n, MOV 1, ADD n−1, DIV n, STORE n      = 7n
    safe (3 passes, seed P4):     LOAD 3n, MAX n−1, SUB 2n, EXP 2n, MOV 1, ADD n−1,
                                  DIV n, STORE n                                        = 11n − 1
    online (2 passes, seed P5):   LOAD 2n, MOV n+1, MAX n−1, SUB 3n−1, EXP 3n−1,
                                  MUL n−1, ADD n−1, DIV n, STORE n                      = 14n − 4
    Registers 2, 3, 4 (online with n = 1 never needs its fourth)."""
    if algo == "naive":
        return Cost(ops_of(load=2 * n, exp=2 * n, mov=1, add=n - 1, div=n, store=n), 2)
    if algo == "safe":
        return Cost(ops_of(load=3 * n, max=n - 1, sub=2 * n, exp=2 * n, mov=1, add=n - 1, div=n, store=n), 3)
    return Cost(ops_of(load=2 * n, mov=n + 1, max=n - 1, sub=3 * n - 1, exp=3 * n - 1, mul=n - 1, add=n - 1,
                     div=n, store=n), 4 if n > 1 else 3)


def softmax_bound(n: int, **_) -> Bound:
    return compulsory(n, n)
