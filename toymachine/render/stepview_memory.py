"""DRAM/HBM arrays as the step viewer draws them: grid layout, block rectangles, and
each array's contents before the first step, recovered from a ``Result``.

An array is drawn as a rows × cols grid: a 2-D array as itself, leading axes flattened
into rows (``Q[b][h][n][d]`` → (b·h·n) × d), a 1-D array as a row (seed 000's x₀ x₁ x₂) or,
when the program moves it in blocks (FlashAttention's row statistics l, m), as a column
beside O. Arrays wider or taller than ``GRID_MAX`` are drawn in buckets (one square per
br × bc elements) and show no values.

Contents before step 1: the final contents, except for cells the program stores to;
those take the value the first LOAD before their first STORE saw, else blank (never
observed). A symbolic run keeps no input arrays in ``Result.memory``; their cells show the
seed's names (a₀₀ …) and their shape comes from the program's declarations when given,
else from the largest index the trace touches.
"""

from __future__ import annotations

__all__ = ["GRID_MAX", "ArrayView", "cell_text", "array_views", "initial_contents"]

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..isa import ISA
from ..program import Instr, Mem, Program, Span

GRID_MAX = 32  # display cells per axis; bigger arrays are drawn in buckets of elements
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def cell_text(v: Any, digits: int = 4) -> str:
    """A value short enough for a grid cell: 4 significant digits, ∞, nan, blank if None."""
    if v is None:
        return ""
    if isinstance(v, (int, float)):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v == int(v) and abs(v) < 1e6:
            return str(int(v))
        return f"{v:.{digits}g}".replace("-", "−")
    return str(v)  # a symbolic expression


def _subscript(index: tuple[int, ...]) -> str:
    """(0, 1) → ₀₁ (the seed's cell names; commas once an index reaches 10)."""
    sep = "," if any(i >= 10 for i in index) else ""
    return sep.join(str(i).translate(_SUB) for i in index)


