"""Text mode: a trace streamed from a file, standard input or an iterable of lines, in chunks.

A chunk (``asm.source``: about a million characters of whole lines) is compiled, then executed, without
a Python step per *line* wherever it can:

* in template mode the chunk's integer indices are cut out in one pass (``sim.cut``: ``LOAD x[123],
  R0`` → the *template* ``LOAD x[], R0`` and the number 123, in the chunk's index stream
  ``run.next_index``), so the millions of LOAD/STORE lines that name a new address are one
  template each;
* template lines are looked up in a dict in bulk (``map``), and only a line never seen before
  (a *miss*) is parsed and compiled — after the instructions before it have executed, so errors,
  ``.data`` directives and arrays switching to tile storage happen in trace order;
* the segments between misses run in ``sim.loop.execute``; a chunk with no miss is offered to the
  compiled path (``sim.compiled.CompiledPath``), which runs it as compiled blocks where it takes it;
* in lines mode a line is its own key (``sim.lines.LineCache``: one lookup gives its code and its
  shape; a new line is compiled ahead as the lookup meets it, where that can make no difference),
  and the segments between misses go to the compiled path, which runs long ones as compiled pieces
  and hands the others to the loop.

While step rows are recorded (``--steps``, or the first ``step_limit`` steps) and in symbolic
mode, lines are compiled exactly (no templates: each step row quotes its own line). The memory
used grows with the distinct lines (bounded by ``CACHE_LIMIT``) and the cells the trace
touches, not with its length.
"""

from __future__ import annotations

__all__ = ["run_text", "CACHE_LIMIT"]

from collections import Counter
from collections.abc import Iterable
from itertools import compress
from operator import not_
from typing import TYPE_CHECKING

import numpy as np

from ..asm import parse_line, strip_comment
from ..program import ArrayDecl
from .compiled import CompiledPath
from .engines import compile_instr, scalar
from .engines.kinds import LOAD, LOAD_T, SKIP, SKIP_SLOT, STORE, STORE_T
from .engines.tile_lines import compile_tile_line
from .lines import MISS, MISS_CODE, LineCache
from .loop import execute

if TYPE_CHECKING:
    from .run import Run

CACHE_LIMIT = 131_072  # distinct compiled lines kept; bounds memory on huge traces
NEW_LINES_FOR_TEMPLATES = 0.05  # a chunk with more new lines than this moves the next ones to templates
PROBE_EVERY = 8  # chunks in template mode before lines are tried again
PROBE_CHARS = 65_536  # a probe counts the lines of the chunk's head (a matmul's rows come back within it)
MIN_CHUNK_FOR_TEMPLATES = 256  # a shorter chunk says too little to switch
REPEATING_FOR_LINES = 0.1  # new address lines that come back within their chunk: this share keeps lines
FEW_NEW_TEMPLATES = 1024  # a template chunk with at most this many new templates: their first lines found at once
_NO_INDICES = iter(()).__next__
_MISS_ORD = ord(MISS)


