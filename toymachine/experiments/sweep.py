"""Run a generator over a grid of parameters: the seed's cost tables, for any size.

    >>> rows = sweep("matmul", {"n": [2], "registers": "3..6", "schedule": ["inner", "outer"]})
    >>> [(r.params["registers"], r.params["schedule"], r.cycles) for r in rows][:4]
    [(3, 'inner', 25), (3, 'outer', 28), (4, 'inner', 23), (4, 'outer', 24)]

Each point is generated, simulated (``simulate(program, machine)``: the generator's own
machine for that point, e.g. with exactly R registers so the budget is enforced), and set
beside the closed-form ``cost`` and the lower ``bound`` of the generator's registry entry.

Values syntax (``parse_values``), for one parameter:

``7``            one value
``2,4,8``        a list
``3..6``         an inclusive range, step 1: 3, 4, 5, 6
``2..16+2``      step 2: 2, 4, …, 16
``10..100000*10`` a geometric range: 10, 100, …, 100000
``inner,outer``  a list of choices; lists and ranges mix: ``1,2,4..8``
"""

from __future__ import annotations

__all__ = ["SweepRow", "parse_values", "expand_grid", "sweep", "simulate_point", "sweep_report", "plot_sweep", "check_plot",
           "METRICS"]

import inspect
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cost import Bound, Cost
from ..errors import ConfigError, Opt, ToyMachineError
from ..gen.registry import GeneratorSpec, Param, get_generator
from ..limits import LIMITS
from ..machine import DEFAULT_MACHINE, Machine
from ..render.report import Report, Section
from ..sim import simulate
from .columns import column
from .parallel import run_points
from .plot import METRICS, check_plot, plot_sweep
from .simulable import CHECK_ELEMENTS, closed_form_point, guarded, point_error, simulable

_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)(?:([+*])(\d+))?$")
MAX_POINTS_PER_RANGE = 100_000


def parse_values(text: str | int, param: Param) -> list:
    """Values of ``param`` from ``text`` (see the module docstring for the syntax)."""
    values: list = []
    for item in (s.strip() for s in str(text).split(",")):
        if not item:
            raise ConfigError((Opt(param.name), f": empty value in '{text}'"), key=param.name,
                              hint="write e.g. 2,4,8 or 3..6")
        values += _parse_item(item, param, text)
    return values


def _parse_item(item: str, param: Param, text: str | int) -> list:
    if param.kind is int:
        if item.lower() == "none" and param.default is None:
            return [None]
        m = _RANGE.match(item)
        if m:
            lo, hi, how, step = int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4) or 1)
            if hi < lo:
                raise ConfigError((Opt(param.name), f": range {item} runs backwards"), key=param.name,
                                  hint=f"write {hi}..{lo}")
            if (how == "+" and step < 1) or (how == "*" and (step < 2 or lo < 1)):
                raise ConfigError((Opt(param.name), f": bad step in {item}"), key=param.name,
                                  hint="a+step needs step ≥ 1; a*factor needs factor ≥ 2 and a ≥ 1")
            count = (hi - lo) // step + 1 if how != "*" else math.floor(math.log(hi / lo, step)) + 1
            LIMITS["sweep_points"].check(count, (Opt(param.name, item), f" ({count:,} values)"))  # before listing them
            out = []
            v = lo
            while v <= hi:
                out.append(v)
                v = v * step if how == "*" else v + step
            return [_checked(v, param) for v in out]
        try:
            return [_checked(int(item), param)]
        except ValueError:
            raise ConfigError((Opt(param.name), f" takes whole numbers, got '{item}' in '{text}'"), key=param.name,
                              hint="write e.g. 4, 2,4,8, 3..6, 2..16+2 or 10..10000*10") from None
    if param.kind is bool:
        lowered = item.lower()
        if lowered in ("true", "yes", "1", "on"):
            return [True]
        if lowered in ("false", "no", "0", "off"):
            return [False]
        raise ConfigError((Opt(param.name), f" takes true or false, got '{item}'"), key=param.name)
    if param.choices is not None and item not in param.choices:
        raise ConfigError.of_option(param.name, f"must be one of {', '.join(param.choices)}; got '{item}'")
    return [item]


def _checked(value: int, param: Param) -> int:
    if param.minimum is not None and value < param.minimum:
        raise ConfigError.of_option(param.name, f"must be at least {param.minimum}, got {value}")
    return value


