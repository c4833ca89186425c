"""The tile machine: what an instruction does when its registers hold tiles.

Seed 000, "Element is Tile": the scalar algorithm *is* the tiled algorithm at another
granularity — register file ↔ SRAM, DRAM ↔ HBM, MAC ↔ tensor core. Here that is literal:
one instruction stream, one interpreter loop (``simulator._Run.execute``), in which an
``R<n>`` register holds one word and a ``T<n>`` register holds a tile (a 2-D float64
array) in SRAM. An instruction that names a T register or a block address (``Q[0:64, :]``)
is compiled here into a code tuple; the loop runs it in branches placed after every
scalar branch.

Semantics (``toym isa`` prints them from ``isa.ISA``)

* ``LOAD X[block], Td`` / ``STORE Ts, X[block]`` move a block between HBM and SRAM. A block
  spans one or two axes of the array (``Q[0, 1, 0:64, :]``); a block spanning one axis is a
  column ``(r, 1)`` — vectors on this machine are per-row statistics. STORE needs the
  tile's shape to equal the block's.
* ``MAC_Z Ta, Tb, Td`` is ``Td = Ta·Tb`` on the tensor core, ``MAC Ta, Tb, Tc, Td`` is
  ``Ta·Tb + Tc``; a source written ``Tb.T`` is read transposed (``S = Q·Kᵀ`` is
  ``MAC_Z Tq, Tk.T, Ts``).
* ``MAX SUB ADD MUL DIV EXP MOV`` and ``LOG`` work elementwise with numpy broadcasting, so an
  ``(r, c)`` tile meets an ``(r, 1)`` column (row broadcast) or a ``(1, 1)`` tile; an
  ``R`` register operand is a scalar broadcast to the whole tile.
* ``ROWMAX``/``ROWSUM`` reduce each row to an ``(r, 1)`` column; ``FILL v, r, c, Td`` makes a
  constant tile; ``MASK Ta, i0, j0, Td`` applies the causal mask of the block whose first
  row is query ``i0`` and first column key ``j0`` (``−inf`` where ``j0 + c > i0 + r``).

Registers never change in place: every instruction makes a new tile, so a MOV, a step row
or a transposed view can share arrays safely. A LOAD hands out a view of HBM; a STORE to
that array first gives every register holding such a view its own copy (``Array.detach``).

SRAM occupancy (what ``sram_words`` bounds and ``sram_peak`` reports)

* every T register holding a tile occupies rows × cols words, from the instruction that
  writes it until it is overwritten; overwriting frees the old tile at that moment (the
  check is "old occupancy − old tile + new tile ≤ sram_words");
* every R register the program names occupies one word for the whole run (the scalar
  register file is allocated when the program names a register);
* HBM arrays occupy no SRAM.
A write that would exceed ``sram_words`` stops the run with a ``MachineLimitError`` naming
the instruction, the tile and what SRAM holds.

Costs (``cost_tile`` has the closed forms; ``Machine`` the rates)

* words moved: each tile LOAD/STORE moves rows × cols words (counted in ``dram``);
* matmul FLOPs: ``MAC_Z`` m·n·(2k−1), ``MAC`` 2·m·n·k — the scalar MAC_Z (1) and MAC (2) are
  the 1×1×1 case;
* other FLOPs: one per result element of MAX SUB ADD MUL DIV EXP LOG, r·(c−1) for
  ROWMAX/ROWSUM, none for MOV FILL MASK; EXP/LOG elements also count as ``sfu_ops``.

Numerics: every tile write rounds to the machine's dtype (``DType.round_array``). Tile
arithmetic runs with numpy's floating-point flags set to raise, so the first overflow
from finite operands, the first NaN from non-NaN operands and the first division by zero
become the same alarms as on the scalar path (with the element's position); elements
that underflow to zero are counted.
"""

from __future__ import annotations

__all__ = ["TOP", "TLOAD", "TSTORE", "TELEM", "TILE_KINDS", "compile_tile", "compile_element", "tile_event",
           "tile_rounder", "bad_store", "sram_full", "shape_text"]

from typing import Callable

import numpy as np

