"""The scalar engine: seed 000's machine — words in R registers and DRAM.

``LOAD src, Rd`` reads one DRAM word, ``STORE Rs, dst`` writes one, and the ALU/MAC
instructions compute on words (``isa.ISA``'s ``numeric`` functions, rounded to the machine's
dtype on every register write, or ``sim.symbolic`` expressions with ``--symbolic``). Costs: every
instruction ``machine.op_cycles(op)``; each LOAD/STORE moves one word.

Code tuples (the loop runs these kinds inline, ``sim.loop``)::

    (LOAD,  op, array, index, dst_slot, tag)      (STORE, op, array, index, src_slot, tag)
    (UNARY | BINARY | TERNARY, op, fn, dst_slot, *src_slots, tag)

A word LOAD/STORE of an array the program also moves in blocks (held dense by the tile
engine) compiles to an ``EXEC`` closure instead. The slow path of the numerics — a result
that is non-finite or zero, or an operation that raised — is ``numeric_event``.
"""

from __future__ import annotations

__all__ = ["setup", "compile", "report", "compile_memory", "compile_memory_line", "compile_ahead",
           "template_ahead", "numeric_event", "scalar_flops", "MAY_UNDERFLOW"]

import contextlib
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...asm import parse_line, strip_comment
from ...errors import AsmError, RuntimeFault
from ...isa import ISA, MNEMONICS
from ...program import ACCUMULATOR, Instr, Reg, operands_of
from ..memory import SCALAR, TILE
from ..symbolic import SYMBOLIC_OPS
from .kinds import (
    BINARY,
    COPY,
    EXEC,
    LOAD,
    LOAD_T,
    MM,
    MZO,
    OPINDEX,
    SFU,
    STORE,
    STORE_T,
    TERNARY,
    TILE_BASE,
    UNARY,
    VEC,
)

if TYPE_CHECKING:
    from ..run import Run

# where ACC (the MAC unit's accumulator) may stand: (mnemonic, operand position)
_ACC_USES = frozenset({("MAC_Z", 2), ("MAC", 2), ("MAC", 3), ("STORE", 0), ("MOV", 0)})
_KIND = {"load": LOAD, "store": STORE, "unary": UNARY, "binary": BINARY, "ternary": TERNARY}
MAY_UNDERFLOW = frozenset({"MUL", "MAC", "MAC_Z", "DIV", "EXP"})
_MEMORY = {"LOAD": LOAD, "STORE": STORE}
_OP_LOAD = OPINDEX["LOAD"]
_OP_STORE = OPINDEX["STORE"]
_INF = math.inf
# scalar instructions are the 1×1×1 case of the tile FLOP counts (for machines with rates)
_SCALAR_FLOPS = {"MAC_Z": (MM, 1), "MAC": (MM, 2), "MAX": (VEC, 1), "SUB": (VEC, 1), "ADD": (VEC, 1),
                 "MUL": (VEC, 1), "DIV": (VEC, 1), "EXP": (SFU, 1)}


def setup(run: Run) -> None:
    """The per-run operation table: exact, rounded to the dtype, or symbolic."""
    rnd = run.round
    run.memory_templates = {}  # (LOAD/STORE, array, register) → compiled parts (compile_memory)
    run.fns = fns = {}
    for m, spec in ISA.items():
        if spec.numeric is None:
            continue
        if run.symbolic:
            fns[m] = _none_guard(SYMBOLIC_OPS[m])
        elif rnd is None:
            fns[m] = spec.numeric
        else:
            fns[m] = _rounded(spec.numeric, rnd)


