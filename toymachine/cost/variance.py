"""Welford's online variance (seed 000, quiz "Online variance"): the closed-form cost of
``toymachine.gen.scalar.variance`` and the lower bound."""

from __future__ import annotations

__all__ = ["VARIANCE_REGISTERS", "variance_cost", "variance_bound"]

from .common import Bound, Cost, compulsory, ops_of

VARIANCE_REGISTERS = 6


def variance_cost(n: int, **_) -> Cost:
    """One pass: init LOAD, 2 MOV, SUB, EXP (the constant 1 = e⁰); per further element
    LOAD, 2 ADD, 2 SUB, DIV, MAC; finally SUB, DIV and 2 STOREs (mean, variance).
    LOAD n, MOV 2, SUB 2n, EXP 1, ADD 2n − 2, DIV n, MAC n − 1, STORE 2 — 7n + 2 cycles."""
    return Cost(ops_of(load=n, mov=2, sub=2 * n, exp=1, add=2 * n - 2, div=n, mac=n - 1, store=2),
                VARIANCE_REGISTERS)


def variance_bound(n: int, **_) -> Bound:
    return compulsory(n, 2)
