"""What a compiled block is made of, for the template blocks (``compiler.templates``) and the line
pieces (``compiler.lines``) alike.

``WordStatements`` writes the statements of a block of word instructions: registers as locals, the
register prologue and epilogue, each LOAD and STORE, each register instruction through
``op_statement`` (the operations inline with the exact float semantics of ``isa``'s functions,
others called) and a bail on every slow path. The two kinds of block differ only in how an index is
bound and how a cell is first read (their hooks). ``compile_word_block`` makes a template block's
function of it; ``initial_reads`` gives a block the first reads of cells.

``Bail`` is what a block raises on a slow path, before it wrote a register, a counter or memory;
``Block`` is what the block cache holds of a block; ``flush`` adds the counters of the calls made
since the last flush, and ``rerun`` runs a block that bailed again in the loop. ``define`` runs a
block's generated source in its namespace, compiled once per distinct source (many blocks differ
only in the objects their namespace binds: a chunk's tile blocks of one shape).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["ARITY", "Bail", "Block", "WordStatements", "compile_word_block", "define", "flush", "flush_steps",
           "in_loop", "initial_reads", "op_statement", "rerun", "call_runs", "BAIL", "MAX_BAILS", "CACHE_LIMIT"]

import math
import operator
from itertools import chain
from types import CodeType

from ...isa import _mac, fmax
from ..engines.kinds import BINARY, COPY, EXEC, LOAD, LOAD_T, SKIP, STORE, STORE_T, TERNARY, UNARY
from ..loop import execute

if TYPE_CHECKING:
    from ..run import Run

MAX_BAILS = 64  # a block that bails more often in one chunk runs in the loop from then on
CACHE_LIMIT = 4096  # distinct compiled blocks kept (and distinct generated sources, ``define``)
_CODE: dict[tuple[str, str], CodeType] = {}  # (generated source, its name) → its code object


def define(source: str, name: str, env: dict) -> None:
    """Run the generated ``source`` (named ``name`` in tracebacks) in the namespace ``env``, where
    it defines the block's functions; the source is compiled once, its code object kept."""
    code = _CODE.get((source, name))
    if code is None:
        if len(_CODE) >= CACHE_LIMIT:
            _CODE.clear()
        code = _CODE[(source, name)] = compile(source, name, "exec")
    exec(code, env)


class Bail(Exception):
    """A block met a slow path: ``args[0]`` are the indices it took from the stream."""


BAIL = Bail()


class _InLoop(Bail):
    """Raised by the stand-in function of a block the loop runs (it took no index)."""


_IN_LOOP = _InLoop(())


def in_loop(nxt):
    raise _IN_LOOP


# operations written inline (exact float semantics of isa's functions); others are called
_INLINE = {operator.add: "{0} + {1}", operator.sub: "{0} - {1}", operator.mul: "{0} * {1}",
           operator.truediv: "{0} / {1}", fmax: "({0} if ({0} >= {1} or {0} != {0}) else {1})",
           math.exp: "_exp({0})", _mac: "{0} * {1} + {2}"}


ARITY = {UNARY: 1, COPY: 1, BINARY: 2, TERNARY: 3}  # a register kind → how many source registers


def op_statement(kind: int, code: tuple, reg, bind) -> str:
    """The generated statement(s) of one register instruction (a COPY, or an operation inline or
    through its bound function): it writes ``r<dest>`` and bails (``raise _B``) on an empty source,
    a non-finite result, or a zero where the instruction alarms on one — the loop then runs it and
    raises what it raises. ``reg`` names a source register, ``bind`` a constant in the function's
    environment. Shared by template blocks and line pieces (``compiler.lines``)."""
    srcs = [reg(s) for s in code[4:4 + ARITY[kind]]]
    d = f"r{code[3]}"
    if kind == COPY:
        return f"if {srcs[0]} is None: raise _B\n{d} = {srcs[0]}"
    form = _INLINE.get(code[2])
    expr = form.format(*srcs) if form else f"{bind(code[2], 'F')}({', '.join(srcs)})"
    zero = f" or {d} == 0.0" if code[-1][2] else ""
    return f"{d} = {expr}\nif {d} - {d} != 0.0{zero}: raise _B"


