"""Searched matmul schedules for ``toym gen matmul --schedule best`` (seed 000, Problems 1–3 and
the quiz: the least cycles, not a heuristic's).

``matmul_known_table.KNOWN`` holds what ``toymachine.optimize.optimize_matmul`` found for every
shape m×k·k×n with m, n, k ≤ 3 and every register count up to the one where every input is
loaded once (``KNOWN_ACC`` the same for a MAC unit with its own accumulator, ACC); a generated
file: ``python -m toymachine.optimize.matmul_table --write``. The cost stage holds it (not
``gen``) because ``matmul_cost`` prices what the generator emits and may not import a
generator. For ``best`` the generator takes the cheapest of its constructive inner/outer
schedules and the tabulated schedules of the same shape for R' ≤ R registers (a schedule for
fewer registers runs on more), so more registers never cost more; its cost is the table's
instruction counts, which the tests hold equal to the simulator.
"""

from __future__ import annotations

__all__ = ["KnownSchedule", "best_known", "known_program", "known_cost", "optimality"]

from dataclasses import dataclass
from functools import cache

from ..program import ACCUMULATOR, ArrayDecl, Instr, Program, Reg
from . import matmul_known_table


@dataclass(frozen=True)
class KnownSchedule:
    m: int
    n: int
    k: int
    registers: int  # the R it was searched for (it names at most that many registers, besides ACC)
    cycles: int  # at 1 cycle per instruction
    lower_bound: int
    proven: bool
    seconds: float
    instrs: tuple[Instr, ...]
    mac_accumulator: bool = False  # searched for a MAC unit with its own accumulator (ACC)

    @property
    def ops(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for ins in self.instrs:
            counts[ins.op] = counts.get(ins.op, 0) + 1
        return counts

    @property
    def registers_used(self) -> int:
        """Registers of the register file it names (ACC, in the MAC unit, is not one)."""
        return len({a.name for ins in self.instrs for a in ins.args if isinstance(a, Reg) and a.name != ACCUMULATOR})


def table(mac_accumulator: bool = False) -> dict:
    """(m, n, k, R) → (cycles, lower_bound, proven, seconds, schedule text or "")."""
    return getattr(matmul_known_table, "KNOWN_ACC", {}) if mac_accumulator else matmul_known_table.KNOWN


@cache
def _entry(m: int, n: int, k: int, registers: int, mac_accumulator: bool = False) -> KnownSchedule | None:
    row = table(mac_accumulator).get((m, n, k, registers))
    if row is None or not row[4]:
        return None
    from ..asm import parse

    cycles, lower, proven, seconds, text = row
    instrs = tuple(Instr(i.op, i.args) for i in parse(text).instrs)  # generated: no source lines
    return KnownSchedule(m, n, k, registers, cycles, lower, proven, seconds, instrs, mac_accumulator)


def best_known(m: int, n: int, k: int, registers: int, constructive_cycles: float,
               mac_accumulator: bool = False) -> KnownSchedule | None:
    """The cheapest tabulated schedule for R' ≤ ``registers``, if it beats the constructive one."""
    best = None
    tabulated = sorted(r for (mm, nn, kk, r) in table(mac_accumulator) if (mm, nn, kk) == (m, n, k) and r <= registers)
    for r in tabulated:  # (the table's register counts, not 1 … R: R may be 10⁹)
        e = _entry(m, n, k, r, mac_accumulator)
        if e is not None and e.cycles < constructive_cycles and (best is None or e.cycles < best.cycles):
            best = e
    return best


def optimality(m: int, n: int, k: int, registers: int, mac_accumulator: bool = False) -> tuple[int, bool] | None:
    """(least cycles, proven) the table knows for exactly this machine, or None. Beyond the
    last register count tabulated for a shape, every input is loaded once: proven."""
    known = table(mac_accumulator)
    rs = [r for (mm, nn, kk, r) in known if (mm, nn, kk) == (m, n, k)]
    if not rs or registers < min(rs):
        return None
    row = known[(m, n, k, min(registers, max(rs)))]
    return row[0], row[2] or registers > max(rs)


def known_cost(m: int, n: int, k: int, registers: int, constructive_cycles: float, mac_accumulator: bool = False):
    """The ``Cost`` of the tabulated schedule ``best`` uses, or None (the constructive one is used)."""
    from .common import Cost

    e = best_known(m, n, k, registers, constructive_cycles, mac_accumulator)
    if e is None:
        return None
    a = sum(1 for ins in e.instrs if ins.op == "LOAD" and ins.mem(0).array == "a")
    return Cost(e.ops, e.registers_used, {"A loads": a, "B loads": e.ops.get("LOAD", 0) - a})


def known_program(m: int, n: int, k: int, registers: int, constructive_cycles: float, header_of,
                  arrays: tuple[ArrayDecl, ...], mac_accumulator: bool = False) -> Program | None:
    """The tabulated schedule as a program (``header_of(schedule)`` gives its header), or None."""
    e = best_known(m, n, k, registers, constructive_cycles, mac_accumulator)
    if e is None:
        return None
    return Program(e.instrs, arrays, header=tuple(header_of(e)))
