"""A schedule the matmul search found, as a program: the canonical states it passed through,
replayed from the actual (unrenamed) start onto concrete registers (``matmul_search``)."""

from __future__ import annotations

__all__ = ["replay", "arrays"]

from ..program import ArrayDecl, Program
from .matmul_space import FROM_ACC, TO_ACC, MatmulSpace


def arrays(m: int, n: int, k: int, seed: int) -> tuple[ArrayDecl, ...]:
    from ..gen.common import input_values

    return (ArrayDecl("a", (m, k), values=input_values(seed, "a", (m, k), integers=True)),
            ArrayDecl("b", (k, n), values=input_values(seed, "b", (k, n), integers=True)))


def replay(space: MatmulSpace, canon, states: list[tuple[int, float]], m: int, n: int, k: int,
           seed: int | None) -> Program:
    """A concrete schedule through the canonical ``states``: from the actual (unrenamed) state,
    take a move whose child is equivalent to the next canonical state, and replay the moves'
    events on concrete registers (lowest free register first)."""
    from ..gen.common import ProgramBuilder

    events: list = []
    space.closure(0, [0] * space.outputs, events)
    key = space.root()
    for target, _ in states:
        # the cheapest move to a state equivalent to the target (a state's recorded g may have
        # dropped after its children were recorded: never more than the recorded difference)
        res, codes = space.unpack(key)
        best = min(((cost, i, move) for i, (move, child, cost) in enumerate(space.moves(key))
                    if canon(child) == target), default=None)
        if best is None:  # pragma: no cover - the search only records states it reached by a move
            raise AssertionError("schedule reconstruction lost its way")
        key, _ = space.apply(res, codes, best[2], events)
    R = space.registers
    b = ProgramBuilder(accumulator=R if space.accumulator else None)  # register number R is ACC
    regs: list[int | None] = [None] * R
    where: dict[int, int] = {}  # value id → register number (R: ACC)
    ni = space.ni

    def free() -> int:
        return regs.index(None)

    def put(v: int, r: int) -> None:
        if r < R:
            regs[r] = v
        where[v] = r

    def release(v: int) -> int | None:
        r = where.pop(v, None)
        if r is not None and r < R:
            regs[r] = None
        return r

    def take(v: int) -> int:
        r = release(v)
        if r is None:  # pragma: no cover - the events only move values that are in a register
            raise AssertionError(f"schedule reconstruction: value {v} is in no register")
        return r

    for ev in events:
        kind = ev[0]
        if kind == "drop":
            release(ev[1])
        elif kind in ("spill", "store"):
            r = take(ni + ev[1])
            b.store(r, *space.value_name(ni + ev[1]))
        elif kind == "load":
            r = free()
            b.load(*space.value_name(ev[1]), r)
            put(ev[1], r)
        elif kind == "reload":
            r = free()
            b.load(*space.value_name(ni + ev[1]), r)
            put(ni + ev[1], r)
        elif kind == "mac_z":
            _, o, l, overwrite, to_acc = ev
            x, y = space.opnds[o][l]
            ra, rb = where[x], where[y]
            rd = R if to_acc else (take(overwrite) if overwrite is not None else free())
            b.op("MAC_Z", ra, rb, rd)
            put(ni + o, rd)
        else:  # mac: in place, into ACC, or out of it into a register
            _, o, l, dest, overwrite = ev
            x, y = space.opnds[o][l]
            ra, rb = where[x], where[y]
            rc = take(ni + o)
            if dest == TO_ACC:
                rd = R
            elif dest == FROM_ACC:
                rd = take(overwrite) if overwrite is not None else free()
            else:
                rd = rc
            b.op("MAC", ra, rb, rc, rd)
            put(ni + o, rd)
    return b.program([], arrays(m, n, k, seed) if seed is not None else ())