def compile(run: Run, ins: Instr, line: int, text: str | None = None) -> tuple:
    a: tuple[Any, ...] = ins.args  # each operand's kind was checked against the ISA signature when parsed
    kind = _KIND[ISA[ins.op].kind]
    op = OPINDEX[ins.op]
    for pos, x in enumerate(a):
        if isinstance(x, Reg) and x.transpose:
            raise AsmError(f"{x.name} holds one word; it has no transpose", loc=run.loc(line, pos),
                           hint="drop the .T suffix (transposes are for tile registers T0, T1, …)")
        if isinstance(x, Reg) and x.name == ACCUMULATOR and (ins.op, pos) not in _ACC_USES:
            raise AsmError(f"{ins.op} cannot use ACC {'here' if ins.op in ('MAC', 'MAC_Z') else ''}".rstrip(),
                           loc=run.loc(line, pos),
                           hint="ACC, the MAC unit's accumulator, is written by MAC_Z/MAC, added by MAC "
                                "(MAC Ra, Rb, ACC, ACC) and read out by STORE or MOV; operands come from registers")
    # (instruction, its text — None: str(instruction) when needed —, whether a zero result may be an underflow)
    tag = (ins, text, ins.op in MAY_UNDERFLOW)
    if kind == LOAD:
        arr = run.array_for(a[0], line, 0, write=False)
        if arr.mode == TILE:
            return _compile_element(run, ins, line, text, arr)
        return (LOAD, op, arr, a[0].index, run.slot(a[1], line, 1), tag)
    if kind == STORE:
        s = run.slot(a[0], line, 0)
        arr = run.array_for(a[1], line, 1, write=True)
        if arr.mode == TILE:
            return _compile_element(run, ins, line, text, arr)
        return (STORE, op, arr, a[1].index, s, tag)
    fn = run.fns[ins.op]
    srcs = [run.slot(r, line, i) for i, r in enumerate(a[:-1])]
    d = run.slot(a[-1], line, len(a) - 1)
    if ins.op == "MOV":  # a copy: registers already hold values in the machine's format
        return (COPY, op, fn, d, *srcs, tag)
    return (kind, op, fn, d, *srcs, tag)


def compile_memory(run: Run, ins: Instr, line: int):
    """A word ``LOAD x[i], Rk`` / ``STORE Rk, x[i]`` of a ``Program`` through a per-run template
    (one per instruction, array and register: programs name millions of addresses); None for
    anything else, which takes the general path."""
    kind = _MEMORY.get(ins.op)
    if kind is None:
        return None
    a: tuple[Any, ...] = ins.args  # each operand's kind was checked against the ISA signature when parsed
    mem, reg = (a[0], a[1]) if kind == LOAD else (a[1], a[0])
    parts = run.memory_templates.get((kind, mem.array, reg.name))
    if parts is None:
        if not mem.is_scalar or reg.name[:1] != "R" or reg.transpose:
            return None
        code = compile(run, ins, line)
        if code[0] == kind:  # not an array held dense (the tile engine's element access)
            run.memory_templates[(kind, mem.array, reg.name)] = code[:3] + (code[4],)
        return code
    idx = mem.index
    arr = parts[2]
    if len(idx) == 1 and type(idx[0]) is int:
        if idx[0] >= arr.shape[0]:  # past the shape known so far: grow an implied shape (or fault below)
            if arr.fixed:
                _index_fault(run, arr, idx, line, kind)
            arr.shape[0] = idx[0] + 1
        return (kind, parts[1], arr, idx, parts[3], (ins, None, False))
    if not mem.is_scalar:
        return None
    if arr.check_index(idx) is not None:
        _index_fault(run, arr, idx, line, kind)
    return (kind, parts[1], arr, idx, parts[3], (ins, None, False))


def _index_fault(run: Run, arr, idx: tuple, line: int, kind: int) -> None:
    raise RuntimeFault(arr.check_index(idx), loc=run.loc(line, 0 if kind == LOAD else 1),
                       hint="declared/given arrays have a fixed shape; check the index or the .data")


def compile_ahead(run: Run, text: str):
    """Compile a scalar line before the lines ahead of it have run, where that can have no effect
    a line in between could see: every register it names exists already, and so does every array
    it reads or writes (held as words, used before), its index inside a declared shape. None
    otherwise — the line then compiles in trace order (``sim.text``)."""
    code = _memory_parts(text)
    if code is not None:
        store, name, reg, idx = code
        arr = run.memory.arrays.get(name)
        slot = run.slots.get(reg)
        if slot is None or arr is None or arr.mode != SCALAR or name not in run.used_arrays:
            return None
        if arr.check_index(idx) is not None:  # grows an implied shape (no one sees it early) or faults
            return None
        if store:
            arr.written = True
            return (STORE, _OP_STORE, arr, idx, slot, (None, text.strip(), False))
        arr.read = True
        return (LOAD, _OP_LOAD, arr, idx, slot, (None, text.strip(), False))
    if "[" in text:
        return None
    try:
        ins = parse_line(text, 0, run.file)
    except AsmError:
        return None
    if ins is None or not isinstance(ins, Instr) or ISA[ins.op].kind not in _KIND or ins.op in _MEMORY:
        return None
    if any(not isinstance(x, Reg) or x.name[:1] != "R" or x.name not in run.slots or x.transpose for x in ins.args):
        return None  # words only (T registers are the tile engine's, ACC compiles in order)
    return compile(run, ins, 0, strip_comment(text).strip())