class WordStatements:
    """The statements of a block of word instructions: ``top`` (registers read into locals
    ``r<slot>``, each array's cells as a local ``C<n>``), ``body`` and ``tail`` (the registers
    written back). ``env`` is the generated function's namespace (``bind`` puts a constant in it).
    The hooks: ``index(k, code, a)`` — the expression of LOAD/STORE ``codes[k]``'s index (``a``: the
    array's name in ``env``; it may append checks to ``body``); ``load(k, code, a, idx, dest)`` — the
    statements that read the cell into ``r<dest>`` (first reads included); ``skip(code)`` — a
    blank or comment line. ``write`` returns False (and the block is not compiled) where a code is
    not a scalar word instruction or a STORE to an array comes before a LOAD from it."""

    def __init__(self, env: dict):
        self.env = env
        self.names: dict[int, str] = {}  # id of a bound object → its name in env
        self.loaded: set[int] = set()  # register slots read from regs at the top
        self.written: set[int] = set()
        self.stored: set[int] = set()  # arrays stored to so far (id)
        self.arrays: dict[str, str] = {}  # array's env name → its cells' local name
        self.body: list[str] = []

    def bind(self, obj, prefix: str) -> str:
        name = self.names.get(id(obj))
        if name is None:
            name = self.names[id(obj)] = f"{prefix}{len(self.names)}"
            self.env[name] = obj
        return name

    def reg(self, slot: int) -> str:
        if slot not in self.written:
            self.loaded.add(slot)
        return f"r{slot}"

    def cells(self, arr) -> str:
        a = self.bind(arr, "A")
        self.arrays.setdefault(a, "C" + a[1:])
        return a

    def write(self, codes: list, index, load, skip=None) -> bool:
        body = self.body
        for k, code in enumerate(codes):
            kind = code[0]
            if kind == SKIP:
                if skip is not None:
                    skip(code)
            elif kind == LOAD or kind == LOAD_T:
                arr = code[2]
                if id(arr) in self.stored:
                    return False
                a = self.cells(arr)
                body.append(load(k, code, a, index(k, code, a), code[4]))
                self.written.add(code[4])
            elif kind == STORE or kind == STORE_T:
                a = self.cells(code[2])
                self.stored.add(id(code[2]))
                idx = index(k, code, a)
                v = self.reg(code[4])
                body.append(f"if {v} is None: raise _B\nC{a[1:]}[{idx}] = {v}")
            elif kind in ARITY:
                body.append(op_statement(kind, code, self.reg, self.bind))
                self.written.add(code[3])
            else:
                return False
        return True

    def top(self) -> list[str]:
        return [f"r{s} = regs[{s}]" for s in sorted(self.loaded)] + [f"{c} = {a}.cells" for a, c in self.arrays.items()]

    def tail(self) -> list[str]:
        return [f"regs[{s}] = r{s}" for s in sorted(self.written)] + ["H[0] += 1"]


def initial_reads(run: Run, bail: Exception):
    """``(init, runs_of)`` for the blocks: ``init(arr, idx)`` gives a cell read before
    anything wrote it (as ``sim.loop``'s ``_initial``; a NaN input raises ``bail`` so the loop raises the alarm); ``runs_of(arr)``
    is a 1-D array's ``(runs, size)`` of initial values, rounded to the dtype (``Array.initial_runs``),
    that a block reads first reads from (None where there are none): ``init`` makes the runs."""
    rnd = run.round
    rounded: dict = {}  # Array → its runs of initial values rounded to the dtype (a dtype that rounds)

    def init(arr, idx: tuple):
        v = arr.initial(idx)
        if rnd is not None:
            v = rnd(v)
            runs = rounded.get(arr)
            if runs is not None:
                size = arr.initial_runs()[1]
                k = idx[0] // size
                if k not in runs:
                    values = list(map(rnd, arr.initial_runs()[0][k]))
                    if all(x == x for x in values):  # a run holding a NaN stays calls: each bails
                        runs[k] = values
        if v != v:  # not stored: the loop reads it again and raises the alarm
            raise bail
        arr.cells[idx] = v
        return v

    def runs_of(arr):
        runs = arr.initial_runs()
        if runs is None or rnd is None:
            return runs
        return rounded.setdefault(arr, {}), runs[1]

    return init, runs_of


