"""A tick-level systolic array: C = A·B, cell by cell, one clock tick at a time (seed 002,
"How data flows through a systolic array" and "Building a systolic array emulator").

Weight-stationary (``dataflow="weight"``, the TPU's MXU). For A (M, K) and B (K, N) the array
has K rows × N columns; cell (k, n) holds B[k, n] for the whole matmul. A streams in from the
left with the seed's stagger — A[m, k] enters row k at tick m + k — and moves one cell right
per tick, so cell (k, n) sees A[m, k] at tick m + k + n. Partial sums move one cell down per
tick: the cell adds A[m, k]·B[k, n] to the sum arriving from cell (k − 1, n), and C[m, n]
leaves the bottom of column n at tick m + (K − 1) + n, the tick row K − 1 adds its product.

Output-stationary (``dataflow="output"``, the contrast the seed draws). The array has M rows ×
N columns; cell (i, j) keeps C[i, j] in place. A[i, k] enters row i from the left at tick
i + k and moves right; B[k, j] enters column j from the top at tick k + j and moves down; they
meet in cell (i, j) at tick i + j + k, which adds their product to its accumulator. C[i, j] is
complete at tick i + j + K − 1 and stays in the cell (reading it out is not modelled).

Ticks and cycles. Both arrays are busy (some cell multiplies) from tick 0 to tick M + K + N − 3:
``cycles`` = M + K + N − 2 busy ticks, the seed's formula and what the TPU cost model charges
per matmul. The emulator, like the seed's, runs until a tick finds nothing left to do — its
inputs have all entered and no cell holds data — so it runs one more, idle tick: ``ticks`` =
cycles + 1. That is the seed's "M+K+N−2+1 = 6" for (2, 3)·(3, 2): the last product C[M−1, N−1]
is added during tick M + K + N − 3 and the array is seen empty in tick M + K + N − 2. (The
seed's loop stops when ``cycle > total_cycles``; its own docstring puts the last exit at tick
m + K + n − 1 = M + K + N − 3.) ``busy_ticks`` is counted by the emulator, not assumed.

Values. Each cell computes ``sum_in + a·b`` in the operands' type — int64 when A and B are
both integer, else float64 — so C[m, n] = ((0 + A[m,0]B[0,n]) + A[m,1]B[1,n]) + …, the
products added in k order, each product and sum rounded once (no fused multiply-add). Integer
inputs, and floats whose products and partial sums are exact, give exactly numpy's ``A @ B``;
other floats give exactly that k-ordered sum, which BLAS's ``A @ B`` matches to rounding.

Each tick is a few numpy operations over the whole grid (data moves by array shifts), so any
size that fits in memory runs; the per-tick contents of every cell (``cells``) are recorded
when M, K and N are all at most ``TABLE_LIMIT``.
"""

from __future__ import annotations

__all__ = ["DATAFLOWS", "TABLE_LIMIT", "TICKS_NOTE", "SystolicRun", "systolic_cycles", "systolic_matmul"]

from dataclasses import dataclass

import numpy as np

from ..errors import DataError
from ..limits import LIMITS
from ..result import json_value

DATAFLOWS = ("weight", "output")
TABLE_LIMIT = 16  # record every cell's contents per tick when M, K, N ≤ this (the seed's "small")
TICKS_NOTE = ("cycles = M+K+N−2 ticks in which some cell multiplies (the seed's formula); the emulator "
              "runs one more, idle tick, in which it finds the array empty (ticks = cycles + 1, the seed's '+1')")


def systolic_cycles(m: int, k: int, n: int) -> int:
    """Busy ticks of one (m, k)·(k, n) matmul on either dataflow: M + K + N − 2 (seed 002)."""
    return m + k + n - 2


