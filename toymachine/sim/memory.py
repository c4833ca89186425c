"""DRAM: named arrays, their given or random contents, and their inferred shapes.

An array is *given* (``.data``, ``--data``), *declared* (``.array NAME[d0][d1] [= fill]``),
or *implied* by the addresses a program uses. A cell read before anything was given
or written gets a deterministic pseudo-random value: a function of (seed, array name,
index) alone, so it does not depend on the order of reads or on the array's size.
Values are approximately standard normal (a scaled sum of four uniforms).

Storage follows the access: an array the program touches element by element keeps a
dict of cells (the scalar machine); an array it moves in blocks (tile LOAD/STORE) is a
dense ndarray (HBM). Given data stays an ndarray until an element access needs cells.
Either way a never-written, never-given cell reads as the same random value
(``random_block`` is the vectorised ``random_value``).
"""

from __future__ import annotations

__all__ = ["Array", "Memory", "random_value", "random_block", "random_run", "SCALAR", "TILE"]

import math
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

import numpy as np

from ..limits import LIMITS
from .random_values import random_block, random_run, random_value

_CHUNK = 4096  # a 1-D array's initial values come in runs this long
_ROW_RUN = 256  # … a row's of a bigger array (rows are often short: a matmul's 99 cells)


SCALAR, TILE = "scalar", "tile"  # Array.mode: how the program accesses it (None: not yet)


