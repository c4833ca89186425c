"""The sweep's one vocabulary of columns: each measure's snake_case name — its JSON key, the name
``--columns`` and ``--y`` take — its readable header (with its unit) in tables, and the older
names still accepted for it (the plot's ``reads``, the headers' ``DRAM reads (words)``, the JSON
keys before they were snake_case: ``registers used``, ``sim = formula`` …).

``COLUMNS`` is the table; ``sweep_report`` takes its keys and headers from it, ``plot`` its
metrics and units, ``toym sweep --columns help`` and the docs print it (``columns_report``). A
generator's parameters (``n``, ``registers``, ``block_m`` …) are columns too, named as the
parameter; a name is looked up as a parameter first, so ``registers`` is the register budget R in
``--columns`` and, where a generator has no such parameter or in ``--y`` (which plots measures
only), an alias of ``registers_used``.
"""

from __future__ import annotations

__all__ = ["Column", "COLUMNS", "column", "metric_key", "column_key", "columns_report", "normalized"]

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, Opt


@dataclass(frozen=True)
class Column:
    key: str  # snake_case: the JSON key, the name --columns and --y take
    header: str  # readable, with its unit; {mem} is DRAM on the scalar machine, HBM on the tile machine
    meaning: str
    unit: str  # the plot's axis unit ("" : not plotted)
    value: Callable[[Any], Any] | None = None  # a SweepRow's number (None: not a --y metric)
    aliases: tuple[str, ...] = ()  # older names, still accepted
    in_table: bool = True  # a column of the table and the JSON (False: a --y metric only)


COLUMNS: tuple[Column, ...] = (
    Column("cycles", "cycles", "simulated cycles", "cycles", lambda r: r.cycles),
    Column("loads", "LOADs", "LOAD instructions", "instructions", lambda r: r.loads),
    Column("stores", "STOREs", "STORE instructions", "instructions", lambda r: r.stores),
    Column("dram_reads", "{mem} reads (words)", "words read from DRAM (tile machine: HBM)", "words",
           lambda r: r.reads, ("reads", "hbm_reads")),
    Column("dram_writes", "{mem} writes (words)", "words written to DRAM (tile machine: HBM)", "words",
           lambda r: r.writes, ("writes", "hbm_writes")),
    Column("traffic", "traffic (words)", "dram_reads + dram_writes (plotted with its lower bound)",
           "words (reads + writes)", lambda r: r.traffic, in_table=False),
    Column("registers_used", "registers used", "registers the program used", "registers", lambda r: r.registers,
           ("registers",)),
    Column("sram_peak", "SRAM peak (words)", "tile machine: most words in SRAM at once", "words",
           lambda r: r.sram_peak),
    Column("flops", "FLOPs", "tile machine: floating-point operations", "FLOPs", lambda r: r.flops),
    Column("time_s", "time (s, roofline)", "machine with a clock: max(HBM time, compute time)", "seconds (roofline)",
           lambda r: r.time_s, ("time",)),
    Column("roofline_bound", "bound", "machine with a clock: which limit the roofline time is (memory or compute)",
           "", None, ("bound",)),
    Column("intensity", "FLOPs/{per}", "FLOPs per word of DRAM traffic (tile machine: per byte of HBM traffic)",
           "FLOPs per byte (tile) or word (scalar)", lambda r: r.intensity),
    Column("mxu_cycles", "MXU cycles", "machine with units: the matrix unit's cycles", "cycles (MXU)",
           lambda r: r.mxu_cycles),
    Column("mxu_utilization", "MXU utilization", "MACs ÷ (MXU cycles × the array's cells)",
           "MACs ÷ (cycles × array cells)", lambda r: r.mxu_utilization),
    Column("vpu_cycles", "VPU cycles", "machine with units: the vector unit's cycles", "cycles (VPU)",
           lambda r: r.vpu_cycles),
    Column("memory_peak", "HBM peak (bytes)", "tile machine: peak bytes in HBM (every array declared)", "bytes (HBM)",
           lambda r: r.memory_peak, ("hbm_peak",)),
    Column("onchip_peak", "on-chip peak (bytes)", "tile machine: peak bytes on chip (SRAM, VMEM)", "bytes (SRAM/VMEM)",
           lambda r: r.onchip_peak),
    Column("formula_cycles", "formula cycles", "the closed form's cycles (toymachine.cost)", "cycles",
           lambda r: r.formula_cycles),
    Column("sim_equals_formula", "sim = formula", "simulated counts, registers and cycles equal the closed form's",
           "", None, ("matches",)),
    Column("lower_bound", "lower bound (words)", "least DRAM traffic of any program for the same computation",
           "words", lambda r: r.bound.traffic if r.bound else None),
    Column("gap", "gap", "traffic ÷ lower bound (1 = optimal)", "× the lower bound", lambda r: r.gap),
    Column("source", "from", "sim: simulated; closed form: too big to simulate, the formula's counts (proven equal "
           "to the simulator where both run)", "", None),
    Column("why", "why not", "an infeasible point: why it did not run (SRAM overflow, a refused parameter, …); "
           "the sweep goes on (--strict stops)", "", None, ("error",)),
)

