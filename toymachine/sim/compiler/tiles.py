"""Tile blocks: a template block of tile instructions (a LOAD of a block of HBM, elementwise ops,
matmuls, row reductions, a STORE) compiled into one generated function, as ``compiler.templates`` compiles
a block of word instructions — the loop's per-instruction dispatch and the closures' calls gone,
numpy called only for the arithmetic, the SRAM and traffic accounting written inline.

Exact, as the loop is (``sim.engines.tile``'s closures are the oracle): the function computes
every tile into locals first and *bails* (raises ``blocks.Bail``) on anything the loop would hand
to a slow path — a floating-point flag (numpy raises on every one during a run), an empty
register, shapes that do not fit, a STORE whose tile has another shape, SRAM past its capacity,
a rounding to the dtype that overflows or underflows — before it wrote a register, a counter or
HBM (an HBM array's first LOAD gives it its random input values, which the loop's LOAD would do
alike). The loop then runs the block from its first instruction and raises what it raises. What
it commits afterwards, in the loop's order: the registers and their SRAM sizes, the occupancy
and its peak, the FLOPs, the traffic, then each STORE (a register holding a view of the array
first gets its copy, as ``Array.detach`` does).

Compiled only where the result cannot differ from the loop's: every instruction is a tile LOAD,
STORE, FILL or an op whose closure says what it computes (``execute.block``; not MASK, DROPOUT,
nor on a machine whose units price each instruction), no LOAD reads an array a STORE before it
in the block wrote, SRAM is counted exactly (not ``sram_rule: paper``) and no step rows are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

__all__ = ["compile_tile_block", "TileBlock"]

import math

import numpy as np

from ..engines.kinds import EXEC, MM, MZO, SFU, VEC
from ..engines.tile_templates import block_index, remember
from .tile_runs import compile_batch
from .words import define

if TYPE_CHECKING:
    from ..path_stats import Tally
    from ..run import Run

_FLOP = {MM: "fm", VEC: "fv", SFU: "fs", MZO: "fo"}  # fo: the elements MAC_Z wrote


class TileBlock:
    """A compiled tile block: ``block(nxt)`` runs it once, ``multi(nxt, count)`` count times,
    ``skip(n)`` counts n more runs of it (steps, traffic, FLOPs of its last run) without running them
    (``tile_runs.run_apart``, for a block whose runs cannot differ); ``words``: it reads an R register;
    ``pure``: it reads no register before writing it; ``signature``: what it writes where, in
    order, and the shapes it loads (blocks with one signature hold SRAM alike); ``loads``: the ids
    of the arrays it reads; ``stores``: (array, index) of each block it writes."""

    __slots__ = ("block", "multi", "skip", "words", "pure", "signature", "loads", "stores", "streamed", "batch")
    block: Callable[[Callable[[], int]], None]
    multi: Callable[[Callable[[], int], int], None]
    skip: Callable[[int], None]
    words: bool
    pure: bool
    signature: tuple
    loads: frozenset[int]
    stores: tuple
    streamed: bool
    batch: Callable | None


def compile_tile_block(run: Run, codes: list, bail, bail_class, hits: list, tally: Tally):
    """The ``TileBlock`` of a block of tile codes, or None where it is not compiled here."""
    if run.record or not run.sram_exact or not codes:
        return None
    specs: list[Any] = [getattr(c[2], "block", None) if c[0] == EXEC else None for c in codes]
    if None in specs:
        return None
    env: dict = {"_B": bail, "Bail": bail_class, "regs": run.regs, "sizes": run.sizes, "run": run,
                 "acc": run.flops, "H": hits, "np": np, "_rem": remember}
    rnd = None if run.tround is None else _rounder(run.dt.round_array, bail)
    env["_rnd"] = rnd
    names: dict[int, str] = {}

    def bind(obj, prefix: str) -> str:
        name = names.get(id(obj))
        if name is None:
            name = names[id(obj)] = f"{prefix}{len(names)}"
            env[name] = obj
        return name

    loaded: set[int] = set()  # register slots read from regs at the top
    written: list[int] = []  # slots written, in order of first write
    stored: set[int] = set()  # arrays a STORE in the block wrote (id)
    body: list[str] = []
    commit: list[str] = []
    stores: list[str] = []
    flops: set[str] = set()
    reads = writes = 0
    signature: list = []
    loads: set[int] = set()
    targets: list = []
    skip: list[str] = []  # what ``skip(n)`` adds: n times each static counter
    bounds = 0  # bounds taken from the chunk's bound stream (template LOADs/STOREs: engines.tile_templates)
    moved: list[tuple[str, str]] = []  # words moved by template LOADs and STOREs (known when the block runs)

    def src(slot: int, t: bool) -> str:
        if slot not in written:
            loaded.add(slot)
        return f"t{slot}.T" if t else f"t{slot}"

    def write(d: int, size: str) -> None:
        if d not in written:
            written.append(d)  # its old size is read at the top (an overwritten tile frees SRAM)
        body.append(f"occ += {size} - z{d}\nz{d} = {size}\nif occ > pk:\n    pk = occ\n    if occ > lim: raise _B")

    for spec in specs:
        kind = spec[0]
        if kind == "load":
            _, arr, idx, d, words = spec
            if id(arr) in stored:
                return None  # a re-run would read the block's own STORE
            a = bind(arr, "A")
            body.append(f"if {a}.pending: {a}.materialise()\nx = {a}.dense[{bind(idx, 'I')}]")
            body.append(f"t{d} = x")
            write(d, str(words))
            commit.append(f"{a}.viewed = True\n{a}.tile_reads += {words}")
            skip.append(f"{a}.tile_reads += n * {words}")
            reads += words
            signature.append(("load", d, arr.dense[idx].shape))
            loads.add(id(arr))
        elif kind == "store":
            _, arr, idx, s, shape, t = spec
            a = bind(arr, "A")
            stored.add(id(arr))
            v = f"v{len(stores)}"
            body.append(f"{v} = {src(s, t)}\nif {v}.shape != {bind(shape, 'S')}: raise _B")
            words = math.prod(shape)  # the tile's size: its shape is checked
            stores.append(f"if {a}.viewed: {a}.detach(regs)\n{a}.dense[{bind(idx, 'I')}] = {v}\n"
                          f"if {a}.regions is not None: {a}.stored({bind(idx, 'I')})\n"
                          f"{a}.tile_writes += {words}")
            skip.append(f"{a}.tile_writes += n * {words}")
            writes += words
            signature.append(("store", s, shape, t))
            targets.append((arr, idx))
        elif kind in ("tload", "tstore"):
            arr, axes, k = spec[1], spec[-2], spec[-1]
            if kind == "tload" and id(arr) in stored:
                return None
            a = bind(arr, "A")
            ix, obj, shape = block_index(axes, bounds, body)
            bounds += k
            q = len(moved)
            if kind == "tload":
                d = spec[2]
                body.append(f"if {a}.pending: {a}.materialise()\nt{d} = {a}.dense[{ix}]\nw{q} = t{d}.size")
                write(d, f"w{q}")
                commit.append(f"{a}.viewed = True\n{a}.tile_reads += w{q}")
                moved.append(("r", f"w{q}"))
                loads.add(id(arr))
            else:
                stored.add(id(arr))
                v = f"v{len(stores)}"
                body.append(f"{v} = {src(spec[2], spec[3])}\nif {v}.shape != {shape}: raise _B\nw{q} = {v}.size")
                stores.append(f"if {a}.viewed: {a}.detach(regs)\n{a}.dense[{ix}] = {v}\n"
                              f"if {a}.regions is not None: _rem({a}, {obj})\n{a}.tile_writes += w{q}")
                moved.append(("w", f"w{q}"))
            signature.append((kind, id(arr)))
        else:
            _, d, what = spec
            expr = _expr(what, src, bind, body, flops)
            if expr is None:
                return None
            body.append(f"r = {expr}" if rnd is None else f"r = _rnd({expr})")
            body.append(f"t{d} = r")
            write(d, f"t{d}.size")
            signature.append(("op", d, what if what[0] != "const" else ("const", what[1].shape)))
    top = [f"t{s} = regs[{s}]" for s in sorted(loaded)] + [f"z{s} = sizes[{s}]" for s in written]
    top += ["occ = run.sram_occ", "pk = run.sram_peak", "lim = run.sram_cap - run.n_scalar"]
    if bounds:
        top.insert(0, "B, P = run.tile_bounds\np = P[0]")
    top += [f"{f} = 0" for f in sorted(flops)]
    tail = [f"regs[{s}] = t{s}\nsizes[{s}] = z{s}" for s in written]
    tail += ["run.sram_occ = occ", "run.sram_peak = pk"]
    tail += [f"acc[{k}] += {f}\nL[{k}] = {f}" for k, f in _FLOP.items() if f in flops]
    skip += [f"acc[{k}] += n * L[{k}]" for k, f in _FLOP.items() if f in flops]
    tail += commit
    if reads:
        tail.append(f"run.reads += {reads}\nrun.tile_reads += {reads}")
        skip.append(f"run.reads += n * {reads}\nrun.tile_reads += n * {reads}")
    if stores:
        tail += stores + [f"run.writes += {writes}\nrun.tile_writes += {writes}"]
        skip.append(f"run.writes += n * {writes}\nrun.tile_writes += n * {writes}")
    for what, total in (("reads", " + ".join(w for t, w in moved if t == "r")),
                        ("writes", " + ".join(w for t, w in moved if t == "w"))):
        if total:
            tail.append(f"m = {total}\nrun.{what} += m\nrun.tile_{what} += m")
    if bounds:
        tail.append(f"P[0] = p + {bounds}")
    tail.append("H[0] += 1")
    skip.append("H[0] += n")
    env["L"] = [0, 0, 0, 0]  # the FLOPs of the block's last run (MM, VEC, SFU) and its MAC_Z outputs
    lines = ["def block(nxt):", "    try:"]
    for stmt in top + body:
        lines.extend("        " + s for s in stmt.split("\n"))
    lines += ["    except Exception:", "        raise Bail(()) from None"]
    for stmt in tail:
        lines.extend("    " + s for s in stmt.split("\n"))
    lines += ["def blocks(nxt, count):", "    for _ in range(count):", "        block(nxt)", "def skip(n):"]
    for stmt in skip:
        lines.extend("    " + s for s in stmt.split("\n"))
    define("\n".join(lines), "<toym tile block>", env)
    tb = TileBlock()
    tb.block, tb.multi, tb.skip = env["block"], env["blocks"], env["skip"]
    tb.words = any(run.names[s][:1] != "T" for s in loaded)
    tb.pure, tb.signature, tb.loads, tb.stores = not loaded, tuple(signature), frozenset(loads), tuple(targets)
    tb.streamed = bool(bounds)
    env["tally"] = tally  # the door's record (``sim.compiled.Tally``): runs done at once
    tb.batch = compile_batch(specs, env) if bounds and not loaded else None  # runs of it at once: tile_runs.compile_batch
    if tb.batch is not None:  # a run of it (templates._run_runs): one call, then the rest at once where they can be
        define(_BATCHED, "<toym tile block>", env)
        tb.multi = env["blocks"]
    return tb


_BATCHED = """def blocks(nxt, count):
    n = again = 0
    while n < count:
        block(nxt)
        n += 1
        if n < count and n >= again:
            done = batch(count - n)
            n += done
            tally.batched += done
            if not done:
                again = n + 64
