"""``toym systolic``: C = A·B on a tick-level systolic array (options → ``toymachine.sim.systolic`` →
``toymachine.render.systolic``): seed 002's cycle-by-cycle table, cycles = M+K+N−2 against the
emulator's ticks, MACs and utilisation."""

from __future__ import annotations

__all__ = ["systolic_command"]

from enum import Enum

import numpy as np
import typer

from ..errors import ConfigError, DataError, Location
from ..limits import LIMITS
from ..render.systolic import render_systolic
from ..sim.datafile import load_data_file
from ..sim.systolic import DATAFLOWS, systolic_matmul
from .common import Format, guard, write_output

Dataflow = Enum("Dataflow", {d: d for d in DATAFLOWS}, type=str)  # type: ignore[misc]


def _matrix(path: str, name: str) -> np.ndarray:
    """The matrix in ``path``: its only array, or the one named ``name`` (A or B)."""
    arrays = load_data_file(path)
    if len(arrays) != 1:
        if name not in arrays:
            raise DataError(f"{path} holds {', '.join(arrays) or 'no arrays'}; which is {name}?", loc=Location(path),
                            hint=f"name the array {name} in the file, or give a file with one array")
        a = arrays[name]
    else:
        a = next(iter(arrays.values()))
    if a.ndim != 2:
        raise DataError(f"{name} in {path} must be a matrix (2-D), got shape {a.shape}", loc=Location(path),
                        hint=f"e.g.  {name}: [[1, 2, 3], [4, 5, 6]]")
    if np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.all(np.abs(a) < 2**53):
        return a.astype(np.int64)  # whole numbers: exact integer arithmetic, printed as integers
    return a


MAX_WORK = 1_000_000_000  # cell-ticks: 512 × 512 × 512 takes a few seconds
MAX_ELEMENTS = 4_000_000  # of A, B and C each


def systolic_command(
    m: int | None = typer.Option(None, "--m", help="Rows of A and C (default 4; from --a when given)."),
    k: int | None = typer.Option(None, "--k", help="Columns of A, rows of B (default 3)."),
    n: int | None = typer.Option(None, "--n", help="Columns of B and C (default 2)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random whole-number inputs in [−9, 9]."),
    a_file: str | None = typer.Option(None, "--a", help="A from a file: YAML (A: nested list), .npy or .npz."),
    b_file: str | None = typer.Option(None, "--b", help="B from a file (the same file may hold A and B)."),
    dataflow: Dataflow = typer.Option("weight", "--dataflow", help="weight: B stationary (the TPU's MXU); "
                                                                   "output: C stationary, A and B both stream."),
    fmt: Format = typer.Option("table", "--format", "-f", help="Output format."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write to FILE instead of standard output."),
) -> None:
    """C = A·B on a tick-level systolic array (seed 002): the cycle-by-cycle table (M, K, N ≤ 16),
    cycles = M+K+N−2 against the emulator's ticks, MACs, utilisation; C equals numpy's A @ B."""
    with guard():
        for flag, v in (("m", m), ("k", k), ("n", n)):
            if v is not None and v < 1:
                raise ConfigError(f"--{flag} must be at least 1, got {v}")
        rng = np.random.default_rng(seed)
        a = _matrix(a_file, "A") if a_file else None
        b = _matrix(b_file, "B") if b_file else None
        mm = m or (a.shape[0] if a is not None else 4)
        kk = k or (a.shape[1] if a is not None else b.shape[0] if b is not None else 3)
        nn = n or (b.shape[1] if b is not None else 2)
        work = (mm + kk + nn) * kk * nn  # the emulator steps every cell of the K × N array every tick
        for name, rows, cols in (("A", mm, kk), ("B", kk, nn), ("C", mm, nn)):
            if rows * cols > MAX_ELEMENTS:
                raise ConfigError(f"{name} would be {rows}×{cols} = {rows * cols:,} elements; at most {MAX_ELEMENTS:,}",
                                  hint="the tick-level emulator is for arrays you can watch; cycles = M+K+N−2 needs none")
        if work > MAX_WORK:
            raise ConfigError(f"a {mm}×{kk} by {kk}×{nn} matmul is {work:,} cell-ticks on the emulator; at most "
                              f"{MAX_WORK:,}", hint="the formula needs no emulator: cycles = M+K+N−2 (toym "
                              "tpu-table prices whole programs); tick-level runs stay near 512 × 512 × 512")
        for name, x, want in (("A", a, (mm, kk)), ("B", b, (kk, nn))):
            if x is not None and x.shape != want:
                raise ConfigError(f"{name} from its file is {x.shape[0]}×{x.shape[1]} but --m/--k/--n ask for "
                                  f"{want[0]}×{want[1]}", hint="leave --m/--k/--n out to take the files' shapes")
        LIMITS["size"].check(mm * kk + kk * nn + mm * nn, f"A, B and C of {mm}×{kk}·{kk}×{nn}")
        LIMITS["size"].check((mm + kk + nn) * kk * nn, f"the systolic run of {mm}×{kk}·{kk}×{nn} (ticks × cells)")
        a = rng.integers(-9, 10, size=(mm, kk)) if a is None else a
        b = rng.integers(-9, 10, size=(kk, nn)) if b is None else b
        run = systolic_matmul(a, b, dataflow=dataflow.value)
        write_output(render_systolic(run, fmt.value), output)
