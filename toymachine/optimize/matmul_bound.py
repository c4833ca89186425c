"""A stronger admissible bound for the matmul search: exact optima of one row or one column.

Project a schedule of C = A·B onto one column j of C: keep the products (i, j, l) of that
column, the values b_·j they read and the partial sums c_·j they build, and let the a values
be free to load (but they still take a register while a product reads them). What is left
is a valid schedule of the *line problem*: P outputs, K costed values, each output needs
each value once (plus one free operand), R registers. Its b loads are the original's b_·j
loads. So the least loads of the line problem bound column j's b loads from below, and the
same holds for row i's a loads with the b values free. Summing over the n columns and the
m rows (their costed values are disjoint: every input is costed in exactly one line):

    loads still to come  ≥  Σ_j LINE(column j's state) + Σ_i LINE(row i's state)

which is never below the trivial bound (every needed input not resident, once) and at the
start of the 3×3 product with R = 3 gives 42 LOADs against the trivial 18 (the optimum is
46).

``LineTable`` computes LINE for every state of one line problem at once (a 0-1 breadth-first
search backwards from the finished state over the whole state graph), with outputs sorted
(they are interchangeable), and looks states up in a dict.
"""

from __future__ import annotations

__all__ = ["LineTable", "line_table", "space_bound"]

from collections import deque
from functools import lru_cache
from itertools import combinations_with_replacement

MAX_LINE_STATES = 400_000  # beyond this the table is not built (the trivial bound is used)


class LineTable:
    """Least costed-value loads to finish a line problem from each of its states.

    A state is (values mask, sorted tuple of output codes); an output code is its done
    mask (K bits) plus bit K when its partial sum is in a register; done = all K bits means
    complete (stored). With ``spills`` a started output may sit in DRAM (no register bit):
    spilling and reloading are free here (they are counted elsewhere)."""

    def __init__(self, outputs: int, values: int, registers: int, spills: bool):
        self.P, self.K, self.R, self.spills = outputs, values, registers, spills
        self.full = (1 << values) - 1
        self.inreg = 1 << values
        codes = [0, self.full] + [d | self.inreg for d in range(1, self.full)]
        if spills:
            codes += list(range(1, self.full))
        self.codes = sorted(codes)
        self.dist: dict[tuple[int, tuple[int, ...]], int] = {}
        self._cache: dict[int, int | None] = {}  # unsorted state, packed → LINE
        self._build()

    def _used(self, res: int, codes) -> int:
        return res.bit_count() + sum(1 for c in codes if c & self.inreg)

    def _needed(self, codes) -> int:
        bits = 0
        for c in codes:
            bits |= self.full & ~c
        return bits

    def _norm(self, res: int, codes: list[int]) -> tuple[int, tuple[int, ...]]:
        """Closure (never worse): complete outputs leave their register; unneeded values drop."""
        codes = [self.full if (c & self.full) == self.full else c for c in codes]
        return res & self._needed(codes), tuple(sorted(codes))

    def _moves(self, res: int, codes: tuple[int, ...]):
        """(child, cost) pairs: load a value (evicting one if full), one product, a spill or reload."""
        R, full, inreg = self.R, self.full, self.inreg
        used = self._used(res, codes)
        needed = self._needed(codes)
        for v in range(self.K):
            bit = 1 << v
            if res & bit or not needed & bit:
                continue
            if used < R:
                yield self._norm(res | bit, list(codes)), 1
            for w in range(self.K):
                if res >> w & 1:
                    yield self._norm((res & ~(1 << w)) | bit, list(codes)), 1
        for p, c in enumerate(codes):
            done = c & full
            if done == full:
                continue
            if c & inreg or c == 0:  # a product needs its value, its partial sum and a slot for the free operand
                if used + 1 > R:
                    continue
                for l in range(self.K):
                    if res >> l & 1 and not done >> l & 1:
                        new = list(codes)
                        new[p] = done | (1 << l) | inreg
                        yield self._norm(res, new), 0
            elif self.spills and used < R:  # reload
                new = list(codes)
                new[p] = c | inreg
                yield self._norm(res, new), 0
            if self.spills and c & inreg:
                new = list(codes)
                new[p] = done
                yield self._norm(res, new), 0

    def _build(self) -> None:
        states = []
        for codes in combinations_with_replacement(self.codes, self.P):
            needed = self._needed(codes)
            for res in range(self.full + 1):
                if res & ~needed or self._used(res, codes) > self.R:
                    continue
                states.append((res, codes))
        reverse: dict = {s: [] for s in states}
        for s in states:
            for child, cost in self._moves(*s):
                if child in reverse:
                    reverse[child].append((s, cost))
        goal = (0, (self.full,) * self.P)
        dist = {goal: 0}
        queue = deque([goal])
        while queue:  # 0-1 BFS backwards from the goal
            s = queue.popleft()
            d = dist[s]
            for parent, cost in reverse.get(s, ()):
                nd = d + cost
                if nd < dist.get(parent, 1 << 30):
                    dist[parent] = nd
                    (queue.appendleft if cost == 0 else queue.append)(parent)
        self.dist = dist

    def lookup(self, res: int, codes) -> int | None:
        """LINE of a state (``codes`` in any order), or None if the finish is unreachable."""
        raw = res
        shift = self.K
        for c in codes:
            raw |= c << shift
            shift += self.K + 1
        return self.lookup_raw(raw)

    def lookup_raw(self, raw: int) -> int | None:
        """LINE of a state packed as values | code₀ << K | code₁ << (2K + 1) | … (any code order)."""
        got = self._cache.get(raw, -1)
        if got == -1:
            K, w = self.K, self.K + 1
            codes = [(raw >> (K + p * w)) & ((1 << w) - 1) for p in range(self.P)]
            got = self._cache[raw] = self.dist.get(self._norm(raw & self.full, codes))
        return got