def expand_grid(spec: GeneratorSpec, grid: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the grid's values (other parameters at their defaults), in the
    order the generator declares its parameters, the last varying fastest."""
    axes: list[list] = []
    for param in spec.params:
        if param.name in grid:
            given = grid[param.name]
            values = parse_values(given, param) if isinstance(given, (str, int)) and not isinstance(given, bool) \
                else list(given)
            if not values:
                raise ConfigError.of_option(param.name, "has no values")
            axes.append(values)
        else:
            axes.append([param.default])
    for name in grid:
        spec.param(name)  # unknown names are errors
    names = [p.name for p in spec.params]
    count = 1
    for axis in axes:
        count *= len(axis)
    LIMITS["sweep_points"].check(count, f"the sweep's grid ({' × '.join(str(len(a)) for a in axes)} values)")
    return [dict(zip(names, combo)) for combo in itertools.product(*axes)]


def _check_work(spec: GeneratorSpec, points: list[dict]) -> None:
    """Refuse, before any point runs, a sweep whose closed-form instruction counts add up past
    ``limits.sweep_work`` (a point the formula cannot cost is left to the simulator's error)."""
    if spec.cost is None:
        return
    cap, total = LIMITS["sweep_work"].value(), 0
    for params in points:
        try:
            total += spec.cost(**params).instructions
        except Exception:  # noqa: BLE001 - the point's own run reports its error
            continue
        if total > cap:
            LIMITS["sweep_work"].check(total, f"the sweep (at least; {len(points):,} points)")


@dataclass(frozen=True)
class SweepRow:
    """One point: its parameters, what the simulator counted, the formula and the bound."""

    params: Mapping[str, Any]
    cycles: float
    loads: int
    stores: int
    reads: int
    writes: int
    registers: int
    ops: Mapping[str, int]
    formula: Cost | None
    formula_cycles: float | None
    bound: Bound | None
    extra: Mapping[str, Any] = field(default_factory=dict)  # intensity; tile machine: sram_peak, flops, time_s, units, …
    source: str = "sim"  # sim: simulated; closed form: too big to simulate (experiments.simulable), the formula's
    error: Mapping[str, str] | None = None  # an infeasible point: {"kind", "message", "hint"}; its counts are 0

    @property
    def sram_peak(self) -> int | None:
        return self.extra.get("sram_peak")

    @property
    def memory_peak(self) -> int | None:
        """Peak bytes in HBM (every array the program declares): what a GPU's peak-memory counter
        shows (seed 003's picture)."""
        peak = self.extra.get("memory_peak")
        return None if peak is None else peak["hbm"]

    @property
    def onchip_peak(self) -> int | None:
        """Peak bytes on chip (SRAM, or a TPU's VMEM)."""
        peak = self.extra.get("memory_peak")
        return None if peak is None else next(v for k, v in peak.items() if k != "hbm")

    def _unit(self, unit: str, key: str):
        units = self.extra.get("units")
        return None if units is None else units[unit][key]

    @property
    def mxu_cycles(self) -> int | None:
        return self._unit("mxu", "cycles")

    @property
    def mxu_utilization(self) -> float | None:
        """MACs / (MXU cycles × one array's cells), the seed's measure."""
        return self._unit("mxu", "utilization")

    @property
    def vpu_cycles(self) -> float | None:
        return self._unit("vpu", "cycles")

    @property
    def time_s(self) -> float | None:
        return self.extra.get("time_s")

    @property
    def flops(self) -> int | None:
        flops = self.extra.get("flops")
        return None if flops is None else sum(flops.values())

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity: FLOPs per byte of HBM traffic on the tile machine, per word on the
        scalar machine (``Result``'s ``intensity``)."""
        ai = self.extra.get("intensity")
        if not ai:
            return None
        return ai["flops_per_byte"] if "sram_peak" in self.extra else ai["flops_per_word"]

    @property
    def matches(self) -> bool | None:
        """Simulated instruction counts, registers and cycles (the same in-order formula on the same
        machine, units included) equal the closed form's (None: no formula)."""
        if self.formula is None or self.source != "sim" or self.error is not None:
            return None
        return dict(self.ops) == dict(self.formula.ops) and self.registers == self.formula.registers and \
            self.formula_cycles is not None and math.isclose(self.cycles, self.formula_cycles, rel_tol=1e-9,
                                                             abs_tol=1e-9)

    @property
    def traffic(self) -> int:
        return self.reads + self.writes

    @property
    def gap(self) -> float | None:
        """DRAM traffic ÷ its lower bound (1.0 = optimal)."""
        if self.bound is None or not self.bound.traffic:
            return None
        return self.traffic / self.bound.traffic


def sweep(generator: str | GeneratorSpec, grid: Mapping[str, Any], machine: Machine | None = None,
          on_point: Callable[[int, int], None] | None = None, *, jobs: int = 1, executor: str = "local",
          scheduler: str | None = None, strict: bool = False) -> list[SweepRow]:
    """Generate, simulate and cost every point of ``grid`` (name → values or a values string).

    A point too big to simulate (``experiments.simulable``) is costed by its closed form, its row says so
    (``source``); an infeasible one (blocks that overflow the SRAM, …) is a row that says why (``error``)
    and the sweep goes on (``strict`` raises). Rows show what the defaults chose (``spec.resolved``).

    ``jobs``: worker processes for the points (``experiments.parallel``; the rows are the same, in
    the same order, for any number); ``executor="dask"`` with ``scheduler`` (``tcp://HOST:PORT``)
    runs them on a Dask cluster instead. ``on_point(done, total)`` counts finished points."""
    spec = get_generator(generator) if isinstance(generator, str) else generator
    base = machine or DEFAULT_MACHINE
    points = expand_grid(spec, grid)
    closed = [spec.cost is not None and spec.size is not None and not simulable(spec.size(**p)) for p in points]
    _check_work(spec, [p for p, c in zip(points, closed) if not c])
    machines = [guarded(strict, spec.machine, params, base) if spec.machine else base for params in points]
    remote = jobs > 1 or executor != "local"
    if remote and _registered(spec) is not spec:  # workers find generators by name: one made here runs here
        if executor != "local":
            raise ConfigError(f"generator '{spec.name}' is not registered: a Dask worker cannot build it",
                              hint="register it (toymachine.gen.register) in a module the workers import (PLUGINS)")
        remote, jobs = False, 1
    target = spec.name if remote else spec
    todo = [i for i, c in enumerate(closed) if not c and isinstance(machines[i], Machine)]
    sims = dict(zip(todo, run_points(simulate_point, [(target, points[i], machines[i], strict) for i in todo],
                                     jobs=jobs, executor=executor, scheduler=scheduler, on_point=on_point)))
    sized_cost = spec.cost is not None and "machine" in inspect.signature(spec.cost).parameters
    rows = []
    for i, params in enumerate(points):
        point_machine = machines[i]
        if not isinstance(point_machine, Machine):  # the point's machine was refused: its error
            rows.append(_failed(params, point_machine))
            continue
        sim = sims.get(i)
        if sim is not None and "error" in sim:
            rows.append(_failed(params, sim["error"]))
            continue
        try:
            formula = spec.cost(**params, **({"machine": point_machine} if sized_cost else {})) if spec.cost \
                else None
        except ToyMachineError as e:
            if strict:
                raise
            rows.append(_failed(params, point_error(e)))
            continue
        formula_cycles = None
        if formula is not None:
            formula_cycles = formula.breakdown.get("unit cycles") if point_machine.has_units \
                else formula.cycles(point_machine)
        if closed[i] and formula is not None:  # closed[i] holds only where the generator has a cost
            sim = guarded(strict, closed_form_point, formula, formula_cycles, point_machine)
            if "kind" in sim:  # the point's error, as a value
                rows.append(_failed(params, sim))
                continue
        chosen = spec.resolved(**params, machine=point_machine) if spec.resolved else {}  # what the defaults chose
        rows.append(SweepRow(params={**params, **{k: v for k, v in chosen.items() if params.get(k) is None}},
                             formula=formula, formula_cycles=formula_cycles,
                             bound=spec.bound(**params) if spec.bound else None,
                             source="closed form" if closed[i] else "sim", **(sim or {})))
    return rows


def _failed(params: Mapping[str, Any], error: Mapping[str, str]) -> SweepRow:
    return SweepRow(params=dict(params), cycles=0, loads=0, stores=0, reads=0, writes=0, registers=0, ops={},
                    formula=None, formula_cycles=None, bound=None, error=dict(error))


def _registered(spec: GeneratorSpec) -> GeneratorSpec | None:
    try:
        return get_generator(spec.name)
    except ConfigError:
        return None


def simulate_point(generator: str | GeneratorSpec, params: Mapping[str, Any], machine: Machine,
                   strict: bool = True) -> dict[str, Any]:
    """Build and simulate one point: what a ``SweepRow`` takes from the run, as plain values (a
    worker process or a Dask worker returns it); not ``strict``: a point's error as ``{"error": …}``."""
    spec = get_generator(generator) if isinstance(generator, str) else generator
    sized = "machine" in inspect.signature(spec.build).parameters  # generators that size blocks for the machine
    try:
        program = spec.build(**params, with_data=False, seed=0, **({"machine": machine} if sized else {}))
        result = simulate(program, machine, steps=False)
    except ToyMachineError as e:
        if strict:
            raise
        return {"error": point_error(e)}
    return dict(cycles=result.cycles, loads=result.ops.get("LOAD", 0), stores=result.ops.get("STORE", 0),
                reads=result.dram_reads, writes=result.dram_writes, registers=result.registers_used,
                ops=dict(result.ops),
                extra={k: result.extra[k] for k in ("sram_peak", "flops", "time_s", "roofline", "intensity", "units",
                                                    "memory_peak") if k in result.extra})


def _shown_params(spec: GeneratorSpec, rows: Sequence[SweepRow]) -> list[str]:
    return [p.name for p in spec.params if any(r.params[p.name] is not None for r in rows)]


_MORE = ("intensity", "mxu_cycles", "mxu_utilization", "vpu_cycles", "memory_peak", "onchip_peak")
_COUNTS = ("cycles", "loads", "stores", "dram_reads", "dram_writes", "registers_used")
_FORMULA = ("formula_cycles", "sim_equals_formula", "lower_bound", "gap")


def sweep_report(rows: Sequence[SweepRow], generator: str | GeneratorSpec) -> Report:
    """The sweep as one table: parameters, simulated counts, formula, bound and gap. Human formats
    list the columns that are the same in every row once, above the table (``Section.collapse``)."""
    spec = get_generator(generator) if isinstance(generator, str) else generator
    names = _shown_params(spec, rows)
    mem = "HBM" if any(r.sram_peak is not None for r in rows) else "DRAM"
    tile = [key for key in ("sram_peak", "flops", "time_s") if any(getattr(r, key) is not None for r in rows)]
    if "time_s" in tile:
        tile.append("bound")
    tile += [key for key in _MORE if any(getattr(r, key) is not None for r in rows)]
    per = "byte" if mem == "HBM" else "word"
    tail = tuple(k for k, shown in (("source", any(r.source != "sim" for r in rows)),
                                    ("why", any(r.error is not None for r in rows))) if shown)
    keys = tuple(names) + _COUNTS + tuple("roofline_bound" if k == "bound" else k for k in tile) + _FORMULA + tail
    headers = tuple(names) + tuple(column(k).header.format(mem=mem, per=per) for k in keys[len(names):])
    table = []
    for r in rows:
        extras = (r.source,) if "source" in tail else ()
        if r.error is not None:
            why = f"{r.error['kind']}: {r.error['message']}" + (f" ({r.error['hint']})" if r.error.get("hint") else "")
            table.append(tuple(r.params[n] for n in names) + (None,) * (len(keys) - len(names) - len(tail))
                         + (("",) if "source" in tail else ()) + (why,))
            continue
        match = {True: "yes", False: "NO", None: ""}[r.matches]
        roof = (r.extra.get("roofline") or {}).get("bound")
        table.append(tuple(r.params[n] for n in names) + (
            r.cycles, r.loads, r.stores, r.reads, r.writes, r.registers) +
            tuple(roof if k == "bound" else _column(r, k) for k in tile) + (
            r.formula_cycles, match, r.bound.traffic if r.bound else None,
            round(r.gap, 3) if r.gap is not None else None) + extras + (("",) if "why" in tail else ()))
    notes = [f"toym sweep {spec.name}: {len(rows)} point(s); sim = formula: simulated instruction counts, registers "
             "and cycles equal the closed form's (toymachine.cost) on the same machine",
             f"lower bound: least {mem} traffic (reads + writes, words) of any program for the same computation; "
             "gap = traffic ÷ lower bound"]
    if "time_s" in tile:
        notes.append("cycles: in order — issue plus every unit's work (HBM words, tensor, vector and SFU FLOPs), "
                     "units never overlapping; time (s, roofline): the units overlapping perfectly, max(HBM time, "
                     "compute time) at the machine's clock; bound: which of the two limits (memory or compute)")
    if "source" in tail:
        notes.append("from: sim — simulated; closed form — too big to simulate (more than "
                     f"{CHECK_ELEMENTS:,} score elements), the closed form's counts, which the simulator equals "
                     "wherever both run (sim = formula)")
    if "why" in tail:
        notes.append("why not: the point did not run and the sweep went on (--strict stops at the first)")
    sources = sorted({r.bound.source for r in rows if r.bound})
    if sources:
        notes.append("bounds used: " + "; ".join(sources))
    align = tuple("r" if spec.param(n).kind is int else "l" for n in names) + ("r",) * (6 + len(tile)) + \
        ("r", "l", "r", "r")
    align = tuple("l" if k == "roofline_bound" else a for k, a in zip(keys, align)) + ("l",) * len(tail)
    return Report(f"sweep {spec.name}", (Section("Sweep", headers, tuple(table), align=align, keys=keys,
                                                 key_columns=len(names), collapse=True),), tuple(notes))


def _column(row: SweepRow, key: str):
    v = getattr(row, key)
    if key == "intensity":
        return None if v is None else float(f"{v:.4g}")  # 4 significant digits
    return round(v, 4) if key == "mxu_utilization" and v is not None else v