"""


def _expr(what: tuple, src, bind, body: list, flops: set) -> str | None:
    """The expression of one tile op (its FLOPs counted into the locals ``fm``/``fv``/``fs`` as
    ``tile_ops`` counts them), or None where the block compiler does not take it."""
    op = what[0]
    if op == "const":
        return bind(what[1], "K")
    if op == "binary":
        (sa, ta, _), (sb, tb, _) = what[2], what[3]
        body.append(f"r = {bind(what[1], 'F')}({src(sa, ta)}, {src(sb, tb)})\nfv += r.size")
        flops.add("fv")
        return "r"
    if op == "unary":
        sa, ta, _ = what[2]
        f = _FLOP[what[3]]
        body.append(f"r = {bind(what[1], 'F')}({src(sa, ta)})\n{f} += r.size")
        flops.add(f)
        return "r"
    if op == "matmul":
        (sa, ta, _), (sb, tb, _), c = what[1], what[2], what[3]
        body.append(f"x = {src(sa, ta)}\nr = x @ {src(sb, tb)}")
        if c is None:
            body.append("fm += r.size * (2 * x.shape[1] - 1)\nfo += r.size")
            flops.add("fo")
        else:
            body.append(f"r += {src(c[0], c[1])}\nfm += 2 * r.size * x.shape[1]")
        flops.add("fm")
        return "r"
    if op in ("ROWMAX", "ROWSUM"):
        sa, ta, _ = what[1]
        reduce = bind(np.maximum.reduce if op == "ROWMAX" else np.add.reduce, "F")
        body.append(f"x = {src(sa, ta)}\nr = {reduce}(x, axis=1, keepdims=True)\nfv += x.size - x.shape[0]")
        flops.add("fv")
        return "r"
    if op == "MOV":
        sa, ta, _ = what[1]
        body.append(f"x = t{sa}\nx.size")  # an empty register raises here
        src(sa, False)
        return "x.T" if ta else "x"
    return None


def _rounder(round_array, bail):
    """The dtype rounding of a tile write, bailing where it overflows to ±inf or underflows to
    zero (the loop's ``tile_rounder`` raises those alarms)."""

    def rnd(r):
        with np.errstate(all="ignore"):
            rr = round_array(r)
            if (np.isinf(rr) & ~np.isinf(r)).any() or ((rr == 0) & (r != 0)).any():
                raise bail
        return rr

    return rnd
