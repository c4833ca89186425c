"""What every generator shares: an instruction builder, input data, header text.

Generators build ``Instr``/``Reg``/``Mem`` values directly (never text to be parsed) and
return a ``Program`` whose header says what it computes, its parameters and its cost.
"""

from __future__ import annotations

__all__ = ["ProgramBuilder", "LineSink", "input_values", "cli_line", "check_size", "MAX_INSTRUCTIONS"]

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError, Opt
from ..limits import LIMITS
from ..params import command_line
from ..program import ACCUMULATOR, ArrayDecl, Instr, Mem, Program, Reg
from ..sim.memory import random_block


class ProgramBuilder:
    """Appends instructions; registers are named ``R0``, ``R1``… by number.

    ``Reg`` values are cached (a generated softmax of n = 10⁵ names R0 a million times).
    """

    __slots__ = ("instrs", "_regs", "_ops", "_accumulator")

    def __init__(self, accumulator: int | None = None, sink: LineSink | None = None) -> None:
        # a builder given a sink writes each instruction's text to it and builds no Program
        self.instrs: list[Instr] | LineSink = [] if sink is None else sink
        self._regs: dict[int, Reg] = {}
        self._ops: dict[tuple, Instr] = {}  # register-only instructions are values: share them
        self._accumulator = accumulator  # this register number is ACC (the MAC unit's); those above shift down

    def reg(self, number: int) -> Reg:
        r = self._regs.get(number)
        if r is None:
            acc = self._accumulator
            if acc is None or number < acc:
                name = f"R{number}"
            else:
                name = ACCUMULATOR if number == acc else f"R{number - 1}"
            r = self._regs[number] = Reg(name)
        return r

    def load(self, array: str, index: tuple[int, ...], dest: int) -> None:
        """``LOAD array[index], R<dest>``: one DRAM word into a register."""
        self.instrs.append(Instr("LOAD", (Mem(array, index), self.reg(dest))))

    def store(self, source: int, array: str, index: tuple[int, ...]) -> None:
        """``STORE R<source>, array[index]``: one register into a DRAM word."""
        self.instrs.append(Instr("STORE", (self.reg(source), Mem(array, index))))

    def op(self, mnemonic: str, *registers: int) -> None:
        """A register-to-register instruction, operands in the seed's order (``SUB Ra, Rb, Rd``)."""
        key = (mnemonic, *registers)
        instr = self._ops.get(key)
        if instr is None:
            instr = self._ops[key] = Instr(mnemonic, tuple(self.reg(r) for r in registers))
        self.instrs.append(instr)

    def program(self, header: Sequence[str], arrays: Iterable[ArrayDecl] = ()) -> Program:
        """The Program built (a builder streaming to a ``LineSink`` has written its text instead)."""
        if isinstance(self.instrs, LineSink):
            raise TypeError("a builder streaming to a LineSink builds no Program")
        return Program(tuple(self.instrs), tuple(arrays), header=tuple(header))


class LineSink:
    """Stands in for a builder's instruction list and writes each instruction's line instead (in
    blocks of 64 Ki lines), so a generated program streams: ``gen softmax --n 100000000`` holds a
    block of text, never the program. ``start(header, arrays)`` writes what ``Program.to_text``
    writes before the code; the bytes are the same as ``to_text``'s."""

    __slots__ = ("write", "lines", "texts")

    def __init__(self, write: Callable[[str], object]):
        self.write = write
        self.lines: list[str] = []
        self.texts: dict[int, str] = {}

    def start(self, header: Sequence[str], arrays: Iterable[ArrayDecl]) -> None:
        head = [f"; {h}".rstrip() if h else ";" for h in header] + [a.to_text() for a in arrays]
        if head:
            self.write("\n".join(head) + "\n")

    def append(self, ins: Instr) -> None:
        text = self.texts.get(id(ins)) if ins.op != "LOAD" and ins.op != "STORE" else None
        if text is None:
            text = str(ins)
            if ins.op != "LOAD" and ins.op != "STORE":
                self.texts[id(ins)] = text  # register-only instructions are shared objects (ProgramBuilder.op)
        self.lines.append(text)
        if len(self.lines) >= 1 << 16:
            self.flush()

    def flush(self) -> None:
        if self.lines:
            self.write("\n".join(self.lines) + "\n")
            self.lines = []

    def close(self) -> None:
        self.flush()


def input_values(seed: int, name: str, shape: tuple[int, ...], *, integers: bool = False) -> list:
    """Deterministic inputs for ``.data``: the simulator's own random values for ``name``
    (a function of seed, name and index), rounded to 2 decimals — or to integers in
    −4..4 (``integers``), which keep a matmul's products exact and readable."""
    values = random_block(seed, name, shape)
    values = np.clip(np.rint(values * 2.0), -4, 4) if integers else np.round(values, 2)
    return (values + 0.0).tolist()  # + 0.0 turns −0.0 into 0.0


def cli_line(generator: str, *, with_data: bool = True, seed: int = 0, **params: Any) -> str:
    """The ``toym gen`` command line that regenerates a program (for its header): ``params``, then
    ``--no-data`` without data or ``--seed`` for data of a seed other than 0 (``params.command_line``)."""
    return command_line(f"gen {generator}", **params, data=None if with_data else False,
                        seed=seed if with_data and seed else None)


MAX_INSTRUCTIONS = int(LIMITS["instructions"].default)  # a generator refuses to emit more (``max_instructions``; --max-instructions)
_BYTES_PER_LINE = 16  # about: "LOAD x[123456], R0\n"


def check_size(instructions: int, what: str, max_instructions: int | None = MAX_INSTRUCTIONS,
               on_size: Callable[[int, int], None] | None = None) -> None:
    """Before a generator emits anything: hand ``on_size(instructions, approximate bytes of text)``
    the count its closed form gives (the CLI announces big ones), and refuse more than
    ``max_instructions`` (None: no limit)."""
    size = instructions * _BYTES_PER_LINE
    limit: float | None = max_instructions
    if max_instructions == MAX_INSTRUCTIONS:  # not given: the limits table's (TOYM_MAX_INSTRUCTIONS lifts it)
        limit = LIMITS["instructions"].value()
    if limit is not None and instructions > limit:
        raise ConfigError((f"{what} would be {instructions:,} instructions (about {_human(size)} of text), more "
                           "than ", Opt("max_instructions", f"{limit:,}")), key="max_instructions",
                          hint=("use smaller sizes (the count is the closed form in the program's header), or raise ",
                                Opt("max_instructions"), " if you mean it"))
    if on_size is not None:
        on_size(instructions, size)


def _human(size: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.3g} {unit}"
        size /= 1000
    return f"{size:.3g} TB"  # pragma: no cover