_BY_KEY = {c.key: c for c in COLUMNS}


def normalized(name: str) -> str:
    """``DRAM reads (words)``, ``dram_reads``, ``--block-m`` → ``dramreads``, ``blockm``: how names
    are compared (case, spaces, ``-``, ``_`` and a unit in parentheses ignored)."""
    return re.sub(r"[\s_\-]+", "", re.sub(r"\(.*?\)", "", name).lower())


def column(key: str) -> Column:
    return _BY_KEY[key]


def _names(c: Column) -> Iterable[str]:
    yield c.key
    yield c.header.replace("{mem}", "DRAM").replace("{per}", "word")
    yield c.header.replace("{mem}", "HBM").replace("{per}", "byte")
    yield from c.aliases


def _lookup(name: str, columns: Iterable[Column]) -> Column | None:
    want = normalized(name)
    return next((c for c in columns if any(normalized(n) == want for n in _names(c))), None)


def metric_key(name: str) -> str:
    """``--y``'s name (a key, a header or an old name) → the metric's key; an unknown name is an error
    listing the metrics, with the closest."""
    found = _lookup(name, (c for c in COLUMNS if c.value is not None))
    if found is None:
        import difflib

        keys = [c.key for c in COLUMNS if c.value is not None]
        names = {normalized(n): c.key for c in COLUMNS if c.value is not None for n in _names(c)}
        close = difflib.get_close_matches(normalized(name), list(names), n=1, cutoff=0.5)
        raise ConfigError(f"unknown metric '{name}'" + (f" (did you mean '{names[close[0]]}'?)" if close else ""),
                          hint=(f"metrics: {', '.join(keys)} (toym sweep ", Opt("columns", "help"), ")"))
    return found.key


def column_key(name: str, params: Iterable[str] = ()) -> str:
    """``--columns``' name → the column's key: a parameter's own name first, then a column's key,
    header or old name; a name neither knows is returned as given (the table then says which)."""
    params = list(params)
    want = normalized(name)
    param = next((p for p in params if normalized(p) == want), None)
    if param is not None:
        return param
    found = _lookup(name, (c for c in COLUMNS if c.in_table))
    return found.key if found is not None else name


def columns_report(params: Iterable[tuple[str, str]] = ()):
    """The vocabulary as a table: name (JSON key), header, meaning, where it is used, older names;
    ``params``: (name, meaning) of a generator's parameters, listed first."""
    from ..render.cells import Code
    from ..render.report import Report, Section

    rows = [(Code(name, md=True), name, meaning, "--columns, --x, JSON", "") for name, meaning in params]
    for c in COLUMNS:
        header = c.header.replace("{mem}", "DRAM").replace("{per}", "word")
        if "{mem}" in c.header or "{per}" in c.header:
            header += " / " + c.header.replace("{mem}", "HBM").replace("{per}", "byte")
        used = ", ".join(w for w, on in (("--columns", c.in_table), ("--y", c.value is not None),
                                         ("JSON", c.in_table)) if on)
        rows.append((Code(c.key, md=True), header, c.meaning, used, ", ".join(c.aliases)))
    return Report("columns", (Section("Columns", ("name", "header", "meaning", "used by", "also accepted"),
                                      tuple(rows)),))