from .errors import AsmError, MachineLimitError, RuntimeFault
from .isa import ISA, MNEMONICS
from .memory import SCALAR
from .program import Instr, Mem, Reg, Span

TOP, TLOAD, TSTORE, TELEM = 5, 6, 7, 8  # code kinds, after the scalar ones (0–4)
TILE_KINDS = (TOP, TLOAD, TSTORE, TELEM)
TILE_BASE = len(MNEMONICS)  # tile instructions count in counts[TILE_BASE + opcode]
MM, VEC, SFU = 0, 1, 2  # indices into the run's FLOP accumulator
_OPINDEX = {m: i for i, m in enumerate(MNEMONICS)}
_ELEMENTWISE = frozenset({"MAX", "SUB", "ADD", "MUL", "DIV", "EXP", "LOG", "MOV"})
_UFUNC = {"MAX": np.maximum, "SUB": np.subtract, "ADD": np.add, "MUL": np.multiply, "DIV": np.divide,
          "EXP": np.exp, "LOG": np.log}
_NEG_INF = -np.inf
_FPE_DIVIDE, _FPE_OVERFLOW, _FPE_UNDERFLOW, _FPE_INVALID = 1, 2, 4, 8


def shape_text(v) -> str:
    if v is None:
        return "empty"
    if hasattr(v, "shape") and len(v.shape) == 2:
        return f"{v.shape[0]}×{v.shape[1]}"
    return "a word"


def _is_tile_reg(a) -> bool:
    return isinstance(a, Reg) and a.name[:1] == "T"


