"""A machine's compute units (seed 002, "Inside a TPU chip"): systolic matrix units (``mxu``) and a
vector unit (``vpu``), as a machine file declares them::

    mxu: {rows: 128, cols: 128, count: 4}        # count arrays of rows × cols multiply-accumulate cells
    vpu: {lanes: 128, cycles_per_vector: {EXP: 2, LOG: 2, MASK: 2}}   # unlisted ops: 1 cycle per vector

On a machine with units, a tile instruction costs what its unit charges (``toymachine.sim.engines.units``
applies these prices; ``toymachine.cost.units`` sums them in closed form):

MXU — MAC_Z / MAC of an (M, K)·(K, N) product, the weight-stationary array of seed 002: one pass
over a weight block of k ≤ rows·a rows and n ≤ cols·b columns costs the systolic formula
M + k + n − 2 cycles. The ``count`` arrays can be chained into one a × b arrangement (a·b ≤ count:
partial sums flow from an array into the one below it, activations into the one to its right), so
a matmul whose K and N fit the arrangement is one pass — the seed's M + K + N − 2 for its 512-wide
matmuls on a v5e's four arrays. A bigger matmul is split into ⌈K/(a·rows)⌉ × ⌈N/(b·cols)⌉ weight
blocks, one pass each, in sequence (partial sums over K accumulate in the array's output); the
arrangement with the fewest cycles is used (fewest arrays among equals). MACs = M·K·N.
Utilisation, as the seed measures it: MACs / (cycles × rows·cols) — a fraction of one array's peak,
so a matmul spread over several arrays can exceed 1 (``utilization_of_all`` divides by all ``count``).

VPU — every elementwise op, row reduction, MASK, FILL and MOV on a tile of e elements costs
⌈e / lanes⌉ × its cycles per vector (the seed's ``vpu(n_elements, cycles_per_vec)``). The elements are
the result's, except for ROWMAX/ROWSUM, which read every element of their operand. A MAC's
"+ C" is a VPU ADD over the M × N result.
"""

from __future__ import annotations

__all__ = ["MXU", "VPU", "VPU_OPS", "MXU_OPS", "vectors", "frozen_reduce"]

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType

MXU_OPS = ("MAC_Z", "MAC")
VPU_OPS = ("MAX", "SUB", "ADD", "MUL", "DIV", "EXP", "LOG", "ROWMAX", "ROWSUM", "MASK", "FILL", "MOV")


def vectors(elements: int, lanes: int) -> int:
    """⌈elements / lanes⌉: the vectors an op on ``elements`` elements takes."""
    return -(-elements // lanes)


def frozen_reduce(obj) -> tuple:
    """``__reduce__`` of a frozen config dataclass that holds read-only mappings (``MappingProxyType``
    does not pickle): rebuild it from its fields, mappings as dicts (sweeps send machines to worker
    processes and Dask workers)."""
    fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return _rebuild, (type(obj), {k: dict(v) if isinstance(v, MappingProxyType) else v for k, v in fields.items()})


def _rebuild(cls, fields: dict):
    return cls(**fields)


@dataclass(frozen=True)
class MXU:
    """``count`` systolic arrays of ``rows`` × ``cols`` cells (weight-stationary)."""

    rows: int = 128  # multiply-accumulate cells down one array (the K a pass takes)
    cols: int = 128  # cells across one array (the N a pass takes)
    count: int = 1  # arrays on the chip, chainable into one a × b arrangement (a·b ≤ count)

    @property
    def cells(self) -> int:
        return self.rows * self.cols

    def arrangements(self) -> list[tuple[int, int]]:
        """(a, b): a arrays chained down (K) by b across (N), a·b ≤ count."""
        return [(a, b) for a in range(1, self.count + 1) for b in range(1, self.count // a + 1)]

    def matmul(self, m: int, k: int, n: int) -> tuple[int, int]:
        """(cycles, passes) of an (m, k)·(k, n) product (module docstring)."""
        return _matmul(self.rows, self.cols, self.count, m, k, n)

    def to_dict(self) -> dict:
        return {"rows": self.rows, "cols": self.cols, "count": self.count}


@lru_cache(maxsize=4096)
def _matmul(rows: int, cols: int, count: int, m: int, k: int, n: int) -> tuple[int, int]:
    best: tuple[tuple[int, int], int] | None = None
    for a in range(1, count + 1):
        for b in range(1, count // a + 1):
            kb, nb = rows * a, cols * b
            tk, tn = -(-k // kb), -(-n // nb)
            # the weight blocks: every block kb × nb except the last row/column of blocks
            ks = [kb] * (tk - 1) + [k - kb * (tk - 1)]
            ns = [nb] * (tn - 1) + [n - nb * (tn - 1)]
            cycles = sum(m + x + y - 2 for x in ks for y in ns)
            key = (cycles, a * b)
            if best is None or key < best[0]:
                best = (key, tk * tn)
    assert best is not None  # count ≥ 1: the arrangement a = b = 1 always exists
    (cycles, _), passes = best
    return cycles, passes


@dataclass(frozen=True)
class VPU:
    """A vector unit of ``lanes`` lanes; ``cycles_per_vector`` by mnemonic (unlisted: 1)."""

    lanes: int = 128  # elements per vector: an op on e elements is ⌈e / lanes⌉ vectors
    cycles_per_vector: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))  # by op; unlisted: 1

    def __post_init__(self):
        if not isinstance(self.cycles_per_vector, MappingProxyType):
            object.__setattr__(self, "cycles_per_vector", MappingProxyType(dict(self.cycles_per_vector)))

    __reduce__ = frozen_reduce

    def per_vector(self, op: str) -> float:
        return self.cycles_per_vector.get(op, 1)

    def op_cycles(self, op: str, elements: int) -> float:
        """⌈elements / lanes⌉ × cycles per vector of ``op``."""
        return vectors(elements, self.lanes) * self.per_vector(op)

    def to_dict(self) -> dict:
        return {"lanes": self.lanes, "cycles_per_vector": {op: self.per_vector(op) for op in VPU_OPS}}