class Block:
    """A block of the cache: its function (``fn``, ``multi``), its codes and its counters per call."""

    __slots__ = ("fn", "multi", "hits", "codes", "lines", "steps", "reads", "writes", "counts", "compiled",
                 "engines", "pending", "apart", "tile")

    def __init__(self, fn, hits: list, codes: list, compiled: bool = True, multi=None):
        self.fn = fn
        self.multi = multi  # multi(nxt, count): the block count times in a row
        self.compiled = compiled  # False: ``fn`` raises _InLoop and the loop runs the block's codes
        self.engines = not compiled and all(c[0] == EXEC for c in codes)  # other engines' only: execute_engines
        self.codes = tuple(codes)
        self.hits = hits
        self.pending = 0  # calls whose steps are counted, their other counters not yet (_flush_steps)
        self.apart = False  # a tile block that shares no register or array with word blocks
        self.tile = None  # a compiled tile block: its TileBlock (compiler.tiles)
        self.lines = len(codes)
        self.steps = sum(1 for c in codes if c[0] != SKIP)
        self.reads = sum(1 for c in codes if c[0] in (LOAD, LOAD_T))
        self.writes = sum(1 for c in codes if c[0] in (STORE, STORE_T))
        counts: dict[int, int] = {}
        for c in codes:
            counts[c[1]] = counts.get(c[1], 0) + 1
        self.counts = tuple(counts.items())


