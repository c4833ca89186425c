"""The simulator: the one place where instructions execute and costs are counted.

``simulate(program, machine, data)`` runs a ``Program`` (or assembly text, or an
iterable of source lines, streamed) and returns a ``Result``. It streams: nothing is
kept per executed instruction unless step rows are asked for, so a ten-million
instruction trace runs in flat memory.

Values are floats (rounded to the machine's dtype on every register write and DRAM
store) or, with ``symbolic=True``, expressions over the inputs. Numerical events —
the first overflow, NaN and division by zero — become alarms; underflow to zero is
counted (it is normal in a softmax).

Costs on the scalar machine: every instruction costs ``machine.op_cycles(op)``; each
LOAD reads one word of DRAM and each STORE writes one.

The tile machine ("Element is Tile", seed 000) runs in the same loop: instructions that
name T registers or blocks are compiled by ``toymachine.tile`` into kinds placed after
every scalar kind, so scalar traces run exactly as before. ``toymachine.tile`` documents
their semantics, the SRAM accounting and the FLOP counts; ``Machine`` the cost formula.
"""

from __future__ import annotations

__all__ = ["simulate", "DEFAULT_STEP_LIMIT"]

import contextlib
import gc
import math
from typing import Any, Callable, Iterable

import numpy as np

from .asm import _strip_comment, operand_spans, parse, parse_line
from .dtypes import get_dtype
from .errors import AsmError, DataError, Location, MachineLimitError, NumericsError, RuntimeFault
from .isa import ISA, MNEMONICS
from .machine import DEFAULT_MACHINE, Machine
from .memory import TILE, Memory
from .program import ArrayDecl, Instr, Mem, Program, Reg
from .result import Alarm, MemoryView, Result, Step
from .symbolic import SYMBOLIC_OPS, Expr, Namer, const, leaf
from .tile import (MM, SFU, TLOAD, TOP, TSTORE, VEC, bad_store, compile_element, compile_tile, sram_full, tile_event,
                   tile_rounder)

DEFAULT_STEP_LIMIT = 200  # steps shown by default only for programs this short

_LOAD, _STORE, _UN, _BIN, _TER = range(5)
_KIND = {"load": _LOAD, "store": _STORE, "unary": _UN, "binary": _BIN, "ternary": _TER}
_OPINDEX = {m: i for i, m in enumerate(MNEMONICS)}
_INF = math.inf


def _ieee_div(a: float, b: float) -> float:
    if a != a or a == 0.0:
        return math.nan
    return math.copysign(_INF, a) * math.copysign(1.0, b)


