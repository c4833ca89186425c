"""Template blocks: text mode's template chunks run as compiled Python functions, one per distinct block.

A long generated trace repeats a few *blocks* of template lines (``sim.text``): the online
softmax is ``LOAD x[], R0`` and eight register instructions, n times, then ``LOAD x[], R0 … STORE
R1, out[]`` n times. A chunk in template mode is cut at every ``LOAD`` line into *units* (a C
``split``: ``units``; the text is the key), units are grouped into blocks, and each distinct block
is compiled once into a Python function whose registers are local variables, whose operations are
inline (``x - y``, not a call through the loop's dispatch) and whose indices come from the chunk's
index stream — one call per block instead of one dispatch per instruction, one call per run of
one block (``multi``) where a block repeats in runs.

Exact, as the loop is: every operation the loop would hand to its slow path makes the block *bail*
(``words.Bail``) before it wrote any register; the block runs again in ``sim.loop.execute`` from
its first instruction, with the indices it took put back in front of the stream, and the loop raises
the alarm or the error with its line. A block that bails often, or one the compiler does not take
(an instruction of another engine, word and tile instructions in one block, a STORE to an array the
block later LOADs from), runs in the loop. A block of tile instructions is compiled by
``compiler.tiles``; in a chunk of word runs it runs apart (``tile_runs.run_apart``).

Counters: each block function counts its own calls; the chunk's steps, reads, writes and
per-opcode counts are the calls times the block's figures, added when the chunk ends or a block
bails (``words.flush``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

__all__ = ["BlockCache", "ProgramKeys", "run_blocks", "run_program_blocks", "units"]

from bisect import bisect_right
from itertools import accumulate, chain, compress, islice
from operator import ne, sub

from ...program import Instr, Reg
from ..engines import scalar
from ..engines.kinds import BINARY, COPY, EXEC, LOAD, LOAD_T, STORE, STORE_T, TERNARY, UNARY
from ..loop import execute, execute_engines
from .tile_runs import run_apart
from .tiles import compile_tile_block
from .words import (
    BAIL,
    CACHE_LIMIT,
    MAX_BAILS,
    Bail,
    Block,
    call_runs,
    compile_word_block,
    flush,
    flush_steps,
    in_loop,
    initial_reads,
    rerun,
)

if TYPE_CHECKING:
    from ..path_stats import Tally
    from ..run import Run

SEP = "\nLOAD "  # a unit starts at each LOAD line
MIN_UNITS = 16  # a repeated unit is looked for where it comes back this often
BLOCK_LINES = 8  # units cut at LOAD lines are grouped into blocks of about this many lines
MIN_REPEATS = 16  # a chunk takes the block path when its blocks come back this often on average
MIN_RUN = 4  # blocks repeat in runs at least this long on average: one call per run (``multi``)


class BlockCache:
    """The compiled blocks of one run (key: the block's template text)."""

    def __init__(self, run: Run, tally: Tally):
        self.run = run
        self.tally = tally  # the door's record of what ran (``sim.path_stats.Tally``)
        self.blocks: dict[str, Block] = {}  # a block without ``fn`` runs in the loop
        self.initial = initial_reads(run, BAIL)  # first reads of cells (one per run: the rounded lists are shared)
        self.separate: dict[tuple, bool] = {}  # a chunk's distinct TileBlocks → tile_runs.separate

    def clear(self) -> None:
        """Forget every compiled block (the template codes they were made of are stale)."""
        self.blocks.clear()

    def to_loop(self, key: str, block: Block) -> None:
        """The block of ``key`` bailed too often: the loop runs it from now on."""
        self.blocks[key] = Block(in_loop, [0], list(block.codes), compiled=False)

    def get(self, key: str, templates: dict):
        if key in self.blocks:
            return self.blocks[key]
        if len(self.blocks) > CACHE_LIMIT:
            self.blocks.clear()
        text = key[1:] if key[:1] == "\n" else "LOAD " + key  # the chunk's first block starts "\n"
        codes = [templates.get(k) for k in text.split("\n")]
        if None in codes:  # a line not compiled yet: the loop compiles it (not cached: it may be next time)
            return None
        block = self.blocks[key] = _compile(self.run, codes, self.initial, self.tally) or Block(in_loop, [0], codes, compiled=False)
        return block


def _compile(run: Run, codes: list, initial: tuple, tally: Tally) -> Block | None:
    """The block of ``codes`` (tile instructions: ``compiler.tiles``; word instructions:
    ``words.compile_word_block``), or None where the compiler does not take it."""
    if codes and codes[0][0] == EXEC:  # a block of tile instructions (compiler.tiles)
        hits = [0]
        tile = compile_tile_block(run, codes, BAIL, Bail, hits, tally)
        if tile is None:
            return None
        block = Block(tile.block, hits, codes, multi=tile.multi)
        block.tile = tile
        block.apart = not tile.words  # tiles only, no word read: it commutes with word blocks (tile_runs.run_apart)
        return block
    return compile_word_block(run, codes, initial)



def run_blocks(run: Run, ktext: str, first: int, cache: BlockCache, templates: dict, count: int) -> bool:
    """Run a template chunk (``ktext``: its template text without the final newline; its ``count``
    lines ``first`` …) block by block. False — nothing ran — where the chunk's blocks repeat too little,
    one of them is not compiled (a template never seen) or most of them are blocks the loop runs
    (another engine's instruction, a STORE before a LOAD of one array, a block that bailed too
    often); the caller then runs the chunk in the loop. Blocks the loop runs among compiled ones
    (a tile instruction now and then) run in the loop where they stand."""
    keys = units(ktext)  # as ("\n" + ktext).split(SEP) less its first "", without copying the chunk
    keys[0] = keys[0][5:] if ktext.startswith("LOAD ") else "\n" + keys[0]
    edges = cut_edges(keys, templates)  # the chunk's cut units: run in the loop, never compiled
    if edges is None:
        return False
    head, last = edges
    group = round(BLOCK_LINES * len(keys) / count)
    if group > 1 and tile_units(keys, templates):
        group = 1  # tile blocks kept whole and apart from the word blocks (``tile_runs.run_apart``): no blocks of both
    if group > 1:  # short units (a matmul's LOAD, LOAD + MAC): blocks of several
        rest = len(keys) % group
        tail = [SEP.join(keys[len(keys) - rest:])] if rest else []
        if keys.count(keys[0]) == len(keys):  # one unit all along (``_units``): one string for its blocks
            keys = [SEP.join(keys[:group])] * (len(keys) // group) + tail
        else:
            keys = list(map(SEP.join, zip(*[iter(keys)] * group))) + tail
    uniq: dict[str, Any] = dict.fromkeys(keys)  # key → its block (filled in below)
    if len(uniq) * MIN_REPEATS > len(keys):
        return False
    for key in uniq:
        block = cache.get(key, templates)
        if block is None:
            return False
        uniq[key] = block
    looped = [key for key, b in uniq.items() if not b.compiled]
    if looped and sum(map(dict.fromkeys(looped).__contains__, keys)) * 2 > len(keys):
        return False  # mostly the loop's: no gain from blocks
    if head:
        execute(run, head, first)
    route = _run_keys(run, keys, first + len(head), cache, uniq, looped)
    tally = cache.tally
    setattr(tally, route, getattr(tally, route) + count)
    if last:
        execute(run, last, first + count - len(last))
    return True


def _run_keys(run: Run, keys: list, first: int, cache: BlockCache, uniq: dict, looped: list) -> str:
    """``run_blocks`` once its blocks are compiled: runs of one block as one call each, tile blocks
    apart, or block by block (stand-ins for the blocks the loop runs). The route taken, as its
    ``PathStats`` field: ``runs``, ``apart`` or ``blocks``."""
    blocks = [b for b in uniq.values() if b.compiled]
    if not looped:
        fns = list(map(dict(zip(uniq, (b.fn for b in uniq.values()))).__getitem__, keys))
        cuts = [0, *compress(range(1, len(fns)), map(ne, fns, islice(fns, 1, None))), len(fns)]  # where runs
        if (len(cuts) - 1) * MIN_RUN <= len(fns):  # start (found without a Python step): one call per run
            runs = list(zip(map(fns.__getitem__, cuts[:-1]), map(sub, cuts[1:], cuts[:-1])))
            _run_runs(run, keys, first, cache, uniq, blocks, runs)
            return "runs"
        apart = {b.fn for b in blocks if b.apart}
        if apart and not any(b.tile is not None and not b.apart for b in blocks):  # tile blocks that share
            # nothing with the word blocks between them (and no tile block reads a word): set them apart
            words = [fn for fn in fns if fn not in apart]
            if (sum(map(ne, words, islice(words, 1, None))) + 1) * MIN_RUN <= len(words):
                run_apart(run, keys, first, cache, uniq, blocks, fns, apart)
                return "apart"
    offsets = list(accumulate(map({k: b.lines for k, b in uniq.items()}.__getitem__, keys), initial=0))
    state = [0]  # the blocks done before the last slow path or looped block
    if looped:  # a block the loop runs is called where it stands (no Bail raised for it)
        stand_ins = {key: _looped(run, uniq[key], blocks, offsets, first, state) for key in looped}
        fns = list(map({k: stand_ins.get(k) or b.fn for k, b in uniq.items()}.__getitem__, keys))
    nxt = run.next_index
    it = iter(fns)
    bails = 0
    while True:
        try:
            for fn in it:
                fn(nxt)
            break
        except Bail as bail:  # handled below, outside the handler: no exception context, no kept frames
            taken = bail.args[0]
            bail.__traceback__ = None
        k = state[0] + flush(run, blocks)  # the block that bailed
        block = uniq[keys[k]]
        bails += 1
        cache.tally.bails += 1
        rerun(run, block, taken, first + offsets[k])
        state[0] = k + 1
        if bails > MAX_BAILS:  # slow paths all along: the loop runs the rest, and this block from now on
            cache.to_loop(keys[k], block)
            rest = list(chain.from_iterable(uniq[key].codes for key in islice(keys, k + 1, None)))
            execute(run, rest, first + offsets[k + 1])
            return "blocks"
    flush(run, blocks)
    return "blocks"


def _looped(run: Run, block, blocks: list, offsets: list, first: int, state: list):
    """The stand-in of a block the loop runs, in ``run_blocks``: the counters of the blocks before it
    added, its codes run by the loop (its indices from the stream, in order) at its own lines."""
    codes = block.codes
    ex = execute_engines if block.engines else execute

    def stand_in(nxt):
        k = state[0] + flush_steps(run, blocks)
        ex(run, list(codes), first + offsets[k])
        state[0] = k + 1

    return stand_in


def _run_runs(run: Run, keys: list, first: int, cache: BlockCache, uniq: dict, blocks: list, runs: list) -> None:
    """``run_blocks`` for a chunk of long runs of one block: each run is one call of the block's
    ``multi`` function; a bail is handled as there, and the chunk goes on after the block that bailed."""
    multi = {b.fn: b.multi for b in blocks}
    calls = [(multi[fn], count) for fn, count in runs]
    starts = list(accumulate((count for _, count in runs), initial=0))  # the first block of each run
    nxt = run.next_index
    g, skip = 0, 0
    done = p_done = bails = 0
    while True:
        taken = call_runs(calls, g, skip, nxt)
        if taken is None:
            break
        k = done + flush(run, blocks)  # the block that bailed
        p = p_done + sum(b.lines for b in map(uniq.__getitem__, keys[done:k]))
        block = uniq[keys[k]]
        bails += 1
        cache.tally.bails += 1
        rerun(run, block, taken, first + p)
        done, p_done = k + 1, p + block.lines
        if bails > MAX_BAILS:  # as run_blocks: the loop runs the rest, and this block from now on
            cache.to_loop(keys[k], block)
            rest = list(chain.from_iterable(uniq[key].codes for key in islice(keys, k + 1, None)))
            execute(run, rest, first + p_done)
            return
        g = bisect_right(starts, done) - 1  # go on from block k + 1, inside its run
        skip = done - starts[g]
    flush(run, blocks)


def units(ktext: str) -> list:
    """``ktext.split(SEP)``: the same list, made without a string per unit where the text after its
    first unit repeats one unit (a long run of one block, as each pass of a softmax is) — then the
    units are one string, its hash computed once."""
    s = ktext.find(SEP)
    t = ktext.find(SEP, s + 1) if s >= 0 else -1
    if t < 0:
        return ktext.split(SEP)
    unit = ktext[s:t]  # SEP + the unit (no SEP inside it, none across two of them: SEP overlaps no copy of itself)
    m = (len(ktext) - s) // len(unit)
    if m < MIN_UNITS or not ktext.startswith(unit * m, s):
        return ktext.split(SEP)
    rest = ktext[s + m * len(unit):]
    if rest[:len(SEP)] != SEP:  # the last one runs on into the rest: split with it
        m -= 1
        rest = ktext[s + m * len(unit):]
    return [ktext[:s]] + [unit[len(SEP):]] * m + rest.split(SEP)[1:]


def cut_edges(keys: list, templates: dict):
    """``(head, tail)``: the codes of the chunk's first unit where the chunk starts inside a unit
    (its lines before the first LOAD), and of its last where that differs from the one before it
    (the chunk ends inside a unit), both taken out of ``keys`` — or None where a line of them is not
    compiled. They stand once (their text depends on where the chunk was cut): run in the loop,
    they cost no compiled block per chunk."""
    head: list | tuple = ()
    tail: list | tuple = ()
    if len(keys) > 2 and keys[0][:1] == "\n":
        head = list(map(templates.get, keys.pop(0)[1:].split("\n")))
    if len(keys) > 2 and keys[-1] != keys[-2]:
        tail = list(map(templates.get, ("LOAD " + keys.pop()).split("\n")))
    if None in head or None in tail:
        return None
    return head, tail


def tile_units(units: list, templates: dict) -> bool:
    """Does one of these units (a chunk cut at its LOAD lines) hold a tile instruction? (Not looked
    for among many distinct units: such a chunk hardly repeats.)"""
    distinct = dict.fromkeys(units)
    if len(distinct) > 256:
        return False
    for unit in distinct:
        text = unit[1:] if unit[:1] == "\n" else "LOAD " + unit
        for line in text.split("\n"):
            code = templates.get(line)
            if code is not None and code[0] == EXEC:
                return True
    return False


class ProgramKeys:
    """A generated ``Program``'s chunks as text mode's template keys and index stream, made from
    its ``Instr`` objects without writing the text (``run_program_blocks``)."""

    def __init__(self, run: Run, tally: Tally):
        self.run = run
        self.by_id: dict[int, str] = {}  # id of a shared register Instr → its key (generators share them)
        self.memory: dict[tuple, str] = {}  # (op, array, register) → template key
        self.templates: dict[str, tuple] = {}  # key → code
        self.cache = BlockCache(run, tally)
        self.off = False  # a tile program, ACC, a computed index: this program runs in the loop

    def keys(self, chunk: Sequence[Instr], first: int):
        """(template text, indices) of ``chunk`` (lines ``first`` …), or None where an instruction
        is not a word instruction on R registers."""
        by_id, memory, templates, run = self.by_id, self.memory, self.templates, self.run
        keys = list(map(by_id.get, map(id, chunk)))
        indices: list[int] = []
        k = -1
        try:
            while True:
                k = keys.index(None, k + 1)
                ins = chunk[k]
                op = ins.op
                a: tuple[Any, ...] = ins.args  # operand kinds checked against the ISA when parsed
                if op == "LOAD" or op == "STORE":
                    mem, reg = (a[0], a[1]) if op == "LOAD" else (a[1], a[0])
                    key = memory.get((op, mem.array, reg.name))
                    idx = mem.index
                    if key is None:
                        if not (mem.is_scalar and reg.name[:1] == "R" and not reg.transpose):
                            return None
                        code = scalar.compile(run, ins, first + k)
                        if code[0] != LOAD and code[0] != STORE:  # an array held dense (tile engine)
                            return None
                        n = len(idx)
                        key = (f"LOAD {mem.array}{'[]' * n}, {reg.name}" if op == "LOAD"
                               else f"STORE {reg.name}, {mem.array}{'[]' * n}")
                        templates[key] = (LOAD_T if op == "LOAD" else STORE_T, code[1], code[2], n, code[4],
                                          (None, key, False))
                        memory[(op, mem.array, reg.name)] = key
                    if len(idx) == 1:
                        i = idx[0]
                        if type(i) is not int:
                            return None
                        indices.append(i)
                    else:
                        if not all(type(i) is int for i in idx):
                            return None
                        indices.extend(idx)
                else:
                    key = by_id.get(id(ins))  # seen earlier in this chunk
                    if key is not None:
                        keys[k] = key
                        continue
                    if not all(type(x) is Reg and x.name[:1] == "R" and not x.transpose for x in a):
                        return None
                    key = str(ins)
                    if key not in templates:
                        templates[key] = scalar.compile(run, ins, first + k)
                    if templates[key][0] not in (UNARY, BINARY, TERNARY, COPY):
                        return None
                    by_id[id(ins)] = key
                keys[k] = key
        except ValueError:  # no key left to find
            pass
        return "\n".join(cast("list[str]", keys)), indices  # every None is filled in above


def run_program_blocks(run: Run, state: ProgramKeys, chunk: Sequence[Instr], first: int) -> bool:
    """Run a chunk of a generated program (lines ``first`` …) block by block, as text mode runs
    a template chunk; False — nothing ran — where it cannot (the caller runs the loop)."""
    if state.off:
        return False
    made = state.keys(chunk, first)
    if made is None:
        state.off = True
        return False
    ktext, indices = made
    run.next_index = iter(indices).__next__
    return run_blocks(run, ktext, first, state.cache, state.templates, len(chunk))