# -- compilation ------------------------------------------------------------------------
def compile_tile(run, ins: Instr, line: int, text: str | None) -> tuple:
    """Compile a tile instruction into a code tuple for the interpreter loop."""
    spec = ISA[ins.op]
    if run.symbolic:
        raise AsmError(f"{ins.op} on tiles has no symbolic semantics", loc=run._loc(line),
                       hint="symbolic mode shows scalar traces; run tile programs without --symbolic")
    op = TILE_BASE + _OPINDEX[ins.op]
    tag = (ins, text, False)
    a = ins.args
    if spec.kind == "load":
        mem, dst = a
        if mem.is_scalar:
            raise AsmError(f"{dst.name} holds a tile; '{mem}' is a single word", loc=run._loc(line, 0),
                           hint=f"load a block (e.g. {_as_block(mem)}) or use an R register for one word")
        if not _is_tile_reg(dst):
            raise AsmError(f"{dst.name} holds one word; '{mem}' is a block", loc=run._loc(line, 1),
                           hint="load blocks into tile registers: T0, T1, …")
        arr, idx, shape = _block(run, mem, line, 0, write=False)
        return (TLOAD, op, arr, idx, run.slot(dst, line, 1), shape, tag)
    if spec.kind == "store":
        src, mem = a
        if mem.is_scalar:
            raise AsmError(f"{src.name} holds a tile; '{mem}' is a single word", loc=run._loc(line, 1),
                           hint=f"store to a block (e.g. {_as_block(mem)})")
        if not _is_tile_reg(src):
            raise AsmError(f"{src.name} holds one word; '{mem}' is a block", loc=run._loc(line, 0),
                           hint="store blocks from tile registers: T0, T1, …")
        s = run.slot(src, line, 0)
        arr, idx, shape = _block(run, mem, line, 1, write=True)
        return (TSTORE, op, arr, idx, s, shape, src.transpose, tag)
    dst = a[-1]
    if not _is_tile_reg(dst):
        raise AsmError(f"{ins.op} on tiles writes a tile; {dst.name} holds one word", loc=run._loc(line, len(a) - 1),
                       hint="write tile results to a tile register: T0, T1, …")
    d = run.slot(dst, line, len(a) - 1)
    acc = run.flops
    if spec.kind == "fill":
        value, rows, cols = a[0], a[1], a[2]
        for pos, n in ((1, rows), (2, cols)):
            if isinstance(n, float) or n < 1:
                raise AsmError(f"FILL needs a positive whole number of {'rows' if pos == 1 else 'columns'}, got {n}",
                               loc=run._loc(line, pos),
                               hint="write it as `FILL value, rows, cols, Td`, e.g. FILL 0, 64, 1, T3")
        const = np.full((int(rows), int(cols)), float(value))
        if run.round is not None:
            with np.errstate(all="ignore"):
                const = run.dt.round_array(const)
        return (TOP, op, lambda regs: const, d, (), tag)
    srcs = []
    for pos, kind in enumerate(spec.signature[:-1]):
        if kind != "src":
            continue
        reg = a[pos]
        if not _is_tile_reg(reg):
            if reg.transpose:
                raise AsmError(f"{reg.name} holds one word; it has no transpose", loc=run._loc(line, pos),
                               hint="drop the .T suffix")
            if ins.op not in _ELEMENTWISE or ins.op == "MOV":
                raise AsmError(f"{ins.op} on tiles needs tile operands; {reg.name} holds one word",
                               loc=run._loc(line, pos),
                               hint="use tile registers T0, T1, … (FILL makes a constant tile)")
        srcs.append((run.slot(reg, line, pos), reg.transpose, pos))
    if not any(_is_tile_reg(a[p]) for _, _, p in srcs):
        raise AsmError(f"{ins.op} with only word operands makes a word, not a tile", loc=run._loc(line, len(a) - 1),
                       hint="write the result to an R register, or make a tile with FILL")
    if spec.kind == "mask":
        for pos in (1, 2):
            n = a[pos]
            if isinstance(n, float) or n < 0:
                raise AsmError(f"MASK needs a non-negative whole-number offset, got {n}", loc=run._loc(line, pos),
                               hint="write it as `MASK Ta, row0, col0, Td` with the block's first query row and "
                                    "key column")
        fn = _mask(srcs[0][0], srcs[0][1], int(a[1]), int(a[2]))
    elif ins.op == "MAC_Z":
        fn = _matmul(srcs[0], srcs[1], None, acc)
    elif ins.op == "MAC":
        fn = _matmul(srcs[0], srcs[1], srcs[2], acc)
    elif ins.op in ("ROWMAX", "ROWSUM"):
        fn = _rowreduce(ins.op, srcs[0][0], srcs[0][1], acc)
    elif ins.op == "MOV":
        fn = _mov(srcs[0][0], srcs[0][1])
    elif len(srcs) == 1:
        fn = _unary(_UFUNC[ins.op], srcs[0][0], srcs[0][1], acc, SFU if spec.cost_class == "sfu" else VEC)
    else:
        fn = _binary(_UFUNC[ins.op], srcs[0], srcs[1], acc)
    tag = (ins, text, ins.op in ("MAC", "MAC_Z", "MUL", "DIV", "EXP"))
    return (TOP, op, fn, d, tuple(srcs), tag)


def compile_element(run, ins: Instr, line: int, text: str | None, arr) -> tuple:
    """A word LOAD/STORE of an array the program also moves in blocks (held dense)."""
    op = TILE_BASE + _OPINDEX[ins.op]
    tag = (ins, text, False)
    if ins.op == "LOAD":
        mem, reg = ins.args
        idx = tuple(mem.index)
        d = run.slot(reg, line, 1)

        def load(r, line):
            if arr.pending:
                arr.materialise()
            r.regs[d] = float(arr.dense[idx])
            r.reads += 1

        return (TELEM, op, load, tag)
    reg, mem = ins.args
    idx = tuple(mem.index)
    s = run.slot(reg, line, 0)

    def store(r, line):
        v = r.regs[s]
        if v is None:
            r.empty_register(line, (TELEM, op, store, tag), (v,))
        if arr.viewed:
            arr.detach(r.regs)
        arr.dense[idx] = v
        if arr.regions is not None:
            arr.regions.append(idx)
        r.writes += 1

    return (TELEM, op, store, tag)


def _as_block(mem: Mem) -> str:
    return f"{mem.array}[{', '.join(f'{i}:{i + 1}' for i in mem.index)}]"


