"""Tile LOAD/STORE *templates*: text mode's ``LOAD Q[]␁, :], T0`` — a tile line whose first span
(``Q[12:14, :]``, ``v[2:5]``) was cut out of the chunk (``sim.cut``) into the chunk's *bound
stream* ``run.tile_bounds`` (a list and ``[position]``), so that the tile lines of a trace whose every
block address is new share one code, and one template block (``sim.compiler.tiles``).

A template is made from a line's key and the code the engine compiled for the line's first
occurrence (``tile.compile``, in trace order: every error, array switch and first use happened
there), and only where the key is canonical: ``LOAD X[]␁items], Tn`` / ``STORE Tn, X[]␁items]``,
the items after the cut span literal indices or spans (``, :``, ``, 0:4``, ``, 3``), split by ``,``
and at most one space. Anything else stays its own line (``None``). The template's code takes its
bounds from the stream and does what the compiled line does on the common path; on any other path —
a block past the array's shape or empty, a bound at or past ``limits.array_elements``, SRAM past its
capacity, a STORE of another shape, a chunk without a bound stream — it compiles the line itself and
runs that code, which raises the error or alarm the line always raised (same text, line, column).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["MARK", "template_code", "remember", "remember_rows", "axes_of", "block_index"]

import math
import re

import numpy as np

from ...asm import parse_line, strip_comment
from ...limits import LIMITS
from .kinds import EXEC
from .tile_lines import compile_tile_line

if TYPE_CHECKING:
    from ..run import Run

MARK = "\x01"  # after a cut block's ``[]`` in a key (a chunk holding this character is never cut)
_ITEM = "(?:[0-9]{1,7}|[0-9]{0,7}:[0-9]{0,7})"
_REST = rf"((?:, ?{_ITEM})*)"  # the items after the cut span: literal indices and spans
_REG = r"(T(?:0|[1-9][0-9]{0,3}))"
_NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
_KEY = re.compile(rf"[ \t]*(?:LOAD[ \t]+{_NAME}\[\]\x01{_REST}\],[ \t]*{_REG}|STORE[ \t]+{_REG},[ \t]*{_NAME}"
                  rf"\[\]\x01{_REST}\])[ \t]*\Z")
REGIONS_LIMIT = 1024  # a STORE template's blocks remembered apart before they are folded into one mask


def axes_of(rest: str, shape: list, cap: float) -> tuple | None:
    """The axes of a key's block: ("s", 0, 1, n, stop_limit) the cut span (its start and stop are
    bounds 0 and 1 of the line), then the literal items: ("c", start, stop) a span, ("i", value)."""
    items = [p.strip() for p in rest.split(",")[1:]]
    if len(items) + 1 != len(shape):
        return None
    axes: list = [("s", 0, 1, shape[0], min(shape[0], cap - 1))]
    for item, n in zip(items, shape[1:]):
        if ":" in item:
            a, _, b = item.partition(":")
            axes.append(("c", int(a) if a else 0, int(b) if b else n))
        else:
            axes.append(("i", int(item)))
    return tuple(axes) if sum(a[0] != "i" for a in axes) <= 2 else None


def _resolve(axes: tuple, b: list, p: int):
    """(numpy index, tile shape) of the block the bounds ``b[p:]`` name, or None where it is not
    a valid block (the compiled line reports it)."""
    idx: list = []
    shape: list = []
    for ax in axes:
        kind = ax[0]
        if kind == "s":
            start, stop = b[p + ax[1]], b[p + ax[2]]
            if not start < stop <= ax[4]:
                return None
            idx.append(slice(start, stop))
            shape.append(stop - start)
        elif kind == "c":
            idx.append(slice(ax[1], ax[2]))
            shape.append(ax[2] - ax[1])
        else:
            idx.append(ax[1])
    if len(shape) == 1:
        idx.append(None)
        shape.append(1)
    return tuple(idx), tuple(shape)


def block_index(axes: tuple, off: int, body: list) -> tuple[str, str, str]:
    """A template's block in a generated tile block (``sim.compiler.tiles``): the statements that read
    its bounds (``b<j>`` from ``B[p + j]``) and bail where they name no valid block, appended to
    ``body``; its numpy index as slice syntax, the same as an index object, and its shape."""
    ix, obj, shape = [], [], []
    for ax in axes:
        if ax[0] == "i":
            ix.append(str(ax[1]))
            obj.append(str(ax[1]))
        elif ax[0] == "c":
            ix.append(f"{ax[1]}:{ax[2]}")
            obj.append(f"slice({ax[1]}, {ax[2]})")
            shape.append(str(ax[2] - ax[1]))
        else:
            start, stop = f"b{off + ax[1]}", f"b{off + ax[2]}"
            body.append(f"{start} = B[p + {off + ax[1]}]\n{stop} = B[p + {off + ax[2]}]\n"
                        f"if not {start} < {stop} <= {ax[4]}: raise _B")
            ix.append(f"{start}:{stop}")
            obj.append(f"slice({start}, {stop})")
            shape.append(f"{stop} - {start}")
    if len(shape) == 1:
        ix.append("None")
        obj.append("None")
        shape.append("1")
    return ", ".join(ix), f"({', '.join(obj)},)", f"({', '.join(shape)})"


def _exact(run: Run, line: int) -> None:
    """The line compiled and run as itself: its errors and alarms, as it always raised them."""
    text = run.source(line)
    assert text is not None  # a line of the program: it compiled before
    code = compile_tile_line(run, line, text)
    if code is None:
        item = parse_line(text, line, run.file)
        from . import (
            compile_instr,  # (the package's: it imports the tile engine, which imports this)
        )

        code = compile_instr(run, item, line, text=strip_comment(text).strip())
    code[2](run, line)


def _folded(arr):
    """``arr.regions`` folded into one boolean mask over the array's cells, left as its only
    region and returned (a mask already there is extended, not copied)."""
    regions = arr.regions
    first = regions[0] if regions else None
    if type(first) is np.ndarray:
        mask, rest = first, regions[1:]
    else:
        mask, rest = np.zeros(tuple(arr.shape), dtype=bool), regions
    for r in rest:
        mask[r] = True
    regions[:] = [mask]
    return mask


def remember(arr, idx) -> None:
    """A template STORE wrote block ``idx`` of an array whose unwritten cells matter: remembered, and
    the blocks folded into one boolean mask (a region too) every ``REGIONS_LIMIT`` of them — memory
    bounded by the array's cells, not by the trace's STOREs."""
    arr.regions.append(idx)
    if len(arr.regions) > REGIONS_LIMIT:
        _folded(arr)


def remember_rows(arr, rows, cols) -> None:
    """``remember`` for a batch of STOREs (``compiler.tile_runs.compile_batch``): the rows (an array of row numbers per
    block) and columns (a slice, or None for a 1-D array) written, marked in the mask at once."""
    mask = _folded(arr)
    if cols is None:
        mask[rows] = True
    else:
        mask[rows, cols] = True


def template_code(run: Run, key: str, code: tuple, taken: list) -> tuple | None:
    """The template code of ``key`` made from ``code`` (its line's first occurrence, whose bounds
    were ``taken``), or None where the key is not a canonical tile LOAD/STORE or the template
    would not name the same block as the line."""
    if run.record or run.symbolic or code is None or code[0] != EXEC:
        return None
    spec = getattr(code[2], "block", None)
    m = _KEY.match(key)
    if spec is None or m is None or spec[0] not in ("load", "store"):
        return None
    name, rest, _, _, sname, srest = m.groups()
    arr = spec[1]
    if arr.name != (name or sname) or not arr.fixed:
        return None
    cap = run.__dict__.get("tile_line_cap") or LIMITS["array_elements"].value()
    axes = axes_of(rest if name is not None else srest, arr.shape, cap)
    k = 2
    if axes is None or len(taken) != k:
        return None
    first = _resolve(axes, taken, 0)
    if first is None or first[0] != spec[2]:
        return None
    if spec[0] == "load":
        fn = _load(run, arr, spec[3], axes, k)
        fn.block = ("tload", arr, spec[3], axes, k)
    else:
        if first[1] != spec[4]:
            return None
        fn = _store(run, arr, spec[3], spec[5], axes, k)
        fn.block = ("tstore", arr, spec[3], spec[5], axes, k)
    return (EXEC, code[1], fn, code[3])


def _take(run: Run, axes: tuple, k: int):
    """The next k bounds of the chunk's bound stream, resolved to (index, shape) on ``axes``; None
    where the chunk has no stream or the bounds do not resolve (the line then runs as itself)."""
    tb = run.tile_bounds
    if tb is None:
        return None
    b, pos = tb
    p = pos[0]
    pos[0] = p + k
    return _resolve(axes, b, p)


def _load(run: Run, arr, d: int, axes: tuple, k: int):
    regs, sizes = run.regs, run.sizes
    exact, counted = run.sram_exact, run.sram_counted

    def execute(run: Run, line):
        r = _take(run, axes, k)
        if r is None:
            return _exact(run, line)
        w = math.prod(r[1])
        c = w if exact or d in counted else 0
        occ = run.sram_occ + c - sizes[d]
        if occ > run.sram_peak and occ + run.n_scalar > run.sram_cap:
            return _exact(run, line)
        if arr.pending:
            arr.materialise()
        v = arr.dense[r[0]]
        arr.viewed = True
        arr.tile_reads += w
        run.reads += w
        run.tile_reads += w
        sizes[d] = c
        regs[d] = v
        run.sram_occ = occ
        if occ > run.sram_peak:
            run.sram_peak = occ

    return execute


def _store(run: Run, arr, s: int, transposed: bool, axes: tuple, k: int):
    regs = run.regs

    def execute(run: Run, line):
        r = _take(run, axes, k)
        v = regs[s]
        if transposed and v is not None and hasattr(v, "T"):
            v = v.T
        if r is None or getattr(v, "shape", None) != r[1]:
            return _exact(run, line)
        if arr.viewed:
            arr.detach(regs)
        arr.dense[r[0]] = v
        if arr.regions is not None:
            remember(arr, r[0])
        w = v.size
        arr.tile_writes += w
        run.writes += w
        run.tile_writes += w

    return execute