def run_text(run: Run, chunks: Iterable[str]) -> None:
    """Run a trace given as text chunks that end at line boundaries (the last may not).

    Each chunk runs in one of two modes, both exact: *lines* (a line is its own cache key — best
    when lines repeat, as a matmul's addresses do, and the only mode while step rows are recorded
    or in symbolic mode) or *templates* (best when most addresses are new, as in a long softmax).
    A chunk in which over ``NEW_LINES_FOR_TEMPLATES`` of the lines were new, and whose new lines do
    not come back within it, moves the next ones to templates; every ``PROBE_EVERY``-th chunk in
    template mode is then *probed* (the address lines of its first ``PROBE_CHARS`` counted, not run twice): where they come back
    within the chunk, that chunk runs as lines and decides again."""
    exact = LineCache()  # line → code
    templates: dict[str, tuple] = {}  # template line → code
    fast = CompiledPath(run)  # the compiled path's door (sim.compiled)
    first = 1
    use_templates = False
    since_probe = 0
    for text in chunks:
        if not text:
            continue
        lines = None
        if use_templates and since_probe >= PROBE_EVERY:
            since_probe = 0
            use_templates = not _repeating(_split(text[:PROBE_CHARS]), exact)
        if run.record or run.symbolic or not use_templates:
            if lines is None:
                lines = _split(text)
            run.source = _chunk_source(first, text, lines)
            run.next_index = _NO_INDICES
            new, addressed, repeating = _run_exact(run, lines, first, exact, fast)
            # Templates take over when many of the chunk's lines were never seen and few of the new
            # lines that name an address come back within the chunk (a matmul's first rows are new,
            # but its LOAD a[i][k] lines come back; a softmax's LOAD x[i] lines come once).
            use_templates = (not (run.record or run.symbolic) and len(lines) >= MIN_CHUNK_FOR_TEMPLATES
                             and new > NEW_LINES_FOR_TEMPLATES * len(lines)
                             and repeating < REPEATING_FOR_LINES * addressed)
            since_probe = 0
            first += len(lines)
        else:
            if len(templates) > CACHE_LIMIT:
                templates.clear()
                fast.forget()
            from .cut import cut  # template mode's cut loads with the first template chunk
            run.source = _chunk_source(first, text)
            ktext = cut(run, text, first)  # the indices (and new tiles' bounds) cut out: sim.cut
            count = ktext.count("\n") + 1
            _run_templates(run, text, ktext, first, templates, exact, fast, count)
            since_probe += 1
            first += count