def template_ahead(run: Run, key: str, text: str):
    """The template code of ``key`` (``LOAD x[], R0``: LOAD/STORE whose indices come from the
    line; ``sim.text``), or the code of a line without indices, compiled ahead as ``compile_ahead``
    allows; None otherwise."""
    count = key.count("[]")
    if not count:
        return compile_ahead(run, text)
    code = compile_ahead(run, text)
    if code is None or code[0] not in (LOAD, STORE):
        return None
    return (LOAD_T if code[0] == LOAD else STORE_T, code[1], code[2], count, code[4], (None, key, False))


def _memory_parts(text: str):
    """``LOAD x[i], Rk`` / ``STORE Rk, x[i][j]`` → (store?, array, "Rk", index); None for any other
    line. A line in the canonical form (single spaces, upper case, one or two indices, a register
    number without leading zeros) is read by one regular expression; any other by string methods
    (``_memory_parts_loose``), with the same answer."""
    two = "][" in text
    if text[:5] == "LOAD ":
        m = (_LOAD2 if two else _LOAD1)(text)
        if m is not None:
            g = m.groups()
            return (False, g[0], g[3], (int(g[1]), int(g[2]))) if two else (False, g[0], g[2], (int(g[1]),))
    elif text[:6] == "STORE ":
        m = (_STORE2 if two else _STORE1)(text)
        if m is not None:
            g = m.groups()
            return (True, g[1], g[0], (int(g[2]), int(g[3]))) if two else (True, g[1], g[0], (int(g[2]),))
    return _memory_parts_loose(text)


_NAME, _IDX, _REG = r"([A-Za-z_][A-Za-z0-9_]*)", r"\[([0-9]{1,7})\]", r"(R(?:0|[1-9][0-9]{0,7}))"
_LOAD1 = re.compile(f"LOAD {_NAME}{_IDX}, {_REG}").fullmatch
_LOAD2 = re.compile(f"LOAD {_NAME}{_IDX}{_IDX}, {_REG}").fullmatch
_STORE1 = re.compile(f"STORE {_REG}, {_NAME}{_IDX}").fullmatch
_STORE2 = re.compile(f"STORE {_REG}, {_NAME}{_IDX}{_IDX}").fullmatch


def _memory_parts_loose(text: str):
    """``_memory_parts`` by string methods: spaces around the parts, lower case."""
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
        store = False
    elif text[:6] == "STORE " or text[:6] == "store ":
        comma = text.find(",", 6)
        lb = text.find("[", comma)
        rb = text.rfind("]")
        if comma < 0 or lb < 0 or rb < lb or text[rb + 1:].strip():
            return None
        reg = text[6:comma].strip()
        name = text[comma + 1:lb].strip()
        inner = text[lb + 1:rb]
        store = True
    else:
        return None
    if not (reg[:1] in ("R", "r") and reg[1:].isdigit() and name.isidentifier() and name.isascii()
            and inner.isascii() and reg.isascii() and len(reg) < 10):
        return None
    if inner.isdigit():
        if len(inner) > 7:  # the parser bounds long indices (limits.array_elements)
            return None
        idx: tuple[int, ...] = (int(inner),)
    else:
        parts = inner.split("][")
        if not all(p.isdigit() and len(p) <= 7 for p in parts):
            return None
        idx = tuple(map(int, parts))
    return store, name, "R" + str(int(reg[1:])), idx


