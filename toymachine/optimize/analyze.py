"""How far a trace is from an optimal register allocation of its own order of computation.

``analyze(program, registers=R)`` keeps the trace's computation — the sequence of its
non-memory instructions (MAC, MAX, EXP, …) and which values each reads and writes — fixed,
and asks how few LOADs and STOREs *any* register allocation of that same sequence needs on
R registers (seed 000: "28 cycles … or less?" — the naive 2×2 matmul reloads a01; the
serpentine order keeps it).

**Values** (``trace_flow``): a LOAD gives a word's current value, a computing instruction
makes a new value, a STORE puts one in a word; each word whose final content is new is an
*output*, owing one STORE.

**The allocation** (``allocate``) serves the uses in the trace's order with R registers: a
use whose value is not resident costs a LOAD (its first use, or a reload after an eviction);
a computed value is *dirty* until written back, so evicting one that is used again costs a
STORE (a spill, to a scratch word) as well as the reload, and each output costs its one STORE
(written back when evicted, or at the end). An instruction's destination may overwrite one of
its own sources. ``TraceAnalysis.program`` is that allocation written out: the trace's
instructions in the trace's order, on R registers, with the allocation's LOADs and STOREs
(``toym analyze --emit``).

* **Fewest LOADs** — Belady's MIN (evict the value whose next use is furthest; a value never
  used again first) is optimal for the number of loads (misses) of a fixed reference string,
  destinations included (Belady 1966; the exchange argument of Mattson et al. 1970).
* **Fewest LOADs + STOREs** is NP-hard once values can be dirty (Farach-Colton & Liberatore,
  "On local register allocation", J. Algorithms 2000). We run MIN and a clean-first variant
  (evict clean values before dirty live ones) and keep the cheaper; its total is proven
  optimal when it equals the bound MIN-loads + output STOREs, else that bound is the gap.

**Redundant LOADs**: LOADs whose value is never used, and — when the trace loads more than
MIN — each trace LOAD whose value the MIN allocation still holds in a register at the use
the LOAD serves: "line 9 reloads a[0][1], which an optimal allocation would have kept in a
register since line 4". There are at least (trace LOADs − MIN) of them; there can be more,
when MIN keeps different values than the trace and reloads others instead (the report says
so). A trace whose LOAD count is already MIN's has none, whatever it keeps.

The bound for the outputs in *any* order: every input word read once, every output word
written once (``compulsory``).
"""

from __future__ import annotations

__all__ = ["TraceAnalysis", "RedundantLoad", "analyze"]

from dataclasses import dataclass, field

from ..errors import ConfigError, Opt
from ..machine import DEFAULT_MACHINE, Machine
from ..program import Program
from .allocate import allocate
from .trace_flow import Flow, trace_flow


@dataclass(frozen=True)
class RedundantLoad:
    line: int  # the LOAD's line
    instruction: str
    value: str  # the word it loads, e.g. "a[0][1]"
    kept_since: int  # line of the value's previous use or definition (0: never used)
    note: str


@dataclass(frozen=True)
class TraceAnalysis:
    file: str
    registers: int  # R the allocation has
    trace_registers: int  # registers the trace names
    instructions: int
    trace_loads: int
    trace_stores: int
    min_loads: int  # Belady's MIN on the trace's order
    alloc_loads: int  # the cheaper allocation (MIN or clean-first): its LOADs …
    alloc_stores: int  # … and STOREs
    output_stores: int  # words whose final content is new: one STORE each in any allocation
    compulsory_loads: int  # distinct words read: any order of computation reads each once
    proven_optimal: bool  # alloc_loads + alloc_stores == min_loads + output_stores
    redundant: tuple[RedundantLoad, ...]
    trace_cycles: float
    alloc_cycles: float
    program: Program = field(repr=False)  # the allocation written out
    machine: Machine = field(default=DEFAULT_MACHINE, repr=False)

    @property
    def lower_bound(self) -> int:
        """LOADs + STOREs no allocation of this order beats."""
        return self.min_loads + self.output_stores

    def to_dict(self) -> dict:
        return {
            "file": self.file, "registers": self.registers, "trace_registers": self.trace_registers,
            "instructions": self.instructions,
            "trace": {"loads": self.trace_loads, "stores": self.trace_stores, "cycles": self.trace_cycles},
            "optimal_allocation": {"loads": self.alloc_loads, "stores": self.alloc_stores,
                                   "cycles": self.alloc_cycles, "min_loads": self.min_loads,
                                   "proven_optimal": self.proven_optimal},
            "lower_bound": self.lower_bound,
            "any_order_bound": {"loads": self.compulsory_loads, "stores": self.output_stores},
            "redundant_loads": [r.__dict__ for r in self.redundant],
        }


