"""Provably optimal matmul schedules on the scalar machine (seed 000, Problems 1–3 and the quiz:
"28 cycles … or less?", "with 6 registers, what is the best inner-product scheme?").

``optimize_matmul(n=2, registers=3)`` searches the schedules of C = A·B (A m×k, B k×n) —
LOAD / MAC_Z / MAC / STORE sequences over R registers, the space ``matmul_space`` defines
precisely — for the least cycles under the machine's per-instruction cycles, by A* over
canonical states:

* states are canonical: the register contents as a set (registers are interchangeable),
  outputs by progress, one representative per class of renamings of rows, columns and the
  summation index (``matmul_symmetry``: 432 renamings of a 3×3 product); moves are macro
  moves (load just in time, then one product) followed by a closure of moves that are never
  worse (``matmul_space``: dominance);
* the bound h (``matmul_space.bound``) is admissible: LOAD cycles × (the exact least loads of
  every row's and every column's sub-problem — ``matmul_bound`` — which is never below "every
  input still needed and not resident is loaded once" — plus spilled partial sums). With
  pathmax (f never decreases along a path) and re-opening, the first complete schedule A*
  takes off its queue is optimal, and the least f on the queue bounds the optimum below;
* the incumbent is the better of the constructive inner/outer schedules
  (``toymachine.gen.matmul``), improved by beam searches of widths 1, 4, 16 … (a quarter of the
  time limit at most) and greedy dives from the queue; children with f ≥ the incumbent are
  not kept. If the queue runs out below the incumbent, the incumbent is proven optimal.

Cost of a schedule: LOADs·LOAD + STOREs·STORE + mn·MAC_Z + mn(k − 1)·MAC cycles, STOREs = mn
plus one per spill. With a time limit (or a state limit) the search returns the best
schedule found so far with ``lower_bound`` < ``cycles`` (the gap); ``proven_optimal`` says
whether the search completed.
"""

from __future__ import annotations

__all__ = ["MatmulOptimum", "optimize_matmul"]

import heapq
import time
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..machine import DEFAULT_MACHINE, Machine
from ..params import command_line
from ..program import Program
from .matmul_replay import arrays as _arrays
from .matmul_replay import replay as _program
from .matmul_space import MatmulSpace
from .matmul_symmetry import Canonicalizer

DEFAULT_TIME_LIMIT = 60.0  # seconds
DEFAULT_STATE_LIMIT = 3_000_000  # states kept (about 200 bytes each)
DIVE_EVERY = 1000  # expansions between greedy dives
DEFAULT_BEAM = 64  # width of the beam search that seeds the incumbent
CACHE_LIMIT = 400_000  # raw children whose bound and canonical key are remembered


@dataclass(frozen=True)
class MatmulOptimum:
    """The best schedule found, what it costs, and how sure we are it is the best."""

    m: int
    n: int
    k: int
    registers: int
    program: Program  # a runnable trace (with .data for A and B)
    cycles: float  # on ``machine``
    ops: dict  # mnemonic → count
    lower_bound: float  # no schedule in the space costs less
    proven_optimal: bool
    states_explored: int  # states expanded (taken off the queue)
    states_stored: int  # distinct states reached
    seconds: float
    found_by: str  # "search" or "constructive (inner)" / "constructive (outer)"
    spills: bool  # whether spilling partial sums was part of the space
    machine: Machine = field(default=DEFAULT_MACHINE, repr=False)
    static_bound: float = 0.0  # every input loaded once, every output stored once, every product made once
    mac_accumulator: bool = False  # the MAC unit's ACC was one more (partial-sum-only) slot

    @property
    def gap(self) -> float:
        return self.cycles - self.lower_bound

    @property
    def loads(self) -> int:
        return self.ops.get("LOAD", 0)

    def to_dict(self) -> dict:
        return {
            "m": self.m, "n": self.n, "k": self.k, "registers": self.registers,
            "cycles": self.cycles, "lower_bound": self.lower_bound, "gap": self.gap,
            "proven_optimal": self.proven_optimal, "static_bound": self.static_bound,
            "ops": dict(self.ops), "loads": self.loads,
            "states_explored": self.states_explored, "states_stored": self.states_stored,
            "seconds": round(self.seconds, 3), "found_by": self.found_by, "spills": self.spills,
            "mac_accumulator": self.mac_accumulator,
            "machine": self.machine.name, "program": self.program.to_text(),
        }


