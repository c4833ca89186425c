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

__all__ = ["SweepRow", "parse_values", "expand_grid", "sweep", "sweep_report", "plot_sweep", "METRICS"]

import inspect
import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..cost import Bound, Cost
from ..errors import ConfigError
from ..gen.registry import GeneratorSpec, Param, get_generator
from ..machine import DEFAULT_MACHINE, Machine
from ..render.report import Report, Section
from ..sim import simulate

_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)(?:([+*])(\d+))?$")
MAX_POINTS_PER_RANGE = 100_000


def parse_values(text: str, param: Param) -> list:
    """Values of ``param`` from ``text`` (see the module docstring for the syntax)."""
    values: list = []
    for item in (s.strip() for s in str(text).split(",")):
        if not item:
            raise ConfigError(f"{param.flag}: empty value in '{text}'", hint="write e.g. 2,4,8 or 3..6")
        values += _parse_item(item, param, text)
    return values


def _parse_item(item: str, param: Param, text: str) -> list:
    if param.kind is int:
        if item.lower() == "none" and param.default is None:
            return [None]
        m = _RANGE.match(item)
        if m:
            lo, hi, how, step = int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4) or 1)
            if hi < lo:
                raise ConfigError(f"{param.flag}: range {item} runs backwards", hint=f"write {hi}..{lo}")
            if (how == "+" and step < 1) or (how == "*" and (step < 2 or lo < 1)):
                raise ConfigError(f"{param.flag}: bad step in {item}",
                                  hint="a+step needs step ≥ 1; a*factor needs factor ≥ 2 and a ≥ 1")
            out = []
            v = lo
            while v <= hi:
                out.append(v)
                v = v * step if how == "*" else v + step
                if len(out) > MAX_POINTS_PER_RANGE:
                    raise ConfigError(f"{param.flag}: {item} has more than {MAX_POINTS_PER_RANGE} values")
            return [_checked(v, param) for v in out]
        try:
            return [_checked(int(item), param)]
        except ValueError:
            raise ConfigError(f"{param.flag} takes whole numbers, got '{item}' in '{text}'",
                              hint="write e.g. 4, 2,4,8, 3..6, 2..16+2 or 10..10000*10") from None
    if param.kind is bool:
        lowered = item.lower()
        if lowered in ("true", "yes", "1", "on"):
            return [True]
        if lowered in ("false", "no", "0", "off"):
            return [False]
        raise ConfigError(f"{param.flag} takes true or false, got '{item}'")
    if param.choices is not None and item not in param.choices:
        raise ConfigError(f"{param.flag} must be one of {', '.join(param.choices)}; got '{item}'")
    return [item]


def _checked(value: int, param: Param) -> int:
    if param.minimum is not None and value < param.minimum:
        raise ConfigError(f"{param.flag} must be at least {param.minimum}, got {value}")
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
                raise ConfigError(f"{param.flag} has no values")
            axes.append(values)
        else:
            axes.append([param.default])
    for name in grid:
        spec.param(name)  # unknown names are errors
    names = [p.name for p in spec.params]
    return [dict(zip(names, combo)) for combo in itertools.product(*axes)]


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
        """Simulated instruction counts and registers equal the closed form (None: no formula)."""
        if self.formula is None:
            return None
        same = dict(self.ops) == dict(self.formula.ops) and self.registers == self.formula.registers
        if "units" in self.extra and "unit cycles" in self.formula.breakdown:  # a machine with units: cycles too
            same = same and self.cycles == self.formula_cycles
        return same

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
          on_point: Callable[[int, int], None] | None = None) -> list[SweepRow]:
    """Generate, simulate and cost every point of ``grid`` (name → values or a values string)."""
    spec = get_generator(generator) if isinstance(generator, str) else generator
    base = machine or DEFAULT_MACHINE
    points = expand_grid(spec, grid)
    rows = []
    sized = {f: "machine" in inspect.signature(f).parameters for f in (spec.build, spec.cost) if f is not None}
    for index, params in enumerate(points):
        point_machine = spec.machine(params, base) if spec.machine else base
        on = {"machine": point_machine} if sized[spec.build] else {}  # generators that size blocks for the machine
        program = spec.build(**params, with_data=False, seed=0, **on)
        result = simulate(program, point_machine, steps=False)
        formula = spec.cost(**params, **({"machine": point_machine} if sized.get(spec.cost) else {})) \
            if spec.cost else None
        formula_cycles = None
        if formula is not None:
            formula_cycles = formula.breakdown.get("unit cycles") if point_machine.has_units \
                else formula.cycles(point_machine)
        rows.append(SweepRow(
            params=dict(params), cycles=result.cycles, loads=result.ops.get("LOAD", 0),
            stores=result.ops.get("STORE", 0), reads=result.dram_reads, writes=result.dram_writes,
            registers=result.registers_used, ops=dict(result.ops), formula=formula,
            formula_cycles=formula_cycles, bound=spec.bound(**params) if spec.bound else None,
            extra={k: result.extra[k] for k in ("sram_peak", "flops", "time_s", "intensity", "units", "memory_peak")
                   if k in result.extra}))
        if on_point is not None:
            on_point(index + 1, len(points))
    return rows