def _block(run, mem: Mem, line: int, operand: int, *, write: bool):
    """(array, numpy index, tile shape) of a block address; errors name the operand."""
    name = mem.array
    arr = run.memory.arrays.get(name) or run.memory.get(name)
    loc = run._loc(line, operand)
    if not arr.fixed:
        raise RuntimeFault(f"'{name}' has no declared shape; a block LOAD/STORE needs one", loc=loc,
                           hint=f"declare it before the code: `.array {name}[rows][cols]` (or give it with --data)")
    if len(mem.index) != len(arr.shape):
        raise RuntimeFault(f"'{name}' has {len(arr.shape)} dimensions but '{mem}' gives {len(mem.index)}", loc=loc,
                           hint="give one index or span per dimension, e.g. Q[0:64, :]")
    idx: list = []
    shape: list[int] = []
    for axis, (item, n) in enumerate(zip(mem.index, arr.shape)):
        if isinstance(item, Span):
            start = 0 if item.start is None else item.start
            stop = n if item.stop is None else item.stop
            if stop > n or start >= stop:
                what = "is empty" if start >= stop else f"is outside '{name}'"
                raise RuntimeFault(f"block {item} {what} (dimension {axis} has size {n}, valid 0..{n})", loc=loc,
                                   hint="a span start:stop needs 0 ≤ start < stop ≤ the dimension's size")
            idx.append(slice(start, stop))
            shape.append(stop - start)
        else:
            if item >= n:
                raise RuntimeFault(f"index {item} is outside '{name}' (dimension {axis} has size {n}, "
                                   f"valid 0..{n - 1})", loc=loc,
                                   hint="declared/given arrays have a fixed shape; check the index")
            idx.append(item)
    if len(shape) > 2:
        raise AsmError(f"a tile has two dimensions; '{mem}' spans {len(shape)}", loc=loc,
                       hint="fix all but two axes with single indices, e.g. Q[0, 1, 0:64, :]")
    if len(shape) == 1:  # a vector is a column: per-row statistics broadcast along rows
        idx.append(None)
        shape.append(1)
    if arr.mode == SCALAR:
        run.flush = True  # compiled word accesses to this array now go through the dense copy
    arr.use_tile(None if run.round is None else run.dt.round_array)
    if write:
        arr.written = True
    else:
        arr.read = True
    run.used_arrays.setdefault(name, line)
    return arr, tuple(idx), tuple(shape)


# -- semantics: one closure per instruction, (regs) -> new tile ---------------------------
def _matmul(a, b, c, acc: list) -> Callable:
    (sa, ta, _), (sb, tb, _) = a, b
    if c is None:
        if not (ta or tb):
            def mac_z(regs):
                x = regs[sa]
                r = x @ regs[sb]
                acc[MM] += r.size * (2 * x.shape[1] - 1)
                return r

            return mac_z

        def mac_z_t(regs):
            x = regs[sa].T if ta else regs[sa]
            r = x @ (regs[sb].T if tb else regs[sb])
            acc[MM] += r.size * (2 * x.shape[1] - 1)
            return r

        return mac_z_t
    sc, tc, _ = c

    def mac(regs):
        x = regs[sa].T if ta else regs[sa]
        r = x @ (regs[sb].T if tb else regs[sb])
        r += regs[sc].T if tc else regs[sc]  # r is new: adding in place mutates no register
        acc[MM] += 2 * r.size * x.shape[1]
        return r

    return mac


def _binary(ufunc, a, b, acc: list) -> Callable:
    (sa, ta, _), (sb, tb, _) = a, b
    if not (ta or tb):
        def binary(regs):
            r = ufunc(regs[sa], regs[sb])
            acc[VEC] += r.size
            return r

        return binary

    def binary_t(regs):
        r = ufunc(regs[sa].T if ta else regs[sa], regs[sb].T if tb else regs[sb])
        acc[VEC] += r.size
        return r

    return binary_t


def _unary(ufunc, s: int, t: bool, acc: list, unit: int) -> Callable:
    if not t:
        def unary(regs):
            r = ufunc(regs[s])
            acc[unit] += r.size
            return r

        return unary

    def unary_t(regs):
        r = ufunc(regs[s].T)
        acc[unit] += r.size
        return r

    return unary_t