class Array:
    """One DRAM array. ``cells`` maps index tuples to values (scalar machine); ``dense``
    holds the whole array (tile machine, or given data not yet accessed by element)."""

    __slots__ = ("name", "shape", "fixed", "given", "fill", "cells", "read", "written", "seed", "line", "_chunks",
                 "_runs", "dense", "mode", "pending", "regions", "_stored", "round_fn", "tile_reads", "tile_writes", "viewed",
                 "randomised")

    def __init__(self, name: str, shape: tuple[int, ...] | None = None, *, given: bool = False,
                 fill: float | None = None, seed: int = 0, line: int = 0):
        self.name = name
        self.shape = list(shape) if shape is not None else None
        self.fixed = shape is not None  # a declared/given shape bounds every index
        self.given = given
        self.fill = fill
        self.cells: dict[tuple, Any] = {}
        self.read = False
        self.written = False
        self.seed = seed
        self.line = line
        self._chunks: dict = {}
        self._runs: dict[int, list] = {}  # a 1-D array's initial values, run k = indices k·_CHUNK … (``initial_runs``)
        self.dense: np.ndarray | None = None  # tile mode (or given data): the whole array
        self.mode: str | None = None
        self.pending = False  # dense cells not yet written hold no value yet (random on first read)
        self.regions: list | None = None  # indices stored to, while the array may hold unwritten cells
        self._stored: dict[int, Any] = {}  # id → index object in ``regions`` (``stored``: each one once)
        self.round_fn = None
        self.tile_reads = 0  # words moved by tile LOAD/STORE (per-array traffic)
        self.tile_writes = 0
        self.viewed = False  # a register may hold a view of ``dense`` (tile LOADs do not copy)
        self.randomised = False  # a read got a random input value (sim.inputs warns when nothing gave it)

    # -- the two storage modes ---------------------------------------------------------
    def use_scalar(self) -> None:
        """Element access: keep cells in a dict (built once from given data)."""
        if self.dense is not None:
            a = self.dense
            if a.ndim == 1:
                self.cells = {(i,): v for i, v in enumerate(a.tolist())}
            else:
                self.cells = dict(zip(np.ndindex(*a.shape), a.ravel().tolist()))
            self.dense = None
        self.mode = SCALAR

    def use_tile(self, round_fn=None) -> None:
        """Block access: hold the array as one float64 ndarray (its shape must be fixed).

        Given/filled arrays are complete at once; otherwise unwritten cells get their
        random input values on the first read (``materialise``) and ``regions`` remembers
        what was stored so that never-written cells of an output stay null.
        """
        if self.mode == TILE:
            return
        assert self.shape is not None  # tile access needs a fixed shape
        shape = tuple(self.shape)
        self.round_fn = round_fn
        if self.dense is None:
            if self.fill is not None:
                self.dense = np.full(shape, self.fill, dtype=np.float64)
            else:
                self.dense = np.zeros(shape, dtype=np.float64)
                if not self.given:
                    self.pending = True
                    self.regions = []
            for idx, v in self.cells.items():  # cells the scalar machine already wrote (or was given)
                self.dense[idx] = v
                if self.regions is not None:
                    self.regions.append(idx)
            self.cells = {}
        self.mode = TILE

    def detach(self, registers: list) -> None:
        """Before ``dense`` is written: registers holding views of it get copies (a register's
        value never changes behind its back)."""
        dense = self.dense
        for k, v in enumerate(registers):
            if type(v) is np.ndarray and v.base is dense:
                registers[k] = v.copy()
        self.viewed = False

    def stored(self, idx) -> None:
        """A tile STORE wrote block ``idx`` (while cells may be unwritten): ``regions`` holds each index
        object (a compiled STORE's) once — it grows with distinct STORE lines, not with the trace."""
        if id(idx) not in self._stored:
            self._stored[id(idx)] = idx  # held: its id is not reused while it is here
            assert self.regions is not None  # tile STOREs record regions while cells may be unwritten
            self.regions.append(idx)

    def written_mask(self) -> np.ndarray:
        assert self.shape is not None  # tile mode: the shape is fixed
        mask = np.zeros(tuple(self.shape), dtype=np.bool_)
        for idx in self.regions or ():
            mask[idx] = True
        return mask

    def materialise(self) -> None:
        """Give every cell never written its (deterministic random) input value."""
        if not self.pending:
            return
        self.randomised = True
        assert self.shape is not None and self.dense is not None  # pending: use_tile made dense
        init = random_block(self.seed, self.name, tuple(self.shape))
        if self.round_fn is not None:
            with np.errstate(all="ignore"):
                init = self.round_fn(init)
        self.dense = np.where(self.written_mask(), self.dense, init) if self.regions else init
        self.pending = False
        self.regions = None
        self._stored = {}

    @property
    def ndim(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    def check_index(self, index: tuple[int, ...]) -> str | None:
        """None if ``index`` fits; else a message. Grows an implied shape."""
        shape = self.shape
        if shape is not None and len(shape) == len(index):  # fast paths: 1-D and 2-D
            if len(index) == 1:
                i = index[0]
                if i < shape[0]:
                    return None
                if not self.fixed:
                    shape[0] = i + 1
                    return None
            elif len(index) == 2 and index[0] < shape[0] and index[1] < shape[1]:
                return None
        if self.shape is None:
            return self._grown([i + 1 for i in index])
        if len(index) != len(self.shape):
            return (f"'{self.name}' has {len(self.shape)} dimension{'s' if len(self.shape) != 1 else ''} "
                    f"but the address gives {len(index)} ind{'ices' if len(index) != 1 else 'ex'}")
        grown = list(self.shape)
        for axis, (i, n) in enumerate(zip(index, self.shape)):
            if i >= n:
                if self.fixed:
                    return f"index {i} is outside '{self.name}' (dimension {axis} has size {n}, valid 0..{n - 1})"
                grown[axis] = i + 1
        return self._grown(grown) if grown != self.shape else None

    def _grown(self, shape: list) -> str | None:
        """An implied shape grows to ``shape`` unless that passes ``limits.array_elements`` (then a message)."""
        count = 1
        for n in shape:
            count *= n
        cap = LIMITS["array_elements"].value()
        if count > cap:
            dims = "".join(f"[{n}]" for n in shape)
            return (f"this address makes '{self.name}' an array of {count:,} elements ({self.name}{dims}); toym holds "
                    f"at most {int(cap):,} per array ({LIMITS['array_elements'].lift_hint(count)})")
        if self.shape is None:
            self.shape = shape
        else:
            self.shape[:] = shape
        return None

    def initial(self, index: tuple[int, ...]) -> float:
        """Value of a cell nobody wrote: the fill, or the deterministic random input."""
        if self.fill is not None:
            return self.fill
        self.randomised = True
        if not index:
            return random_value(self.seed, self.name, index)
        if len(index) == 1:
            k = index[0] // _CHUNK
            run = self._runs.get(k)
            if run is None:
                run = self._runs[k] = random_run(self.seed, self.name, (), k * _CHUNK, _CHUNK)
            return run[index[0] % _CHUNK]
        key = (index[:-1], index[-1] // _ROW_RUN)
        run = self._chunks.get(key)
        if run is None:  # values come in vectorised runs along the last axis
            run = self._chunks[key] = random_run(self.seed, self.name, index[:-1], key[1] * _ROW_RUN, _ROW_RUN)
        return run[index[-1] % _ROW_RUN]

    def initial_runs(self) -> tuple[dict, int] | None:
        """A 1-D array's initial values in runs, ``(runs, size)``: ``runs[i // size][i % size]`` is
        ``initial((i,))`` where that run exists (``initial`` makes it), read by compiled blocks without
        a call. None for an array with a fill, or of more than one dimension."""
        if self.fill is not None or (self.shape is not None and len(self.shape) != 1):
            return None
        return self._runs, _CHUNK

    def to_nested(self, fmt=lambda v: v) -> list:
        """Final contents as nested lists; cells never written (and not inputs) are None."""
        shape = self.shape or []
        is_input = self.given or self.fill is not None or self.read
        if self.dense is not None:
            return self._dense_nested(is_input)

        def build(prefix: tuple, axis: int):
            if axis == len(shape):
                v = self.cells.get(prefix)
                if v is None and is_input:
                    v = self.initial(prefix)
                return None if v is None else fmt(v)
            return [build(prefix + (i,), axis + 1) for i in range(shape[axis])]

        if len(shape) == 1:  # the common case, without a call per cell
            get = self.cells.get
            if is_input:
                return [fmt(v) if (v := get((i,))) is not None else fmt(self.initial((i,))) for i in range(shape[0])]
            return [None if (v := get((i,))) is None else fmt(v) for i in range(shape[0])]
        return build((), 0) if shape else []

    def _dense_nested(self, is_input: bool) -> list:
        if is_input:
            self.materialise()
        dense = self.dense
        assert dense is not None  # to_nested calls this only while dense holds the array
        if not self.pending:
            return dense.tolist()
        mask = self.written_mask()
        if mask.all():
            return dense.tolist()
        out = dense.astype(object)
        out[~mask] = None
        return out.tolist()

    def to_array(self) -> np.ndarray:
        """Final contents as a float64 ndarray (never-written output cells are NaN)."""
        if self.dense is not None:
            if self.given or self.fill is not None or self.read:
                self.materialise()
            if not self.pending:
                return self.dense.copy()
            return np.where(self.written_mask(), self.dense, np.nan)
        fast = self._cells_array()
        return fast if fast is not None else np.array(self.to_nested(), dtype=np.float64)

    def _cells_array(self) -> np.ndarray | None:
        """``to_array`` of a 1-D or 2-D word array without a Python step per cell that was read
        or written (a long trace's summary); None where values are not numbers (symbolic)."""
        shape, cells = self.shape, self.cells
        if not shape or len(shape) > 2 or not cells:
            return None
        try:
            vals = np.fromiter(cells.values(), dtype=np.float64, count=len(cells))
        except (TypeError, ValueError):
            return None
        out = np.full(math.prod(shape), np.nan)
        rows = np.fromiter(map(itemgetter(0), cells), dtype=np.intp, count=len(cells))
        if len(shape) == 2:
            rows = rows * shape[1] + np.fromiter(map(itemgetter(1), cells), dtype=np.intp, count=len(cells))
        if rows.size and (rows.min() < 0 or rows.max() >= out.size):  # pragma: no cover - cells stay in shape
            return None
        out[rows] = vals
        if (self.given or self.fill is not None or self.read) and len(cells) < out.size:
            seen = np.zeros(out.size, dtype=bool)
            seen[rows] = True
            for i in np.flatnonzero(~seen).tolist():  # inputs never read: their initial values, as to_nested
                out[i] = self.initial((i,) if len(shape) == 1 else divmod(i, shape[1]))
        return out.reshape(shape)


class Memory:
    """All arrays of a run, by name."""

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.arrays: dict[str, Array] = {}

    def get(self, name: str) -> Array:
        arr = self.arrays.get(name)
        if arr is None:
            self._count_new(name)
            arr = self.arrays[name] = Array(name, seed=self.seed)
        return arr

    def _count_new(self, name: str) -> None:
        """A new array name: refused past ``limits.arrays`` (each costs bookkeeping, however small)."""
        if len(self.arrays) >= LIMITS["arrays"].value():
            LIMITS["arrays"].check(len(self.arrays) + 1, f"array '{name[:40]}', the run's {len(self.arrays) + 1:,}th,")

    def give(self, name: str, values, *, round_fn=None, line: int = 0) -> Array:
        """Install given values (nested lists or an ndarray) for array ``name``."""
        a = np.array(values, dtype=np.float64)  # a copy: the run never writes the caller's array
        if a.ndim == 0:
            a = a.reshape(1)
        if round_fn is not None:
            with np.errstate(all="ignore"):
                a = round_fn(a)
        if name not in self.arrays:
            self._count_new(name)
        arr = Array(name, tuple(a.shape), given=True, seed=self.seed, line=line)
        arr.dense = a  # cells are built on the first element access (``use_scalar``)
        self.arrays[name] = arr
        return arr

    def declare(self, name: str, shape: tuple[int, ...], fill: float | None = None, line: int = 0) -> Array:
        if name not in self.arrays:
            self._count_new(name)
        count = 1
        for n in shape:
            count *= n
        if count > LIMITS["array_elements"].value():  # a generated program's arrays (text is bounded by the parser)
            LIMITS["array_elements"].check(count, f"array {name}{''.join(f'[{n}]' for n in shape)}")
        arr = Array(name, shape, fill=fill, seed=self.seed, line=line)
        self.arrays[name] = arr
        return arr

    def names(self) -> Iterable[str]:
        return self.arrays.keys()
