"""Line pieces: lines mode's long segments run as compiled Python functions, as
``compiler.templates`` runs template chunks.

In lines mode (``sim.text``) a line is its own cache key and its code holds a constant index
(``LOAD a[3][7], R0`` → the tuple (3, 7), checked against the array's shape when the line was
compiled). A matmul's lines repeat, but no two of its blocks of lines are the same text. What
repeats is their *shape* (``sim.lines``: one character per line), so a segment's shapes are one
string, cut into pieces of ``PIECE`` lines; each distinct piece is compiled once into a function
``fn(codes, p)`` that runs ``codes[p:p + PIECE]`` with registers as locals, operations inline and
each LOAD/STORE's index read from its own code. A segment whose shapes repeat with a period runs in
pieces of whole periods; a whole chunk with such a period runs without the shape of every line
(``periodic``: the piece checks each code's shape and bails on any other).

Exact, as the template blocks are: where the loop would take a slow path (an empty register, a
result that is non-finite or zero where an underflow is possible, a division by zero, a NaN input)
the piece *bails* before it wrote any register, and ``sim.loop.execute`` runs the piece's codes
again, raising the alarm or the error with its line. A first read of a cell takes its initial value
in the piece (``words.initial_reads``, as a template block does). A piece with another engine's
instruction, or a STORE to an array it later LOADs from, always runs in the loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["LinePieces"]

import math
from collections import Counter

from ..engines.kinds import LOAD, LOAD_T, SKIP, STORE, STORE_T
from ..lines import MISS, NO_SHAPE, shapes
from ..loop import execute
from .words import BAIL, Bail, WordStatements, define, flush, initial_reads

if TYPE_CHECKING:
    from ..path_stats import Tally
    from ..run import Run

PIECE = 24  # lines per piece (a multiple of 1, 2, 3, 4, 6 and 8: short periods give few distinct pieces)
MIN_SEGMENT = 4 * 1024  # shorter segments run in the loop
MIN_REPEATS = 16  # pieces must come back this often on average
CACHE_LIMIT = 4096  # distinct compiled pieces kept
HELD_LINES = CACHE_LIMIT * PIECE  # … and the lines they hold, together
MAX_PERIOD = 1024  # the longest period of shapes a segment runs in pieces of
PERIOD_REPEATS = 64  # pieces of whole periods: only where a segment holds this many
MAX_BAILS = 64  # calls of a verifying piece that bail in one chunk before its other periods' shapes are read


class LinePieces:
    """The compiled pieces of one run (key: a piece's shapes; ``protos``: the line cache's code of
    each shape, ``LineCache.protos``)."""

    def __init__(self, run: Run, protos: dict[str, tuple], tally: Tally):
        self.run = run
        self.protos = protos
        self.tally = tally  # the door's record of what ran (``sim.compiled.Tally``)
        self.pieces: dict[str | tuple[str], object] = {}  # piece (shape string, or a period's as a 1-tuple) → _Piece, or None: the loop runs it
        self.held = 0  # the lines of the pieces compiled (bounded by HELD_LINES)

    def clear(self) -> None:
        """Forget every piece (the line cache forgot its shapes)."""
        self.pieces.clear()
        self.held = 0

    def periodic(self, run: Run, codes: list, first: int) -> bool:
        """Run a whole chunk's ``codes`` (every one compiled; line ``first + i`` is ``codes[i]``) as
        ``execute`` does where its shapes repeat with a period, without the shapes of every line:
        the period is found in the chunk's head, and its piece checks the shape of each code it runs
        (``_compile(…, verify=True)``: the shape's character, by identity) and bails on any other,
        so the loop runs that period. False — nothing ran — where the head shows no such period."""
        n = len(codes)
        if n < PERIOD_REPEATS * PIECE:
            return False
        try:
            head = shapes(codes[:2 * MAX_PERIOD + PIECE])
        except TypeError:  # a code without its shape (cached by the template mode): execute's way
            return False
        span = _period(head)
        if span is None or (n - span[0]) // span[1] < PERIOD_REPEATS:
            return False
        start, length = span
        key = head[start:start + length]
        if len(key) < length:
            return False
        piece = self.pieces.get((key,), False)  # the verifying piece of the period (a tuple: not a shape string)
        if piece is False:
            piece = self.pieces[(key,)] = _compile(run, list(map(self.protos.get, key)), verify=True)
            self.held += length
        if piece is None:
            return False
        stop = start + (n - start) // length * length
        self._run(run, codes, head[:start], 0, start, first, PIECE)
        self._verified(run, codes, piece, start, stop, first, length)
        try:
            tail = shapes(codes[stop:])
        except TypeError:
            execute(run, codes[stop:], first + stop)
            return True
        self._run(run, codes, tail, stop, n, first, PIECE)
        return True

    def _verified(self, run: Run, codes: list, piece, pos: int, end: int, first: int, size: int) -> None:
        """``codes[pos:end]`` in calls of the verifying ``piece`` (``size`` lines each); a call that
        bails (a slow path, or a code of another shape) runs in the loop; where many bail, the rest
        goes ``execute``'s way (the shapes of its lines)."""
        fn, compiled = piece.fn, [piece]
        tally = self.tally
        tally.periodic += end - pos
        it = iter(range(pos, end, size))
        p, bails = pos, 0
        while True:
            try:
                for p in it:
                    fn(codes, p)
                break
            except Bail as bail:  # handled below, outside the handler: no exception context kept
                bail.__traceback__ = None
            flush(run, compiled)
            execute(run, codes[p:p + size], first + p)
            bails += 1
            tally.bails += 1
            if bails > MAX_BAILS and p + size < end:
                rest = p + size
                try:
                    sig = shapes(codes[rest:end])
                except TypeError:
                    execute(run, codes[rest:end], first + rest)
                else:
                    self.execute(run, codes, sig, rest, end, first)
                break
        flush(run, compiled)

    def execute(self, run: Run, codes: list, sig: str, pos: int, end: int, first: int) -> None:
        """Run ``codes[pos:end]`` (every one compiled; line ``first + i`` is ``codes[i]``; ``sig``:
        the shapes of ``codes[pos:end]``, as ``signature`` gives them). A segment whose shapes
        repeat with a period in which some shape stands once (a matmul's block of 3n + 1 lines:
        its STORE) runs in pieces of whole periods that start at that shape — the same piece
        for every segment, whatever line it starts at; the lines before and after run as below."""
        n = end - pos
        if n < MIN_SEGMENT:
            execute(run, codes[pos:end], first + pos)
            return
        span = _period(sig) if n >= PERIOD_REPEATS * PIECE else None
        if span is not None and (n - span[0]) // span[1] >= PERIOD_REPEATS:  # (compiled once, run often)
            start, length = span
            count = (n - start) // length
            stop = start + count * length
            self._run(run, codes, sig[:start], pos, pos + start, first, PIECE)
            self._run(run, codes, sig[start:stop], pos + start, pos + stop, first, length)
            self._run(run, codes, sig[stop:], pos + stop, end, first, PIECE)
            return
        self._run(run, codes, sig, pos, end, first, PIECE)

    def _run(self, run: Run, codes: list, sig: str, pos: int, end: int, first: int, size: int) -> None:
        """``execute``'s segment in pieces of ``size`` lines, where they repeat enough (else in the loop)."""
        n = end - pos
        if n < min(MIN_SEGMENT, size * MIN_REPEATS):
            if n:
                execute(run, codes[pos:end], first + pos)
            return
        keys = [sig[i:i + size] for i in range(0, n, size)]
        uniq = dict.fromkeys(keys)
        if len(uniq) * MIN_REPEATS > len(keys):
            execute(run, codes[pos:end], first + pos)
            return
        if len(self.pieces) > CACHE_LIMIT or self.held > HELD_LINES:
            self.pieces.clear()
            self.held = 0
        looped = 0
        for key in uniq:
            piece = self.pieces.get(key, False)
            if piece is False:
                piece = self.pieces[key] = _compile(run, list(map(self.protos.get, key)))
                self.held += len(key)
            uniq[key] = piece
            looped += piece is None
        if looped * 4 > len(uniq):
            execute(run, codes[pos:end], first + pos)
            return
        compiled = [p for p in uniq.values() if p is not None]
        tally = self.tally
        tally.pieces += n
        fns = [_in_loop if p is None else p.fn for p in map(uniq.__getitem__, keys)]
        it = zip(fns, range(pos, end, size))
        p = pos
        while True:
            try:
                for fn, p in it:
                    fn(codes, p)
                break
            except Bail as bail:  # handled below, outside the handler: no exception context kept
                bail.__traceback__ = None
            flush(run, compiled)
            tally.bails += 1
            stop = min(p + size, end)
            execute(run, codes[p:stop], first + p)
        flush(run, compiled)


def _period(sig: str):
    """(start, length) where ``sig[start:]`` repeats with period ``length`` (at most ``MAX_PERIOD``;
    rounded up to whole periods of at least ``PIECE`` lines) and ``sig[start]`` stands once in each
    period — or None."""
    rare = sorted((k, ch) for ch, k in Counter(sig[:2 * MAX_PERIOD]).items() if k > 1 and ch != NO_SHAPE and ch != MISS)
    for _, ch in rare[:3]:  # the rarest shapes: one of them may stand once a period
        start = sig.find(ch)
        period = sig.find(ch, start + 1) - start
        if period <= 0:
            continue
        if sig[start + period:] == sig[start:len(sig) - period]:
            return start, period * -(-PIECE // period)
    return None


def _in_loop(codes, p):
    raise BAIL


class _Piece:
    __slots__ = ("fn", "hits", "steps", "reads", "writes", "counts", "pending")

    def __init__(self, fn, hits: list, codes: list):
        self.fn = fn
        self.hits = hits
        self.pending = 0  # as words.Block's (never set here: line pieces have no stand-ins)
        self.steps = sum(1 for c in codes if c[0] != SKIP)
        self.reads = sum(1 for c in codes if c[0] == LOAD)
        self.writes = sum(1 for c in codes if c[0] == STORE)
        counts: dict[int, int] = {}
        for c in codes:
            counts[c[1]] = counts.get(c[1], 0) + 1
        self.counts = tuple(counts.items())


def _compile(run: Run, codes: list, verify: bool = False):
    """The piece function of ``codes`` (one code of each line's shape), or None where a line is
    not a scalar word instruction or a STORE to an array comes before a LOAD from it."""
    if None in codes or any(c[0] == LOAD_T or c[0] == STORE_T for c in codes):  # (lines carry their indices)
        return None
    w = WordStatements({"_exp": math.exp, "_B": BAIL, "regs": run.regs,
                        "_init": initial_reads(run, BAIL)[0]})  # a cell's first read, as the template blocks make it

    def index(k: int, code: tuple, a: str) -> str:  # a line's index: its code's own (checked when it compiled)
        return f"c{k}[3]"

    def load(k: int, code: tuple, a: str, idx: str, dest: int) -> str:  # a first read (KeyError): its initial value
        # (a word array's cells never hold None: a STORE of an empty register raises, inputs are numbers)
        return f"try:\n    r{dest} = C{a[1:]}[{idx}]\nexcept KeyError:\n    r{dest} = _init({a}, {idx})"

    if not w.write(codes, index, load):
        return None
    env, top, body, tail = w.env, w.top(), w.body, w.tail()
    hits = [0]
    env["H"] = hits
    used = [f"c{k}" if verify or codes[k][0] in (LOAD, STORE) else "_" for k in range(len(codes))]
    src = ["def piece(c, p):", "    try:", f"        {', '.join(used)}, = c[p:p + {len(codes)}]"]
    if verify:  # each code's shape, before anything runs: its character (the one object of that shape)
        src += [f"        if c{k}[{len(code) - 2}] is not {w.bind(code[-2], 'X')}: raise _B" for k, code in enumerate(codes)]
    for stmt in top + body + tail:
        src.extend("        " + s for s in stmt.split("\n"))
    src += ["    except Exception:", "        raise _B from None"]
    define("\n".join(src), "<toym line block>", env)
    return _Piece(env["piece"], hits, codes)
