"""A block's generated function (``sim.blocks``): word instructions with registers as locals and
operations inline, or a block of tile instructions (``sim.tile_blocks``); ``Bail``, which a block
raises on a slow path, and ``_Block``, what the block cache holds of each."""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["Bail", "compile_block"]

import math

from .block_ops import WordStatements
from .engines.kinds import EXEC, LOAD, LOAD_T, SKIP, STORE, STORE_T
from .tile_blocks import compile_tile_block

if TYPE_CHECKING:
    from .run import Run


class Bail(Exception):
    """A block met a slow path: ``args[0]`` are the indices it took from the stream."""


_BAIL = Bail()


class _InLoop(Bail):
    """Raised by the stand-in function of a block the loop runs (it took no index)."""


_IN_LOOP = _InLoop(())


def _in_loop(nxt):
    raise _IN_LOOP


class _Block:
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
        self.tile = None  # a compiled tile block: its TileBlock (sim.tile_blocks)
        self.lines = len(codes)
        self.steps = sum(1 for c in codes if c[0] != SKIP)
        self.reads = sum(1 for c in codes if c[0] in (LOAD, LOAD_T))
        self.writes = sum(1 for c in codes if c[0] in (STORE, STORE_T))
        counts: dict[int, int] = {}
        for c in codes:
            counts[c[1]] = counts.get(c[1], 0) + 1
        self.counts = tuple(counts.items())


def compile_block(run: Run, codes: list, initial: tuple):
    """The block function of ``codes``, or None where a code is not a scalar word instruction or a
    STORE to an array comes before a LOAD from it."""
    if codes and codes[0][0] == EXEC:  # a block of tile instructions (sim.tile_blocks)
        hits = [0]
        tile = compile_tile_block(run, codes, _BAIL, Bail, hits)
        if tile is None:
            return None
        block = _Block(tile.block, hits, codes, multi=tile.multi)
        block.tile = tile
        block.apart = not tile.words  # tiles only, no word read: it commutes with word blocks (blocks._run_apart)
        return block
    init, runs_of = initial
    w = WordStatements({"_exp": math.exp, "_B": _BAIL, "Bail": Bail, "regs": run.regs, "_init": init})
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
    exec(compile("\n".join(lines), "<toym block>", "exec"), env)
    return _Block(env["block"], hits, codes, multi=env["blocks"])
