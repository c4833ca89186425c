"""Line blocks: lines mode's long segments run as compiled Python functions, as ``sim.blocks`` runs
template chunks.

In lines mode (``sim.text``) a line is its own cache key and its code holds a constant index
(``LOAD a[3][7], R0`` → the tuple (3, 7), checked against the array's shape when the line was
compiled). A matmul's lines repeat, but no two of its blocks of lines are the same text. What
repeats is their *shape*: the code without its index (``LOAD a[], R0``: the kind, the opcode, the
array, the register; an arithmetic line whole). Each compiled line gets a one-character shape,
so a segment's shapes are one string, cut into pieces of ``PIECE`` lines; each distinct piece is
compiled once into a function ``fn(codes, p)`` that runs ``codes[p:p + PIECE]`` with registers as
locals, operations inline and each LOAD/STORE's index read from its own code.

Exact, as ``sim.blocks`` is: where the loop would take a slow path (an empty register, a result
that is non-finite or zero where an underflow is possible, a division by zero, a NaN input) the
piece *bails* before it wrote any register, and ``sim.loop.execute`` runs the piece's codes again,
raising the alarm or the error with its line. A first read of a cell takes its initial value in the
piece (``block_ops.initial_reads``, as a template block does: a matmul's first row would otherwise
bail once a block). A piece with another engine's instruction, or a STORE
to an array it later LOADs from, always runs in the loop. Not used while step rows are recorded or
in symbolic mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["LineBlocks", "MISS", "MISS_CODE", "shapes"]

import math
from collections import Counter
from operator import itemgetter

from . import compiled
from .block_ops import ARITY as _ARITY
from .block_ops import WordStatements, initial_reads
from .blocks import _BAIL, Bail, _flush
from .engines.kinds import LOAD, LOAD_T, SKIP, STORE, STORE_T
from .loop import execute

if TYPE_CHECKING:
    from .run import Run

PIECE = 24  # lines per piece (a multiple of 1, 2, 3, 4, 6 and 8: short periods give few distinct pieces)
MIN_SEGMENT = 4 * 1024  # shorter segments run in the loop
MIN_REPEATS = 16  # pieces must come back this often on average
MAX_SHAPES = 40_000  # distinct shapes (one character each; past this, new lines get none)
CACHE_LIMIT = 4096  # distinct compiled pieces kept
HELD_LINES = CACHE_LIMIT * PIECE  # … and the lines they hold, together
MAX_PERIOD = 1024  # the longest period of shapes a segment runs in pieces of
PERIOD_REPEATS = 64  # pieces of whole periods: only where a segment holds this many
MAX_BAILS = 64  # calls of a verifying piece that bail in one chunk before its other periods' shapes are read
_NONE = "\x01"  # the shape of a line no piece compiles (another engine's, or past MAX_SHAPES)
MISS = "\x00"  # the shape of a line not compiled yet (sim.text: the cache's answer for a new line)
_MISS_TAG = (None, "", False)
MISS_CODE = (SKIP, 0, 0, _MISS_TAG, MISS, _MISS_TAG)  # never run: sim.text compiles the line first
_SHAPE = itemgetter(-2)


class LineBlocks:
    """The shapes of one run's compiled lines and its compiled pieces."""

    def __init__(self, run: Run):
        self.run = run
        self.kinds: dict[tuple, str] = {}  # shape → character
        self.protos: dict[str, tuple] = {}  # character → a code of that shape
        self.pieces: dict[str | tuple[str], object] = {}  # piece (shape string, or a period's as a 1-tuple) → _Piece, or None: the loop runs it
        self.held = 0  # the lines of the pieces compiled (bounded by HELD_LINES)

    def clear(self) -> None:
        """Forget everything (the line cache was cleared: an array went dense, or the cache was full)."""
        self.kinds.clear()
        self.protos.clear()
        self.pieces.clear()
        self.held = 0

    def note(self, code: tuple) -> tuple:
        """``code`` with its shape's character and its tag again appended, ``code + (ch, tag)``:
        every item keeps its place and ``code[-1]`` is still the tag (``sim.text`` caches this
        code: one lookup per line gives the code and its shape, ``code[-2]``)."""
        kind = code[0]
        shape: tuple | None
        if kind == LOAD or kind == STORE:
            shape = (kind, code[1], id(code[2]), code[4])
        elif kind in _ARITY:
            shape = (kind,) + code[1:-1] + (code[-1][2],)
        elif kind == SKIP and not code[2]:
            shape = (SKIP,)
        else:
            shape = None
        ch = _NONE if shape is None else self.kinds.get(shape)
        if ch is None:
            if len(self.kinds) >= MAX_SHAPES:
                ch = _NONE
            else:
                assert shape is not None  # a line without a shape has ch _NONE
                ch = self.kinds[shape] = chr(0x100 + len(self.kinds))
                self.protos[ch] = code + (ch, code[-1])  # (noted: its ch is the one object of its shape)
        return code + (ch, code[-1])

    def signature(self, codes: list, lines: list, cache: dict) -> str:
        """The shapes of ``codes`` (lines ``lines``) as a string, one character per line (``MISS``
        where a code is ``MISS_CODE``). A code the template mode cached without a shape gets one
        (in ``codes`` and in ``cache``)."""
        try:
            return shapes(codes)
        except TypeError:  # code[-2] of a code not noted is no string
            for j, code in enumerate(codes):
                if not noted(code):
                    codes[j] = cache[lines[j]] = self.note(code)
            return shapes(codes)

    def periodic(self, run: Run, codes: list, first: int) -> bool:
        """Run a whole chunk's ``codes`` (every one compiled; line ``first + i`` is ``codes[i]``) as
        ``execute`` does where its shapes repeat with a period, without the shapes of every line:
        the period is found in the chunk's head, and its piece checks the shape of each code it runs
        (``_compile(…, verify=True)``: the shape's character, by identity) and bails on any other,
        so the loop runs that period. False — nothing ran — where the head shows no such period."""
        n = len(codes)
        if n < PERIOD_REPEATS * PIECE or run.record or run.symbolic or not compiled.ENABLED:
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
        it = iter(range(pos, end, size))
        p, bails = pos, 0
        while True:
            try:
                for p in it:
                    fn(codes, p)
                break
            except Bail as bail:  # handled below, outside the handler: no exception context kept
                bail.__traceback__ = None
            _flush(run, compiled)
            execute(run, codes[p:p + size], first + p)
            bails += 1
            if bails > MAX_BAILS and p + size < end:
                rest = p + size
                try:
                    sig = shapes(codes[rest:end])
                except TypeError:
                    execute(run, codes[rest:end], first + rest)
                else:
                    self.execute(run, codes, sig, rest, end, first)
                break
        _flush(run, compiled)

    def execute(self, run: Run, codes: list, sig: str, pos: int, end: int, first: int) -> None:
        """Run ``codes[pos:end]`` (every one compiled; line ``first + i`` is ``codes[i]``; ``sig``:
        the shapes of ``codes[pos:end]``, as ``signature`` gives them). A segment whose shapes
        repeat with a period in which some shape stands once (a matmul's block of 3n + 1 lines:
        its STORE) runs in pieces of whole periods that start at that shape — the same piece
        for every segment, whatever line it starts at; the lines before and after run as below."""
        n = end - pos
        if n < MIN_SEGMENT or run.record or run.symbolic or not compiled.ENABLED:
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
            _flush(run, compiled)
            stop = min(p + size, end)
            execute(run, codes[p:stop], first + p)
        _flush(run, compiled)


