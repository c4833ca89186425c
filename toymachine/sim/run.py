"""The state of one run: registers, DRAM, counters, alarms — and what every engine shares.

``Run`` holds what the interpreter loop (``sim.loop``) and the engines (``sim.engines``) read and
write: the register file (``slots``/``names``/``regs``, R and T registers alike), the DRAM arrays
(``memory``), the counters, the alarms and the recorded step rows. Its methods are the services
engines call while compiling (``slot``, ``array_for``, ``declare``) and on their slow paths
(``alarm``, ``empty_register``, ``loc`` for located errors).
"""

from __future__ import annotations

__all__ = ["Run"]

from collections import Counter
from collections.abc import Callable
from typing import Any

from ..asm import operand_spans, parse_line, strip_comment
from ..dtypes import get_dtype
from ..errors import (
    AsmError,
    DataError,
    Location,
    MachineLimitError,
    NumericsError,
    Opt,
    RuntimeFault,
)
from ..isa import ISA
from ..machine import Machine
from ..program import ACCUMULATOR, ArrayDecl, Instr, Mem, Reg, operands_of
from ..result import Alarm, Step
from .engines.kinds import COUNT_SLOTS, TEMPLATES, code_text
from .memory import Memory


class Run:
    """Mutable state of one run (``sim.loop.execute`` runs the instructions)."""

    # set by the engines' ``setup`` and by text mode, as they need them
    memory_templates: dict  # scalar: (LOAD/STORE, array, register) → compiled parts
    units: list[int] | None  # units: cycles of each unit, on a machine that prices them
    vpu_by_op: Counter[str]  # units: vector work per opcode
    seed_state: dict[str, Any]  # seed_units: the seed's accounting of a FlashAttention program
    sram_exact: bool  # tile: every T register counts against SRAM (not sram_rule: paper)
    tile_line_cap: int  # tile_lines: elements a tile line may name
    tile_bounds: tuple[list[int], list[int]] | None  # text mode: the chunk's cut tile bounds, position
    slice_probe: list  # text mode: the last probe of new tile blocks, chunks until the next

    def __init__(self, machine: Machine, memory: Memory, *, dtype: str, symbolic: bool, steps: bool | None,
                 step_limit: int, strict: bool, file: str, source: Callable[[int], str | None]):
        self.machine = machine
        self.memory = memory
        self.dt = get_dtype(dtype)
        self.symbolic = symbolic
        self.record = steps is not False
        self.record_all = steps is True
        self.step_limit = step_limit
        self.strict = strict
        self.file = file
        self.source = source
        self.slots: dict[str, int] = {}
        self.names: list[str] = []
        self.regs: list[Any] = []
        self.counts = [0] * COUNT_SLOTS  # scalar instructions, then tile instructions, then skipped lines
        # the tile machine: words each register holds in SRAM (T registers), R registers named
        self.sizes: list[int] = []
        self.n_scalar = 0
        self.sram_occ = 0  # words held by T registers now
        self.sram_peak = 0  # most words T registers ever held at once
        self.flops = [0, 0, 0, 0]  # tile FLOPs: matmul, vector, special-function (EXP/LOG); MAC_Z outputs
        self.tile_reads = self.tile_writes = 0
        self.flush = False  # an array switched to tile storage: recompile cached word accesses
        self.steps: list[Step] = []
        self.steps_dropped = False
        self.alarms: list[Alarm] = []
        self.alarm_kinds: set[str] = set()
        self.underflows = 0
        self.first_underflow: Alarm | None = None
        self.step = 0
        self.used_arrays: dict[str, int] = {}
        self.declared: dict[str, int] = {}  # array → the line of its .data/.array (a second one is an error)
        self.first_use_text: dict[str, str | None] = {}  # array → its first-use line's text (sim.inputs' warnings)
        self.reads = self.writes = 0
        self.next_index: Callable[[], int] = _no_index  # text mode: the chunk's next integer index (sim.text)
        self.data: dict | None = None
        self.outputs: dict[Any, str] = {}  # symbolic: expression stored whole → output name
        self.round = None if self.dt.exact or symbolic else self.dt.round_scalar
        self.fns: dict[str, Callable] = {}  # mnemonic → scalar operation (the scalar engine's setup)
        self.sram_cap = 1 << 62  # the tile engine's setup: SRAM capacity in words, rounding of tile writes
        self.tround: Callable | None = None
        self.paper_names: set[str] = set()  # sram_rule paper: registers that hold blocks of HBM matrices
        self.sram_counted: set[int] = set()  # …their slots

    # -- errors -------------------------------------------------------------------------
    def loc(self, line: int, operand: int | None = None) -> Location:
        src = self.source(line)
        col, length = 0, 1
        if src is not None and operand is not None:
            spans = operand_spans(src)
            if operand < len(spans):
                col, length = spans[operand]
        elif src is not None:
            col = len(src) - len(src.lstrip()) + 1
            length = max(1, len(src.strip().split()[0])) if src.strip() else 1
        return Location(self.file, line, col, src, length)

    # -- compilation: Instr → code tuple -----------------------------------------------------
    def slot(self, reg: Reg, line: int, operand: int) -> int:
        s = self.slots.get(reg.name)
        if s is not None:
            return s
        if reg.name == ACCUMULATOR:
            return self._accumulator(line, operand)
        limit = self.machine.registers
        tile_reg = reg.name[:1] == "T"  # T registers live in SRAM: sram_words bounds them, not `registers`
        if limit is not None and not tile_reg:
            idx = reg.index
            if (idx is not None and idx >= limit) or self.n_scalar >= limit:
                what = f"{reg.name} is beyond them" if idx is not None and idx >= limit else \
                    f"{reg.name} would be register number {self.n_scalar + 1}"
                raise MachineLimitError(
                    f"machine has {limit} register{'s' if limit != 1 else ''} (R0–R{limit - 1}); {what}",
                    loc=self.loc(line, operand), key="registers", suggestion=max(limit + 1, (idx or 0) + 1),
                    alternative="a machine file with more registers")
        if not tile_reg:
            cap = self.machine.sram_words
            if cap is not None and self.n_scalar + 1 + self.sram_peak > cap:
                raise MachineLimitError(
                    f"SRAM overflow: {reg.name} would be word {self.n_scalar + 1 + self.sram_peak} of SRAM "
                    f"but the machine has sram_words = {cap}", loc=self.loc(line, operand),
                    hint="every R register the program names occupies one word of SRAM; use fewer")
            self.n_scalar += 1
        s = len(self.names)
        self.slots[reg.name] = s
        self.names.append(reg.name)
        self.regs.append(None)
        self.sizes.append(0)
        if reg.name in self.paper_names:  # sram_rule paper: a register that holds HBM matrix blocks
            self.sram_counted.add(s)
        return s

    def _accumulator(self, line: int, operand: int) -> int:
        """ACC: the MAC unit's own register — not in the register file, not in SRAM."""
        if not self.machine.mac_accumulator:
            raise MachineLimitError("ACC is the MAC unit's accumulator, and this machine has none",
                                    loc=self.loc(line, operand),
                                    hint=("use a machine with `mac_accumulator: true` (e.g. ", Opt("machine", "toy2acc"),
                                          "), or accumulate in a register"))
        s = len(self.names)
        self.slots[ACCUMULATOR] = s
        self.names.append(ACCUMULATOR)
        self.regs.append(None)
        self.sizes.append(0)
        return s

    def array_for(self, mem: Mem, line: int, operand: int, write: bool):
        return self.array_at(mem.array, mem.index, line, operand, write)

    def array_at(self, name: str, index: tuple, line: int, operand: int, write: bool):
        arr = self.memory.arrays.get(name) or self.memory.get(name)
        msg = arr.check_index(index)
        if msg is not None:
            raise RuntimeFault(msg, loc=self.loc(line, operand),
                               hint="declared/given arrays have a fixed shape; check the index or the .data")
        if write:
            arr.written = True
        else:
            arr.read = True
        if name not in self.used_arrays:
            self.used_arrays[name] = line
            self.first_use_text[name] = self.source(line)
        if arr.mode is None:
            arr.use_scalar()
        return arr

    def slot_of(self, name: str, line: int, operand: int) -> int:
        s = self.slots.get(name)
        return s if s is not None else self.slot(Reg(name), line, operand)

    def declare(self, decl: ArrayDecl, data: dict | None):
        first = self.declared.setdefault(decl.name, decl.line)
        if first != decl.line:  # as the parser says it of a whole program
            src = self.source(decl.line)
            raise AsmError(f"array '{decl.name}' is declared twice (first on line {first})",
                           loc=Location(self.file, decl.line, 1, src, len(src.rstrip()) if src else 1),
                           hint="keep one .data/.array per array")
        if decl.name in self.used_arrays:
            raise AsmError(f"array '{decl.name}' is used on line {self.used_arrays[decl.name]} before it is declared",
                           loc=self.loc(decl.line), hint="put .data/.array directives before the code")
        if data and decl.name in data:
            given = self.memory.arrays.get(decl.name)
            declared = decl.shape or ()  # an .array has a shape; .data's comes from its values
            if decl.values is None and given is not None and given.shape is not None \
                    and tuple(given.shape) != tuple(declared):
                dims = "".join(f"[{d}]" for d in declared)
                raise DataError(f"data for '{decl.name}' has shape {tuple(given.shape)} but the program declares "
                                f"{decl.name}{dims}", loc=self.loc(decl.line),
                                hint=f"give '{decl.name}' as an array of shape {tuple(declared)}")
            return  # --data overrides the inline values
        rnd = None if self.symbolic else self.dt.round_array
        shape = decl.shape or ()  # (the parser gives every .array its shape)
        if decl.values is not None and self.symbolic:
            self.memory.declare(decl.name, shape, None, line=decl.line)
        elif decl.values is not None:
            self.memory.give(decl.name, decl.values, round_fn=rnd, line=decl.line)
        else:
            fill = decl.fill
            if fill is not None and not self.symbolic and self.round:
                fill = self.round(fill)
            self.memory.declare(decl.name, shape, fill, line=decl.line)

    def alarm(self, kind: str, line: int, code: tuple, operands: tuple, result, *, where: str = "",
               count: int = 1) -> None:
        """Record a numerical event (``where``: the element of a tile; ``count``: elements)."""
        if kind == "underflow":
            self.underflows += count
            if self.first_underflow is None:
                self.first_underflow = Alarm(kind, self.step, line, self.text_of(code, line) + where, operands, result)
            return
        if kind in self.alarm_kinds:
            return
        alarm = Alarm(kind, self.step, line, self.text_of(code, line) + where, operands, result)
        self.alarm_kinds.add(kind)
        self.alarms.append(alarm)
        if self.strict:
            ops = ", ".join(_fmt(o) for o in operands)
            raise NumericsError(f"{kind} at step {self.step}: {alarm.instruction} with operands ({ops}) gave {_fmt(result)}",
                                loc=self.loc(line), key="strict_numerics",
                                hint=("this is ", Opt("strict_numerics"), "; run without it to see all alarms"))

    def text_of(self, code: tuple, line: int) -> str:
        """The instruction's text as the trace wrote it (a template's line, with its index)."""
        if code[0] in TEMPLATES:
            return strip_comment(self.source(line) or "").strip()
        return code_text(code)

    def instr_of(self, code: tuple, line: int) -> Instr:
        ins = code[-1][0]
        return ins if ins is not None else parse_line(self.text_of(code, line), line, self.file)

    def empty_register(self, line: int, code: tuple, operands: tuple):
        ins = self.instr_of(code, line)
        srcs = [i for i, k in enumerate(ISA[ins.op].signature) if k == "src"]
        for pos, val in zip(srcs, operands):
            if val is None:
                name = operands_of(ins)[pos].name
                raise RuntimeFault(f"{name} is read before anything was written to it",
                                   loc=self.loc(line, pos),
                                   hint=f"LOAD a value into {name} (or compute one) before this instruction")
        raise RuntimeFault("a register is read before anything was written to it", loc=self.loc(line))


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _no_index() -> int:
    raise AssertionError("a LOAD/STORE template ran outside text mode")  # pragma: no cover
