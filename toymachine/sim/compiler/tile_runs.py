"""Runs of tile blocks: apart from the word blocks between them, counted where they cannot differ,
and many runs of one template tile block at once.

``run_apart`` runs a template chunk of word blocks in long runs broken by tile blocks that share no
register and no array with them (``templates``: a tile block after every third softmax step); where
a later run of a tile block cannot differ from its first (``separate``), only its first run that did
not bail runs, and the others are counted.

``compile_batch`` makes a tile block's ``batch``: the ``mixed-new`` shape's LOAD of a new block of
Q, MUL, STORE to a new block of O, n times in a chunk, as numpy operations on all n blocks stacked —
one gather, one ufunc call per instruction, one scatter — instead of n calls. Only where the n runs
cannot differ from n runs one after another (the caller ran the block once just before, so the SRAM
it holds is known): the block reads no register it did not write (pure), no array it loads is one
it stores to, its instructions are template LOADs/STOREs of a cut span (and constant columns), FILL
constants and elementwise ops exact in IEEE arithmetic — ADD SUB MUL DIV MAX MOV (not EXP/LOG,
whose vector loops may round otherwise on other lengths; not matmuls or row sums, whose summation
order depends on the layout; no transposed operand) — every run's blocks have the shape the last
run's had (the same SRAM, counters and FLOPs per run), every block is inside its array; where the
blocks STOREd overlap, each cell gets the value the last run wrote. Anything else — a shape that
changes, a bound past the array, a floating-point flag, a rounding that overflows or underflows —
and ``batch`` returns 0 having changed nothing: the runs go one by one (which bail to the loop
where the loop must speak).
"""

from __future__ import annotations

__all__ = ["compile_batch", "run_apart", "separate"]

from bisect import bisect_right
from itertools import chain, compress, islice
from operator import ne, not_, sub
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..engines.kinds import VEC
from ..engines.tile_ops import UFUNC
from ..engines.tile_templates import remember_rows
from ..loop import execute
from .words import CACHE_LIMIT, MAX_BAILS, Bail, call_runs, define, flush, rerun

if TYPE_CHECKING:
    from ..path_stats import Tally
    from ..run import Run
    from .words import Block


class TileRunCache(Protocol):
    """What a run of tile blocks needs of ``templates.BlockCache``: the verdicts of
    ``separate`` by a chunk's distinct blocks, the run's tally and the way to the loop."""

    separate: dict[tuple, bool]
    tally: Tally

    def to_loop(self, key: str, block: Block) -> None: ...

_EXACT = {UFUNC[op] for op in ("ADD", "SUB", "MUL", "DIV", "MAX") if op in UFUNC}


def _last(rows, values):
    """The rows a batch of STOREs writes, each once, and the value the last STORE to it wrote (blocks
    STOREd over one another: the later run wins, as one run after another leaves it)."""
    flat = rows.ravel()
    if len(flat) < 2 or (np.diff(flat) > 0).all():
        return flat, values
    last = len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1]
    return flat[last], values[last]


