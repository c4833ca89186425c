"""Copies and near-copies among a class's traces: clusters with a similarity score, never a
change to a grade (a TA decides).

A trace is first put in a **canonical form** that no cosmetic edit changes:

1. it is assembled (comments, blank lines, spacing and letter case go);
2. its instructions form a dependency graph — an instruction depends on the one that last
   wrote each register it reads, a LOAD on the last STORE to the same cell (a block: to the
   same array), a STORE also on the LOADs of that cell since — and are listed in a canonical
   topological order: of the instructions ready, the one with the smallest token (step 3)
   comes first (a heap: n log n), so swapping two independent instructions changes nothing;
3. registers become values: each register read is written as a label of the value it holds,
   a hash of how that value was made (``LOAD a[0][0]`` → ``MAC_Z 1f3a… 9c2e…``; a LOAD of a cell
   the trace stored is the stored value), so renaming registers, allocating them differently or
   reloading a value changes nothing, and an extra instruction changes only the tokens that use
   its value; the operands of ``MAC_Z``, ``MUL``, ``ADD``, ``MAX`` (and the two factors of
   ``MAC``) are sorted, so swapping them changes nothing either.

A trace that does not assemble falls back to its lines with comments and spacing dropped and
registers renamed by first use. The canonical instructions' overlapping ``k``-grams (``K = 3``)
are hashed into a set; the **similarity** of two traces is the Jaccard index of their sets.

Comparing every pair is quadratic; instead each set gets a **MinHash** signature
(``BANDS × ROWS`` = 16 × 4 hash minima) and the signatures are cut into 16 bands: two traces
are compared only when some band of theirs is equal (locality-sensitive hashing: pairs at
Jaccard 0.8 share a band with probability 1 − (1 − 0.8⁴)¹⁶ > 0.999). Traces with the same
canonical form are one item. The work is linear in the class (one signature per trace, one
bucket insert per band) plus one comparison per candidate pair — pairs inside one bucket,
compared all-against-all up to ``FULL_BUCKET`` items and along a chain beyond (a chain of
similar items still joins one cluster).

Traces shorter than ``MIN_INSTRUCTIONS`` join a cluster only when their canonical forms are
identical, and such a cluster is reported as an *identical short trace* (too few ways to write
them for that to mean much), and a cluster holding more than a tenth of the class (at least
``COMMON_MIN`` students) is reported as a *common solution* — the form most correct answers
take, not evidence of copying — as is a cluster whose form is the problem's reference trace.
"""

from __future__ import annotations

__all__ = ["canonical_form", "shingles", "jaccard", "find_clusters", "Cluster", "Pair", "similarity_csv",
           "K", "THRESHOLD", "MIN_INSTRUCTIONS"]

import csv
import hashlib
import heapq
import io
import re
from dataclasses import dataclass

import numpy as np

K = 3
BANDS, ROWS = 16, 4
THRESHOLD = 0.8
MIN_INSTRUCTIONS = 8
FULL_BUCKET = 24
COMMON_MIN = 6

_COMMUTATIVE = {"MAC_Z": 2, "MAC": 2, "ADD": 2, "MUL": 2, "MAX": 2}  # how many leading sources commute
_REG = re.compile(r"\b(?:R\d+|T\d+|ACC)\b", re.IGNORECASE)