def _rowreduce(op: str, s: int, t: bool, acc: list) -> Callable:
    if op == "ROWMAX":
        def rowmax(regs):
            x = regs[s].T if t else regs[s]
            r = x.max(axis=1, keepdims=True)  # NaN propagates, as the scalar MAX does
            acc[VEC] += x.size - x.shape[0]
            return r

        return rowmax

    def rowsum(regs):
        x = regs[s].T if t else regs[s]
        r = x.sum(axis=1, keepdims=True)
        acc[VEC] += x.size - x.shape[0]
        return r

    return rowsum


def _mov(s: int, t: bool) -> Callable:
    def mov(regs):
        x = regs[s]
        x.size  # noqa: B018  (an empty register raises here, inside the loop's try)
        return x.T if t else x  # shared, not copied: registers never change in place

    return mov


def _mask(s: int, t: bool, row0: int, col0: int) -> Callable:
    keeps: dict = {}

    def mask(regs):
        x = regs[s].T if t else regs[s]
        keep = keeps.get(x.shape)
        if keep is None:
            rows, cols = x.shape
            keep = keeps[x.shape] = np.arange(col0, col0 + cols)[None, :] <= np.arange(row0, row0 + rows)[:, None]
        return np.where(keep, x, _NEG_INF)

    return mask


# -- slow paths: numerical events, shape errors, SRAM overflow -------------------------------
def tile_event(run, line: int, code: tuple, exc: BaseException):
    """A tile instruction raised: an empty register, a shape mismatch, or a floating-point
    flag (then recompute with the flags collected and raise the alarms)."""
    ins = code[-1][0]
    srcs = code[4]
    vals = [run.regs[s] for s, _, _ in srcs]
    for (s, t, pos), v in zip(srcs, vals):
        if v is None:
            name = ins.args[pos].name
            raise RuntimeFault(f"{name} is read before anything was written to it", loc=run._loc(line, pos),
                               hint=f"LOAD a block into {name} (or compute one) before this instruction")
    if not isinstance(exc, FloatingPointError):
        shapes = ", ".join(f"{ins.args[pos]} is {_view_shape(v, t)}" for (s, t, pos), v in zip(srcs, vals))
        what = {"MAC_Z": "inner dimensions differ", "MAC": "shapes do not fit a multiply-accumulate"}.get(
            ins.op, "shapes do not broadcast")
        raise RuntimeFault(f"{ins.op}: {what} ({shapes})", loc=run._loc(line),
                           hint="elementwise operands need equal shapes, an (r,1) column or a (1,1) tile; "
                                "MAC_Z Ta, Tb needs Ta's columns = Tb's rows (use .T to transpose)")
    bits = [0]

    def collect(_kind, flag):
        bits[0] |= flag

    with np.errstate(all="call", call=collect):
        r = code[2](run.regs)
    flags = bits[0]
    views = [v.T if t and hasattr(v, "T") else v for (s, t, _), v in zip(srcs, vals)]
    elementwise = ins.op in _ELEMENTWISE
    with np.errstate(all="ignore"):
        if elementwise:
            ops = [np.broadcast_to(np.asarray(v, dtype=np.float64), r.shape) for v in views]
        if flags & _FPE_INVALID:
            mask = np.isnan(r)
            if elementwise:
                for o in ops:
                    mask &= ~np.isnan(o)
            _raise_alarm(run, "nan", line, code, r, mask, ops if elementwise else views, elementwise=elementwise)
        if flags & _FPE_DIVIDE:
            mask = np.isinf(r)
            if ins.op == "DIV":
                mask &= ops[1] == 0
            _raise_alarm(run, "div-by-zero", line, code, r, mask, ops if elementwise else views,
                         elementwise=elementwise)
        if flags & _FPE_OVERFLOW:
            mask = np.isinf(r)
            if elementwise:
                for o in ops:
                    mask &= np.isfinite(o)
            _raise_alarm(run, "overflow", line, code, r, mask, ops if elementwise else views,
                         elementwise=elementwise)
        if flags & _FPE_UNDERFLOW:
            zero = r == 0
            if ins.op == "EXP":
                mask = zero & (ops[0] != _NEG_INF)
            elif ins.op == "MUL":
                mask = zero & (ops[0] != 0) & (ops[1] != 0)
            elif ins.op == "DIV":
                mask = zero & (ops[0] != 0) & np.isfinite(ops[1])
            elif ins.op in ("MAC", "MAC_Z"):
                mask = zero & ((np.abs(views[0]) @ np.abs(views[1])) > 0)
            else:
                mask = np.zeros(r.shape, dtype=bool)
            count = int(mask.sum())
            if count:
                _raise_alarm(run, "underflow", line, code, r, mask, ops if elementwise else views, count=count,
                             elementwise=elementwise)
    return r


