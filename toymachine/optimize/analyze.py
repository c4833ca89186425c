"""How far a trace is from an optimal register allocation of its own order of computation.

``analyze(program, registers=R)`` keeps the trace's computation — the sequence of its
non-memory instructions (MAC, MAX, EXP, …) and which values each reads and writes — fixed,
and asks how few LOADs and STOREs *any* register allocation of that same sequence needs on
R registers (seed 000: "28 cycles … or less?" — the naive 2×2 matmul reloads a01; the
serpentine order keeps it).

**Values.** A LOAD of a DRAM word gives that word's current value (its initial content, or
the value the trace last stored there); a computing instruction makes a new value from the
values in its source registers; a STORE puts a value in a word. The *uses* of a value are
the computing instructions that read it (and a STORE of an unmodified input, a copy). Each
word whose final content differs from its initial content needs one STORE of that content:
the trace's *outputs*.

**The allocation** serves the uses in the trace's order with R registers: a use whose value
is not resident costs a LOAD (its first use, or a reload after an eviction); a computed value
is *dirty* until written back, so evicting one that is used again costs a STORE (a spill)
as well as the reload, and each output costs its one STORE (written back when evicted, or
at the end). An instruction's destination may overwrite one of its own sources.

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

import heapq
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..machine import DEFAULT_MACHINE, Machine
from ..program import Mem, Program, Reg

NEVER = float("inf")


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


@dataclass
class _Flow:
    """The trace as values and uses."""

    names: list  # value id → text
    dirty: list  # value id → computed (True) or a DRAM word's initial content (False)
    def_line: list  # value id → line it was computed or first loaded (0)
    uses: list  # use index → (line, tuple of value ids read, value id written or None)
    loads: list  # (line, text, value id, use index it serves or None)
    outputs: dict  # value id → number of words whose final content it is
    stores: int
    words_read: int


def _line_numbers(program: Program) -> list[int]:
    """Each instruction's line as the user sees it: its source line (a parsed file), or its line
    in ``program.to_text()`` (a generated program)."""
    if program.source is not None or any(ins.line for ins in program.instrs):
        return [ins.line for ins in program.instrs]
    offset = len(program.header) + len(program.arrays)
    return [offset + i + 1 for i in range(len(program.instrs))]


def _flow(program: Program) -> tuple[_Flow, int]:
    names, dirty, def_line = [], [], []
    initial: dict = {}  # word → value id of its initial content
    word_val: dict = {}  # word → current value id
    reg_val: dict = {}  # register → value id
    pending: dict = {}  # register → index into loads of a LOAD not yet used
    uses, loads = [], []
    stores = 0
    regs_named = set()

    def new(name: str, is_dirty: bool, line: int) -> int:
        names.append(name)
        dirty.append(is_dirty)
        def_line.append(line)
        return len(names) - 1

    for ins, line in zip(program.instrs, _line_numbers(program)):
        for a in ins.args:
            if isinstance(a, Reg):
                if a.index is None or a.transpose:
                    raise ConfigError(f"line {line}: {a} is a tile register; analyze works on scalar traces",
                                      hint="analyze a scalar trace (R registers, one word per LOAD)")
                regs_named.add(a.name)
            elif isinstance(a, Mem) and not a.is_scalar:
                raise ConfigError(f"line {line}: {a} is a block; analyze works on scalar traces",
                                  hint="analyze a scalar trace (R registers, one word per LOAD)")
        if ins.op == "LOAD":
            mem, reg = ins.args
            word = (mem.array, mem.index)
            v = word_val.get(word)
            if v is None:
                v = initial.get(word)
                if v is None:
                    v = initial[word] = new(str(mem), False, line)
                word_val[word] = v
            pending[reg.name] = len(loads)
            loads.append([line, str(ins), v, None])
            reg_val[reg.name] = v
        elif ins.op == "STORE":
            reg, mem = ins.args
            v = reg_val[reg.name]
            stores += 1
            if not dirty[v]:  # a copy of an input: the value must be in a register here
                _use(uses, loads, pending, reg_val, line, (reg,), None)
            else:
                names[v] = str(mem)  # a computed value is named by the word the trace stores it to
            word_val[(mem.array, mem.index)] = v
        else:
            srcs = [a for a in ins.args[:-1] if isinstance(a, Reg)]
            dest = ins.args[-1]
            v = new(f"{ins.op} at line {line}", True, line)
            _use(uses, loads, pending, reg_val, line, srcs, v)
            pending.pop(dest.name, None)
            reg_val[dest.name] = v
    outputs: dict = {}
    for word, v in word_val.items():
        if initial.get(word) != v:
            outputs[v] = outputs.get(v, 0) + 1
    flow = _Flow(names, dirty, def_line, uses, [tuple(x) for x in loads], outputs, stores, len(initial))
    return flow, len(regs_named)


def _use(uses, loads, pending, reg_val, line, srcs, out) -> None:
    vals = []
    for r in srcs:
        vals.append(reg_val[r.name])
        at = pending.pop(r.name, None)
        if at is not None:
            loads[at][3] = len(uses)  # this use is the one that LOAD serves
    uses.append((line, tuple(vals), out))


def _allocate(flow: _Flow, registers: int, clean_first: bool) -> tuple[int, int, set]:
    """Serve the uses with ``registers`` registers; returns (loads, stores, {(use, value) that hit})."""
    positions: list[list[int]] = [[] for _ in flow.names]
    for t, (_, vals, _) in enumerate(flow.uses):
        for v in set(vals):
            positions[v].append(t)
    ptr = [0] * len(flow.names)

    def next_use(v: int) -> float:
        p = positions[v]
        return p[ptr[v]] if ptr[v] < len(p) else NEVER

    resident: set = set()
    is_dirty = [False] * len(flow.names)
    written = set()  # outputs already stored
    heaps = ([], [])  # (−next use, value) of clean values / dirty values still used
    loads = stores = 0
    hits = set()

    def push(v: int) -> None:
        nu = next_use(v)
        live_dirty = clean_first and is_dirty[v] and nu != NEVER
        heapq.heappush(heaps[1 if live_dirty else 0], (-nu, v))

    def evict(protect) -> None:
        nonlocal stores
        held = []
        victim = None
        for heap in heaps:
            while heap:
                neg, v = heapq.heappop(heap)
                if v not in resident or -neg != next_use(v):
                    continue  # stale entry
                if v in protect:
                    held.append((neg, v))
                    continue
                victim = v
                break
            if victim is not None:
                break
        for item in held:
            push(item[1])
        if victim is None:  # pragma: no cover - callers check the register count first
            raise AssertionError("no register to evict")
        resident.discard(victim)
        if is_dirty[victim]:
            if victim in flow.outputs and victim not in written:
                stores += flow.outputs[victim]
                written.add(victim)
            elif next_use(victim) != NEVER:
                stores += 1  # a spill
            is_dirty[victim] = False

    for t, (_, vals, out) in enumerate(flow.uses):
        need = set(vals)
        for v in vals:
            if v in resident:
                hits.add((t, v))
                continue
            if len(resident) >= registers:
                evict(need)
            resident.add(v)
            loads += 1
            push(v)
        for v in set(vals):
            ptr[v] += 1
            push(v)
        if out is not None:
            if len(resident) >= registers:
                evict({out})
            resident.add(out)
            is_dirty[out] = True
            push(out)
    for v, words in flow.outputs.items():
        if not flow.dirty[v] or (v not in written and is_dirty[v]):
            stores += words  # copies of inputs, and outputs still in a register at the end
    return loads, stores, hits


def analyze(program: Program | str, registers: int | None = None, machine: Machine | None = None) -> TraceAnalysis:
    """Analyse a scalar trace (a ``Program`` or assembly text): see the module docstring.
    ``registers`` defaults to the machine's, else to the registers the trace names."""
    from ..asm import parse
    from ..sim import simulate

    machine = machine or DEFAULT_MACHINE
    if isinstance(program, str):
        program = parse(program)
    run = simulate(program, machine, steps=False)  # a trace that does not run is reported as the simulator does
    flow, trace_regs = _flow(program)
    R = registers if registers is not None else (machine.registers or trace_regs)
    if not isinstance(R, int) or isinstance(R, bool) or R < 1:
        raise ConfigError(f"--registers must be a whole number ≥ 1, got {R!r}")
    widest = max((len(set(vals)) + (1 if out is not None and len(set(vals)) == 0 else 0)
                  for _, vals, out in flow.uses), default=0)
    if widest > R:
        raise ConfigError(f"an instruction of this trace reads {widest} different values at once; {R} registers "
                          f"cannot hold them", hint=f"use --registers {widest} or more")
    min_loads, min_stores, hits = _allocate(flow, R, clean_first=False)
    cf_loads, cf_stores, _ = _allocate(flow, R, clean_first=True)
    alloc_loads, alloc_stores = min((min_loads + min_stores, min_loads, min_stores),
                                    (cf_loads + cf_stores, cf_loads, cf_stores))[1:]
    output_stores = sum(flow.outputs.values())
    redundant = []
    last_seen = _previous_lines(flow)
    trace_loads = len(flow.loads)
    for line, text, v, use in flow.loads:
        if use is None:
            redundant.append(RedundantLoad(line, text, flow.names[v], 0, f"line {line} loads {flow.names[v]}, "
                                           "which is never used"))
        elif trace_loads > min_loads and (use, v) in hits:
            since = last_seen[(use, v)]
            redundant.append(RedundantLoad(line, text, flow.names[v], since,
                                           f"line {line} reloads {flow.names[v]}, which an optimal allocation would "
                                           f"have kept in a register since line {since}"))
    cl, cs = machine.op_cycles("LOAD"), machine.op_cycles("STORE")
    alloc_cycles = run.cycles - cl * (trace_loads - alloc_loads) - cs * (flow.stores - alloc_stores)
    return TraceAnalysis(program.file, R, trace_regs, len(program.instrs), trace_loads, flow.stores, min_loads,
                         alloc_loads, alloc_stores, output_stores, flow.words_read,
                         alloc_loads + alloc_stores == min_loads + output_stores, tuple(redundant), run.cycles,
                         alloc_cycles, machine)


def _previous_lines(flow: _Flow) -> dict:
    """(use, value) → line of the value's previous use (or its definition / first load)."""
    last = list(flow.def_line)
    out = {}
    for t, (line, vals, res) in enumerate(flow.uses):
        for v in vals:
            out[(t, v)] = last[v]
        for v in vals:
            last[v] = line
    return out
