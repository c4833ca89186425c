"""A scalar trace as values and their uses (for ``analyze``): what each instruction reads and
writes, named as the user knows them.

A LOAD of a DRAM word gives that word's current value (its initial content, or the value the
trace last stored there); a computing instruction makes a new value from the values in its
source registers; a STORE puts a value in a word. The *uses* of a value are the computing
instructions that read it (and a STORE of an unmodified input: a copy). Each word whose final
content differs from its initial content is an *output*: one STORE of that content is due.
"""

from __future__ import annotations

__all__ = ["Flow", "trace_flow", "line_numbers"]

from dataclasses import dataclass

from ..errors import ConfigError
from ..program import Instr, Mem, Program, Reg


@dataclass
class Flow:
    """The trace as values and uses."""

    names: list  # value id → text: a word ("a[0][1]"), or the word the trace stores it to
    dirty: list  # value id → computed (True) or a DRAM word's initial content (False)
    def_line: list  # value id → line it was computed or first loaded
    uses: list  # use index → (line, value ids read, value id written or None, the Instr)
    loads: list  # the trace's LOADs: (line, text, value id, use index it serves or None)
    outputs: dict  # value id → the words (Mems) whose final content it is
    stores: int  # the trace's STOREs
    home: dict  # value id of a word's initial content → that word (a Mem)
    initial_of: dict  # word (array, index) → value id of its initial content

    @property
    def output_stores(self) -> int:
        return sum(len(words) for words in self.outputs.values())


def line_numbers(program: Program) -> list[int]:
    """Each instruction's line as the user sees it: its source line (a parsed file), or its line
    in ``program.to_text()`` (a generated program)."""
    if program.source is not None or any(ins.line for ins in program.instrs):
        return [ins.line for ins in program.instrs]
    offset = len(program.header) + len(program.arrays)
    return [offset + i + 1 for i in range(len(program.instrs))]


def _check_scalar(ins: Instr, line: int, regs_named: set) -> None:
    for a in ins.args:
        if isinstance(a, Reg):
            if a.index is None or a.transpose:
                raise ConfigError(f"line {line}: {a} is not a scalar register; analyze works on scalar traces",
                                  hint="analyze a scalar trace (R registers, one word per LOAD)")
            regs_named.add(a.name)
        elif isinstance(a, Mem) and not a.is_scalar:
            raise ConfigError(f"line {line}: {a} is a block; analyze works on scalar traces",
                              hint="analyze a scalar trace (R registers, one word per LOAD)")


def trace_flow(program: Program) -> tuple[Flow, int]:
    """The flow of a (runnable) scalar trace, and the number of registers it names."""
    names, dirty, def_line = [], [], []
    initial: dict = {}  # word → value id of its initial content
    home: dict = {}
    word_val: dict = {}  # word → current value id
    mems: dict = {}  # word → the Mem that names it
    reg_val: dict = {}  # register → value id
    pending: dict = {}  # register → index into loads of a LOAD not yet used
    uses: list[tuple] = []  # (line, the value ids read, the value written or None, the instruction)
    loads: list[list] = []  # [line, text, value id, index into uses of the use it serves or None]
    stores = 0
    regs_named: set = set()

    def new(name: str, is_dirty: bool, line: int) -> int:
        names.append(name)
        dirty.append(is_dirty)
        def_line.append(line)
        return len(names) - 1

    def use(line: int, srcs, out, ins: Instr) -> None:
        vals = []
        for r in srcs:
            vals.append(reg_val[r.name])
            at = pending.pop(r.name, None)
            if at is not None:
                loads[at][3] = len(uses)  # this use is the one that LOAD serves
        uses.append((line, tuple(vals), out, ins))

    for ins, line in zip(program.instrs, line_numbers(program)):
        _check_scalar(ins, line, regs_named)
        if ins.op == "LOAD":
            mem, reg = ins.mem(0), ins.reg(1)
            word = (mem.array, mem.index)
            v = word_val.get(word)
            if v is None:
                v = initial[word] = new(str(mem), False, line)
                home[v] = mem
                word_val[word] = v
            pending[reg.name] = len(loads)
            loads.append([line, str(ins), v, None])
            reg_val[reg.name] = v
        elif ins.op == "STORE":
            reg, mem = ins.reg(0), ins.mem(1)
            v = reg_val[reg.name]
            stores += 1
            if not dirty[v]:  # a copy of an input: the value must be in a register here
                use(line, (reg,), None, ins)
            else:
                names[v] = str(mem)  # a computed value is named by the word the trace stores it to
            word = (mem.array, mem.index)
            word_val[word] = v
            mems[word] = mem
        else:
            v = new(f"{ins.op} at line {line}", True, line)
            use(line, [a for a in ins.args[:-1] if isinstance(a, Reg)], v, ins)
            dest = ins.reg(len(ins.args) - 1)
            pending.pop(dest.name, None)
            reg_val[dest.name] = v
    outputs: dict = {}
    for word, v in word_val.items():
        if initial.get(word) != v:
            outputs.setdefault(v, []).append(mems[word])
    flow = Flow(names, dirty, def_line, uses, [tuple(x) for x in loads], outputs, stores, home, initial)
    return flow, len(regs_named)