def _shown_params(spec: GeneratorSpec, rows: Sequence[SweepRow]) -> list[str]:
    return [p.name for p in spec.params if any(r.params[p.name] is not None for r in rows)]


def sweep_report(rows: Sequence[SweepRow], generator: str | GeneratorSpec) -> Report:
    """The sweep as one table: parameters, simulated counts, formula, bound and gap."""
    spec = get_generator(generator) if isinstance(generator, str) else generator
    names = _shown_params(spec, rows)
    tile = [key for key in TILE_COLUMNS if any(getattr(r, key) is not None for r in rows)]
    per = "FLOPs/byte" if any(r.sram_peak is not None for r in rows) else "FLOPs/word"
    headers = tuple(names) + ("cycles", "LOADs", "STOREs", "DRAM reads", "DRAM writes", "registers used") + \
        tuple(per if k == "intensity" else TILE_COLUMNS[k] for k in tile) + \
        ("formula cycles", "sim = formula", "lower bound", "gap")
    table = []
    for r in rows:
        match = {True: "yes", False: "NO", None: ""}[r.matches]
        table.append(tuple(r.params[n] for n in names) + (
            r.cycles, r.loads, r.stores, r.reads, r.writes, r.registers) + tuple(_column(r, k) for k in tile) + (
            r.formula_cycles, match, r.bound.traffic if r.bound else None,
            round(r.gap, 3) if r.gap is not None else None))
    notes = [f"toym sweep {spec.name}: {len(rows)} point(s); sim = formula: simulated instruction counts and "
             "registers equal the closed form (toymachine.cost)",
             "lower bound: least DRAM traffic (reads + writes, words) of any program for the same computation; "
             "gap = traffic ÷ lower bound"]
    sources = sorted({r.bound.source for r in rows if r.bound})
    if sources:
        notes.append("bounds used: " + "; ".join(sources))
    align = tuple("r" if spec.param(n).kind is int else "l" for n in names) + ("r",) * (7 + len(tile)) + ("l", "r", "r")
    return Report(f"sweep {spec.name}", (Section("Sweep", headers, tuple(table), align=align),), tuple(notes))


TILE_COLUMNS = {"sram_peak": "SRAM peak", "flops": "FLOPs", "time_s": "time (s)", "intensity": "intensity",
                "mxu_cycles": "MXU cycles",
                "mxu_utilization": "MXU utilization", "vpu_cycles": "VPU cycles", "memory_peak": "HBM peak (B)",
                "onchip_peak": "on-chip peak (B)"}


def _column(row: SweepRow, key: str):
    v = getattr(row, key)
    if key == "intensity":
        return _rounded(v)
    return round(v, 4) if key == "mxu_utilization" and v is not None else v


