"""Blocks: text mode's template chunks run as compiled Python functions, one per distinct block.

A long generated trace repeats a few *blocks* of template lines (``sim.text``): the online
softmax is ``LOAD x[], R0`` and eight register instructions, n times, then ``LOAD x[], R0 … STORE
R1, out[]`` n times. A chunk in template mode is cut at every ``LOAD`` line into blocks (a C
``split``; the block's text is its key), and each distinct block is compiled once into a Python
function whose registers are local variables, whose operations are inline (``x - y``, not a call
through the loop's dispatch) and whose indices come from the chunk's index stream — the loop
then makes one call per block instead of one dispatch per instruction.

Exact, as the loop is: every operation the loop would hand to its slow path (an empty register,
a result that is non-finite or zero where an underflow is possible, a division by zero, an index
past a fixed shape, a NaN input) makes the block *bail* before it wrote any register: the block
is run again by ``sim.loop.execute`` from its first instruction, with the indices it took put
back in front of the stream, and the loop raises the alarm or the error with its line. A block
that bails often, or one the compiler does not take (an instruction of another engine than the
scalar one or the tile one, word and tile instructions in one block, a STORE to an array the block
later LOADs from, which a re-run would read back), runs in the loop. A block of tile instructions
is compiled by ``sim.tile_blocks``; in a chunk of word runs it runs apart (``_run_apart``).

Counters: each block function counts its own calls; the chunk's steps, reads, writes and
per-opcode counts are the calls times the block's figures, added when the chunk ends or a block
bails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["BlockCache", "run_blocks"]

from bisect import bisect_right
from itertools import accumulate, chain, compress, islice
from operator import ne, not_, sub

from . import compiled, tile_blocks
from .block_compile import _BAIL, Bail, _Block, _in_loop, compile_block
from .block_keys import SEP as _SEP
from .block_keys import cut_edges, tile_units, units
from .block_ops import initial_reads
from .loop import execute, execute_engines

if TYPE_CHECKING:
    from .run import Run

BLOCK_LINES = 8  # units cut at LOAD lines are grouped into blocks of about this many lines
MIN_REPEATS = 16  # a chunk takes the block path when its blocks come back this often on average
MAX_BAILS = 64  # a block that bails more often in one chunk runs in the loop from then on
MIN_RUN = 4  # blocks repeat in runs at least this long on average: one call per run (``multi``)
CACHE_LIMIT = 4096  # distinct compiled blocks kept

class BlockCache:
    """The compiled blocks of one run (key: the block's template text)."""

    def __init__(self, run: Run):
        self.run = run
        self.blocks: dict[str, _Block] = {}  # a block without ``fn`` runs in the loop
        self.initial = initial_reads(run, _BAIL)  # first reads of cells (one per run: the rounded lists are shared)
        self.separate: dict[tuple, bool] = {}  # a chunk's distinct TileBlocks → tile_blocks.separate

    def get(self, key: str, templates: dict):
        if key in self.blocks:
            return self.blocks[key]
        if len(self.blocks) > CACHE_LIMIT:
            self.blocks.clear()
        text = key[1:] if key[:1] == "\n" else "LOAD " + key  # the chunk's first block starts "\n"
        codes = [templates.get(k) for k in text.split("\n")]
        if None in codes:  # a line not compiled yet: the loop compiles it (not cached: it may be next time)
            return None
        block = self.blocks[key] = compile_block(self.run, codes, self.initial) or _Block(_in_loop, [0], codes, compiled=False)
        return block


def run_blocks(run: Run, ktext: str, first: int, cache: BlockCache, templates: dict, count: int | None = None) -> bool:
    """Run a template chunk (``ktext``: its template text without the final newline; its lines
    ``first`` …) block by block. False — nothing ran — where the chunk's blocks repeat too little,
    one of them is not compiled (a template never seen) or most of them are blocks the loop runs
    (another engine's instruction, a STORE before a LOAD of one array, a block that bailed too
    often); the caller then runs the chunk in the loop. Blocks the loop runs among compiled ones
    (a tile instruction now and then) run in the loop where they stand."""
    if not compiled.ENABLED:
        return False
    keys = units(ktext)  # as ("\n" + ktext).split(_SEP) less its first "", without copying the chunk
    keys[0] = keys[0][5:] if ktext.startswith("LOAD ") else "\n" + keys[0]
    total = count or ktext.count("\n") + 1  # the chunk's lines
    edges = cut_edges(keys, templates)  # the chunk's cut units: run in the loop, never compiled
    if edges is None:
        return False
    head, last = edges
    group = round(BLOCK_LINES * len(keys) / total)
    if group > 1 and tile_units(keys, templates):
        group = 1  # tile blocks kept whole and apart from the word blocks (``_run_apart``): no blocks of both
    if group > 1:  # short units (a matmul's LOAD, LOAD + MAC): blocks of several
        rest = len(keys) % group
        tail = [_SEP.join(keys[len(keys) - rest:])] if rest else []
        if keys.count(keys[0]) == len(keys):  # one unit all along (``_units``): one string for its blocks
            keys = [_SEP.join(keys[:group])] * (len(keys) // group) + tail
        else:
            keys = list(map(_SEP.join, zip(*[iter(keys)] * group))) + tail
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
    _run_keys(run, keys, first + len(head), cache, uniq, looped)
    if last:
        execute(run, last, first + total - len(last))
    return True


def _run_keys(run: Run, keys: list, first: int, cache: BlockCache, uniq: dict, looped: list) -> None:
    """``run_blocks`` once its blocks are compiled: runs of one block as one call each, tile blocks
    apart, or block by block (stand-ins for the blocks the loop runs)."""
    blocks = [b for b in uniq.values() if b.compiled]
    if not looped:
        fns = list(map(dict(zip(uniq, (b.fn for b in uniq.values()))).__getitem__, keys))
        cuts = [0, *compress(range(1, len(fns)), map(ne, fns, islice(fns, 1, None))), len(fns)]  # where runs
        if (len(cuts) - 1) * MIN_RUN <= len(fns):  # start (found without a Python step): one call per run
            runs = list(zip(map(fns.__getitem__, cuts[:-1]), map(sub, cuts[1:], cuts[:-1])))
            _run_runs(run, keys, first, cache, uniq, blocks, runs)
            return
        apart = {b.fn for b in blocks if b.apart}
        if apart and not any(b.tile is not None and not b.apart for b in blocks):  # tile blocks that share
            # nothing with the word blocks between them (and no tile block reads a word): set them apart
            words = [fn for fn in fns if fn not in apart]
            if (sum(map(ne, words, islice(words, 1, None))) + 1) * MIN_RUN <= len(words):
                _run_apart(run, keys, first, cache, uniq, blocks, fns, apart)
                return
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
        k = state[0] + _flush(run, blocks)  # the block that bailed
        block = uniq[keys[k]]
        bails += 1
        _rerun(run, block, taken, first + offsets[k])
        state[0] = k + 1
        if bails > MAX_BAILS:  # slow paths all along: the loop runs the rest, and this block from now on
            cache.blocks[keys[k]] = _Block(_in_loop, [0], list(block.codes), compiled=False)
            rest = list(chain.from_iterable(uniq[key].codes for key in islice(keys, k + 1, None)))
            execute(run, rest, first + offsets[k + 1])
            return
    _flush(run, blocks)


def _looped(run: Run, block, blocks: list, offsets: list, first: int, state: list):
    """The stand-in of a block the loop runs, in ``run_blocks``: the counters of the blocks before it
    added, its codes run by the loop (its indices from the stream, in order) at its own lines."""
    codes = block.codes
    ex = execute_engines if block.engines else execute

    def stand_in(nxt):
        k = state[0] + _flush_steps(run, blocks)
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
        taken = _call_runs(calls, g, skip, nxt)
        if taken is None:
            break
        k = done + _flush(run, blocks)  # the block that bailed
        p = p_done + sum(b.lines for b in map(uniq.__getitem__, keys[done:k]))
        block = uniq[keys[k]]
        bails += 1
        _rerun(run, block, taken, first + p)
        done, p_done = k + 1, p + block.lines
        if bails > MAX_BAILS:  # as run_blocks: the loop runs the rest, and this block from now on
            cache.blocks[keys[k]] = _Block(_in_loop, [0], list(block.codes), compiled=False)
            rest = list(chain.from_iterable(uniq[key].codes for key in islice(keys, k + 1, None)))
            execute(run, rest, first + p_done)
            return
        g = bisect_right(starts, done) - 1  # go on from block k + 1, inside its run
        skip = done - starts[g]
    _flush(run, blocks)


def _run_apart(run: Run, keys: list, first: int, cache: BlockCache, uniq: dict, blocks: list, fns: list,
               apart: set) -> None:
    """``run_blocks`` for a chunk of word blocks in long runs broken by tile blocks that share no
    register and no array with them (the benchmark's mixed trace: a tile block after every third
    softmax step). The word blocks run first, as runs (``multi``); the tile blocks after them, in
    order — each one before a word block that bails, so every slow path still meets the loop in
    trace order, with the step count and line of its place in the trace.

    Where a later run of a tile block cannot differ from its first (``tile_blocks.separate``: its
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
    separate = cache.separate.get(distinct)
    if separate is None:
        if len(cache.separate) > CACHE_LIMIT:
            cache.separate.clear()
        separate = cache.separate[distinct] = tile_blocks.separate(distinct)
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
            if key in ran and separate and t != 2 and t <= last:
                skipped[key] = skipped.get(key, 0) + 1
                continue
            try:
                fns[j](nxt)
            except Bail:
                _flush(run, blocks)
                run.step = base + before(j, "steps")
                execute(run, list(uniq[keys[j]].codes), first + before(j, "lines"))
            else:
                ran.add(key)
                batch = uniq[key].tile.batch
                if batch is not None and retry.get(key, 0) <= t:  # the runs of it that follow at once, where
                    same = t  # they can be (sim.tile_batch); after a refusal, the next 64 one by one
                    while same <= last and tile_keys[same] == key and tile_at[same] < k:
                        same += 1
                    done = batch(same - t)
                    t += done
                    if not done:
                        retry[key] = t + 64

    def settle(k: int) -> None:  # count the skipped runs; run.step: the steps before chunk position k
        for key, count in skipped.items():
            uniq[key].tile.skip(count)
        skipped.clear()
        _flush(run, blocks)
        run.step = base + before(k, "steps")

    g, skip = 0, 0
    done = bails = 0
    while True:
        taken = _call_runs(calls, g, skip, nxt)
        if taken is None:
            break
        q = done + _flush(run, blocks)  # the word block that bailed (only word blocks ran since the last flush)
        k = word_at[q]
        tiles_before(k)
        _flush(run, blocks)
        run.step = base + before(k, "steps")
        block = uniq[keys[k]]
        bails += 1
        _rerun(run, block, taken, first + before(k, "lines"))
        done = q + 1
        if bails > MAX_BAILS:  # as run_blocks: the loop runs the rest (from k + 1: none of it ran yet)
            cache.blocks[keys[k]] = _Block(_in_loop, [0], list(block.codes), compiled=False)
            settle(k + 1)
            rest = list(chain.from_iterable(uniq[key].codes for key in islice(keys, k + 1, None)))
            execute(run, rest, first + before(k + 1, "lines"))
            return
        g = bisect_right(cuts, done) - 1
        skip = done - cuts[g]
    tiles_before(n)
    settle(n)


def _call_runs(calls: list, g: int, skip: int, nxt) -> list | None:
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


def _rerun(run: Run, block, taken: list, line: int) -> None:
    """The block that bailed, again in the loop from ``line``: its indices those it had taken, then
    the chunk's stream where it stopped."""
    nxt = run.next_index
    run.next_index = chain(taken, nxt.__self__).__next__  # type: ignore[attr-defined]  # next_index is an iterator's bound __next__
    try:
        execute(run, list(block.codes), line)
    finally:
        run.next_index = nxt


def _flush(run: Run, blocks: list) -> int:
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


def _flush_steps(run: Run, blocks: list) -> int:
    """``_flush`` for a stand-in: only the step count (an alarm quotes it); the other counters,
    read only at the end, wait for the next ``_flush``."""
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
