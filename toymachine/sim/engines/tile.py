"""The tile machine: what an instruction does when its registers hold tiles.

Seed 000, "Element is Tile": the scalar algorithm *is* the tiled algorithm at another
granularity — register file ↔ SRAM, DRAM ↔ HBM, MAC ↔ tensor core. Here that is literal:
one instruction stream, one interpreter loop (``sim.loop``), in which an
``R<n>`` register holds one word and a ``T<n>`` register holds a tile (a 2-D float64
array) in SRAM. An instruction that names a T register or a block address (``Q[0:64, :]``)
is compiled here into an ``EXEC`` code tuple whose closure does the whole instruction
(``tile_ops`` computes, this module accounts SRAM and traffic, ``tile_events`` is the slow path).

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
  row is query ``i0`` and first column key ``j0`` (``−inf`` where ``j0 + c > i0 + r``);
  ``DROPOUT Ta, p, seed, head, row0, col0, Td`` multiplies by the dropout mask Z/(1 − p) of the
  block whose first element is (row0, col0), Z a counter-based hash of (seed, head, row, col)
  (``tile_ops.dropout_keep``): made on chip, never stored, the same wherever it is remade.

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
the instruction, the tile and what SRAM holds. A machine with ``sram_rule: paper`` counts only
the registers that hold blocks of HBM matrices (a 2-D block is LOADed into or STOREd from them:
the FlashAttention paper's Q_i, K_j, V_j, O_i, whose sizes its Bc = ⌈M/4d⌉ is chosen for); S,
the row statistics and temporaries are then off the count (``sram_peak`` too).

Costs (``toymachine.cost.tile`` has the closed forms; ``Machine`` the rates)

* words moved: each tile LOAD/STORE moves rows × cols words (counted in ``dram``);
* matmul FLOPs: ``MAC_Z`` m·n·(2k−1), ``MAC`` 2·m·n·k — the scalar MAC_Z (1) and MAC (2) are
  the 1×1×1 case;
* other FLOPs: one per result element of MAX SUB ADD MUL DIV EXP LOG, r·(c−1) for
  ROWMAX/ROWSUM, r·c for DROPOUT (the multiply), none for MOV FILL MASK; EXP/LOG elements also
  count as ``sfu_ops``.

Numerics: every tile write rounds to the machine's dtype (``DType.round_array``). Tile
arithmetic runs with numpy's floating-point flags set to raise, so the first overflow
from finite operands, the first NaN from non-NaN operands and the first division by zero
become the same alarms as on the scalar path (with the element's position); elements
that underflow to zero are counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

__all__ = ["claims", "setup", "compile", "report", "note_paper_registers"]

import math

import numpy as np

from ...errors import AsmError, Opt, RuntimeFault
from ...isa import ISA
from ...limits import LIMITS
from ...program import Instr, Mem, Reg, Span
from ..memory import SCALAR
from . import tile_ops, units
from .kinds import EXEC, MM, OPINDEX, SFU, SKIP_SLOT, TILE_BASE, VEC
from .tile_events import (
    ELEMENTWISE,
    bad_store,
    dropout_operands,
    sram_full,
    tile_event,
    tile_rounder,
)
from .tile_ops import UFUNC
from .tile_paper import note_paper_registers, paper_count

if TYPE_CHECKING:
    from ..run import Run


def _is_tile_reg(a) -> bool:
    return isinstance(a, Reg) and a.name[:1] == "T"


def claims(ins: Instr) -> bool:
    """Tile instructions (ROWMAX …) and any instruction naming a T register or a block address."""
    return ISA[ins.op].level == "tile" or any(
        (isinstance(x, Reg) and x.name[:1] == "T") or (isinstance(x, Mem) and not x.is_scalar) for x in ins.args)


def setup(run: Run) -> None:
    """SRAM accounting state: words each T register holds, the capacity, the dtype rounding."""
    cap = run.machine.onchip_words
    run.sram_cap = (1 << 62) if cap is None else cap
    run.tround = tile_rounder(run)
    run.sram_exact = run.machine.sram_rule != "paper"  # paper: only registers holding HBM matrix blocks count
    run.sram_counted = set()  # those registers' slots (note_paper_registers, before the run)
    run.paper_names = set()  # …and their names
    units.setup(run)


# -- compilation ------------------------------------------------------------------------
def compile(run: Run, ins: Instr, line: int, text: str | None) -> tuple:
    """Compile a tile instruction into an ``EXEC`` code tuple for the interpreter loop."""
    spec = ISA[ins.op]
    if run.symbolic:
        raise AsmError(f"{ins.op} on tiles has no symbolic semantics", loc=run.loc(line),
                       key="symbolic", hint=("symbolic mode shows scalar traces; run tile programs without ", Opt("symbolic")))
    op = TILE_BASE + OPINDEX[ins.op]
    tag = (ins, text, False)
    a: tuple[Any, ...] = ins.args  # each operand's kind was checked against the ISA signature when parsed
    if spec.kind == "load":
        mem, dst = a
        if mem.is_scalar:
            raise AsmError(f"{dst.name} holds a tile; '{mem}' is a single word", loc=run.loc(line, 0),
                           hint=f"load a block (e.g. {_as_block(mem)}) or use an R register for one word")
        if not _is_tile_reg(dst):
            raise AsmError(f"{dst.name} holds one word; '{mem}' is a block", loc=run.loc(line, 1),
                           hint="load blocks into tile registers: T0, T1, …")
        arr, idx, shape = _block(run, mem, line, 0, write=False)
        d = run.slot(dst, line, 1)
        paper_count(run, mem, d)
        return _load(run, arr, idx, d, op, tag)
    if spec.kind == "store":
        src, mem = a
        if mem.is_scalar:
            raise AsmError(f"{src.name} holds a tile; '{mem}' is a single word", loc=run.loc(line, 1),
                           hint=f"store to a block (e.g. {_as_block(mem)})")
        if not _is_tile_reg(src):
            raise AsmError(f"{src.name} holds one word; '{mem}' is a block", loc=run.loc(line, 0),
                           hint="store blocks from tile registers: T0, T1, …")
        s = run.slot(src, line, 0)
        paper_count(run, mem, s)
        arr, idx, shape = _block(run, mem, line, 1, write=True)
        return _store(run, arr, idx, s, shape, src.transpose, op, tag)
    dst = a[-1]
    if not _is_tile_reg(dst):
        raise AsmError(f"{ins.op} on tiles writes a tile; {dst.name} holds one word", loc=run.loc(line, len(a) - 1),
                       hint="write tile results to a tile register: T0, T1, …")
    d = run.slot(dst, line, len(a) - 1)
    acc = run.flops
    if spec.kind == "fill":
        value, rows, cols = a[0], a[1], a[2]
        for pos, n in ((1, rows), (2, cols)):
            if isinstance(n, float) or n < 1:
                raise AsmError(f"FILL needs a positive whole number of {'rows' if pos == 1 else 'columns'}, got {n}",
                               loc=run.loc(line, pos),
                               hint="write it as `FILL value, rows, cols, Td`, e.g. FILL 0, 64, 1, T3")
        LIMITS["array_elements"].check(rows * cols, f"FILL's {rows:,}×{cols:,} tile", loc=run.loc(line, 1))
        const = np.full((int(rows), int(cols)), float(value))
        if run.round is not None:
            with np.errstate(all="ignore"):
                const = run.dt.round_array(const)
        return _op(run, lambda regs: const, d, (), op, tag, units.pricer(run, ins.op, (), ins), ("const", const))
    srcs: list[tuple[int, bool, int]] = []  # (slot, transposed, position)
    for pos, kind in enumerate(spec.signature[:-1]):
        if kind != "src":
            continue
        reg = a[pos]
        if not _is_tile_reg(reg):
            if reg.transpose:
                raise AsmError(f"{reg.name} holds one word; it has no transpose", loc=run.loc(line, pos),
                               hint="drop the .T suffix")
            if ins.op not in ELEMENTWISE or ins.op == "MOV":
                raise AsmError(f"{ins.op} on tiles needs tile operands; {reg.name} holds one word",
                               loc=run.loc(line, pos),
                               hint="use tile registers T0, T1, … (FILL makes a constant tile)")
        srcs.append((run.slot(reg, line, pos), reg.transpose, pos))
    if not any(_is_tile_reg(a[p]) for _, _, p in srcs):
        raise AsmError(f"{ins.op} with only word operands makes a word, not a tile", loc=run.loc(line, len(a) - 1),
                       hint="write the result to an R register, or make a tile with FILL")
    # what the instruction computes, for a compiled block of tile instructions (sim.compiler.tiles)
    block: tuple | None = None
    if spec.kind == "mask":
        for pos in (1, 2):
            n = a[pos]
            if isinstance(n, float) or n < 0:
                raise AsmError(f"MASK needs a non-negative whole-number offset, got {n}", loc=run.loc(line, pos),
                               hint="write it as `MASK Ta, row0, col0, Td` with the block's first query row and "
                                    "key column")
        fn = tile_ops.mask(srcs[0][0], srcs[0][1], int(a[1]), int(a[2]))
    elif spec.kind == "dropout":
        fn = tile_ops.dropout(srcs[0][0], srcs[0][1], *dropout_operands(run, line, a), acc)
    elif ins.op in ("MAC_Z", "MAC"):
        c = srcs[2] if ins.op == "MAC" else None
        block = ("matmul", srcs[0], srcs[1], c)
        fn = tile_ops.matmul(srcs[0], srcs[1], c, acc)
    elif ins.op in ("ROWMAX", "ROWSUM"):
        fn, block = tile_ops.rowreduce(ins.op, srcs[0][0], srcs[0][1], acc), (ins.op, srcs[0])
    elif ins.op == "MOV":
        fn, block = tile_ops.mov(srcs[0][0], srcs[0][1]), ("MOV", srcs[0])
    elif len(srcs) == 1:
        unit = SFU if spec.cost_class == "sfu" else VEC
        block = ("unary", UFUNC[ins.op], srcs[0], unit)
        fn = tile_ops.unary(UFUNC[ins.op], srcs[0][0], srcs[0][1], acc, unit)
    else:
        fn, block = tile_ops.binary(UFUNC[ins.op], srcs[0], srcs[1], acc), ("binary", UFUNC[ins.op], *srcs)
    tag = (ins, text, ins.op in ("MAC", "MAC_Z", "MUL", "DIV", "EXP"))
    return _op(run, fn, d, tuple(srcs), op, tag, units.pricer(run, ins.op, tuple(srcs), ins), block)


def _as_block(mem: Mem) -> str:
    index = cast("tuple[int, ...]", mem.index)  # a single word's address: every index a whole number
    return f"{mem.array}[{', '.join(f'{i}:{i + 1}' for i in index)}]"


def _block(run: Run, mem: Mem, line: int, operand: int, *, write: bool):
    """(array, numpy index, tile shape) of a block address; errors name the operand."""
    name = mem.array
    arr = run.memory.arrays.get(name) or run.memory.get(name)
    if not arr.fixed:
        raise RuntimeFault(f"'{name}' has no declared shape; a block LOAD/STORE needs one",
                           loc=run.loc(line, operand),
                           hint=(f"declare it before the code: `.array {name}[rows][cols]` (or give it with ",
                                 Opt("data"), ")"))
    assert arr.shape is not None  # fixed: the shape is declared or given
    if len(mem.index) != len(arr.shape):
        raise RuntimeFault(f"'{name}' has {len(arr.shape)} dimensions but '{mem}' gives {len(mem.index)}",
                           loc=run.loc(line, operand),
                           hint="give one index or span per dimension, e.g. Q[0:64, :]")
    idx: list = []
    shape: list[int] = []
    for axis, (item, n) in enumerate(zip(mem.index, arr.shape)):
        if isinstance(item, Span):
            start = 0 if item.start is None else item.start
            stop = n if item.stop is None else item.stop
            if stop > n or start >= stop:
                what = "is empty" if start >= stop else f"is outside '{name}'"
                raise RuntimeFault(f"block {item} {what} (dimension {axis} has size {n}, valid 0..{n})",
                                   loc=run.loc(line, operand),
                                   hint="a span start:stop needs 0 ≤ start < stop ≤ the dimension's size")
            idx.append(slice(start, stop))
            shape.append(stop - start)
        else:
            if item >= n:
                raise RuntimeFault(f"index {item} is outside '{name}' (dimension {axis} has size {n}, "
                                   f"valid 0..{n - 1})", loc=run.loc(line, operand),
                                   hint="declared/given arrays have a fixed shape; check the index")
            idx.append(item)
    if len(shape) > 2:
        raise AsmError(f"a tile has two dimensions; '{mem}' spans {len(shape)}", loc=run.loc(line, operand),
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


# -- execution: the closures the loop calls, fn(run, line) ---------------------------------
# Hot path: each closure binds the run's register list, SRAM sizes and rounding when it is
# compiled (they are fixed for the run) and keeps the SRAM accounting inline.

def _op(run: Run, compute, d: int, srcs: tuple, op: int, tag: tuple, price=None, block=None) -> tuple:
    """An arithmetic tile instruction: compute, round to the dtype, hold in SRAM (overwriting
    a register frees its old tile); on a machine with units, ``price`` charges its unit.
    ``execute.block``: what it computes, for ``sim.compiler.tiles`` (None: not compiled there)."""
    regs, sizes, tround = run.regs, run.sizes, run.tround
    exact, counted = run.sram_exact, run.sram_counted

    def execute(run: Run, line):
        try:
            r = compute(regs)
        except Exception as exc:  # FP flag, empty register, shapes that do not fit
            r = tile_event(run, line, code, compute, srcs, exc)
        if price is not None:
            price(regs, r)
        if tround is not None:
            r = tround(r, line, code)
        w = r.size if exact or d in counted else 0
        occ = run.sram_occ + w - sizes[d]
        sizes[d] = w
        regs[d] = r
        run.sram_occ = occ
        if occ > run.sram_peak:
            run.sram_peak = occ
            if occ + run.n_scalar > run.sram_cap:
                sram_full(run, line, code, d, occ + run.n_scalar)

    execute.block = None if block is None or price is not None else ("op", d, block)  # type: ignore[attr-defined]  # sim.compiler.tiles reads it
    code = (EXEC, op, execute, tag)
    return code


def _load(run: Run, arr, idx: tuple, d: int, op: int, tag: tuple) -> tuple:
    """LOAD block → T register: a view of HBM (a STORE to the array first detaches it)."""
    regs, sizes = run.regs, run.sizes
    exact, counted = run.sram_exact, run.sram_counted

    def execute(run: Run, line):
        if arr.pending:
            arr.materialise()
        r = arr.dense[idx]
        if run.record:
            r = r.copy()  # step rows keep every register's value: they must not see later STOREs
        else:
            arr.viewed = True
        w = r.size
        arr.tile_reads += w
        run.reads += w
        run.tile_reads += w
        if not (exact or d in counted):
            w = 0  # sram_rule paper: not a register the paper counts (a LOAD of a 1-D block: a statistic)
        occ = run.sram_occ + w - sizes[d]
        sizes[d] = w
        regs[d] = r
        run.sram_occ = occ
        if occ > run.sram_peak:
            run.sram_peak = occ
            if occ + run.n_scalar > run.sram_cap:
                sram_full(run, line, code, d, occ + run.n_scalar)

    execute.block = ("load", arr, idx, d, arr.dense[idx].size)  # type: ignore[attr-defined]  # sim.compiler.tiles reads it
    code = (EXEC, op, execute, tag)
    return code


def _store(run: Run, arr, idx: tuple, s: int, shape: tuple, transposed: bool, op: int, tag: tuple) -> tuple:
    """STORE T register → block of HBM (shapes must match)."""
    regs = run.regs

    def execute(run: Run, line):
        v = regs[s]
        if transposed and v is not None and hasattr(v, "T"):
            v = v.T
        if getattr(v, "shape", None) != shape:
            bad_store(run, line, code, v, shape, transposed)
        if arr.viewed:
            arr.detach(regs)
        arr.dense[idx] = v
        if arr.regions is not None:
            arr.stored(idx)
        w = v.size
        arr.tile_writes += w
        run.writes += w
        run.tile_writes += w

    execute.block = ("store", arr, idx, s, shape, transposed)  # type: ignore[attr-defined]  # sim.compiler.tiles reads it
    code = (EXEC, op, execute, tag)
    return code


# -- the result's tile keys ------------------------------------------------------------------
def report(run: Run, machine, issue: float, flops: list, work: dict, arrays: dict) -> dict:
    """SRAM peak, FLOPs, cycle breakdown, per-array traffic, HBM footprint and the roofline time:
    present when the run executed a tile instruction or the machine describes SRAM or rates."""
    if not (any(run.counts[TILE_BASE:SKIP_SLOT]) or machine.is_tile):
        return {}
    extra = {
        "sram_peak": run.sram_peak + run.n_scalar,
        "sram_words": machine.sram_words,
        **({} if run.sram_exact else {"sram_rule": machine.sram_rule}),
        "flops": {"matmul": flops[MM], "other": flops[VEC] + flops[SFU]},
        "sfu_ops": flops[SFU],
        "cycle_breakdown": {"issue": issue, **work},
        "tile_traffic": {n: {"reads": a.tile_reads, "writes": a.tile_writes} for n, a in arrays.items()
                         if a.tile_reads or a.tile_writes},
        "hbm_footprint": sum(math.prod(a.shape) for a in arrays.values() if a.shape),  # words of arrays
    }
    extra["memory_peak"] = units.memory_peak(run, machine, arrays)
    extra.update(units.report(run, machine, issue))
    if machine.clock_hz and machine.has_units:  # DMA overlaps the compute units, which run in sequence
        dma = extra["units"]["dma"]["cycles"] or 0
        hbm_s, compute_s = dma / machine.clock_hz, extra["units"]["total"] / machine.clock_hz
    elif machine.clock_hz:
        hbm_s = work["hbm"] / machine.clock_hz
        compute_s = (work["tensor"] + work["vector"] + work["sfu"]) / machine.clock_hz
    if machine.clock_hz:
        extra["time_s"] = max(hbm_s, compute_s)
        extra["roofline"] = {"hbm_s": hbm_s, "compute_s": compute_s,
                             "bound": "memory" if hbm_s >= compute_s else "compute"}
    return extra