class _Run:
    """Mutable state of one run; ``execute`` is the interpreter loop."""

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
        self.counts = [0] * (2 * len(MNEMONICS))  # scalar instructions, then tile instructions
        # the tile machine: words each register holds in SRAM (T registers), R registers named
        self.sizes: list[int] = []
        self.n_scalar = 0
        self.sram_occ = 0  # words held by T registers now
        self.sram_peak = 0  # most words T registers ever held at once
        self.flops = [0, 0, 0]  # tile FLOPs: matmul, vector, special-function (EXP/LOG)
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
        self.reads = self.writes = 0
        self.current: tuple[int, str] = (0, "")
        self.templates: dict[str, tuple] = {}  # "LOAD x[" + "], R0" → compiled parts (text mode)
        self.data: dict | None = None
        self.outputs: dict[Any, str] = {}  # symbolic: expression stored whole → output name
        rnd = None if self.dt.exact or symbolic else self.dt.round_scalar
        self.round = rnd
        self.fns: dict[str, Callable] = {}
        for m, spec in ISA.items():
            if spec.numeric is None:
                continue
            if symbolic:
                self.fns[m] = _none_guard(SYMBOLIC_OPS[m])
            elif rnd is None:
                self.fns[m] = spec.numeric
            else:
                self.fns[m] = _rounded(spec.numeric, rnd)

    # -- errors -------------------------------------------------------------------------
    def _loc(self, line: int, operand: int | None = None) -> Location:
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
        limit = self.machine.registers
        tile_reg = reg.name[:1] == "T"  # T registers live in SRAM: sram_words bounds them, not `registers`
        if limit is not None and not tile_reg:
            idx = reg.index
            if (idx is not None and idx >= limit) or self.n_scalar >= limit:
                what = f"{reg.name} is beyond them" if idx is not None and idx >= limit else \
                    f"{reg.name} would be register number {self.n_scalar + 1}"
                raise MachineLimitError(
                    f"machine has {limit} register{'s' if limit != 1 else ''} (R0–R{limit - 1}); {what}",
                    loc=self._loc(line, operand),
                    hint=f"use --registers {max(limit + 1, (idx or 0) + 1)} or a machine file with more registers")
        if not tile_reg:
            cap = self.machine.sram_words
            if cap is not None and self.n_scalar + 1 + self.sram_peak > cap:
                raise MachineLimitError(
                    f"SRAM overflow: {reg.name} would be word {self.n_scalar + 1 + self.sram_peak} of SRAM "
                    f"but the machine has sram_words = {cap}", loc=self._loc(line, operand),
                    hint="every R register the program names occupies one word of SRAM; use fewer")
            self.n_scalar += 1
        s = len(self.names)
        self.slots[reg.name] = s
        self.names.append(reg.name)
        self.regs.append(None)
        self.sizes.append(0)
        return s

    def array_for(self, mem: Mem, line: int, operand: int, write: bool):
        return self.array_at(mem.array, mem.index, line, operand, write)

    def array_at(self, name: str, index: tuple, line: int, operand: int, write: bool):
        arr = self.memory.arrays.get(name) or self.memory.get(name)
        msg = arr.check_index(index)
        if msg is not None:
            raise RuntimeFault(msg, loc=self._loc(line, operand),
                               hint="declared/given arrays have a fixed shape; check the index or the .data")
        if write:
            arr.written = True
        else:
            arr.read = True
        if name not in self.used_arrays:
            self.used_arrays[name] = line
        if arr.mode is None:
            arr.use_scalar()
        return arr

    def slot_of(self, name: str, line: int, operand: int) -> int:
        s = self.slots.get(name)
        return s if s is not None else self.slot(Reg(name), line, operand)

    def compile(self, ins: Instr, line: int, text: str | None = None) -> tuple:
        spec = ISA[ins.op]
        a = ins.args
        if spec.level == "tile" or any(_is_tile_operand(x) for x in a):
            return compile_tile(self, ins, line, text)
        kind = _KIND[spec.kind]
        op = _OPINDEX[ins.op]
        for pos, x in enumerate(a):
            if isinstance(x, Reg) and x.transpose:
                raise AsmError(f"{x.name} holds one word; it has no transpose", loc=self._loc(line, pos),
                               hint="drop the .T suffix (transposes are for tile registers T0, T1, …)")
        # (instruction, its text — None: str(instruction) when needed —, whether a zero result may be an underflow)
        tag = (ins, text, ins.op in _MAY_UNDERFLOW)
        if kind == _LOAD:
            arr = self.array_for(a[0], line, 0, write=False)
            if arr.mode == TILE:
                return compile_element(self, ins, line, text, arr)
            return (_LOAD, op, arr, a[0].index, self.slot(a[1], line, 1), tag)
        if kind == _STORE:
            s = self.slot(a[0], line, 0)
            arr = self.array_for(a[1], line, 1, write=True)
            if arr.mode == TILE:
                return compile_element(self, ins, line, text, arr)
            return (_STORE, op, arr, a[1].index, s, tag)
        fn = self.fns[ins.op]
        srcs = [self.slot(r, line, i) for i, r in enumerate(a[:-1])]
        d = self.slot(a[-1], line, len(a) - 1)
        return (kind, op, fn, d, *srcs, tag)

    def declare(self, decl: ArrayDecl, data: dict | None):
        if decl.name in self.used_arrays:
            raise AsmError(f"array '{decl.name}' is used on line {self.used_arrays[decl.name]} before it is declared",
                           loc=self._loc(decl.line), hint="put .data/.array directives before the code")
        if data and decl.name in data:
            given = self.memory.arrays.get(decl.name)
            if decl.values is None and given is not None and given.shape is not None \
                    and tuple(given.shape) != tuple(decl.shape):
                dims = "".join(f"[{d}]" for d in decl.shape)
                raise DataError(f"data for '{decl.name}' has shape {tuple(given.shape)} but the program declares "
                                f"{decl.name}{dims}", loc=self._loc(decl.line),
                                hint=f"give '{decl.name}' as an array of shape {tuple(decl.shape)}")
            return  # --data overrides the inline values
        rnd = None if self.symbolic else self.dt.round_array
        if decl.values is not None and self.symbolic:
            self.memory.declare(decl.name, decl.shape, None, line=decl.line)
        elif decl.values is not None:
            self.memory.give(decl.name, decl.values, round_fn=rnd, line=decl.line)
        else:
            fill = decl.fill
            if fill is not None and not self.symbolic and self.round:
                fill = self.round(fill)
            self.memory.declare(decl.name, decl.shape, fill, line=decl.line)

    # -- numerics -----------------------------------------------------------------------
    def _alarm(self, kind: str, line: int, code: tuple, operands: tuple, result, *, where: str = "",
               count: int = 1) -> None:
        """Record a numerical event (``where``: the element of a tile; ``count``: elements)."""
        if kind == "underflow":
            self.underflows += count
            if self.first_underflow is None:
                self.first_underflow = Alarm(kind, self.step, line, _text(code) + where, operands, result)
            return
        if kind in self.alarm_kinds:
            return
        alarm = Alarm(kind, self.step, line, _text(code) + where, operands, result)
        self.alarm_kinds.add(kind)
        self.alarms.append(alarm)
        if self.strict:
            ops = ", ".join(_fmt(o) for o in operands)
            raise NumericsError(f"{kind} at step {self.step}: {alarm.instruction} with operands ({ops}) gave {_fmt(result)}",
                                loc=self._loc(line), hint="this is --strict-numerics; run without it to see all alarms")

    def numeric_event(self, line: int, code: tuple, operands: tuple, r, exc: BaseException | None = None):
        """Slow path: the result is non-finite or zero, or the op raised."""
        op = MNEMONICS[code[1]]
        if exc is not None:
            if isinstance(exc, TypeError) and any(o is None for o in operands):
                self.empty_register(line, code, operands)
            if isinstance(exc, ZeroDivisionError):
                a, b = operands[0], operands[1]
                r = _ieee_div(a, b)
                self._alarm("div-by-zero", line, code, operands, r)
                return r if self.round is None else self.round(r)
            if isinstance(exc, OverflowError):
                r = _INF
            else:
                raise exc
        nan_in = any(o != o for o in operands)
        inf_in = any(o in (_INF, -_INF) for o in operands)
        if r != r:
            if not nan_in:
                self._alarm("nan", line, code, operands, r)
        elif r in (_INF, -_INF):
            if not inf_in and not nan_in:
                self._alarm("overflow", line, code, operands, r)
        elif r == 0.0:
            base = ISA[op].numeric
            exact = None
            try:
                exact = base(*operands)
            except (ArithmeticError, ValueError):
                pass
            if op in ("MAC", "MAC_Z", "MUL") and operands[0] != 0.0 and operands[1] != 0.0 and operands[0] * operands[1] == 0.0:
                exact = 1.0  # the product itself underflowed in fp64
            if op == "EXP" and operands[0] != -_INF:
                exact = exact or 1.0
            if op == "DIV" and operands[0] != 0.0 and operands[1] not in (_INF, -_INF):
                exact = exact or 1.0
            if exact:
                self._alarm("underflow", line, code, operands, r)
        return r

    def instr_of(self, code: tuple, line: int) -> Instr:
        ins = code[-1][0]
        return ins if ins is not None else parse_line(code[-1][1], line, self.file)

    def empty_register(self, line: int, code: tuple, operands: tuple):
        ins = self.instr_of(code, line)
        srcs = [i for i, k in enumerate(ISA[ins.op].signature) if k == "src"]
        for pos, val in zip(srcs, operands):
            if val is None:
                name = ins.args[pos].name
                raise RuntimeFault(f"{name} is read before anything was written to it",
                                   loc=self._loc(line, pos),
                                   hint=f"LOAD a value into {name} (or compute one) before this instruction")
        raise RuntimeFault("a register is read before anything was written to it", loc=self._loc(line))

    # -- the interpreter loop -----------------------------------------------------------
    def miss(self, n: int, text: str):
        """Parse and compile one source line not seen before (text mode)."""
        self.current = (n, text)
        lb = text.find("[")
        rb = text.rfind("]")
        if 0 < lb < rb:
            # a line like one seen before but for the index ("LOAD x[" … "], R0"): reuse
            # its compiled form, parse only the index
            template = self.templates.get(text[:lb] + text[rb:])
            if template is not None:
                inner = text[lb + 1:rb]
                if inner.isdigit():
                    idx = (int(inner),)
                else:
                    parts = inner.split("][")
                    idx = tuple(map(int, parts)) if all(p.isdigit() for p in parts) else None
                if idx is not None and template[2].check_index(idx) is None:
                    return (template[0], template[1], template[2], idx, template[3], (None, text.strip(), False))
        code = self._fast_memory_op(n, text)
        if code is not None:
            if 0 < lb < rb:
                self.templates[text[:lb] + text[rb:]] = (code[0], code[1], code[2], code[4])
            return code
        item = parse_line(text, n, self.file)
        if item is None:
            return _SKIP
        if isinstance(item, ArrayDecl):
            self.declare(item, self.data)
            return _DIRECTIVE
        return self.compile(item, n, text=_strip_comment(text).strip())

    def _tile_state(self) -> tuple:
        cap = self.machine.sram_words
        return (self.sram_occ, self.sram_peak, (1 << 62) if cap is None else cap, tile_rounder(self))

    def _fast_memory_op(self, n: int, text: str):
        """``LOAD x[i], Rk`` / ``STORE Rk, x[i][j]`` without the general parser (string
        methods only); anything unusual returns None and takes the general path."""
        head = text[:5]
        if head == "LOAD " or head == "load ":
            lb = text.find("[", 5)
            rb = text.rfind("]")
            if lb < 0 or rb < lb:
                return None
            comma = text.find(",", rb)
            if comma < 0 or text[rb + 1:comma].strip():
                return None
            name = text[5:lb].strip()
            reg = text[comma + 1:].strip()
            inner = text[lb + 1:rb]
            mem_op, reg_op, store = 0, 1, False
        elif text[:6] == "STORE " or text[:6] == "store ":
            comma = text.find(",", 6)
            lb = text.find("[", comma)
            rb = text.rfind("]")
            if comma < 0 or lb < 0 or rb < lb or text[rb + 1:].strip():
                return None
            reg = text[6:comma].strip()
            name = text[comma + 1:lb].strip()
            inner = text[lb + 1:rb]
            mem_op, reg_op, store = 1, 0, True
        else:
            return None
        if not (reg[:1] in ("R", "r") and reg[1:].isdigit() and name.isidentifier() and name.isascii()):
            return None
        if inner.isdigit():
            idx = (int(inner),)
        else:
            parts = inner.split("][")
            if not all(p.isdigit() for p in parts):
                return None
            idx = tuple(map(int, parts))
        slot = self.slot_of("R" + str(int(reg[1:])), n, reg_op)
        arr = self.array_at(name, idx, n, mem_op, store)
        if arr.mode == TILE:
            return None  # the array is held dense: the general path compiles a word access to it
        return (_STORE if store else _LOAD, _OP_STORE if store else _OP_LOAD, arr, idx, slot,
                (None, text.strip(), False))

    def at(self, n: int, key, text_mode: bool) -> int:
        """The source line of the current step (and remember its text for errors)."""
        if text_mode:
            self.current = (n, key)
            return n
        return key

    def execute(self, keys: Iterable, cache: dict, text_mode: bool) -> None:
        """Run every key in ``keys``: source lines (text mode) or line numbers (programs).

        ``cache`` maps a key to its compiled code tuple; text lines not in it are
        parsed on first sight (traces repeat lines, so most steps are dict hits).
        """
        regs = self.regs
        counts = self.counts
        check = not self.symbolic
        symbolic = self.symbolic
        rnd = self.round
        record = self.record
        rows = self.steps
        limit = self.step_limit
        step = self.step
        reads = writes = 0
        event = self.numeric_event
        get = cache.get
        miss = self.miss
        sizes = self.sizes
        occ, peak, cap, tround = self._tile_state()
        treads = twrites = 0
        copy_loads = record
        for n, key in enumerate(keys, 1):
            code = get(key)
            if code is None:
                code = miss(n, key)
                if self.flush:  # an array went dense: cached word accesses to it must recompile
                    cache.clear()
                    self.templates.clear()
                    self.flush = False
                if code is not _DIRECTIVE:
                    if len(cache) >= _CACHE_LIMIT:  # full: start over, so lines of a later
                        cache.clear()  # phase (a second pass) get cached too
                    cache[key] = code
            if code is _SKIP or code is _DIRECTIVE:
                continue
            step += 1
            kind = code[0]
            counts[code[1]] += 1
            if kind == _BIN:
                x = regs[code[4]]
                y = regs[code[5]]
                try:
                    r = code[2](x, y)
                except Exception as exc:  # None operand, x/0, overflow
                    self.step = step
                    r = event(self.at(n, key, text_mode), code, (x, y), None, exc)
                else:
                    if check and (r - r != 0.0 or (r == 0.0 and code[-1][2])):
                        self.step = step
                        r = event(self.at(n, key, text_mode), code, (x, y), r)
                regs[code[3]] = r
            elif kind == _LOAD:
                cells = code[2].cells
                v = cells.get(code[3])
                if v is None:
                    arr = code[2]
                    if symbolic:
                        v = leaf(arr.name, code[3]) if arr.fill is None else const(arr.fill)
                    else:
                        v = arr.initial(code[3])
                        if rnd is not None:
                            v = rnd(v)
                        cells[code[3]] = v
                    if check and v != v:
                        self.step = step
                        self._alarm("nan", self.at(n, key, text_mode), code, (), v)
                reads += 1
                regs[code[4]] = v
            elif kind == _TER:
                x = regs[code[4]]
                y = regs[code[5]]
                z = regs[code[6]]
                try:
                    r = code[2](x, y, z)
                except Exception as exc:
                    self.step = step
                    r = event(self.at(n, key, text_mode), code, (x, y, z), None, exc)
                else:
                    if check and (r - r != 0.0 or (r == 0.0 and code[-1][2])):
                        self.step = step
                        r = event(self.at(n, key, text_mode), code, (x, y, z), r)
                regs[code[3]] = r
            elif kind == _UN:
                x = regs[code[4]]
                if x is None:
                    self.empty_register(self.at(n, key, text_mode), code, (x,))
                try:
                    r = code[2](x)
                except Exception as exc:
                    self.step = step
                    r = event(self.at(n, key, text_mode), code, (x,), None, exc)
                else:
                    if check and (r - r != 0.0 or (r == 0.0 and code[-1][2])):
                        self.step = step
                        r = event(self.at(n, key, text_mode), code, (x,), r)
                regs[code[3]] = r
            elif kind == _STORE:
                v = regs[code[4]]
                if v is None:
                    self.empty_register(self.at(n, key, text_mode), code, (v,))
                code[2].cells[code[3]] = v
                writes += 1
                if symbolic and isinstance(v, Expr) and v.op == "+":
                    self.outputs.setdefault(v, leaf(code[2].name, code[3]).name)
            # -- the tile machine (toymachine.tile): after every scalar kind --------------------
            elif kind == TOP:
                try:
                    r = code[2](regs)
                except Exception as exc:  # FP flag, empty register, shapes that do not fit
                    self.step = step
                    r = tile_event(self, self.at(n, key, text_mode), code, exc)
                if tround is not None:
                    self.step = step
                    r = tround(r, self.at(n, key, text_mode), code)
                d = code[3]
                w = r.size
                occ += w - sizes[d]  # overwriting frees the old tile
                sizes[d] = w
                regs[d] = r
                if occ > peak:
                    peak = occ
                    if occ + self.n_scalar > cap:
                        self.step = step
                        sram_full(self, self.at(n, key, text_mode), code, occ + self.n_scalar)
            elif kind == TLOAD:
                arr = code[2]
                if arr.pending:
                    arr.materialise()
                r = arr.dense[code[3]]  # a view of HBM; a STORE to this array first detaches it (TSTORE)
                if copy_loads:
                    r = r.copy()  # step rows keep every register's value: they must not see later STOREs
                else:
                    arr.viewed = True
                w = r.size
                arr.tile_reads += w
                treads += w
                d = code[4]
                occ += w - sizes[d]
                sizes[d] = w
                regs[d] = r
                if occ > peak:
                    peak = occ
                    if occ + self.n_scalar > cap:
                        self.step = step
                        sram_full(self, self.at(n, key, text_mode), code, occ + self.n_scalar)
            elif kind == TSTORE:
                v = regs[code[4]]
                if code[6] and v is not None and hasattr(v, "T"):
                    v = v.T
                if getattr(v, "shape", None) != code[5]:
                    self.step = step
                    bad_store(self, self.at(n, key, text_mode), code, v)
                arr = code[2]
                if arr.viewed:
                    arr.detach(regs)
                arr.dense[code[3]] = v
                if arr.regions is not None:
                    arr.regions.append(code[3])
                w = v.size
                arr.tile_writes += w
                twrites += w
            else:  # TELEM: a word LOAD/STORE of an array held dense
                self.step = step
                code[2](self, self.at(n, key, text_mode))
            if record:
                if step <= limit or self.record_all:
                    rows.append(Step(step, self.at(n, key, text_mode), _text(code), tuple(regs)))
                else:
                    record = self.record = False
                    self.steps_dropped = True
                    rows.clear()
        self.step = step
        self.reads += reads + treads
        self.writes += writes + twrites
        self.tile_reads += treads
        self.tile_writes += twrites
        self.sram_occ, self.sram_peak = occ, peak