def analyze(program: Program | str, registers: int | None = None, machine: Machine | None = None) -> TraceAnalysis:
    """Analyse a scalar trace (a ``Program`` or assembly text): see the module docstring.
    ``registers`` defaults to the machine's, else to the registers the trace names."""
    from ..asm import parse
    from ..sim import simulate

    machine = machine or DEFAULT_MACHINE
    if isinstance(program, str):
        program = parse(program)
    run = simulate(program, machine, steps=False)  # a trace that does not run is reported as the simulator does
    flow, trace_regs = trace_flow(program)
    R = registers if registers is not None else (machine.registers or trace_regs)
    if not isinstance(R, int) or isinstance(R, bool) or R < 1:
        raise ConfigError.of_option("registers", f"must be a whole number ≥ 1, got {R!r}")
    widest = max((len(set(vals)) + (1 if out is not None and not vals else 0) for _, vals, out, _ in flow.uses),
                 default=0)
    if widest > R:
        raise ConfigError(f"an instruction of this trace reads {widest} different values at once; {R} registers "
                          f"cannot hold them", key="registers", hint=("use ", Opt("registers", widest), " or more"))
    belady = allocate(flow, R, clean_first=False)
    chosen = min((belady, allocate(flow, R, clean_first=True)), key=lambda a: (a.loads + a.stores, a.loads))
    redundant = _redundant(flow, belady)
    cl, cs = machine.op_cycles("LOAD"), machine.op_cycles("STORE")
    trace_loads = len(flow.loads)
    alloc_cycles = run.cycles - cl * (trace_loads - chosen.loads) - cs * (flow.stores - chosen.stores)
    header = (f"{program.file} in its own order of computation, allocated on {R} registers (toym analyze: "
              f"{chosen.loads} LOADs + {chosen.stores} STOREs; the trace: {trace_loads} + {flow.stores})",)
    emitted = Program(chosen.instrs, program.arrays, header=header)
    return TraceAnalysis(program.file, R, trace_regs, len(program.instrs), trace_loads, flow.stores, belady.loads,
                         chosen.loads, chosen.stores, flow.output_stores, len(flow.initial_of),
                         chosen.loads + chosen.stores == belady.loads + flow.output_stores, redundant, run.cycles,
                         alloc_cycles, emitted, machine)


def _redundant(flow: Flow, belady) -> tuple[RedundantLoad, ...]:
    """The trace's LOADs that serve no use, and — when it loads more than MIN — those whose value
    MIN holds in a register at the use they serve."""
    last = list(flow.def_line)  # a value's previous use (or definition / first load), by line
    since = {}
    for t, (line, vals, _, _) in enumerate(flow.uses):
        for v in vals:
            since[(t, v)] = last[v]
        for v in vals:
            last[v] = line
    excess = len(flow.loads) > belady.loads
    out = []
    for line, text, v, use in flow.loads:
        if use is None:
            out.append(RedundantLoad(line, text, flow.names[v], 0, f"line {line} loads {flow.names[v]}, "
                                     "which is never used"))
        elif excess and (use, v) in belady.hits:
            out.append(RedundantLoad(line, text, flow.names[v], since[(use, v)],
                                     f"line {line} reloads {flow.names[v]}, which an optimal allocation would "
                                     f"have kept in a register since line {since[(use, v)]}"))
    return tuple(out)