def compile_word_block(run: Run, codes: list, initial: tuple) -> Block | None:
    """The block function of word instructions ``codes``, or None where a code is not a scalar word
    instruction or a STORE to an array comes before a LOAD from it."""
    init, runs_of = initial
    w = WordStatements({"_exp": math.exp, "_B": BAIL, "Bail": Bail, "regs": run.regs, "_init": init})
    body = w.body
    indices: list[str] = []

    def index(_k: int, code: tuple, a: str) -> str:  # a template's index: from the chunk's stream, checked
        if code[0] != LOAD_T and code[0] != STORE_T:
            return w.bind(code[3], "K")
        count = code[3]
        ix = [f"i{len(indices) + j}" for j in range(count)]
        indices.extend(ix)
        k = f"k{ix[0][1:]}"  # the index tuple, made once
        s = f"S{a[1:]}"  # the array's shape (a list that grows in place; None before any access: bails)
        if count == 1:
            body.append(f"if {ix[0]} >= {s}[0]:\n    if {a}.fixed: raise _B\n    {s}[0] = {ix[0]} + 1\n"
                        f"{k} = ({ix[0]},)")
            return k
        body.append(f"{k} = ({', '.join(ix)})")
        if count == 2:
            body.append(f"if ({ix[0]} >= {s}[0] or {ix[1]} >= {s}[1]) and {a}.check_index({k}) is not None:"
                        f"\n    raise _B")
        else:
            body.append(f"if {a}.check_index({k}) is not None: raise _B")
        return k

    def load(_k: int, code: tuple, a: str, idx: str, dest: int) -> str:
        runs = runs_of(code[2]) if code[0] == LOAD_T and code[3] == 1 else None
        if runs is None:
            return f"v = C{a[1:]}.get({idx})\nif v is None: v = _init({a}, {idx})\nr{dest} = v"
        # a first read: its initial value from the array's runs of them (no call)
        wn, i, size = w.bind(runs[0], "W"), indices[-1], runs[1]
        return (f"v = C{a[1:]}.get({idx})\nif v is None:\n    w = {wn}.get({i} // {size})\n"
                f"    if w is None: v = _init({a}, {idx})\n    else: v = C{a[1:]}[{idx}] = w[{i} % {size}]\nr{dest} = v")

    def skip(code: tuple) -> None:  # a blank or comment line takes the indices written in it
        for _ in range(code[2]):
            indices.append(f"i{len(indices)}")

    if not w.write(codes, index, load, skip):
        return None
    env, written = w.env, w.written
    top = w.top() + [f"S{a[1:]} = {a}.shape" for a in w.arrays]
    tail = w.tail()
    hits = [0]
    env["H"] = hits
    ix = f"({', '.join(indices)}{',' if len(indices) == 1 else ''})" if indices else "()"
    lines = ["def block(nxt):"]
    lines += [f"    {i} = nxt()" for i in indices]
    lines.append("    try:")
    for stmt in top + body + tail:
        lines.extend("        " + s for s in stmt.split("\n"))
    lines += ["    except Exception:", f"        raise Bail({ix}) from None"]
    # the same block ``count`` times over (a run of it in the chunk): registers stay locals from one
    # pass to the next; a pass that bails leaves the registers as the passes before it left them
    done = sorted(written)
    lines += ["def blocks(nxt, count):"]
    lines += ["    " + s for s in top]
    lines += [f"    c{s} = None" for s in done]
    lines += ["    for n in range(count):"]
    lines += [f"        {i} = nxt()" for i in indices]
    lines.append("        try:")
    for stmt in body or ["pass"]:
        lines.extend("            " + s for s in stmt.split("\n"))
    lines += ["        except Exception:", "            if n:"]
    lines += [f"                regs[{s}] = c{s}" for s in done] + ["                H[0] += n"]
    lines += [f"            raise Bail({ix}) from None"]
    lines += [f"        c{s} = r{s}" for s in done]
    lines += [f"    regs[{s}] = r{s}" for s in done] + ["    H[0] += count"]
    define("\n".join(lines), "<toym block>", env)
    return Block(env["block"], hits, codes, multi=env["blocks"])


def call_runs(calls: list, g: int, skip: int, nxt) -> list | None:
    """Call the runs ``calls[g:]`` (``(multi function, count)``; the first less ``skip`` blocks that
    already ran): None when every one ran, else the indices the block that bailed had taken (the
    bail is handled by the caller, outside this handler: no exception context, no kept frames)."""
    try:
        for fn, count in calls[g:]:
            fn(nxt, count - skip)
            skip = 0
    except Bail as bail:
        return bail.args[0]
    return None


def rerun(run: Run, block, taken: list, line: int) -> None:
    """The block that bailed, again in the loop from ``line``: its indices those it had taken, then
    the chunk's stream where it stopped."""
    nxt = run.next_index
    run.next_index = chain(taken, nxt.__self__).__next__  # type: ignore[attr-defined]  # next_index is an iterator's bound __next__
    try:
        execute(run, list(block.codes), line)
    finally:
        run.next_index = nxt


def flush(run: Run, blocks: list) -> int:
    """Add the counters of the block calls made since the last flush; how many calls that was."""
    total = 0
    counts = run.counts
    for b in blocks:
        c = b.hits[0]
        if c:
            b.hits[0] = 0
            total += c
            run.step += c * b.steps
        if b.pending:  # calls whose steps a stand-in counted already
            c += b.pending
            b.pending = 0
        if c:
            run.reads += c * b.reads
            run.writes += c * b.writes
            for op, n in b.counts:
                counts[op] += c * n
    return total


def flush_steps(run: Run, blocks: list) -> int:
    """``flush`` for a stand-in: only the step count (an alarm quotes it); the other counters,
    read only at the end, wait for the next ``flush``."""
    total = step = 0
    for b in blocks:
        c = b.hits[0]
        if c:
            b.hits[0] = 0
            b.pending += c
            total += c
            step += c * b.steps
    run.step += step
    return total