def _period(sig: str):
    """(start, length) where ``sig[start:]`` repeats with period ``length`` (at most ``MAX_PERIOD``;
    rounded up to whole periods of at least ``PIECE`` lines) and ``sig[start]`` stands once in each
    period — or None."""
    rare = sorted((k, ch) for ch, k in Counter(sig[:2 * MAX_PERIOD]).items() if k > 1 and ch != _NONE and ch != MISS)
    for _, ch in rare[:3]:  # the rarest shapes: one of them may stand once a period
        start = sig.find(ch)
        period = sig.find(ch, start + 1) - start
        if period <= 0:
            continue
        if sig[start + period:] == sig[start:len(sig) - period]:
            return start, period * -(-PIECE // period)
    return None


def shapes(codes) -> str:
    """The shape characters of noted codes (``LineBlocks.note``), one per code."""
    return "".join(map(_SHAPE, codes))


def noted(code: tuple) -> bool:
    """Whether ``code`` carries its shape (``LineBlocks.note``)."""
    return len(code) > 4 and code[-1] is code[-3] and type(code[-2]) is str


def _in_loop(codes, p):
    raise _BAIL


class _Piece:
    __slots__ = ("fn", "hits", "steps", "reads", "writes", "counts", "pending")

    def __init__(self, fn, hits: list, codes: list):
        self.fn = fn
        self.hits = hits
        self.pending = 0  # as sim.blocks._Block's (never set here: line pieces have no stand-ins)
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
    w = WordStatements({"_exp": math.exp, "_B": _BAIL, "regs": run.regs,
                        "_init": initial_reads(run, _BAIL)[0]})  # a cell's first read, as the template blocks make it

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
    exec(compile("\n".join(src), "<toym line block>", "exec"), env)
    return _Piece(env["piece"], hits, codes)