def _split(text: str) -> list[str]:
    """A chunk's lines (a chunk ends at a line boundary; the last one may not)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def _repeating(lines: list[str], cache: dict) -> bool:
    """A probe of a template chunk: do its lines that name an address, and that are not in the line
    cache, come back within it (as a matmul's do, which lines mode runs from its cache)? (As the
    decision after a chunk in lines mode counts them: a tile block that comes back is cached.)"""
    addressed = repeating = 0
    for line, c in Counter(lines).items():
        if "[" in line and line not in cache:
            addressed += 1
            repeating += c > 1
    return addressed > 0 and repeating >= REPEATING_FOR_LINES * addressed


def _chunk_source(first: int, text: str, lines: list[str] | None = None):
    """Line ``first + i`` of a chunk: its lines, split from ``text`` only when a line is asked
    for (an error, an alarm: the block path never needs them)."""
    held = [] if lines is None else lines

    def source(line: int) -> str | None:
        if not held:
            held.extend(_split(text))
        i = line - first
        return held[i] if 0 <= i < len(held) else None

    return source


def _segments(run: Run, codes: list, first: int, compile_miss) -> None:
    """Execute ``codes`` (lines ``first`` …) in the loop, compiling each ``None`` entry (a miss)
    when the instructions before it have run."""
    pos, end = 0, len(codes)
    while pos < end:
        try:
            j = codes.index(None, pos)
        except ValueError:
            j = end
        if j > pos:
            execute(run, codes[pos:j], first + pos)
        if j == end:
            return
        codes[j] = compile_miss(j)
        if run.flush:  # an array went dense: compiled word accesses to it are stale
            run.flush = False
            codes[j + 1:] = [None] * (end - j - 1)
        pos = j


def _run_exact(run: Run, lines: list[str], first: int, cache: LineCache, fast: CompiledPath) -> tuple[int, int, int]:
    """Compile whole lines: a line is its own cache key, its code carries its shape (one lookup
    per line; ``sim.lines``). The lines new to the cache are compiled ahead, in bulk, where
    that has no effect a later line could see (registers and arrays that exist already); the
    others in trace order, after the instructions before them ran. Returns how many distinct
    lines were new (not in the cache), how many lines not in the cache name an address, and how
    many of those stand more than once in the chunk."""
    if len(cache) > CACHE_LIMIT:
        cache.clear()
        fast.forget()
    cache.begin(run)
    codes = list(map(cache.__getitem__, lines))  # new lines compiled ahead as they are met (LineCache)
    new, addressed, repeating = len(cache.new), 0, 0
    if new > NEW_LINES_FOR_TEMPLATES * len(lines):  # only then do the counts decide anything (run_text)
        seen = Counter(lines)
        counts = [seen[line] for line in cache.new if "[" in line]  # new lines that name an address
        addressed, repeating = len(counts), len(counts) - counts.count(1)
    if not cache.missed and fast.run_periodic(codes, first, cache):  # a period: no shape read per line
        return new, addressed, repeating
    sig = cache.signature(codes, lines)
    at = _positions(sig)

    def compile_miss(j: int) -> tuple:
        code = cache.get(lines[j])
        if code is not None:  # compiled at an earlier occurrence in this chunk
            return code
        code = _compile_line(run, first + j, lines[j])
        if run.flush:
            cache.clear()
            fast.forget()
        if code is not None:
            code = cache[lines[j]] = cache.note(code)
            return code
        return _SKIP0  # a directive ran: nothing to execute, never cached (it runs where it stands)

    _run_lines(run, codes, sig, at, first, compile_miss, fast, cache, lines)
    return new, addressed, repeating


def _run_lines(run: Run, codes: list, sig: str, at: list, first: int, compile_miss, fast: CompiledPath,
               cache: LineCache, lines: list) -> None:
    """Execute ``codes`` (lines ``first`` …; their shapes ``sig``): the segments between the misses
    ``at`` through the compiled path's door (``CompiledPath.run_segment``), each miss compiled when
    the instructions before it ran, then run. A line compiled so stands compiled at its later places
    in the chunk too (the chunk's segments run it there). Where an array went dense (``run.flush``), the rest of
    the chunk compiles again, line by line, as it runs."""
    pos, end = 0, len(codes)
    later: dict = {}
    marks: list = []
    if len(at) > 1:
        for j in at:
            later.setdefault(lines[j], []).append(j)
        marks = list(sig)  # the shapes, as lines compiled in order give theirs to their later places
    for j in at:
        if codes[j] is not MISS_CODE:  # a later place of a line compiled in order
            continue
        if j > pos:
            fast.run_segment(codes, "".join(marks[pos:j]) if marks else sig[pos:j], pos, j, first, cache)
        code = compile_miss(j)
        if run.flush:  # an array went dense: compiled word accesses to it are stale
            run.flush = False
            rest = [code] + [None] * (end - j - 1)
            _segments(run, rest, first + j, lambda k, j=j: compile_miss(j + k))
            return
        if code is not _SKIP0 and later:
            for k in later.pop(lines[j], ()):
                codes[k] = code
                marks[k] = code[-2]
        execute(run, [code], first + j)
        pos = j + 1
    if pos < end:
        fast.run_segment(codes, "".join(marks[pos:]) if marks else sig[pos:], pos, end, first, cache)


def _positions(sig: str) -> list[int]:
    """Where ``sig`` holds ``MISS`` (the lines not in the cache), in order."""
    if MISS not in sig:
        return []
    return np.flatnonzero(np.frombuffer(sig.encode("utf-32-le"), np.uint32) == _MISS_ORD).tolist()


def _run_templates(run: Run, text: str, ktext: str, first: int, templates: dict, exact: dict,
                   fast: CompiledPath, count: int) -> None:
    """Compile template lines: LOAD/STORE lines that differ only in their indices share one code.
    Templates new to the cache are compiled ahead where that has no effect (as in ``_run_exact``).
    A chunk whose every line is compiled runs block by block (``CompiledPath.run_chunk``) where it can
    (``count``: its lines); one with a few new lines the loop must compile where they
    stand (tile lines) runs in the loop up to the last of them, and the rest as blocks."""
    from .cut import MARK, template_ahead, tile_miss
    if fast.run_chunk(ktext, first, templates, count):
        return
    keys = ktext.split("\n")
    missing = [key for key in dict.fromkeys(keys) if key not in templates]
    split = 0
    if 0 < len(missing) <= FEW_NEW_TEMPLATES:  # a few new templates (a softmax's second pass, new tile lines)
        lines_at = list(compress(range(len(keys)), map(set(missing).__contains__, keys)))
        at = dict(zip(map(keys.__getitem__, reversed(lines_at)), reversed(lines_at)))  # key → its first line
        head = text.split("\n", max(at.values()) + 1)  # the lines up to the last first one, not the whole chunk
        for key in missing:
            code = template_ahead(run, key, head[at[key]])
            if code is not None:
                templates[key] = code
        del head
        if all(map(templates.__contains__, missing)) and fast.run_chunk(ktext, first, templates, count):
            return  # every line compiled ahead: the blocks run the chunk
        still = [at[key] for key in missing if key not in templates]  # compiled where they stand (a tile line)
        split = max(still) + 1 if still else 0  # the loop runs the lines up to the last of them
        missing = []
    lines = _split(text)
    codes = list(map(templates.get, keys))
    if missing:
        first_lines = dict(reversed(list(compress(zip(keys, lines), map(not_, codes)))))  # key → its first line
        for key, line in first_lines.items():
            code = template_ahead(run, key, line)
            if code is not None:
                templates[key] = code
        codes = list(map(templates.get, keys))
        if None not in codes and fast.run_chunk(ktext, first, templates, count):
            return  # every line compiled ahead: the blocks run the chunk

    def forget_compiled() -> None:  # an array switched to tile storage: every compiled access is stale
        templates.clear()
        exact.clear()
        fast.forget()

    def compile_miss(j: int) -> tuple:
        line, key = lines[j], keys[j]
        code = templates.get(key)
        if code is not None:  # compiled at an earlier occurrence in this chunk
            return code
        n = first + j
        if MARK in key and run.tile_bounds is not None:  # a tile line with cut bounds (sim.cut)
            return tile_miss(run, n, key, line, templates, exact, _compile_line,
                             forget_compiled)
        count = key.count("[]")
        if count:
            code = scalar.compile_memory_line(run, n, line)
            if code is not None and (code[0] == LOAD or code[0] == STORE):
                templates[key] = (LOAD_T if code[0] == LOAD else STORE_T, code[1], code[2], count, code[4],
                                  (None, key, False))
                for _ in range(count):  # this occurrence runs with its own index: take it from the stream
                    run.next_index()
                return code
        code = exact.get(line) or _compile_line(run, n, line)
        if run.flush:
            templates.clear()
            exact.clear()
            fast.forget()
        for _ in range(count):  # a line that is no template takes its indices now
            run.next_index()
        if code is None:
            return _SKIP0  # a directive ran where it stands
        if code[0] == SKIP:
            code = (SKIP, SKIP_SLOT, count, code[3])
            templates[key] = code
            return (SKIP, SKIP_SLOT, 0, code[3])
        if not count:
            templates[key] = code
        else:
            exact[line] = code
        return code

    if 0 < split < len(keys) - MIN_CHUNK_FOR_TEMPLATES:  # then the rest of the chunk as blocks, where it can
        _segments(run, codes[:split], first, compile_miss)
        rest = keys[split:]
        if all(map(templates.__contains__, dict.fromkeys(rest))) and fast.run_chunk(
                "\n".join(rest), first + split, templates, len(rest)):
            return
        codes = list(map(templates.get, rest))
        _segments(run, codes, first + split, lambda j: compile_miss(j + split))
        return
    _segments(run, codes, first, compile_miss)


_SKIP0 = (SKIP, SKIP_SLOT, 0, (None, "", False))


def _compile_line(run: Run, n: int, text: str):
    """One source line → its code (``SKIP`` for blank and comment lines; None for a directive,
    which runs here)."""
    code = (":" in text and compile_tile_line(run, n, text)) or scalar.compile_memory_line(run, n, text)
    if code is not None:
        return code
    item = parse_line(text, n, run.file)
    if item is None:
        return _SKIP0
    if isinstance(item, ArrayDecl):
        run.declare(item, run.data)
        return None
    return compile_instr(run, item, n, text=strip_comment(text).strip())