def compile_memory_line(run: Run, n: int, text: str):
    """``LOAD x[i], Rk`` / ``STORE Rk, x[i][j]`` compiled without the general parser (text mode's
    fast path); anything unusual returns None and takes the general path."""
    parts = _memory_parts(text)
    if parts is None:
        return None
    store, name, reg, idx = parts
    slot = run.slot_of(reg, n, 0 if store else 1)
    arr = run.array_at(name, idx, n, 1 if store else 0, store)
    if arr.mode == TILE:
        return None  # the array is held dense: the general path compiles a word access to it
    return (STORE if store else LOAD, _OP_STORE if store else _OP_LOAD, arr, idx, slot,
            (None, text.strip(), False))


def _compile_element(run: Run, ins: Instr, line: int, text: str | None, arr) -> tuple:
    """A word LOAD/STORE of an array the program also moves in blocks (held dense)."""
    op = TILE_BASE + OPINDEX[ins.op]
    tag = (ins, text, False)
    if ins.op == "LOAD":
        mem, reg = operands_of(ins)
        idx = tuple(mem.index)
        d = run.slot(reg, line, 1)

        def load(r, line):
            if arr.pending:
                arr.materialise()
            r.regs[d] = float(arr.dense[idx])
            r.reads += 1

        return (EXEC, op, load, tag)
    reg, mem = operands_of(ins)
    idx = tuple(mem.index)
    s = run.slot(reg, line, 0)

    def store(r, line):
        v = r.regs[s]
        if v is None:
            r.empty_register(line, code, (v,))
        if arr.viewed:
            arr.detach(r.regs)
        arr.dense[idx] = v
        if arr.regions is not None:
            arr.stored(idx)  # once per compiled line: regions grow with lines, not with the trace
        r.writes += 1

    code = (EXEC, op, store, tag)
    return code


# -- numerics: the slow path ------------------------------------------------------------
def numeric_event(run: Run, line: int, code: tuple, operands: tuple, r, exc: BaseException | None = None):
    """The result is non-finite or zero, or the operation raised: record the alarm (first
    overflow, NaN, division by zero; underflows counted) and return the IEEE result."""
    op = MNEMONICS[code[1]]
    if exc is not None:
        if isinstance(exc, TypeError) and any(o is None for o in operands):
            run.empty_register(line, code, operands)
        if isinstance(exc, ZeroDivisionError):
            a, b = operands[0], operands[1]
            r = _ieee_div(a, b)
            run.alarm("div-by-zero", line, code, operands, r)
            return r if run.round is None else run.round(r)
        if isinstance(exc, OverflowError):
            r = _INF
        else:
            raise exc
    nan_in = any(o != o for o in operands)
    inf_in = any(o in (_INF, -_INF) for o in operands)
    if r != r:
        if not nan_in:
            run.alarm("nan", line, code, operands, r)
    elif r in (_INF, -_INF):
        if not inf_in and not nan_in:
            run.alarm("overflow", line, code, operands, r)
    elif r == 0.0:
        base = ISA[op].numeric
        assert base is not None  # an arithmetic instruction: it has value semantics
        exact = None
        with contextlib.suppress(ArithmeticError, ValueError):
            exact = base(*operands)
        if op in ("MAC", "MAC_Z", "MUL") and operands[0] != 0.0 and operands[1] != 0.0 and operands[0] * operands[1] == 0.0:
            exact = 1.0  # the product itself underflowed in fp64
        if op == "EXP" and operands[0] != -_INF:
            exact = exact or 1.0
        if op == "DIV" and operands[0] != 0.0 and operands[1] not in (_INF, -_INF):
            exact = exact or 1.0
        if exact:
            run.alarm("underflow", line, code, operands, r)
    return r


def scalar_flops(counts: list[int], flops: list) -> None:
    """Add the FLOPs of the scalar instructions counted in ``counts`` to ``flops`` (MM/VEC/SFU)."""
    for i, m in enumerate(MNEMONICS):
        if counts[i] and m in _SCALAR_FLOPS:
            unit, per = _SCALAR_FLOPS[m]
            flops[unit] += per * counts[i]
    flops[MZO] += counts[OPINDEX["MAC_Z"]]  # a scalar MAC_Z writes one element


def _ieee_div(a: float, b: float) -> float:
    if a != a or a == 0.0:
        return math.nan
    return math.copysign(_INF, a) * math.copysign(1.0, b)


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


def report(run: Run, machine, issue: float, flops: list, work: dict, arrays: dict) -> dict:
    return {}  # the scalar machine's counters are Result's own fields
