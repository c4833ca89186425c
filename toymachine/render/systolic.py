"""A systolic-array run (``toymachine.sim.systolic``) as titled tables: the seed's cycle-by-cycle
picture (seed 002, "The stagger" and "Cycle-by-cycle systolic array execution"), the summary
(cycles = M+K+N−2 against the emulator's ticks, MACs, utilisation) and C with its exit ticks.

The cycle tables exist when the run recorded its cells (M, K, N ≤ ``TABLE_LIMIT``); bigger runs
print the summary and C (summarised past 64 elements; ``--format json`` keeps it whole).
"""

from __future__ import annotations

__all__ = ["systolic_report", "render_systolic"]

import numpy as np

from ..sim.systolic import TICKS_NOTE, SystolicRun
from .cells import Arr, sig
from .formats import dump_json, render_report
from .report import Report, Section


def _entering(run: SystolicRun, recorded: np.ndarray) -> Section:
    """Seed 002's stagger table: which element enters each row (and column) at each tick
    (``recorded``: the run's cells)."""
    ticks = range(run.ticks)
    head = ("",) + tuple(str(t) for t in ticks)
    rows = []
    if run.dataflow == "weight":
        for r in range(run.k):  # A[m, r] enters row r at tick m + r
            rows.append((f"row {r}",) + tuple(_at(recorded[t, r, 0], lambda m, r=r: f"A[{m},{r}]") for t in ticks))
        title, note = "A entering each row, by cycle", "A[m,k] enters row k at cycle m + k (the stagger)"
    else:
        for i in range(run.m):  # A[i, k] enters row i at tick i + k
            rows.append((f"row {i}",) + tuple(_at(recorded[t, i, 0], lambda k, i=i: f"A[{i},{k}]") for t in ticks))
        for j in range(run.n):  # B[k, j] enters column j at tick k + j
            rows.append((f"col {j}",) + tuple(_at(recorded[t, 0, j], lambda k, j=j: f"B[{k},{j}]") for t in ticks))
        title = "A entering each row, B each column, by cycle"
        note = "A[i,k] enters row i at cycle i + k; B[k,j] column j at k + j"
    return Section(title, head, tuple(rows), note=note, align=("l",) + ("l",) * run.ticks)


def _cells(run: SystolicRun, recorded: np.ndarray) -> Section:
    """Every cell at every tick: the A element passing through (weight-stationary; B[k,n] stays)
    or the A·B pair meeting there (output-stationary; C[i,j] stays)."""
    rows_n, cols_n = run.grid
    head = ("cycle", "row") + tuple(f"col {c}" for c in range(cols_n))
    rows = []
    for t in range(run.ticks):
        for r in range(rows_n):
            if run.dataflow == "weight":
                cells = tuple(_at(recorded[t, r, c], lambda m, r=r: f"A[{m},{r}]") for c in range(cols_n))
            else:
                cells = tuple(_at(recorded[t, r, c], lambda k, r=r, c=c: f"A[{r},{k}]·B[{k},{c}]") for c in range(cols_n))
            rows.append((str(t) if r == 0 else "", str(r)) + cells)
    what = ("cell (k, n) holds B[k,n]; A[m,k] passes through it at cycle m + k + n" if run.dataflow == "weight"
            else "cell (i, j) holds C[i,j]; A[i,k] and B[k,j] meet there at cycle i + j + k")
    return Section("Cells, cycle by cycle", head, tuple(rows), note=what, align=("r", "r") + ("l",) * cols_n)


def _sums(run: SystolicRun, recorded: np.ndarray, sums: np.ndarray) -> Section:
    """Every cell's partial sum at every tick (where the cell is at work): weight-stationary, the sum
    it passes down, Σ_{k' ≤ row} A[m,k']·B[k',n] (the bottom row's is C[m,n]); output-stationary, its
    accumulator C[i,j] so far."""
    rows_n, cols_n = run.grid
    head = ("cycle", "row") + tuple(f"col {c}" for c in range(cols_n))
    rows = []
    for t in range(run.ticks):
        for r in range(rows_n):
            cells = tuple("" if recorded[t, r, c] < 0 else sig(sums[t, r, c].item())
                          for c in range(cols_n))
            rows.append((str(t) if r == 0 else "", str(r)) + cells)
    return Section("Partial sums, cycle by cycle", head, tuple(rows), align=("r", "r") + ("r",) * cols_n)


def _at(v, text) -> str:
    return "" if v < 0 else text(int(v))


def systolic_report(run: SystolicRun) -> Report:
    """The tables of a systolic run (module docstring)."""
    rows_n, cols_n = run.grid
    sections = []
    if run.cells is not None:
        sections += [_entering(run, run.cells), _cells(run, run.cells)]
        if run.sums is not None:
            sections.append(_sums(run, run.cells, run.sums))
    stationary = "B stationary in the cells" if run.dataflow == "weight" else "C stationary in the cells"
    err = run.numpy_max_error
    summary = (
        ("dataflow", f"{run.dataflow}-stationary"),
        ("matmul", f"({run.m}, {run.k}) · ({run.k}, {run.n})"),
        ("array", f"{rows_n} × {cols_n} cells ({stationary})"),
        ("cycles", f"{run.cycles} (M+K+N−2)"),
        ("ticks", f"{run.ticks} (cycles + 1: the last tick finds the array empty)"),
        ("busy ticks", str(run.busy_ticks)),
        ("MACs", str(run.macs)),
        ("utilization", f"{100 * run.utilization:.1f}% (MACs / (cycles × {rows_n * cols_n} cells))"),
        ("vs numpy A @ B", "equal" if err == 0 else f"max |difference| {sig(err)} (float rounding order)"),
    )
    sections.append(Section("Summary", ("Metric", "Value"), summary, align=("l", "l")))
    if run.m * run.n <= 64:
        results = tuple((f"C[{i},{j}]", sig(run.c[i, j].item()), str(int(run.exits[i, j])))
                        for i in range(run.m) for j in range(run.n))
        when = "exits the bottom at cycle" if run.dataflow == "weight" else "complete at cycle"
        sections.append(Section("Results", ("element", "value", when), results, align=("l", "r", "r")))
    else:
        sections.append(Section("Results", ("array", "contents"),
                                (("C", Arr(run.c.tolist())),), align=("l", "l")))
    notes: tuple[str, ...] = (TICKS_NOTE,)
    if run.sums is not None and run.cells is not None:
        notes += ("partial sums: weight-stationary, the sum each working cell passes down, Σ over k' ≤ row of "
                  "A[m,k']·B[k',n] (the bottom row's leaves as C[m,n]); output-stationary, the C[i,j] each cell "
                  "has accumulated",)
    if run.cells is None:
        notes += ("cycle-by-cycle tables are shown when M, K and N are all at most 16",)
    title = f"systolic {run.dataflow}-stationary ({run.m}, {run.k}) · ({run.k}, {run.n})"
    return Report(title, tuple(sections), notes)


def render_systolic(run: SystolicRun, fmt: str = "table") -> str:
    """A systolic run in ``fmt``: ``json`` is ``SystolicRun.to_dict()``, the others draw ``systolic_report``."""
    if fmt == "json":
        return dump_json(run.to_dict())
    if fmt == "html":  # the array as an animation above the tables
        from .systolic_page import systolic_page

        return systolic_page(run, render_report(systolic_report(run), fmt))
    return render_report(systolic_report(run), fmt)
