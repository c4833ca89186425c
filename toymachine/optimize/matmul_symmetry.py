"""Symmetry reduction for the matmul search: one representative per class of equivalent states.

Renaming rows of A (and C), columns of B (and C), or the summation index l maps schedules of
C = A·B to schedules of the same cost; when m = n so does transposing (Cᵀ = Bᵀ·Aᵀ: a_il plays
b_li, output (i, j) plays (j, i)). The group has m!·n!·k! (·2) elements — 432 for the 3×3
product — and states in one orbit have the same optimal cost to go, so the search keeps one
of them: the least packed key over the orbit's candidates.

The candidates are found without enumerating the group: rows and columns are each sorted
by a signature that no renaming of the other indices changes (rows: how many of the row's a
values are resident and the histogram of its outputs' (products done, in a register);
columns likewise with b), and only rows (columns) with equal signatures are tried in every
order. For each such row and column order, l is sorted by the column of bits it carries
through the state (a, b, done, in that order), which is exactly canonical for renaming l.
Equivalent states have the same signatures, so their candidate sets are images of each
other and give the same least key. Bits are permuted by table lookup.
"""

from __future__ import annotations

__all__ = ["Canonicalizer"]

from itertools import permutations, product

from .matmul_space import MatmulSpace


def _orders(sigs: list) -> list[tuple[int, ...]]:
    """Every order of the indices that sorts ``sigs`` (ties in every order)."""
    idx = sorted(range(len(sigs)), key=sigs.__getitem__)
    if len(set(sigs)) == len(sigs):
        return [tuple(idx)]
    groups: list[list[int]] = []
    for i in idx:
        if groups and sigs[groups[-1][0]] == sigs[i]:
            groups[-1].append(i)
        else:
            groups.append([i])
    return [tuple(x for part in parts for x in part) for parts in product(*(permutations(g) for g in groups))]


class Canonicalizer:
    """``canonical(key)``: the orbit representative of a ``MatmulSpace`` state."""

    def __init__(self, space: MatmulSpace):
        self.s = space
        self.transpose = space.m == space.n
        k = space.k
        self.perm_bits = {}  # l order → table: k-bit word → the word with its bits in that order
        for ls in permutations(range(k)):
            table = []
            for word in range(1 << k):
                w = 0
                for l2, l in enumerate(ls):
                    if word >> l & 1:
                        w |= 1 << l2
                table.append(w)
            self.perm_bits[ls] = table
        # an output code's class (products done; resident; in ACC) as a histogram unit: 8 bits per class
        self.hist_unit = [1 << (8 * ((c & space.full).bit_count() * 4 + (c >> k))) for c in range(1 << space.width)]
        self.class_bits = 8 * (4 * k + 4)
        # a k-bit word spread to one field of W bits per l (W = the words of a state: a rows, b
        # columns, outputs); adding spreads shifted by the word's place gives, per l, its bit column
        self.W = space.m + space.n + space.outputs
        self.spread = [sum(1 << (self.W * l) for l in range(k) if word >> l & 1) for word in range(1 << k)]

    def canonical(self, key: int) -> int:
        s = self.s
        m, n, k, full = s.m, s.n, s.k, s.full
        res, codes = s.unpack(key)
        a = [(res >> (i * k)) & full for i in range(m)]  # a[i]: bit l = a_il resident
        b = [(res >> (s.na + j * k)) & full for j in range(n)]  # b[j]: bit l = b_lj resident
        grid = [codes[i * n:(i + 1) * n] for i in range(m)]
        hu, cb = self.hist_unit, self.class_bits
        row_sig = [(a[i].bit_count() << cb) + sum(hu[c] for c in grid[i]) for i in range(m)]
        col_sig = [(b[j].bit_count() << cb) + sum(hu[grid[i][j]] for i in range(m)) for j in range(n)]
        if not self.transpose:
            return self._best(a, b, grid, row_sig, col_sig)
        # transposing swaps the roles of the row and column signatures: the orientation whose
        # sorted row signatures are smaller is the representative's (both when they tie)
        rs, cs = sorted(row_sig), sorted(col_sig)
        if rs < cs:
            return self._best(a, b, grid, row_sig, col_sig)
        gridt = [list(col) for col in zip(*grid)]  # a_il ↔ b_li, output (i, j) ↔ (j, i)
        if rs > cs:
            return self._best(b, a, gridt, col_sig, row_sig)
        return min(self._best(a, b, grid, row_sig, col_sig), self._best(b, a, gridt, col_sig, row_sig))

    def _best(self, a, b, grid, row_sig, col_sig) -> int:
        s = self.s
        k, full = s.k, s.full
        sp, W = self.spread, self.W
        best: int | None = None
        flags = ~full  # resident, in ACC: carried over as they are
        na, width, shift = s.na, s.width, s.ni
        fmask = (1 << W) - 1
        perm_bits = self.perm_bits
        col_orders = _orders(col_sig)
        for rows in _orders(row_sig):
            for cols in col_orders:
                col = 0
                t = W - 1
                for i in rows:
                    col |= sp[a[i]] << t
                    t -= 1
                for j in cols:
                    col |= sp[b[j]] << t
                    t -= 1
                for i in rows:
                    row = grid[i]
                    for j in cols:
                        col |= sp[row[j] & full] << t
                        t -= 1
                sig = [(col >> (W * l)) & fmask for l in range(k)]
                pb = perm_bits[tuple(sorted(range(k), key=sig.__getitem__))]
                res = 0
                pos = 0
                for i in rows:
                    res |= pb[a[i]] << pos
                    pos += k
                pos = na
                for j in cols:
                    res |= pb[b[j]] << pos
                    pos += k
                st = 0
                pos = 0
                for i in rows:
                    row = grid[i]
                    for j in cols:
                        c = row[j]
                        st |= (pb[c & full] | (c & flags)) << pos
                        pos += width
                key = res | (st << shift)
                if best is None or key < best:
                    best = key
        assert best is not None  # _orders gives each signature at least one order
        return best