_MOV = _OPINDEX["MOV"]
_SKIP = ("skip",)
_DIRECTIVE = ("directive",)
_CACHE_LIMIT = 131_072  # distinct compiled lines kept; bounds memory on huge traces
_MAY_UNDERFLOW = frozenset({"MUL", "MAC", "MAC_Z", "DIV", "EXP"})
_OP_LOAD = _OPINDEX["LOAD"]
_OP_STORE = _OPINDEX["STORE"]


def _text(code: tuple) -> str:
    """The text of a compiled instruction (generated programs make it on demand)."""
    tag = code[-1]
    return tag[1] if tag[1] is not None else str(tag[0])


def _is_tile_operand(x) -> bool:
    return (isinstance(x, Reg) and x.name[:1] == "T") or (isinstance(x, Mem) and not x.is_scalar)


def _rounded(fn: Callable, rnd: Callable) -> Callable:
    def f(*xs):
        return rnd(fn(*xs))

    return f


def _none_guard(fn: Callable) -> Callable:
    def f(*xs):
        if any(x is None for x in xs):
            raise TypeError("empty register")
        return fn(*xs)

    return f


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def simulate(program: Program | str | Iterable[str], machine: Machine | None = None,
             data: dict | None = None, *, registers: int | None = None, seed: int = 0,
             symbolic: bool = False, steps: bool | None = None, step_limit: int = DEFAULT_STEP_LIMIT,
             dtype: str | None = None, strict_numerics: bool = False, file: str | None = None) -> Result:
    """Run ``program`` on ``machine`` and return its ``Result``.

    ``program`` is a ``Program``, assembly text, or an iterable of source lines (streamed:
    a file object is read line by line and never held whole).
    ``data`` maps array names to nested lists / arrays (overrides ``.data``).
    ``steps``: True keeps every step row, False none, None keeps them only for runs of
    at most ``step_limit`` steps.
    """
    machine = machine or DEFAULT_MACHINE
    if registers is not None:
        machine = machine.with_(registers=registers)
    if dtype is not None:
        machine = machine.with_(dtype=dtype)
    if isinstance(program, str):
        program = parse(program, file or "<input>")
    is_program = isinstance(program, Program)
    fname = file or (program.file if is_program else "<input>")
    memory = Memory(seed)
    run = _Run(machine, memory, dtype=machine.dtype, symbolic=symbolic, steps=steps, step_limit=step_limit,
               strict=strict_numerics, file=fname, source=lambda line: None)
    run.data = data
    rnd = None if (symbolic or run.dt.exact) else run.dt.round_array
    for name, values in (data or {}).items():
        if not symbolic:
            memory.give(name, values, round_fn=rnd)
        else:
            memory.declare(name, tuple(np.asarray(values).shape))
    if is_program:
        text = program.source
        if text is None:  # a generated program: quote lines as to_text() writes them (made on demand)
            first = len(program.header) + len(program.arrays) + 1
            lines = range(first, first + len(program.instrs))
            run.source = _generated_lines(program)
        else:
            lines = [ins.line for ins in program.instrs]
            run.source = lambda line: text[line - 1] if 0 < line <= len(text) else None
        for decl in program.arrays:
            run.declare(decl, data)
        cache = _compile_program(run, program, lines)
        with np.errstate(**_TILE_FPE), _no_cyclic_gc():
            run.execute(lines, cache, text_mode=False)
    else:
        run.source = lambda line: run.current[1] if run.current[0] == line else None
        try:
            with np.errstate(**_TILE_FPE), _no_cyclic_gc():
                run.execute(program, {}, text_mode=True)
        except RecursionError:
            raise RuntimeFault("expression too deep for symbolic mode", hint="run without --symbolic") from None
    return _result(run, machine, fname)