METRICS = {
    "cycles": lambda r: r.cycles, "loads": lambda r: r.loads, "stores": lambda r: r.stores,
    "reads": lambda r: r.reads, "writes": lambda r: r.writes, "traffic": lambda r: r.traffic,
    "registers": lambda r: r.registers, "sram_peak": lambda r: r.sram_peak, "flops": lambda r: r.flops,
    "time_s": lambda r: r.time_s, "intensity": lambda r: r.intensity,
    "memory_peak": lambda r: r.memory_peak, "onchip_peak": lambda r: r.onchip_peak,
    "mxu_cycles": lambda r: r.mxu_cycles, "vpu_cycles": lambda r: r.vpu_cycles,
    "mxu_utilization": lambda r: r.mxu_utilization,
}


def _rounded(x: float | None) -> float | None:
    """An intensity as the table shows it: 4 significant digits (the plot and JSON-free text)."""
    return None if x is None else float(f"{x:.4g}")


def plot_sweep(rows: Sequence[SweepRow], generator: str | GeneratorSpec, path: str, *, x: str | None = None,
               metric: str = "cycles") -> None:
    """Draw ``metric`` against the swept parameter ``x`` (default: the first that varies),
    one line per combination of the other varying parameters; for ``traffic`` the lower
    bound is drawn dashed. Writes PNG or SVG (by ``path``'s extension). Needs matplotlib."""
    spec = get_generator(generator) if isinstance(generator, str) else generator
    if not path.lower().endswith((".png", ".svg")):
        raise ConfigError(f"--plot {path}: the file must end in .png or .svg")
    if metric not in METRICS:
        raise ConfigError(f"unknown metric '{metric}'", hint=f"metrics: {', '.join(METRICS)}")
    if any(METRICS[metric](r) is None for r in rows):
        raise ConfigError(f"--y {metric}: this sweep does not measure it",
                          hint="sram_peak, flops, memory_peak and onchip_peak need a tile generator; time_s a machine "
                               "with a clock; mxu_cycles, vpu_cycles, mxu_utilization a machine with units "
                               "(e.g. --machine tpu-v5e)")
    varying = [p.name for p in spec.params if len({repr(r.params[p.name]) for r in rows}) > 1]
    if x is None:
        numeric = [n for n in varying if spec.param(n).kind is int]
        if not numeric:
            raise ConfigError("--plot needs a numeric parameter with several values", hint="e.g. --n 2..16")
        x = numeric[0]
    elif x not in varying or spec.param(x).kind is not int:
        raise ConfigError(f"--x {x}: not a numeric parameter with several values in this sweep",
                          hint=f"swept: {', '.join(varying) or 'nothing'}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("--plot needs matplotlib", hint="pip install 'toymachine[plot]'") from None
    series: dict[tuple, list[SweepRow]] = {}
    others = [n for n in varying if n != x]
    for r in rows:
        series.setdefault(tuple(r.params[n] for n in others), []).append(r)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    bounds: dict[tuple, tuple[str, str]] = {}  # (xs, ys) → (label, colour): identical bounds drawn once
    for key, members in series.items():
        members = sorted(members, key=lambda r: r.params[x])
        label = ", ".join(f"{n}={v}" for n, v in zip(others, key)) or spec.name
        xs = [r.params[x] for r in members]
        line, = ax.plot(xs, [METRICS[metric](r) for r in members], marker="o", label=label)
        if metric == "traffic" and all(r.bound for r in members):
            bounds.setdefault((tuple(xs), tuple(r.bound.traffic for r in members)), (label, line.get_color()))
    for (xs, ys), (label, colour) in bounds.items():
        one = len(bounds) == 1
        ax.plot(xs, ys, linestyle="--", color="black" if one else colour,
                label="lower bound" if one else f"lower bound ({label})")
    xs_all = [r.params[x] for r in rows]
    if min(xs_all) > 0 and max(xs_all) / min(xs_all) >= 100:
        ax.set_xscale("log")
    ys_all = [METRICS[metric](r) for r in rows]
    if min(ys_all) > 0 and max(ys_all) / min(ys_all) >= 100:
        ax.set_yscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(metric)
    ax.set_title(f"toym sweep {spec.name}: {metric} against {x}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    try:
        fig.savefig(path, metadata={"Date": None} if path.lower().endswith(".svg") else None)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}", hint="check that the directory exists") from None
    finally:
        plt.close(fig)