def _view_shape(v, transposed: bool) -> str:
    if v is None or not hasattr(v, "shape"):
        return shape_text(v)
    return shape_text(v.T if transposed else v)


def _raise_alarm(run, kind: str, line: int, code: tuple, r, mask, operands, count: int = 1,
                 elementwise: bool = True) -> None:
    hits = np.argwhere(mask)
    tiles = tuple(f"tile{tuple(o.shape)}" if hasattr(o, "shape") else o for o in operands)
    if len(hits) == 0:  # the flag came from an intermediate step; point at the tile
        run._alarm(kind, line, code, tiles, f"tile{tuple(r.shape)}", count=count)
        return
    pos = tuple(int(i) for i in hits[0])
    if elementwise and len(operands) and all(hasattr(o, "shape") and o.shape == r.shape for o in operands):
        values = tuple(float(o[pos]) for o in operands)  # elementwise: the operands of that element
    else:
        values = tiles
    run._alarm(kind, line, code, values, float(r[pos]), where=f" @[{', '.join(map(str, pos))}]", count=count)


def tile_rounder(run) -> Callable | None:
    """The dtype rounding of every tile write (None for exact fp64), with the alarms that
    rounding itself causes: overflow to ±inf and underflow to zero."""
    if run.round is None:
        return None
    rnd = run.dt.round_array

    def tround(r, line, code):
        with np.errstate(all="ignore"):
            rr = rnd(r)
            over = np.isinf(rr) & ~np.isinf(r)
            if over.any():
                _raise_alarm(run, "overflow", line, code, rr, over, ())
            under = (rr == 0) & (r != 0)
            if under.any():
                _raise_alarm(run, "underflow", line, code, rr, under, (), count=int(under.sum()))
        return rr

    return tround


def bad_store(run, line: int, code: tuple, v) -> None:
    ins = code[-1][0]
    src, mem = ins.args
    if v is None:
        raise RuntimeFault(f"{src.name} is read before anything was written to it", loc=run._loc(line, 0),
                           hint=f"LOAD a block into {src.name} (or compute one) before this instruction")
    shape = code[5]
    raise RuntimeFault(f"{src} holds a {_view_shape(v, code[6])} tile but '{mem}' is {shape[0]}×{shape[1]}",
                       loc=run._loc(line, 1), hint="STORE needs the tile's shape to equal the block's")


def sram_full(run, line: int, code: tuple, occupied: int) -> None:
    """Raise the SRAM-capacity error for the tile just written by ``code``."""
    ins = code[-1][0]
    d = code[4] if code[0] == TLOAD else code[3]
    cap = run.machine.sram_words
    tile = run.regs[d]
    held = sorted(((run.names[i], run.sizes[i], run.regs[i]) for i in range(len(run.names)) if run.sizes[i]),
                  key=lambda t: -t[1])
    listing = ", ".join(f"{n} {shape_text(v)} = {w}" for n, w, v in held[:8]) + (" …" if len(held) > 8 else "")
    scalars = f" + {run.n_scalar} R register word{'s' if run.n_scalar != 1 else ''}" if run.n_scalar else ""
    raise MachineLimitError(
        f"SRAM overflow: {ins.op} writes a {shape_text(tile)} tile ({tile.size} words) to {run.names[d]}; "
        f"SRAM would hold {occupied} words ({listing}{scalars}) but the machine has sram_words = {cap}",
        loc=run._loc(line, len(ins.args) - 1 if ins.op != "STORE" else 0),
        hint=f"use smaller blocks (gen: --block-m/--block-n, or --sram {cap}), reuse registers you no longer need, "
             f"or a machine with `sram_words: {occupied}` or more")