def compile_batch(specs: list, env: dict):
    """``batch(count)`` for a tile block of ``specs`` (``execute.block`` of its codes), or None."""
    loaded: set[int] = set()
    stored: set[int] = set()
    written: set[int] = set()
    body: list[str] = []
    tail: list[str] = []
    final: dict[int, str] = {}  # register slot → its value after the last run
    k = 0  # bounds per run
    vec = False  # FLOPs counted
    names: dict = {}

    def bind(obj, prefix: str) -> str:
        name = names.get(id(obj))
        if name is None:
            name = names[id(obj)] = f"X{prefix}{len(names)}"  # apart from the block's own names
            env[name] = obj
        return name

    def src(slot: int, t: bool) -> str | None:
        return None if t or slot not in written else f"t{slot}"

    for spec in specs:
        kind = spec[0]
        if kind in ("tload", "tstore"):
            arr, axes = spec[1], spec[-2]
            if len(axes) > 2 or (len(axes) == 2 and axes[1][0] != "c"):
                return None
            a = bind(arr, "A")
            cols = f"{axes[1][1]}:{axes[1][2]}" if len(axes) == 2 else None
            width = axes[1][2] - axes[1][1] if cols else 1
            s, e, h, rows = f"s{k}", f"e{k}", f"h{k}", f"R{k}"
            body.append(f"{s} = b[:, {k}]\n{e} = b[:, {k + 1}]\n{h} = int({e}[0] - {s}[0])\n"
                        f"if {h} <= 0 or not (({e} - {s}) == {h}).all() or int({e}.max()) > {axes[0][4]}: return 0\n"
                        f"{rows} = {s}[:, None] + _ar[:{h}]")
            k += 2
            if kind == "tload":
                d = spec[2]
                if id(arr) in stored:
                    return None
                loaded.add(id(arr))
                written.add(d)
                body.append(f"if {a}.pending: {a}.materialise()\n"
                            f"t{d} = {a}.dense[{rows}, {cols}]" if cols else
                            f"if {a}.pending: {a}.materialise()\nt{d} = {a}.dense[{rows}][:, :, None]")
                body.append(f"if {h} * {width} != sizes[{d}]: return 0")
                final[d] = f"{a}.dense[int({s}[-1]):int({e}[-1]), {cols or 'None'}]"
                tail.append(f"{a}.viewed = True\n{a}.tile_reads += count * {h} * {width}\n"
                            f"run.reads += count * {h} * {width}\nrun.tile_reads += count * {h} * {width}")
            else:
                v = src(spec[2], spec[3])
                if v is None or id(arr) in loaded or id(arr) in stored:
                    return None
                stored.add(id(arr))
                body.append(f"if {v}.shape[1:] != ({h}, {width}): return 0\n"
                            f"G{k}, V{k} = _last({rows}, {v}.reshape(-1, {width}))")
                where = f"G{k}, {cols}" if cols else f"G{k}"
                value = f"V{k}" if cols else f"V{k}[:, 0]"
                tail.append(f"if {a}.viewed: {a}.detach(regs)\n{a}.dense[{where}] = {value}\n"
                            f"if {a}.regions is not None: _remr({a}, {rows}, {cols and repr(slice(*axes[1][1:]))})\n"
                            f"{a}.tile_writes += count * {h} * {width}\n"
                            f"run.writes += count * {h} * {width}\nrun.tile_writes += count * {h} * {width}")
            continue
        if kind != "op":
            return None
        _, d, what = spec
        op = what[0]
        if op == "const":
            body.append(f"t{d} = {bind(what[1], 'K')}" if env["_rnd"] is None else f"t{d} = _rnd({bind(what[1], 'K')})")
            written.add(d)
            final[d] = f"t{d}"
            continue
        elif op == "binary" and what[1] in _EXACT:
            x, y = src(*what[2][:2]), src(*what[3][:2])
            if x is None or y is None:
                return None
            expr: str | None = f"{bind(what[1], 'F')}({x}, {y})"
        elif op == "MOV":
            expr = src(*what[1][:2])
            if expr is None:
                return None
        else:
            return None
        body.append(f"r = {expr}" if env["_rnd"] is None else f"r = _rnd({expr})")
        body.append(f"if r.ndim != 3 or r[0].size != sizes[{d}]: return 0\nt{d} = r")
        if op == "binary":
            body.append("fv += r.size")
            vec = True
        written.add(d)
        final[d] = f"t{d}[-1]"
    if not k or not stored:
        return None
    tail[:0] = [f"regs[{d}] = {v}" for d, v in final.items()]
    lines = ["def batch(count):", "    if run.tile_bounds is None: return 0", "    B, P = run.tile_bounds", "    p = P[0]",
             f"    if count < 2 or len(B) < p + {k} * count: return 0",
             f"    b = np.array(B[p:p + {k} * count]).reshape(count, {k})", "    fv = 0", "    try:"]
    for stmt in body:
        lines.extend("        " + s for s in stmt.split("\n"))
    lines += ["    except Exception:", "        return 0"]
    for stmt in tail:
        lines.extend("    " + s for s in stmt.split("\n"))
    lines += [f"    acc[{VEC}] += fv\n    L[{VEC}] = fv // count" if vec else "    pass",
              f"    P[0] = p + {k} * count", "    H[0] += count", "    return count"]
    env["_ar"] = np.arange(1 << 16)
    env["_remr"] = remember_rows
    env["_last"] = _last
    define("\n".join(lines), "<toym tile batch>", env)
    return env["batch"]