def _check(n, registers, m, k, time_limit, accumulator: bool) -> tuple[int, int, int]:
    from ..cost.matmul import check_matmul_registers
    from ..params import check_int

    n = check_int("n", n, 1)
    m = n if m is None else check_int("m", m, 1)
    k = n if k is None else check_int("k", k, 1)
    check_matmul_registers(registers, accumulator)
    if time_limit is not None and not time_limit > 0:
        raise ConfigError.of_option("time_limit", f"must be a positive number of seconds, got {time_limit!r}")
    from ..limits import LIMITS

    LIMITS["search_size"].check(m * n * k, f"the schedule search for {m}×{k}·{k}×{n} ({m * n * k:,} products)")
    return m, n, k


def fixed_cycles(m: int, n: int, k: int, machine: Machine) -> float:
    """Cycles every schedule spends besides LOADs and spills: mn MAC_Z, mn(k − 1) MAC, mn STORE."""
    return m * n * (machine.op_cycles("MAC_Z") + machine.op_cycles("STORE")) + m * n * (k - 1) * machine.op_cycles("MAC")


def program_cycles(program: Program, machine: Machine) -> tuple[float, dict]:
    ops: dict[str, int] = {}
    for ins in program.instrs:
        ops[ins.op] = ops.get(ins.op, 0) + 1
    order = ("LOAD", "MAC_Z", "MAC", "STORE")
    ops = {op: ops[op] for op in order if op in ops}
    return sum(c * machine.op_cycles(op) for op, c in ops.items()), ops


def _constructive(m: int, n: int, k: int, registers: int, machine: Machine,
                  accumulator: bool) -> tuple[Program, str]:
    """The cheaper of the generator's inner- and outer-product families (never a table entry)."""
    from ..gen import matmul_program

    best: tuple[float, Program, str] | None = None
    for family in ("inner", "outer"):
        try:
            prog = matmul_program(n, registers, family, m=m, k=k, with_data=False, mac_accumulator=accumulator)
        except ConfigError:  # outer needs more registers than an ACC machine with 2 has
            continue
        cycles, _ = program_cycles(prog, machine)
        if best is None or cycles < best[0]:
            best = (cycles, prog, family)
    assert best is not None  # the inner-product family fits every machine
    return best[1], f"constructive ({best[2]})"


