"""The tile engine's slow paths: numerical events inside tile arithmetic, the dtype rounding
of tile writes, STORE shape mismatches and SRAM overflow — each a located error or alarm."""

from __future__ import annotations

__all__ = ["tile_event", "tile_rounder", "bad_store", "sram_full", "shape_text", "dropout_operands", "ELEMENTWISE"]

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ...errors import AsmError, MachineLimitError, Opt, RuntimeFault
from ...program import operands_of

if TYPE_CHECKING:
    from ..run import Run

ELEMENTWISE = frozenset({"MAX", "SUB", "ADD", "MUL", "DIV", "EXP", "LOG", "MOV"})
_NEG_INF = -np.inf
_FPE_DIVIDE, _FPE_OVERFLOW, _FPE_UNDERFLOW, _FPE_INVALID = 1, 2, 4, 8


def shape_text(v) -> str:
    if v is None:
        return "empty"
    if hasattr(v, "shape") and len(v.shape) == 2:
        return f"{v.shape[0]}×{v.shape[1]}"
    return "a word"


# -- slow paths: numerical events, shape errors, SRAM overflow -------------------------------
def tile_event(run: Run, line: int, code: tuple, compute: Callable, srcs: tuple, exc: BaseException):
    """A tile instruction raised: an empty register, a shape mismatch, or a floating-point
    flag (then recompute with the flags collected and raise the alarms). ``srcs`` are the
    operands as (register slot, transposed, operand position)."""
    ins = code[-1][0]
    vals = [run.regs[s] for s, _, _ in srcs]
    for (_, _, pos), v in zip(srcs, vals):
        if v is None:
            name = ins.args[pos].name
            raise RuntimeFault(f"{name} is read before anything was written to it", loc=run.loc(line, pos),
                               hint=f"LOAD a block into {name} (or compute one) before this instruction")
    if not isinstance(exc, FloatingPointError):
        shapes = ", ".join(f"{ins.args[pos]} is {_view_shape(v, t)}" for (s, t, pos), v in zip(srcs, vals))
        what = {"MAC_Z": "inner dimensions differ", "MAC": "shapes do not fit a multiply-accumulate"}.get(
            ins.op, "shapes do not broadcast")
        raise RuntimeFault(f"{ins.op}: {what} ({shapes})", loc=run.loc(line),
                           hint="elementwise operands need equal shapes, an (r,1) column or a (1,1) tile; "
                                "MAC_Z Ta, Tb needs Ta's columns = Tb's rows (use .T to transpose)")
    bits = [0]

    def collect(_kind, flag):
        bits[0] |= flag

    with np.errstate(all="call", call=collect):
        r = compute(run.regs)
    flags = bits[0]
    views = [v.T if t and hasattr(v, "T") else v for (s, t, _), v in zip(srcs, vals)]
    elementwise = ins.op in ELEMENTWISE
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


def _raise_alarm(run: Run, kind: str, line: int, code: tuple, r, mask, operands, count: int = 1,
                 elementwise: bool = True) -> None:
    hits = np.argwhere(mask)
    tiles = tuple(f"tile{tuple(o.shape)}" if hasattr(o, "shape") else o for o in operands)
    if len(hits) == 0:  # the flag came from an intermediate step; point at the tile
        run.alarm(kind, line, code, tiles, f"tile{tuple(r.shape)}", count=count)
        return
    pos = tuple(int(i) for i in hits[0])
    if elementwise and len(operands) and all(hasattr(o, "shape") and o.shape == r.shape for o in operands):
        values: tuple = tuple(float(o[pos]) for o in operands)  # elementwise: the operands of that element
    else:
        values = tiles
    run.alarm(kind, line, code, values, float(r[pos]), where=f" @[{', '.join(map(str, pos))}]", count=count)


def tile_rounder(run: Run) -> Callable | None:
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