def run_apart(run: Run, keys: list, first: int, cache: TileRunCache, uniq: dict, blocks: list, fns: list,
               apart: set) -> None:
    """``templates.run_blocks`` for a chunk of word blocks in long runs broken by tile blocks that share no
    register and no array with them (the benchmark's mixed trace: a tile block after every third
    softmax step). The word blocks run first, as runs (``multi``); the tile blocks after them, in
    order — each one before a word block that bails, so every slow path still meets the loop in
    trace order, with the step count and line of its place in the trace.

    Where a later run of a tile block cannot differ from its first (``separate``: its
    loads read arrays no tile block of the chunk writes, nothing else it reads, and the blocks it
    writes are its own), only its first run that did not bail runs, and the second and last tile
    blocks of the chunk (SRAM held after the first, the final registers); the others are counted
    (``TileBlock.skip``): the same state, counters, alarms and errors, in order."""
    n = len(keys)
    tiles = list(map(apart.__contains__, fns))
    word_at = list(compress(range(n), map(not_, tiles)))  # chunk position of each word block
    tile_at = list(compress(range(n), tiles))
    tile_keys = list(map(keys.__getitem__, tile_at))
    distinct = tuple(uniq[key].tile for key in dict.fromkeys(tile_keys))
    alike = cache.separate.get(distinct)
    if alike is None:
        if len(cache.separate) > CACHE_LIMIT:
            cache.separate.clear()
        alike = cache.separate[distinct] = separate(distinct)
    words = list(map(fns.__getitem__, word_at))
    cuts = [0, *compress(range(1, len(words)), map(ne, words, islice(words, 1, None))), len(words)]
    multi = {b.fn: b.multi for b in blocks}
    calls = list(zip(map(multi.__getitem__, map(words.__getitem__, cuts[:-1])), map(sub, cuts[1:], cuts[:-1])))
    nxt = run.next_index
    base, t, last = run.step, 0, len(tile_at) - 1  # t: tile blocks done
    ran: set = set()  # tile blocks (keys) that ran once without bailing (separate: their later runs are counted)
    skipped: dict = {}  # key → runs counted, not run
    retry: dict = {}  # key → the tile block from which a batch of its runs is tried again

    def before(k: int, what: str) -> int:  # steps or lines of the blocks before chunk position k
        return sum(map({key: getattr(b, what) for key, b in uniq.items()}.__getitem__, islice(keys, k)))

    def tiles_before(k: int) -> None:  # the tile blocks before chunk position k (they take no index)
        nonlocal t
        while t <= last and tile_at[t] < k:
            j, key = tile_at[t], tile_keys[t]
            t += 1
            if key in ran and alike and t != 2 and t <= last:
                skipped[key] = skipped.get(key, 0) + 1
                continue
            try:
                fns[j](nxt)
            except Bail:
                cache.tally.bails += 1
                flush(run, blocks)
                run.step = base + before(j, "steps")
                execute(run, list(uniq[keys[j]].codes), first + before(j, "lines"))
            else:
                ran.add(key)
                batch = uniq[key].tile.batch
                if batch is not None and retry.get(key, 0) <= t:  # the runs of it that follow at once, where
                    same = t  # they can be (compile_batch); after a refusal, the next 64 one by one
                    while same <= last and tile_keys[same] == key and tile_at[same] < k:
                        same += 1
                    done = batch(same - t)
                    cache.tally.batched += done
                    t += done
                    if not done:
                        retry[key] = t + 64

    def settle(k: int) -> None:  # count the skipped runs; run.step: the steps before chunk position k
        for key, count in skipped.items():
            uniq[key].tile.skip(count)
            cache.tally.tiles_counted += count
        skipped.clear()
        flush(run, blocks)
        run.step = base + before(k, "steps")

    g, skip = 0, 0
    done = bails = 0
    while True:
        taken = call_runs(calls, g, skip, nxt)
        if taken is None:
            break
        q = done + flush(run, blocks)  # the word block that bailed (only word blocks ran since the last flush)
        k = word_at[q]
        tiles_before(k)
        flush(run, blocks)
        run.step = base + before(k, "steps")
        block = uniq[keys[k]]
        bails += 1
        cache.tally.bails += 1
        rerun(run, block, taken, first + before(k, "lines"))
        done = q + 1
        if bails > MAX_BAILS:  # as templates.run_blocks: the loop runs the rest (from k + 1: none of it ran yet)
            cache.to_loop(keys[k], block)
            settle(k + 1)
            rest = list(chain.from_iterable(uniq[key].codes for key in islice(keys, k + 1, None)))
            execute(run, rest, first + before(k + 1, "lines"))
            return
        g = bisect_right(cuts, done) - 1
        skip = done - cuts[g]
    tiles_before(n)
    settle(n)


def separate(tiles) -> bool:
    """Do runs of these blocks (``TileBlock``s, the distinct tile blocks of a chunk) each compute the
    same thing every time, whatever ran between them? True where every one is pure, all share one
    signature, none reads an array any of them writes, and the blocks they write do not overlap
    from one tile block to another — a later run of one then writes what its first run wrote."""
    if any(t.streamed for t in tiles) or not all(t.pure for t in tiles) or len({t.signature for t in tiles}) != 1:
        return False
    stored = {id(arr) for t in tiles for arr, _ in t.stores}
    if any(t.loads & stored for t in tiles):
        return False
    regions: dict[int, list] = {}
    for n, t in enumerate(tiles):
        for arr, idx in t.stores:
            box = tuple((i.start, i.stop) if isinstance(i, slice) else (i, i + 1) for i in idx if i is not None)
            for m, other in regions.get(id(arr), ()):
                if m != n and all(a0 < b1 and b0 < a1 for (a0, a1), (b0, b1) in zip(box, other)):
                    return False
            regions.setdefault(id(arr), []).append((n, box))
    return True