@dataclass(frozen=True)
class SystolicRun:
    """One matmul on a tick-level systolic array (``systolic_matmul``)."""

    dataflow: str  # weight | output
    a: np.ndarray  # (M, K)
    b: np.ndarray  # (K, N)
    c: np.ndarray  # (M, N), as the array computed it
    ticks: int  # ticks the emulator ran, the final idle one included
    busy_ticks: int  # ticks in which at least one cell multiplied
    macs: int  # multiply-accumulates the cells did (= M·K·N)
    busy_cells: tuple[int, ...]  # per tick: cells that multiplied
    exits: np.ndarray  # (M, N) int: the tick C[m, n] was complete (weight: left the bottom row)
    cells: np.ndarray | None  # (ticks, rows, cols) int, or None when the array is too big to record:
    # weight: m of the A[m, row] in each cell; output: k of the A[i, k]·B[k, j] pair; −1 idle
    sums: np.ndarray | None = None  # (ticks, rows, cols), recorded with ``cells``: each cell's partial sum
    # after the tick — weight: the sum it passes down (Σ_{k' ≤ row} A[m,k']·B[k',col]); output: its
    # accumulator C[i,j] so far — meaningful where ``cells`` ≥ 0 (a cell at work)

    @property
    def m(self) -> int:
        return int(self.a.shape[0])

    @property
    def k(self) -> int:
        return int(self.a.shape[1])

    @property
    def n(self) -> int:
        return int(self.b.shape[1])

    @property
    def grid(self) -> tuple[int, int]:
        """(rows, cols) of the array: K × N weight-stationary, M × N output-stationary."""
        return (self.k, self.n) if self.dataflow == "weight" else (self.m, self.n)

    @property
    def cycles(self) -> int:
        """The seed's formula, M + K + N − 2."""
        return systolic_cycles(self.m, self.k, self.n)

    @property
    def numpy_max_error(self) -> float:
        """max |C − numpy's A @ B| (0 for integer inputs; rounding-sized for general floats)."""
        return float(np.max(np.abs(self.c - self.a @ self.b)))

    @property
    def utilization(self) -> float:
        """MACs / (cycles × cells): the fraction of cell-ticks that multiplied."""
        rows, cols = self.grid
        return self.macs / (self.cycles * rows * cols)

    def to_dict(self) -> dict:
        rows, cols = self.grid
        d = {
            "dataflow": self.dataflow,
            "m": self.m, "k": self.k, "n": self.n,
            "array": {"rows": rows, "cols": cols},
            "a": json_value(self.a), "b": json_value(self.b), "c": json_value(self.c),
            "cycles": self.cycles,
            "ticks": self.ticks,
            "busy_ticks": self.busy_ticks,
            "macs": self.macs,
            "utilization": self.utilization,
            "exits": self.exits.tolist(),
            "busy_cells": list(self.busy_cells),
            "note": TICKS_NOTE,
        }
        if self.cells is not None:
            d["cells"] = [[[None if v < 0 else v for v in row] for row in tick] for tick in self.cells.tolist()]
        if self.sums is not None and self.cells is not None:
            d["sums"] = [[[None if w < 0 else json_value(v) for v, w in zip(vrow, wrow)] for vrow, wrow in zip(vt, wt)]
                         for vt, wt in zip(self.sums.tolist(), self.cells.tolist())]
        return d


def _operands(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a), np.asarray(b)
    for name, x in (("A", a), ("B", b)):
        if x.ndim != 2 or 0 in x.shape:
            raise DataError(f"{name} must be a non-empty matrix (2-D), got shape {x.shape}",
                            hint="give A as (M, K) and B as (K, N)")
        if x.dtype.kind not in "biuf":
            raise DataError(f"{name} must hold real numbers, got {x.dtype}")
    if a.shape[1] != b.shape[0]:
        raise DataError(f"inner dimensions differ: A is {a.shape[0]}×{a.shape[1]}, B is {b.shape[0]}×{b.shape[1]}",
                        hint="A (M, K) · B (K, N) needs A's columns = B's rows")
    (m, k), n = a.shape, b.shape[1]
    LIMITS["size"].check((m + k + n) * k * n, f"the systolic run of {m}×{k}·{k}×{n} (ticks × cells)")
    exact = a.dtype.kind in "biu" and b.dtype.kind in "biu"
    dtype = np.int64 if exact else np.float64
    return a.astype(dtype), b.astype(dtype)


def systolic_matmul(a, b, *, dataflow: str = "weight", record: bool | None = None) -> SystolicRun:
    """Run C = A·B tick by tick on a weight- or output-stationary array (module docstring).
    ``record`` keeps every cell's contents per tick (default: when M, K, N ≤ ``TABLE_LIMIT``)."""
    if dataflow not in DATAFLOWS:
        raise DataError(f"dataflow must be one of {', '.join(DATAFLOWS)}; got {dataflow!r}")
    a, b = _operands(a, b)
    m, k = a.shape
    n = b.shape[1]
    if record is None:
        record = max(m, k, n) <= TABLE_LIMIT
    run = _weight_stationary if dataflow == "weight" else _output_stationary
    with np.errstate(all="ignore"):  # idle cells multiply placeholders; their results are discarded
        c, ticks, busy, macs, busy_cells, exits, cells, sums = run(a, b, record)
    return SystolicRun(dataflow, a, b, c, ticks, busy, macs, tuple(busy_cells), exits,
                       None if cells is None else np.asarray(cells, dtype=np.int64),
                       None if sums is None else np.asarray(sums, dtype=a.dtype))