def bad_store(run: Run, line: int, code: tuple, v, shape: tuple, transposed: bool) -> None:
    ins = code[-1][0]
    src, mem = operands_of(ins)
    if v is None:
        raise RuntimeFault(f"{src.name} is read before anything was written to it", loc=run.loc(line, 0),
                           hint=f"LOAD a block into {src.name} (or compute one) before this instruction")
    raise RuntimeFault(f"{src} holds a {_view_shape(v, transposed)} tile but '{mem}' is {shape[0]}×{shape[1]}",
                       loc=run.loc(line, 1), hint="STORE needs the tile's shape to equal the block's")


def sram_full(run: Run, line: int, code: tuple, d: int, occupied: int) -> None:
    """Raise the SRAM-capacity error for the tile just written by ``code`` to register slot ``d``."""
    ins = code[-1][0]
    machine = run.machine
    cap = machine.onchip_words
    tile = run.regs[d]
    held = sorted(((run.names[i], run.sizes[i], run.regs[i]) for i in range(len(run.names)) if run.sizes[i]),
                  key=lambda t: -t[1])
    listing = ", ".join(f"{n} {shape_text(v)} = {w}" for n, w, v in held[:8]) + (" …" if len(held) > 8 else "")
    scalars = f" + {run.n_scalar} R register word{'s' if run.n_scalar != 1 else ''}" if run.n_scalar else ""
    if machine.sram_words is None and machine.vmem_bytes is not None:  # a machine that names its on-chip level VMEM
        wb = machine.word_bytes
        raise MachineLimitError(
            f"VMEM overflow: {ins.op} writes a {shape_text(tile)} tile ({tile.size} words) to {run.names[d]}; "
            f"VMEM would hold {occupied * wb} bytes ({listing}{scalars}, words of {wb} bytes) but the machine has "
            f"vmem_bytes = {machine.vmem_bytes}", loc=run.loc(line, len(ins.args) - 1 if ins.op != "STORE" else 0),
            hint=("use smaller blocks or a tiled algorithm (toym gen attention-tile ", Opt("block_m"), "/", Opt("block_n"),
                  ", ", Opt("algo", "fa2"), f"), or a machine with `vmem_bytes: {occupied * wb}` or more"))
    raise MachineLimitError(
        f"SRAM overflow: {ins.op} writes a {shape_text(tile)} tile ({tile.size} words) to {run.names[d]}; "
        f"SRAM would hold {occupied} words ({listing}{scalars}) but the machine has sram_words = {cap}"
        + ("" if run.sram_exact else " (sram_rule paper: only blocks of HBM matrices count)"),
        loc=run.loc(line, len(ins.args) - 1 if ins.op != "STORE" else 0),
        hint=("use smaller blocks (toym gen attention-tile ", Opt("block_m"), "/", Opt("block_n"), ", or ",
              Opt("sram", cap), f"), reuse registers you no longer need, or a machine with `sram_words: {occupied}` "
              "or more"))


def dropout_operands(run: Run, line: int, a: tuple) -> tuple[float, int, int, int, int]:
    """(p, seed, head, row0, col0) of ``DROPOUT Ta, p, seed, head, row0, col0, Td``, checked."""
    p = a[1]
    if not 0 <= p < 1:
        raise AsmError(f"DROPOUT needs a drop probability 0 ≤ p < 1, got {p}", loc=run.loc(line, 1),
                       hint="write it as `DROPOUT Ta, p, seed, head, row0, col0, Td`, e.g. DROPOUT T3, 0.1, 7, 0, "
                            "0, 64, T3")
    for pos, what in ((2, "seed"), (3, "head"), (4, "row offset"), (5, "column offset")):
        if isinstance(a[pos], float) or a[pos] < 0:
            raise AsmError(f"DROPOUT needs a non-negative whole-number {what}, got {a[pos]}", loc=run.loc(line, pos),
                           hint="write it as `DROPOUT Ta, p, seed, head, row0, col0, Td`")
    return float(p), int(a[2]), int(a[3]), int(a[4]), int(a[5])