def canonical_form(text: str) -> tuple[str, ...]:
    """The trace's instructions in canonical order, registers as distances to their producers."""
    from ..asm import parse
    from ..errors import ToyMachineError
    from ..isa import ISA
    from ..program import Mem, Reg

    try:
        program = parse(text, "<trace>")
    except (ToyMachineError, RecursionError, ValueError):
        return _fallback(text)
    instrs = program.instrs
    n = len(instrs)
    deps: list[set[int]] = [set() for _ in range(n)]
    producer: list[list[int]] = [[] for _ in range(n)]  # per register read, the instruction that wrote it (-1: none)
    writer: dict[str, int] = {}
    memory: dict[str, _ArrayUse] = {}
    flows = [-1] * n  # a LOAD of a cell a STORE wrote: the instruction whose value it stored
    stored: dict[int, int] = {}  # STORE → the instruction whose value it stored
    for i, ins in enumerate(instrs):
        spec = ISA.get(ins.op)
        for k in spec.sources if spec else ():
            arg = ins.args[k] if k < len(ins.args) else None
            w = writer.get(arg.name, -1) if isinstance(arg, Reg) else -1
            producer[i].append(w)
            if w >= 0:
                deps[i].add(w)
        for arg in ins.args:
            if isinstance(arg, Mem):
                use = memory.setdefault(arg.array, _ArrayUse())
                cell = tuple(arg.index) if arg.is_scalar else None
                if ins.op == "STORE":
                    deps[i] |= use.store(cell, i)
                    if cell is not None and spec and spec.sources:
                        stored[i] = producer[i][0] if producer[i] else -1
                else:
                    flows[i] = stored.get(use.stores.get(cell, -1), -1) if cell is not None else -1
                    deps[i] |= use.load(cell, i)
        dest = spec.dest if spec else None
        target = ins.args[dest] if dest is not None and dest < len(ins.args) else None
        if isinstance(target, Reg):
            writer[target.name] = i
    waiting = [len(d) for d in deps]
    users: list[list[int]] = [[] for _ in range(n)]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    swaps = [_COMMUTATIVE.get(ins.op, 0) for ins in instrs]
    mems = [" ".join(str(a) for a in ins.args if isinstance(a, Mem)) for ins in instrs]
    label: list[str] = [""] * n  # the value an instruction computes, by what it is made of
    token: list[str] = [""] * n

    def place(i: int) -> None:  # every producer of i is placed: its token is fixed
        srcs = [label[p] if p >= 0 else "in" for p in producer[i]]
        srcs = sorted(srcs[:swaps[i]]) + srcs[swaps[i]:]
        op = instrs[i].op
        if op == "LOAD" and flows[i] >= 0:  # reads back a stored value: that value
            label[i] = label[flows[i]]
        else:
            label[i] = _h64(f"{op} {mems[i]} {' '.join(srcs)}").to_bytes(8, "big").hex()[:8]
        token[i] = f"{op} {mems[i]} {' '.join(srcs)}".strip()

    ready = []
    for i in range(n):
        if waiting[i] == 0:
            place(i)
            ready.append((token[i], i))
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        text, best = heapq.heappop(ready)
        out.append(text)
        for u in users[best]:
            waiting[u] -= 1
            if waiting[u] == 0:
                place(u)
                heapq.heappush(ready, (token[u], u))
    return tuple(out)


class _ArrayUse:
    """The accesses to one array that a later access must follow: the last STORE to each cell (or
    of a block: ``span``), and the LOADs since. Two accesses conflict when one is a STORE and they
    touch the same cell, or either is a block."""

    def __init__(self) -> None:
        self.stores: dict[tuple, int] = {}
        self.span: int = -1
        self.loads: dict[tuple, list[int]] = {}
        self.span_loads: list[int] = []

    def load(self, cell: tuple | None, i: int) -> set[int]:
        deps = {self.span} if self.span >= 0 else set()
        if cell is None:
            deps |= set(self.stores.values())
            self.span_loads.append(i)
        else:
            if cell in self.stores:
                deps.add(self.stores[cell])
            self.loads.setdefault(cell, []).append(i)
        return deps

    def store(self, cell: tuple | None, i: int) -> set[int]:
        deps = ({self.span} if self.span >= 0 else set()) | set(self.span_loads)
        if cell is None:
            deps |= set(self.stores.values()) | {j for js in self.loads.values() for j in js}
            self.stores, self.loads, self.span_loads, self.span = {}, {}, [], i
        else:
            if cell in self.stores:
                deps.add(self.stores[cell])
            deps |= set(self.loads.pop(cell, []))
            self.stores[cell] = i
        return deps


def _fallback(text: str) -> tuple[str, ...]:
    names: dict[str, str] = {}

    def rename(m: re.Match) -> str:
        return names.setdefault(m.group(0).upper(), f"r{len(names)}")

    lines = []
    for line in text.splitlines():
        code = re.split(r"[;#]", line, maxsplit=1)[0]
        code = " ".join(code.replace(",", " ").split()).upper()
        if code:
            lines.append(_REG.sub(rename, code))
    return tuple(lines)