@lru_cache(maxsize=16)
def line_table(outputs: int, values: int, registers: int, spills: bool) -> LineTable | None:
    """The table of one line problem, or None when its state space is too large to tabulate."""
    codes = 2 + (1 << values) - 2 + ((1 << values) - 2 if spills else 0)
    count, size = 1, 1
    for i in range(outputs):  # multisets of ``outputs`` codes
        count = count * (codes + i) // (i + 1)
    size = count << values
    if size > MAX_LINE_STATES:
        return None
    return LineTable(outputs, values, registers, spills)


def space_bound(space, key: int) -> float:
    """h of a ``MatmulSpace`` state: LOAD cycles × (Σ over rows and columns of LINE + spilled
    partial sums). A line without a table counts its needed inputs not resident; a line whose
    finish is unreachable makes the state a dead end (h = ∞)."""
    rows, cols = space.row_table, space.col_table
    k, n, w, full, inreg = space.k, space.n, space.width, space.full, space.inreg
    st = key >> space.ni
    code_mask = (1 << w) - 1
    line_mask = full | inreg  # a line problem's code: done bits and "resident" (ACC is one more slot there)
    if rows is not None and cols is not None and not space.accumulator:
        total: float = _spilled(space, st) if space.spills else 0
        row_bits = n * w
        row_mask = (1 << row_bits) - 1
        for i in range(space.m):  # row i: a_i· costed; its n codes are contiguous in the state
            got = rows.lookup_raw(((key >> (i * k)) & full) | (((st >> (i * row_bits)) & row_mask) << k))
            if got is None:
                return float("inf")
            total += got
        for j in range(n):  # column j: b_·j costed; its m codes are n apart
            raw = (key >> (space.na + j * k)) & full
            shift = k
            for i in range(space.m):
                raw |= ((st >> ((i * n + j) * w)) & code_mask) << shift
                shift += k + 1
            got = cols.lookup_raw(raw)
            if got is None:
                return float("inf")
            total += got
        return space.cl * total
    codes = [((st >> (o * w)) & code_mask) & line_mask for o in range(space.outputs)]
    total = _spilled(space, st)
    for i in range(space.m):
        total += _line(rows, full, (key >> (i * k)) & full, codes[i * n:(i + 1) * n])
    for j in range(n):
        total += _line(cols, full, (key >> (space.na + j * k)) & full, codes[j::n])
    return space.cl * total


def _spilled(space, st: int) -> int:
    full, inreg, w = space.full, space.inreg, space.width
    count = 0
    for o in range(space.outputs):
        c = (st >> (o * w)) & ((1 << w) - 1)
        if not c & inreg and 0 < (c & full) < full:
            count += 1
    return count


def _line(table, full: int, vals: int, line: list[int]) -> float:
    if table is not None:
        got = table.lookup(vals, line)
        return float("inf") if got is None else got
    needed = 0
    for c in line:
        needed |= full & ~c
    return (needed & ~vals).bit_count()