def optimize_matmul(n: int = 2, registers: int = 3, *, m: int | None = None, k: int | None = None,
                    machine: Machine | None = None, time_limit: float | None = DEFAULT_TIME_LIMIT,
                    spills: bool = False, symmetry: bool = True, state_limit: int = DEFAULT_STATE_LIMIT,
                    beam_width: int = DEFAULT_BEAM, seed: int = 0, with_data: bool = True,
                    mac_accumulator: bool | None = None) -> MatmulOptimum:
    """The least-cycle schedule of C = A·B (A m×k, B k×n; m, k default to n) on ``registers``
    registers, with the machine's per-instruction cycles. ``spills`` adds spilling partial
    sums (STORE to c, LOAD back) to the space; ``symmetry`` keeps one state per class of
    renamings; ``beam_width`` is the widest of the beam searches (widths 1, 4, 16 …) that seed
    the incumbent (0: none).
    ``mac_accumulator`` (default: the machine's): the MAC unit keeps its own accumulator, ACC,
    besides the R registers. See the module docstring."""
    machine = machine or DEFAULT_MACHINE
    acc = bool(machine.mac_accumulator if mac_accumulator is None else mac_accumulator)
    m, n, k = _check(n, registers, m, k, time_limit, acc)
    t0 = time.perf_counter()
    space = MatmulSpace(m, n, k, registers, load_cycles=machine.op_cycles("LOAD"),
                        store_cycles=machine.op_cycles("STORE"), spills=spills, accumulator=acc)
    fixed = fixed_cycles(m, n, k, machine)
    static = machine.op_cycles("LOAD") * (m * k + k * n) + fixed
    incumbent, found_by = _constructive(m, n, k, registers, machine, acc)
    search = _Search(space, Canonicalizer(space).canonical if symmetry else None,
                     program_cycles(incumbent, machine)[0] - fixed)
    deadline = None if time_limit is None else t0 + time_limit
    if beam_width:  # beams of widths 1, 4, 16 … seed the incumbent, in at most a quarter of the time
        width = 1
        while True:
            search.beam(min(width, beam_width), None if time_limit is None else t0 + time_limit / 4)
            if width >= beam_width or (time_limit is not None and time.perf_counter() > t0 + time_limit / 4):
                break
            width *= 4
    search.astar(deadline, state_limit)
    if search.best is not None:
        end_state, tail = search.best
        states = _path_to(search.table, end_state) + tail
        program = _program(space, search.canon, states, m, n, k, seed if with_data else None)
        found_by = "search"
    else:
        program = Program(incumbent.instrs, _arrays(m, n, k, seed) if with_data else ())
    cycles, ops = program_cycles(program, machine)
    lower = search.lower + fixed
    if cycles < lower or (search.proven and cycles != lower):  # pragma: no cover - the bound would be wrong
        raise AssertionError(f"internal: schedule of {cycles} cycles against a bound of {lower}")
    program = Program(program.instrs, program.arrays,
                      header=tuple(_header(m, n, k, registers, machine, ops, cycles, lower, search.proven, found_by, acc)))
    return MatmulOptimum(m, n, k, registers, program, cycles, ops, lower, search.proven, search.expanded,
                         len(search.table), time.perf_counter() - t0, found_by, spills, machine, static, acc)