def _h64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def shingles(form: tuple[str, ...]) -> frozenset[int]:
    """Hashes of the form's overlapping K-grams (the whole form when it is shorter)."""
    if len(form) <= K:
        return frozenset([_h64("\n".join(form))]) if form else frozenset()
    return frozenset(_h64("\n".join(form[i:i + K])) for i in range(len(form) - K + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


_RNG = np.random.default_rng(20261201)
_A = _RNG.integers(1, 2**31, BANDS * ROWS, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
_B = _RNG.integers(0, 2**62, BANDS * ROWS, dtype=np.uint64)


def _signature(items: frozenset[int]) -> np.ndarray:
    x = np.fromiter(items, dtype=np.uint64, count=len(items))
    with np.errstate(over="ignore"):
        return ((_A[:, None] * x[None, :] + _B[:, None]) >> np.uint64(11)).min(axis=1)


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    similarity: float


@dataclass(frozen=True)
class Cluster:
    students: tuple[str, ...]
    similarity: float  # the least similarity along the pairs that joined it
    identical: bool  # every trace has the same canonical form
    common: bool = False  # the form most answers take (or the reference's): not evidence of copying
    pairs: tuple[Pair, ...] = ()
    short: bool = False  # shorter than MIN_INSTRUCTIONS: the same form is weak evidence

    @property
    def kind(self) -> str:
        if self.common:
            return "common solution"
        if self.short:
            return "identical short trace"
        return "identical" if self.identical else "similar"

    @property
    def flagged(self) -> bool:
        """Worth a TA's look: neither the common solution nor a trace too short to tell."""
        return not self.common and not self.short


def find_clusters(traces: dict[str, str], *, threshold: float = THRESHOLD,
                  reference: str | None = None) -> list[Cluster]:
    """Clusters (two or more students) of ``traces`` (student → text) at similarity ≥ ``threshold``."""
    forms: dict[tuple, list[str]] = {}
    for student in sorted(traces):
        form = canonical_form(traces[student])
        if form:
            forms.setdefault(form, []).append(student)
    items = list(forms)
    sets = [shingles(f) for f in items]
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    edges: dict[tuple[int, int], float] = {}
    buckets: dict[tuple, list[int]] = {}
    for i, s in enumerate(sets):
        if len(items[i]) < MIN_INSTRUCTIONS:  # too short to tell near-copies apart: only identical forms count
            continue
        sig = _signature(s)
        for band in range(BANDS):
            buckets.setdefault((band, sig[band * ROWS:(band + 1) * ROWS].tobytes()), []).append(i)
    for members in buckets.values():
        if len(members) < 2:
            continue
        pairs = ([(members[x], members[y]) for x in range(len(members)) for y in range(x + 1, len(members))]
                 if len(members) <= FULL_BUCKET else list(zip(members, members[1:])))
        for i, j in pairs:
            if (i, j) in edges:
                continue
            sim = jaccard(sets[i], sets[j])
            edges[(i, j)] = sim
            if sim >= threshold:
                parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(find(i), []).append(i)
    ref_form = canonical_form(reference) if reference else None
    total = len(traces)
    clusters = []
    for members in groups.values():
        students = tuple(sorted(s for i in members for s in forms[items[i]]))
        if len(students) < 2:
            continue
        joined = [Pair(forms[items[i]][0], forms[items[j]][0], round(sim, 4)) for (i, j), sim in sorted(edges.items())
                  if sim >= threshold and find(i) == find(members[0])]
        same = [Pair(g[0], other, 1.0) for i in members for g in (forms[items[i]],) for other in g[1:]]
        found = tuple(sorted(same + joined, key=lambda p: (p.a, p.b)))
        score = min([p.similarity for p in found] or [1.0])
        common = (len(students) >= COMMON_MIN and len(students) * 10 > total) or \
            (ref_form is not None and any(items[i] == ref_form for i in members))
        short = all(len(items[i]) < MIN_INSTRUCTIONS for i in members)
        clusters.append(Cluster(students, score, len(members) == 1, common, found, short))
    return sorted(clusters, key=lambda c: (not c.flagged, c.common, -len(c.students), c.students))


def similarity_csv(clusters: list[Cluster]) -> str:
    """One row per pair that joined a cluster: cluster, student, student, similarity, kind."""
    from .bookout import csv_cell

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["cluster", "student_a", "student_b", "similarity", "kind"])
    for k, c in enumerate(clusters, 1):
        for p in c.pairs:
            w.writerow([k] + [csv_cell(v) for v in (p.a, p.b, p.similarity, c.kind)])
    return buf.getvalue()
