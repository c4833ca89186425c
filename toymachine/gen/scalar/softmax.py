"""Softmax of x[0..n−1] into out[0..n−1] (seed 000, "Softmax", Problems 4 and 5).

naive   no max subtraction: out_i = e^(x_i) / Σ e^(x_j); 2 passes, 2 registers
        (R0 x_i / its exponent, R1 the sum). 2n reads, n writes. Overflows once x_i ≳ 709.
safe    the seed's 3-pass safe softmax, 3 registers (R0 x_i, R1 m, R2 S): pass 1 the max,
        pass 2 S = Σ e^(x_i − m), pass 3 out_i = e^(x_i − m) / S. 3n reads, n writes.
online  the seed's 2-pass online softmax, 4 registers (R0 x_i, R1 running max m, R2
        running sum s, R3 old max / rescale factor): pass 1 keeps (m, s) with
        s ← s·e^(m − m') + e^(x − m'); pass 2 normalises. 2n reads, n writes.

The instruction sequences are the seed's, step for step: ``gen softmax --n 6 --algo safe``
is programs/softmax_safe.asm and ``--algo online`` is programs/softmax_online.asm.
Cost formulas: ``toymachine.cost.softmax_cost``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import overload

__all__ = ["ALGOS", "softmax_program"]

from ...cost import SOFTMAX_REGISTERS, softmax_bound, softmax_cost
from ...params import check_choice, check_int
from ...program import ArrayDecl, Program
from ..common import MAX_INSTRUCTIONS, LineSink, ProgramBuilder, check_size, cli_line, input_values

ALGOS = ("naive", "safe", "online")
_FORMULA = {"naive": "7n", "safe": "11n − 1", "online": "14n − 4"}
_TITLE = {"naive": "naive softmax (no max subtraction), 2 passes",
          "safe": "safe softmax, 3 passes (Problem 4)",
          "online": "online softmax, 2 passes (Problem 5)"}
_READS = {"naive": 2, "safe": 3, "online": 2}


def _normalise_pass(b: ProgramBuilder, n: int, *, subtract_max: bool) -> None:
    """out_i = e^(x_i [− m]) / S with m in R1 (safe, online) and S in R2 — or S in R1 (naive)."""
    total = 2 if subtract_max else 1
    for i in range(n):
        b.load("x", (i,), 0)
        if subtract_max:
            b.op("SUB", 0, 1, 0)
        b.op("EXP", 0, 0)
        b.op("DIV", 0, total, 0)
        b.store(0, "out", (i,))


def _naive(b: ProgramBuilder, n: int) -> None:
    for i in range(n):  # pass 1: S = Σ e^(x_i) in R1
        b.load("x", (i,), 0)
        b.op("EXP", 0, 0)
        if i == 0:
            b.op("MOV", 0, 1)
        else:
            b.op("ADD", 1, 0, 1)
    _normalise_pass(b, n, subtract_max=False)


def _safe(b: ProgramBuilder, n: int) -> None:
    b.load("x", (0,), 1)  # pass 1: running max in R1
    for i in range(1, n):
        b.load("x", (i,), 0)
        b.op("MAX", 0, 1, 1)
    for i in range(n):  # pass 2: S = Σ e^(x_i − m) in R2
        b.load("x", (i,), 0)
        b.op("SUB", 0, 1, 0)
        b.op("EXP", 0, 0)
        if i == 0:
            b.op("MOV", 0, 2)
        else:
            b.op("ADD", 2, 0, 2)
    _normalise_pass(b, n, subtract_max=True)


def _online(b: ProgramBuilder, n: int) -> None:
    b.load("x", (0,), 0)  # initialisation: m = x0, s = e^0 = 1
    b.op("MOV", 0, 1)
    b.op("SUB", 0, 1, 0)
    b.op("EXP", 0, 0)
    b.op("MOV", 0, 2)
    for i in range(1, n):  # steady state, the seed's steps 1–9
        b.load("x", (i,), 0)
        b.op("MOV", 1, 3)  # save the old max
        b.op("MAX", 1, 0, 1)  # m' = max(m, x_i)
        b.op("SUB", 3, 1, 3)  # m − m'
        b.op("SUB", 0, 1, 0)  # x_i − m'
        b.op("EXP", 3, 3)  # rescale factor e^(m − m') ≤ 1
        b.op("EXP", 0, 0)  # e^(x_i − m')
        b.op("MUL", 2, 3, 2)  # s·e^(m − m')
        b.op("ADD", 2, 0, 2)  # s' = s·e^(m − m') + e^(x_i − m')
    _normalise_pass(b, n, subtract_max=True)


@overload
def softmax_program(n: int = ..., algo: str = ..., *, with_data: bool = ..., seed: int = ...,
                    max_instructions: int | None = ..., on_size=..., stream: None = ...) -> Program: ...
@overload
def softmax_program(n: int = ..., algo: str = ..., *, with_data: bool = ..., seed: int = ...,
                    max_instructions: int | None = ..., on_size=..., stream: Callable[[str], object]) -> None: ...
def softmax_program(n: int = 6, algo: str = "online", *, with_data: bool = True, seed: int = 0,
                    max_instructions: int | None = MAX_INSTRUCTIONS, on_size=None,
                    stream: Callable[[str], object] | None = None) -> Program | None:
    """``toym gen softmax``: softmax of x[0..n−1] into out[0..n−1]. With ``stream``, the program's
    text (``Program.to_text()``'s bytes) goes to ``stream`` in blocks as it is generated, and the
    result is None: ``--n 100000000 --no-data`` costs a block of text in memory, not the program."""
    n = check_int("n", n, 1)
    check_choice("algo", algo, ALGOS)
    cost, bound = softmax_cost(n, algo), softmax_bound(n)
    check_size(cost.instructions, f"softmax of {n:,} elements", max_instructions, on_size)
    header = [
        f"softmax of x[0..{n - 1}] into out[0..{n - 1}]: {_TITLE[algo]}, "
        f"{SOFTMAX_REGISTERS[algo]} registers (seed 000, 'Softmax')",
        cli_line("softmax", n=n, algo=algo, with_data=with_data, seed=seed),
        f"cost: {_FORMULA[algo]} = {cost.cycles()} cycles at 1 cycle per instruction; "
        f"DRAM {_READS[algo]}n = {cost.reads} reads, n = {cost.writes} writes",
        f"lower bound: {bound.traffic} words ({bound.source})",
    ]
    arrays = [ArrayDecl("x", (n,), values=input_values(seed, "x", (n,)) if with_data else None)]  # else .array x[n]
    emit = {"naive": _naive, "safe": _safe, "online": _online}[algo]
    if stream is None:
        b = ProgramBuilder()
        emit(b, n)
        return b.program(header, arrays)
    sink = LineSink(stream)
    sink.start(header, arrays)
    emit(ProgramBuilder(sink=sink), n)
    sink.close()
    return None
