"""Welford's online variance of x[0..n−1] in one pass (seed 000, quiz "Online variance").

Running state after N elements: the mean x̄_N and M2_N = (N − 1)·S²_N, updated with the
seed's identity (N − 1)·S²_N = (N − 2)·S²_{N−1} + (x_N − x̄_N)(x_N − x̄_{N−1}):

    δ = x − x̄_{N−1};   x̄_N = x̄_{N−1} + δ/N;   M2 += δ · (x − x̄_N),   x − x̄_N = δ − δ/N

The machine has no constants, so the count N is kept as a float: 1 = e^(x0 − x0), and
N ← N + 1 each step. Finally mean[0] = x̄ and variance[0] = M2 / (n − 1) (the sample
variance; needs n ≥ 2).

Registers (6): R0 x / δ/N / x − x̄_N, R1 x̄, R2 M2, R3 N, R4 the constant 1, R5 δ.
Cost: n reads, 2 writes, 7n + 2 cycles (``toymachine.cost.variance_cost``).
"""

from __future__ import annotations

__all__ = ["variance_program"]

from ...cost import VARIANCE_REGISTERS, variance_bound, variance_cost
from ...params import check_int
from ...program import ArrayDecl, Program
from ..common import MAX_INSTRUCTIONS, ProgramBuilder, check_size, cli_line, input_values

X, MEAN, M2, COUNT, ONE, DELTA = range(6)


def variance_program(n: int = 6, *, with_data: bool = True, seed: int = 0,
                     max_instructions: int | None = MAX_INSTRUCTIONS, on_size=None) -> Program:
    """``toym gen variance``: mean[0] and the sample variance[0] of x[0..n−1]."""
    n = check_int("n", n, 2, why="the sample variance divides by n − 1")
    check_size(variance_cost(n).instructions, f"variance of {n:,} elements", max_instructions, on_size)
    b = ProgramBuilder()
    b.load("x", (0,), X)  # first element: x̄ = x0, M2 = 0, N = 1
    b.op("MOV", X, MEAN)
    b.op("SUB", X, MEAN, M2)  # x0 − x0 = 0
    b.op("EXP", M2, ONE)  # e^0 = 1
    b.op("MOV", ONE, COUNT)
    for i in range(1, n):
        b.load("x", (i,), X)
        b.op("ADD", COUNT, ONE, COUNT)  # N ← N + 1
        b.op("SUB", X, MEAN, DELTA)  # δ = x − x̄_{N−1}
        b.op("DIV", DELTA, COUNT, X)  # δ/N
        b.op("ADD", MEAN, X, MEAN)  # x̄_N = x̄_{N−1} + δ/N
        b.op("SUB", DELTA, X, X)  # x − x̄_N = δ − δ/N
        b.op("MAC", DELTA, X, M2, M2)  # M2 += δ·(x − x̄_N)
    b.op("SUB", COUNT, ONE, COUNT)  # n − 1
    b.op("DIV", M2, COUNT, M2)  # S² = M2 / (n − 1)
    b.store(MEAN, "mean", (0,))
    b.store(M2, "variance", (0,))
    cost, bound = variance_cost(n), variance_bound(n)
    header = [
        f"Welford's online variance of x[0..{n - 1}], one pass, {VARIANCE_REGISTERS} registers "
        "(seed 000, quiz 'Online variance'): mean[0] and the sample variance[0] (divides by n − 1)",
        cli_line("variance", n=n, with_data=with_data, seed=seed),
        "registers: R0 x, R1 mean, R2 M2 = (N−1)·S², R3 N, R4 the constant 1, R5 δ = x − mean",
        f"cost: 7n + 2 = {cost.cycles()} cycles at 1 cycle per instruction; DRAM n = {cost.reads} reads, "
        f"{cost.writes} writes (mean, variance); lower bound {bound.traffic} words ({bound.source})",
    ]
    arrays = [ArrayDecl("x", (n,), values=input_values(seed, "x", (n,)) if with_data else None)]  # else .array x[n]
    return b.program(header, arrays)