@contextlib.contextmanager
def _no_cyclic_gc():
    """Pause the cyclic garbage collector while the interpreter loop runs.

    The loop makes no reference cycles (refcounting frees everything it drops), but it does
    keep many small tuples alive (compiled lines, memory cells), and each collection would
    walk all of them: on traces with many distinct lines that doubled the run time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# tile arithmetic raises on every IEEE flag; toymachine.tile turns them into alarms
_TILE_FPE = dict(over="raise", invalid="raise", divide="raise", under="raise")


def _generated_lines(program: Program) -> Callable[[int], str | None]:
    """Line n of ``program.to_text()`` without writing the whole text."""
    header, arrays, instrs = program.header, program.arrays, program.instrs

    def line_text(line: int) -> str | None:
        i = line - 1
        if 0 <= i < len(header):
            return f"; {header[i]}".rstrip() if header[i] else ";"
        i -= len(header)
        if 0 <= i < len(arrays):
            return arrays[i].to_text()
        i -= len(arrays)
        if 0 <= i < len(instrs):
            return str(instrs[i])
        return None

    return line_text


def _compile_program(run: _Run, program: Program, lines) -> dict:
    """line → code tuple. Generators reuse one ``Instr`` object for a repeated instruction,
    so each object compiles once. If a block access makes an array dense after word
    accesses to it were compiled, compile again (they now go through the dense copy)."""
    while True:
        compiled: dict[int, tuple] = {}
        cache = {}
        for line, ins in zip(lines, program.instrs):
            code = compiled.get(id(ins))
            if code is None:
                code = compiled[id(ins)] = run.compile(ins, line)
                if run.flush:
                    break
            cache[line] = code
        else:
            return cache
        run.flush = False


_SCALAR_FLOPS = {"MAC_Z": (MM, 1), "MAC": (MM, 2), "MAX": (VEC, 1), "SUB": (VEC, 1), "ADD": (VEC, 1),
                 "MUL": (VEC, 1), "DIV": (VEC, 1), "EXP": (SFU, 1)}


def _result(run: _Run, machine: Machine, fname: str) -> Result:
    nm = len(MNEMONICS)
    ops = {m: run.counts[i] + run.counts[nm + i] for i, m in enumerate(MNEMONICS) if run.counts[i] + run.counts[nm + i]}
    issue = sum(machine.op_cycles(m) * n for m, n in ops.items())
    flops = list(run.flops)
    for i, m in enumerate(MNEMONICS):  # scalar instructions: the 1×1×1 case of the tile FLOP counts
        if run.counts[i] and m in _SCALAR_FLOPS:
            unit, per = _SCALAR_FLOPS[m]
            flops[unit] += per * run.counts[i]
    work = machine.work_cycles(words=run.reads + run.writes, matmul=flops[MM], vector=flops[VEC], sfu=flops[SFU])
    cycles = issue + sum(work.values()) if any(work.values()) else issue
    tile_used = any(run.counts[nm:])
    order = sorted(range(len(run.names)), key=lambda i: _reg_key(run.names[i]))
    names = tuple(run.names[i] for i in order)
    steps = None
    if run.record or run.steps:
        steps = tuple(Step(s.step, s.line, s.instruction, tuple(s.registers[i] if i < len(s.registers) else None for i in order))
                      for s in run.steps)
    arrays = {name: arr for name, arr in sorted(run.memory.arrays.items())
              if not (run.symbolic and not arr.written and not arr.cells)}
    memory = MemoryView(arrays, _symbolic_nested if run.symbolic else None)  # lists made on first access
    regs = {run.names[i]: run.regs[i] for i in order}
    extra = {}
    if tile_used or machine.is_tile:
        extra["sram_peak"] = run.sram_peak + run.n_scalar
        extra["sram_words"] = machine.sram_words
        extra["flops"] = {"matmul": flops[MM], "other": flops[VEC] + flops[SFU]}
        extra["sfu_ops"] = flops[SFU]
        extra["cycle_breakdown"] = {"issue": issue, **work}
        extra["tile_traffic"] = {n: {"reads": a.tile_reads, "writes": a.tile_writes} for n, a in arrays.items()
                                 if a.tile_reads or a.tile_writes}
        extra["hbm_footprint"] = sum(math.prod(a.shape) for a in arrays.values() if a.shape)  # words of arrays
        if machine.clock_hz:
            hbm_s = work["hbm"] / machine.clock_hz
            compute_s = (work["tensor"] + work["vector"] + work["sfu"]) / machine.clock_hz
            extra["time_s"] = max(hbm_s, compute_s)
            extra["roofline"] = {"hbm_s": hbm_s, "compute_s": compute_s,
                                 "bound": "memory" if hbm_s >= compute_s else "compute"}
    result = Result(
        file=fname, machine=machine.to_dict(), cycles=cycles, instructions=run.step, ops=ops,
        dram_reads=run.reads, dram_writes=run.writes, word_bytes=machine.word_bytes,
        register_names=names, registers=regs, memory=memory, steps=steps, steps_dropped=run.steps_dropped,
        alarms=tuple(run.alarms), underflows=run.underflows, first_underflow=run.first_underflow,
        symbolic=run.symbolic, dtype=run.dt.name,
        written_arrays=tuple(sorted(n for n, a in run.memory.arrays.items() if a.written)), extra=extra)
    if run.symbolic:
        inputs = {n: a.shape[0] for n, a in run.memory.arrays.items() if a.read and a.shape and len(a.shape) == 1}
        namer = Namer(run.outputs, inputs)
        object.__setattr__(result, "namer", namer)
    return result


def _symbolic_nested(arr):
    shape = arr.shape or []

    def build(prefix, axis):
        if axis == len(shape):
            v = arr.cells.get(prefix)
            return None if v is None else v
        return [build(prefix + (i,), axis + 1) for i in range(shape[axis])]

    return build((), 0)


def _reg_key(name: str):
    head, digits = name[0], name[1:]
    return (0 if head == "R" else 1, head, int(digits) if digits.isdigit() else 0, name)