def _indices(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for n in shape:
        out = [i + (k,) for i in out for k in range(n)]
    return out


def _nested_shape(values) -> tuple[int, ...]:
    shape: list[int] = []
    while isinstance(values, list):
        shape.append(len(values))
        if not values:
            break
        values = values[0]
    return tuple(shape)


def _flat(values) -> list:
    if isinstance(values, list):
        out: list = []
        for v in values:
            out.extend(_flat(v))
        return out
    return [values]


@dataclass
class ArrayView:
    """One array's grid: ``rows × cols`` elements in display cells of ``br × bc``."""

    name: str
    shape: tuple[int, ...]
    column: bool = False  # a 1-D array drawn downwards
    rows: int = 1
    cols: int = 1
    br: int = 1
    bc: int = 1

    def __post_init__(self) -> None:
        if len(self.shape) == 1:
            self.rows, self.cols = (self.shape[0], 1) if self.column else (1, self.shape[0])
        elif self.shape:
            self.rows, self.cols = math.prod(self.shape[:-1]), self.shape[-1]
        self.br = max(1, math.ceil(self.rows / GRID_MAX))
        self.bc = max(1, math.ceil(self.cols / GRID_MAX))

    @property
    def elementwise(self) -> bool:
        return self.br == 1 and self.bc == 1

    def labels(self) -> list[str]:
        """The seed's cell names (a₀₀ …), row-major in the grid."""
        return [self.name + _subscript(i) for i in _indices(self.shape)]

    def rects(self, mem: Mem) -> list[list[int]]:
        """An address as rectangles ``[r0, r1, c0, c1]`` (half-open) of the grid."""
        if len(mem.index) != len(self.shape):
            return []
        rng = []
        for item, n in zip(mem.index, self.shape):
            if isinstance(item, Span):
                rng.append((0 if item.start is None else item.start, n if item.stop is None else item.stop))
            else:
                rng.append((item, item + 1))
        if len(self.shape) == 1:
            a, b = rng[0]
            return [[a, b, 0, 1]] if self.column else [[0, 1, a, b]]
        (c0, c1), lead = rng[-1], rng[:-1]
        i0, i1 = lead[-1]  # the last leading axis is a contiguous run of rows
        bases = [0]
        for (a, b), n in zip(lead[:-1], self.shape[:-2]):
            bases = [base * n + k for base in bases for k in range(a, b)]
        n_inner = self.shape[-2]
        return [[base * n_inner + i0, base * n_inner + i1, c0, c1] for base in bases]

    def cells(self, mem: Mem) -> list[int]:
        """Flat grid cells of an address in row-major order (a stored tile's element order)."""
        return [r * self.cols + c for r0, r1, c0, c1 in self.rects(mem) for r in range(r0, r1) for c in range(c0, c1)]

    @staticmethod
    def words(rects: Sequence[Sequence[int]]) -> int:
        return sum((r[1] - r[0]) * (r[3] - r[2]) for r in rects)


def _declared_shapes(program: Program | None) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for decl in (program.arrays if program is not None else ()):
        if decl.shape:
            out[decl.name] = tuple(decl.shape)
        elif decl.values is not None:
            out[decl.name] = _nested_shape(decl.values)
    return out


def array_views(memory, instrs: Sequence[Instr], written: set, program: Program | None = None) -> list[ArrayView]:
    """The arrays in drawing order: inputs (first use), then the arrays the program writes."""
    order: list[str] = []
    for ins in instrs:
        for arg in ins.args:
            if isinstance(arg, Mem) and arg.array not in order:
                order.append(arg.array)
    order += [n for n in memory if n not in order]
    declared = _declared_shapes(program)
    blocks = {a.array for ins in instrs for a in ins.args if isinstance(a, Mem) and not a.is_scalar}
    views = {}
    for name in order:
        shape = _nested_shape(memory[name]) if name in memory else declared.get(name, ())
        if not shape:  # the largest index the trace touches
            dims: list[int] = []
            for ins in instrs:
                for arg in ins.args:
                    if isinstance(arg, Mem) and arg.array == name and arg.is_scalar:
                        idx = [i for i in arg.index if isinstance(i, int)]  # all of them: is_scalar
                        dims = [max(a, b + 1) for a, b in zip(dims + [0] * (len(idx) - len(dims)), idx)]
            shape = tuple(dims)
        views[name] = ArrayView(name, shape, column=name in blocks)
    return [views[n] for n in order if n not in written] + [views[n] for n in order if n in written]


def initial_contents(views: Sequence[ArrayView], memory, steps, instrs: Sequence[Instr], written: set,
                     register_index: dict[str, int]) -> dict[str, list[str]]:
    """Each element-level array's cell texts before the first step (module docstring)."""
    contents: dict[str, list[str]] = {}
    for view in views:
        if not view.elementwise:
            continue
        n = view.rows * view.cols
        if view.name in memory:
            flat = _flat(memory[view.name])
            contents[view.name] = [cell_text(v) for v in flat] + [""] * (n - len(flat))
        else:  # a symbolic input: the seed's names
            contents[view.name] = view.labels()[:n]
    by_name = {v.name: v for v in views}
    decided: dict[str, set] = {n: set() for n in written if n in contents}
    for step, ins in zip(steps, instrs):
        kind = ISA[ins.op].kind
        if kind == "store" and ins.mem(1).array in decided:
            mem = ins.mem(1)
            for cell in by_name[mem.array].cells(mem):
                if cell not in decided[mem.array]:  # stored before anything read it: unknown
                    decided[mem.array].add(cell)
                    contents[mem.array][cell] = ""
        elif kind == "load" and ins.mem(0).array in decided:
            mem = ins.mem(0)
            value = step.registers[register_index[ins.reg(1).name]]
            vals = value.ravel().tolist() if hasattr(value, "shape") else [value]
            for cell, v in zip(by_name[mem.array].cells(mem), vals):
                if cell not in decided[mem.array]:  # read before any store: the value it had
                    decided[mem.array].add(cell)
                    contents[mem.array][cell] = cell_text(v)
    return contents