def _weight_stationary(a: np.ndarray, b: np.ndarray, record: bool):
    m, k = a.shape
    n = b.shape[1]
    weights = b  # (K, N): cell (row, col) holds B[row, col], stationary
    act = np.zeros((k, n), a.dtype)  # the activation each cell holds this tick
    live = np.zeros((k, n), bool)  # whether it holds one (else the cell is idle)
    psum = np.zeros((k, n), a.dtype)  # the partial sum each cell passes down
    prod = np.empty_like(psum)
    src = np.full((k, n), -1, np.int64) if record else None  # A row m of each activation (the table)
    bottom = np.full(n, -1, np.int64)  # A row m of each bottom-row activation: which C[m, col] exits
    rows = np.arange(k)
    c = np.zeros((m, n), a.dtype)
    exits = np.full((m, n), -1, np.int64)
    last_entry = m + k - 2  # A[M−1, K−1] enters row K−1 at this tick
    t = busy_ticks = macs = 0
    busy_cells: list[int] = []
    cells: list[np.ndarray] | None = [] if record else None
    sums: list[np.ndarray] | None = [] if record else None
    while True:
        # 1. activations move one cell right; column 0 takes A[t − row, row] (the stagger)
        act[:, 1:] = act[:, :-1]
        live[:, 1:] = live[:, :-1]
        m_in = t - rows
        entering = (m_in >= 0) & (m_in < m)
        live[:, 0] = entering
        act[:, 0] = np.where(entering, a[np.clip(m_in, 0, m - 1), rows], 0)
        bottom[1:] = bottom[:-1]
        bottom[0] = m_in[-1] if entering[-1] else -1
        if record:
            assert src is not None
            src[:, 1:] = src[:, :-1]
            src[:, 0] = np.where(entering, m_in, -1)
        # 2. partial sums move one cell down (row 0 starts from zero); a cell holding an
        #    activation adds its product, an idle cell passes the sum on unchanged
        np.multiply(act, weights, out=prod, where=live)
        psum[1:] = psum[:-1]
        psum[0] = 0
        np.add(psum, prod, out=psum, where=live)
        # 3. the bottom row's sums are finished dot products: C[m, col] leaves column col
        done = live[k - 1]
        if done.any():
            ms = bottom[done]
            c[ms, done] = psum[k - 1][done]
            exits[ms, done] = t
        count = int(np.count_nonzero(live))
        busy_cells.append(count)
        if record:
            assert src is not None and cells is not None and sums is not None
            cells.append(src.copy())
            sums.append(psum.copy())
        t += 1
        if count:
            busy_ticks += 1
            macs += count
        elif t > last_entry:  # nothing left to enter and nothing in the array
            break
    return c, t, busy_ticks, macs, busy_cells, exits, cells, sums


def _output_stationary(a: np.ndarray, b: np.ndarray, record: bool):
    m, k = a.shape
    n = b.shape[1]
    a_val = np.zeros((m, n), a.dtype)  # the A element each cell holds this tick, moving right
    a_k = np.full((m, n), -1, np.int64)  # its k (−1: none)
    b_val = np.zeros((m, n), a.dtype)  # the B element, moving down
    b_k = np.full((m, n), -1, np.int64)  # its k
    acc = np.zeros((m, n), a.dtype)  # C[i, j], stationary in cell (i, j)
    prod = np.empty_like(acc)
    rows, cols = np.arange(m), np.arange(n)
    exits = np.full((m, n), -1, np.int64)
    last_entry = max(m, n) + k - 2  # the last A/B element to enter
    t = busy_ticks = macs = 0
    busy_cells: list[int] = []
    cells: list[np.ndarray] | None = [] if record else None
    sums: list[np.ndarray] | None = [] if record else None
    while True:
        a_val[:, 1:], a_k[:, 1:] = a_val[:, :-1], a_k[:, :-1]  # A moves right
        b_val[1:], b_k[1:] = b_val[:-1], b_k[:-1]  # B moves down
        ka = t - rows  # row i takes A[i, t − i] from the left
        ina = (ka >= 0) & (ka < k)
        a_k[:, 0] = np.where(ina, ka, -1)
        a_val[:, 0] = np.where(ina, a[rows, np.clip(ka, 0, k - 1)], 0)
        kb = t - cols  # column j takes B[t − j, j] from the top
        inb = (kb >= 0) & (kb < k)
        b_k[0] = np.where(inb, kb, -1)
        b_val[0] = np.where(inb, b[np.clip(kb, 0, k - 1), cols], 0)
        busy = (a_k >= 0) & (b_k >= 0)  # the stagger brings A[i, k] and B[k, j] in with the same k
        np.multiply(a_val, b_val, out=prod, where=busy)
        np.add(acc, prod, out=acc, where=busy)
        exits[busy & (a_k == k - 1)] = t
        count = int(np.count_nonzero(busy))
        busy_cells.append(count)
        if record:
            assert cells is not None and sums is not None
            cells.append(np.where(busy, a_k, -1))
            sums.append(acc.copy())
        t += 1
        if count:
            busy_ticks += 1
            macs += count
        elif t > last_entry:
            break
    return acc, t, busy_ticks, macs, busy_cells, exits, cells, sums
