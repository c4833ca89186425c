"""Frozen value types for programs: operands, instructions, array declarations.

A ``Program`` is what the assembler produces and what generators build directly;
``Program.to_text()`` writes assembly that parses back to an equal program.
"""

from __future__ import annotations

__all__ = ["Reg", "Mem", "Span", "Instr", "ArrayDecl", "Program", "format_value", "format_literal", "ACCUMULATOR"]

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

ACCUMULATOR = "ACC"  # the MAC unit's internal accumulator register (seed 000's Blackwell remark)


@dataclass(frozen=True, slots=True)
class Reg:
    """A register operand. ``name`` is canonical: ``R<n>``/``T<n>`` upper-case, or ``ACC`` — the
    MAC unit's own accumulator on a machine with ``mac_accumulator: true``."""

    name: str
    transpose: bool = False  # tile machine: use the register's tile transposed (``Kj.T``)

    def __str__(self) -> str:
        return self.name + (".T" if self.transpose else "")

    @property
    def index(self) -> int | None:
        """n for a register named R<n>, else None."""
        if self.name[:1] == "R" and self.name[1:].isdigit():
            return int(self.name[1:])
        return None


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open index range ``start:stop`` (``None`` = the array's edge)."""

    start: int | None
    stop: int | None

    def __str__(self) -> str:
        a = "" if self.start is None else str(self.start)
        b = "" if self.stop is None else str(self.stop)
        return f"{a}:{b}"


Index = int | Span


@dataclass(frozen=True, slots=True)
class Mem:
    """A DRAM address: array name and one index (or span) per dimension."""

    array: str
    index: tuple[Index, ...]

    @property
    def is_scalar(self) -> bool:
        return all(isinstance(i, int) for i in self.index)

    def __str__(self) -> str:
        index = self.index
        if len(index) == 1 and type(index[0]) is int:  # the common case: x[3]
            return f"{self.array}[{index[0]}]"
        if self.is_scalar:
            return self.array + "".join(f"[{i}]" for i in index)
        return f"{self.array}[{', '.join(str(i) for i in index)}]"


Operand = Reg | Mem | float


@dataclass(frozen=True, slots=True)
class Instr:
    """One instruction. ``line`` is the 1-based source line (0 when generated)."""

    op: str
    args: tuple[Operand, ...]
    line: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"{self.op} {', '.join(format_operand(a) for a in self.args)}"

    def reg(self, i: int) -> Reg:
        """Operand ``i``, where the instruction's signature puts a register."""
        a = self.args[i]
        if not isinstance(a, Reg):
            raise TypeError(f"{self.op}: operand {i} is {format_operand(a)}, not a register")
        return a

    def mem(self, i: int) -> Mem:
        """Operand ``i``, where the instruction's signature puts a memory address."""
        a = self.args[i]
        if not isinstance(a, Mem):
            raise TypeError(f"{self.op}: operand {i} is {format_operand(a)}, not a memory address")
        return a

    def value(self, i: int) -> float:
        """Operand ``i``, where the instruction's signature puts a number."""
        a = self.args[i]
        if isinstance(a, (Reg, Mem)):
            raise TypeError(f"{self.op}: operand {i} is {a}, not a number")
        return a


def operands_of(ins: Instr) -> tuple[Any, ...]:
    """``ins.args`` for code that compiles it: the parser checked each operand's kind against the
    ISA signature (``isa.ISA[op].signature``), so a compiler takes them by position."""
    return ins.args


def format_operand(a: Operand) -> str:
    if isinstance(a, (Reg, Mem)):
        return str(a)
    return format_value(a)


def format_value(x: float) -> str:
    """Shortest text that reads back as the same float (``-inf``, ``nan`` spelled out)."""
    if isinstance(x, bool):
        raise TypeError("booleans are not values")
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == int(x) and abs(x) < 1e16:
        return str(int(x)) if not (x == 0 and math.copysign(1, x) < 0) else "-0.0"
    return repr(float(x))


def format_literal(values) -> str:
    """A nested list literal as ``.data`` writes it."""
    if isinstance(values, (list, tuple)):
        return "[" + ", ".join(format_literal(v) for v in values) + "]"
    if values is None:
        return "null"
    return format_value(values)


@dataclass(frozen=True)
class ArrayDecl:
    """``.data NAME = [...]`` (values) or ``.array NAME[d0][d1] [= fill]`` (shape)."""

    name: str
    shape: tuple[int, ...] | None = None
    values: object = None  # nested lists of floats, when given inline
    fill: float | None = None
    line: int = field(default=0, compare=False)

    def to_text(self) -> str:
        if self.values is not None:
            return f".data {self.name} = {format_literal(self.values)}"
        dims = "".join(f"[{d}]" for d in (self.shape or ()))
        text = f".array {self.name}{dims}"
        if self.fill is not None:
            text += f" = {format_value(self.fill)}"
        return text


@dataclass(frozen=True)
class Program:
    """Instructions plus the arrays the program declares.

    ``header`` holds comment lines written before the code (without the ``;``).
    ``source`` keeps the original text's lines so runtime errors can quote them.
    """

    instrs: tuple[Instr, ...]
    arrays: tuple[ArrayDecl, ...] = ()
    header: tuple[str, ...] = field(default=(), compare=False)
    file: str = field(default="<program>", compare=False)
    source: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.instrs)

    def __iter__(self) -> Iterable[Instr]:
        return iter(self.instrs)

    def to_text(self) -> str:
        lines = [f"; {h}".rstrip() if h else ";" for h in self.header]
        lines += [a.to_text() for a in self.arrays]
        texts: dict[int, str] = {}  # generators share one Instr for a repeated register instruction
        get = texts.get
        for ins in self.instrs:
            text = get(id(ins))
            if text is None:
                text = str(ins)
                if ins.op != "LOAD" and ins.op != "STORE":  # a LOAD/STORE is rarely the same object twice
                    texts[id(ins)] = text
            lines.append(text)
        return "\n".join(lines) + "\n"

    def source_line(self, line: int) -> str | None:
        if self.source is not None and 0 < line <= len(self.source):
            return self.source[line - 1]
        return None