class _Search:
    """A* with an incumbent (``upper``), greedy dives and a seeding beam search.

    Costs here are the search's ``g`` (LOADs and spill STOREs, in cycles); ``table`` maps each
    canonical state reached to (g, parent); ``best`` is (state, [(state, g) …]) of the best
    schedule found, if it beats the incumbent."""

    def __init__(self, space: MatmulSpace, canon, upper: float):
        self.space = space
        self.canon = canon or (lambda key: key)
        self.upper = upper
        self.best: tuple[int, list] | None = None
        self.root = self.canon(space.root())
        self.table: dict[int, tuple] = {self.root: (0.0, None)}
        self.lower = space.bound(self.root)
        self.proven = False
        self.expanded = 0
        self.cache: dict[int, list] = {}  # raw child → [bound, canonical key or None]

    def children(self, key: int, g: float, f: float):
        """(canonical child, g, f) of every move whose f stays below the incumbent. Children
        recur (different parents, different moves): a cache keeps each one's bound and
        canonical key."""
        space, canon, upper, cache = self.space, self.canon, self.upper, self.cache
        for _, child, cost in space.moves(key):
            g2 = g + cost
            hit = cache.get(child)
            if hit is None:
                if len(cache) >= CACHE_LIMIT:
                    cache.clear()
                hit = cache[child] = [space.bound(child), None]
            f2 = g2 + hit[0]
            if f2 < f:
                f2 = f  # pathmax: f never decreases along a path
            if f2 < upper:
                if hit[1] is None:
                    hit[1] = canon(child)
                yield hit[1], g2, f2

    def _improve(self, g: float, start: int, path: list) -> None:
        if g < self.upper:
            self.upper, self.best = g, (start, path)

    def dive(self, key: int, g: float) -> None:
        """Greedy completion from ``key``: follow the child of least f (then most g) to a goal."""
        start, path = key, []
        f = g + self.space.bound(key)
        while not self.space.is_goal(key):
            best = min(((f2, -g2, child) for child, g2, f2 in self.children(key, g, f)), default=None)
            if best is None:
                return
            f, g, key = best[0], -best[1], best[2]
            path.append((key, g))
        self._improve(g, start, path)

    def beam(self, width: int, deadline: float | None) -> None:
        """Breadth-first by moves, keeping the ``width`` states of least (f, −g) per level."""
        level = [(self.space.bound(self.root), 0.0, self.root)]
        parents: list[dict[int, tuple]] = [{self.root: (0.0, None)}]  # per level: state → (g, parent)
        while level:
            if deadline is not None and time.perf_counter() > deadline:
                return
            nxt: dict[int, tuple] = {}
            for f, g, key in level:
                if self.space.is_goal(key):
                    if g < self.upper:
                        path, k2 = [], key
                        for depth in range(len(parents) - 1, 0, -1):
                            path.append((k2, parents[depth][k2][0]))
                            k2 = parents[depth][k2][1]
                        self._improve(g, self.root, path[::-1])
                    continue
                for child, g2, f2 in self.children(key, g, f):
                    if child not in nxt or (f2, -g2) < nxt[child][:2]:
                        nxt[child] = (f2, -g2, key)
            ranked = sorted(nxt.items(), key=lambda kv: (kv[1][0], kv[1][1], kv[0]))[:width]
            parents.append({child: (-neg_g2, parent) for child, (_, neg_g2, parent) in ranked})
            level = [(f2, -neg_g2, child) for child, (f2, neg_g2, _) in ranked]

    def astar(self, deadline: float | None, state_limit: int) -> None:
        space, table = self.space, self.table
        heap = [(self.lower, 0.0, self.root)]
        while heap:
            f, neg_g, key = heapq.heappop(heap)
            g = -neg_g
            if f >= self.upper:
                break  # every state left costs at least the incumbent
            if table[key][0] < g:
                continue  # a cheaper way here was found after this entry was queued
            self.lower = max(self.lower, f)
            if space.is_goal(key):
                self.upper, self.best = g, (key, [])
                break
            self.expanded += 1
            if self.expanded % 64 == 0 and ((deadline is not None and time.perf_counter() > deadline)
                                            or len(table) > state_limit):
                return  # out of time or memory: lower stays the least f still queued
            if self.expanded % DIVE_EVERY == 0:
                self.dive(key, g)
            for child, g2, f2 in self.children(key, g, f):
                old = table.get(child)
                if old is None or g2 < old[0]:
                    table[child] = (g2, key)
                    heapq.heappush(heap, (f2, -g2, child))
        self.lower, self.proven = self.upper, True  # nothing cheaper than the incumbent exists


def _path_to(table: dict, key: int) -> list[tuple[int, float]]:
    """(canonical state, g) from the root's child to ``key``."""
    states: list[tuple[int, float]] = []
    while table[key][1] is not None:
        states.append((key, table[key][0]))
        key = table[key][1]
    return states[::-1]


def _header(m, n, k, registers, machine, ops, cycles, lower, proven, found_by, acc=False) -> list[str]:
    counts = " + ".join(f"{c} {op}" for op, c in ops.items())
    status = ("proven optimal (the search completed)" if proven
              else f"best found; lower bound {lower:g} cycles (gap {cycles - lower:g})")
    return [
        f"C = A·B on a {registers}-register toy machine{' with an accumulator in the MAC unit (ACC)' if acc else ''} "
        f"(seed 000: matmul): A {m}×{k}, B {k}×{n}, C {m}×{n}",
        command_line("optimize matmul", m=m, n=n, k=k, registers=registers, mac_accumulator=acc or None)
        + f"; machine {machine.name}",
        f"cost: {counts} = {cycles:g} cycles; {status}; schedule found by {found_by}",
    ]
