"""Text mode's template cut (``sim.text``): a chunk's integer indices, and — where its tile lines name
new blocks — the first span of its tile blocks, cut out of the chunk in one pass.

``LOAD x[123], R0`` → the key ``LOAD x[], R0`` and 123 in the chunk's index stream (``run.next_index``),
as ever. A chunk whose tile LOAD/STORE lines mostly name blocks not named before in its head
(``mixed-new``: ``LOAD Q[12:14, :], T0``) has the first span of each block cut too: the key ``LOAD
Q[]␁, :], T0`` (``MARK`` after the cut span), 12 and 14 in the chunk's *bound stream*
(``run.tile_bounds``: a list and its position), so its tile lines are one template each
(``engines.tile_templates``) and the chunk runs as blocks. A chunk whose tile lines repeat
(``mixed``) keeps them as whole lines — its tile blocks are then counted, not run
(``compiler.tile_runs.separate``) — and so does one holding ``MARK``; a number of 8 digits or more is never
cut (the line compiles as itself: the parser's bound, at its line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["cut", "cut_indices", "cut_spans", "tile_miss", "template_ahead", "MARK"]

import codecs
import re
import threading
from itertools import chain, compress, count, repeat
from operator import is_

import numpy as np

from ..errors import Location
from ..limits import LIMITS, LimitError
from .engines import scalar
from .engines.kinds import SKIP, SKIP_SLOT
from .engines.tile_templates import MARK, template_code

if TYPE_CHECKING:
    from .run import Run

# x[3], or the first span of Q[12:14, :] / v[2:5]; numbers of 8 digits or more stay in the line (its key), which
# then compiles as itself (the parser's bound on numbers, reported at its line)
_CUT = re.compile(r"\[([0-9]{1,7})(?:\]|:([0-9]{1,7})(?=[,\]]))")
_LONG = re.compile(r"\[[0-9]{8}")
_TILE_LINE = re.compile(r"^[ \t]*(?:LOAD|STORE)[^\n]*:[^\n]*$", re.M)
PROBE_CHARS = 32_768  # the head of a chunk whose tile lines are counted
MIN_TILE_LINES = 16  # fewer tile lines in the head: not worth cutting
PROBE_EVERY = 8  # chunks cut (or not) as the last probe decided before the next probe
_NO_INDICES = iter(()).__next__


def _new_tiles(text: str) -> bool:
    """Do the tile LOAD/STORE lines of the chunk's head mostly name blocks not named before in it?"""
    if ":" not in text or MARK in text:
        return False
    lines = _TILE_LINE.findall(text, 0, PROBE_CHARS)
    return len(lines) >= MIN_TILE_LINES and len(set(lines)) * 2 > len(lines)


def cut(run: Run, text: str, first: int) -> str:
    """The chunk's template text (without its final newline); its indices in ``run.next_index``, its
    slice bounds (or None) in ``run.tile_bounds``."""
    run.tile_bounds = None
    probe = run.__dict__.get("slice_probe")  # [cut?, chunks before the next probe]: a trace keeps its shape
    if probe is None or probe[1] <= 0:
        probe = run.slice_probe = [_new_tiles(text), PROBE_EVERY]
    probe[1] -= 1
    if probe[0] and ":" in text and MARK not in text:
        if _LONG.search(text):  # an index of 8 digits or more: refused before the chunk runs, as below
            _check_indices(run, text, first)
        fast = cut_spans(text, MARK)  # numpy on an ASCII chunk: the regular expression's answer
        if fast is not None:
            ktext, ints, bounds = fast
            run.tile_bounds = (bounds, [0])
            run.next_index = iter(ints).__next__
            return ktext
        parts = _CUT.split(text)  # text, index or start, stop or None, text, …
        texts, starts, stops = parts[0::3], parts[1::3], parts[2::3]
        del parts
        for i in compress(count(1), stops):  # after a cut span: its key reads Q[]␁, :]
            texts[i] = MARK + texts[i]
        if text.endswith("\n"):
            texts[-1] = texts[-1][:-1]
        bounds = list(map(int, filter(None, stops)))
        bounds = list(chain.from_iterable(zip(map(int, compress(starts, stops)), bounds)))
        run.tile_bounds = (bounds, [0])
        run.next_index = iter(list(map(int, compress(starts, map(is_, stops, repeat(None)))))).__next__
        return "[]".join(texts)
    ktext, ints = cut_indices(text, lambda: _check_indices(run, text, first))  # one pass: keys, indices
    run.next_index = iter(ints).__next__
    return ktext


def _check_indices(run: Run, text: str, first: int) -> None:
    """A chunk with an index of 8 digits or more: the first at or past ``limits.array_elements``
    is refused at its line and column, as the parser refuses it (before ``int`` sees 5,000 digits)."""
    cap = LIMITS["array_elements"].value()
    for m in re.finditer(r"\[([0-9]{8,})\]", text):
        digits = m.group(1)
        if len(digits) > 19 or int(digits) >= cap:
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.start())
            line = text[start:end if end >= 0 else len(text)]
            raise LimitError(f"index {digits[:40]}{'…' if len(digits) > 40 else ''} is beyond the largest array toym "
                             f"holds ({int(cap):,} elements)",
                             loc=Location(run.file, first + text.count("\n", 0, m.start()), m.start(1) - start + 1,
                                          line, len(digits)),
                             hint=LIMITS["array_elements"].lift_hint(int(digits) + 1 if len(digits) <= 19 else None))


def template_ahead(run: Run, key: str, text: str):
    """``scalar.template_ahead``, never for a key with cut bounds (it compiles where it stands)."""
    return None if MARK in key else scalar.template_ahead(run, key, text)


def tile_miss(run: Run, n: int, key: str, line: str, templates: dict, exact: dict, compile_line, flush) -> tuple:
    """A line whose key has cut bounds, met where it stands: compiled as itself (its errors, its
    arrays' first uses happen here), its indices and bounds taken from the streams, and its key made
    a template where it can be (``engines.tile_templates``); else the line is kept as itself, and
    every later occurrence compiles here again (takes its own bounds)."""
    code = exact.get(line) or compile_line(run, n, line)
    if run.flush:
        flush()
    k = key.count(MARK)
    for _ in range(key.count("[]") - k):
        run.next_index()
    k *= 2  # a cut span's start and stop
    assert run.tile_bounds is not None  # text.py calls this only for a chunk with cut bounds
    bounds, pos = run.tile_bounds
    taken = bounds[pos[0]:pos[0] + k]
    pos[0] += k
    if code is None:
        return (SKIP, SKIP_SLOT, 0, (None, "", False))  # a directive ran where it stands
    if code[0] == SKIP:
        return (SKIP, SKIP_SLOT, 0, code[3])
    tmpl = template_code(run, key, code, taken)
    if tmpl is not None:
        templates[key] = tmpl
    else:
        exact[line] = code
    return code


# A template chunk's integer indices cut out in one pass (``cut_indices``, ``cut_spans``):
# A template chunk's integer indices cut out in one pass (``sim.text``'s template mode).
#
# ``LOAD x[123], R0`` becomes the template ``LOAD x[], R0`` and the index 123 joins the chunk's
# index stream, for every ``[digits]`` of the chunk, in order: what ``re.split(r"\\[([0-9]+)\\]")``
# gives, without a Python string per index and per piece of text between them. An ASCII chunk is
# read as bytes by numpy: the ``[`` positions, the (at most 8) characters after each, the digits
# dropped from the text by one mask. A chunk that is not ASCII, or holds a bracket followed by 9
# digits or more, takes the regular expression (the same answer). The chunk-sized masks live in a
# scratch array kept per thread (``_scratch``): a fresh megabyte from the allocator may cost its page
# faults again on every chunk.

_INDEX = re.compile(r"\[([0-9]+)\]")  # an integer index, as in x[3] or a[0][1] (ASCII digits)
_AFTER = np.arange(1, 18)  # the characters after a '[' looked at: up to 8 digits, then the ']' (cut_indices:
# the first 9), or 7 digits, ':', 8 digits and the ',' or ']' after them (cut_spans: 17)
_COLS = np.arange(8)
_LOCAL = threading.local()  # this thread's scratch arrays (_scratch)
SCRATCH_LIMIT = 1 << 23  # a chunk longer than this (characters) takes fresh arrays


def cut_indices(text: str, on_long) -> tuple[str, list[int]]:
    """``(template text, indices)`` of a chunk: the text with every ``[digits]`` made ``[]``, less
    its final newline, and the integers in order. ``on_long()`` is called, before any index is
    converted, where an index has more than 7 digits (the parser's bound: it raises at its line)."""
    if text.isascii():
        cut = _cut_ascii(text, on_long)
        if cut is not None:
            return cut
    parts = _INDEX.split(text)  # text, index, text, …
    if text.endswith("\n"):
        parts[-1] = parts[-1][:-1]  # the template text without its final newline (not a copy of it)
    ktext = "[]".join(parts[0::2])
    nums = parts[1::2]
    del parts
    if max(map(len, nums), default=0) > 7:
        on_long()
    return ktext, list(map(int, nums))


def _scratch(n: int) -> np.ndarray:
    """A bool array of ``n`` items, reused from one chunk to the next (per thread)."""
    held = getattr(_LOCAL, "mask", None)
    if held is None or len(held) < n:
        if n > SCRATCH_LIMIT:
            return np.empty(n, bool)
        held = _LOCAL.mask = np.empty(max(n, 1 << 20), bool)
    return held[:n]


def _window(text: str, width: int):
    """``(buf, at, chars, mask)``: the ASCII chunk's bytes, its '[' positions, the ``width``
    characters after each (NUL past the end), and a scratch mask (free again)."""
    buf = np.frombuffer(text.encode("ascii"), np.uint8)
    n = len(buf)
    mask = _scratch(n)
    np.equal(buf, 91, out=mask)  # '['
    at = np.flatnonzero(mask)
    cols = at[:, None] + _AFTER[:width]
    if len(at) and at[-1] + width >= n:
        chars = buf[np.minimum(cols, n - 1)]
        chars[cols >= n] = 0
    else:
        chars = buf[cols]
    return buf, at, chars, mask


def _template(buf, mask, start, length) -> np.ndarray:
    """The chunk's bytes without ``length[i]`` characters from ``start[i]`` on (in order, apart),
    nor its final newline (a new array: ``np.compress`` into a scratch one goes through indices)."""
    n = len(buf)
    mask.fill(True)
    total = int(length.sum())
    before = np.cumsum(length) - length  # characters dropped before each
    mask[np.repeat(start - before, length) + np.arange(total)] = False
    if n and buf[n - 1] == 10:
        mask[n - 1] = False  # the template text without its final newline
        total += 1
    return buf[mask]


def _cut_ascii(text: str, on_long):
    buf, at, chars, mask = _window(text, 9)
    if not len(at):
        return (text[:-1] if text.endswith("\n") else text), []
    digit = (chars - 48) < 10  # (uint8: below '0' wraps round)
    if digit.all(axis=1).any():
        return None  # 9 digits or more after a bracket: the regular expression's
    length = digit.argmin(axis=1)  # digits after each '['
    rows = np.arange(len(at))
    index = (length > 0) & (chars[rows, length] == 93)  # '[' digits ']'
    at, length, chars = at[index], length[index], chars[index]
    longest = int(length.max()) if len(length) else 0
    if longest > 7:
        on_long()
    values = np.zeros(len(at), np.int64)
    for j in range(longest):
        values = np.where(j < length, values * 10 + (chars[:, j] - 48), values)
    return codecs.ascii_decode(_template(buf, mask, at + 1, length))[0], values.tolist()  # type: ignore[arg-type]  # an ndarray is a buffer


def cut_spans(text: str, mark: str):
    """``(template text, indices, bounds)`` of an ASCII chunk as ``cut`` cuts a chunk whose
    tile lines name new blocks — what ``re.split(r"\\[([0-9]{1,7})(?:\\]|:([0-9]{1,7})(?=[,\\]]))")``
    gives: every ``[digits]`` made ``[]`` (the integer to ``indices``), every ``[start:stop`` followed
    by ``,`` or ``]`` made ``[]`` + ``mark`` (start and stop to ``bounds``), the text less its final
    newline — or None where the chunk is not ASCII or a bracket is followed by 8 digits or more
    (the regular expression's then: such a number stays in its line)."""
    if not text.isascii() or len(mark) != 1 or not mark.isascii():
        return None
    buf, at, chars, mask = _window(text, 17)
    if not len(at):
        return (text[:-1] if text.endswith("\n") else text), [], []
    digit = (chars - 48) < 10  # (uint8: below '0' wraps round)
    if digit[:, :8].all(axis=1).any():
        return None  # 8 digits or more after a bracket: the regular expression's
    first = digit[:, :8].argmin(axis=1)  # digits after each '['
    rows = np.arange(len(at))
    after = chars[rows, first]
    index = (first > 0) & (after == 93)  # '[' digits ']'
    colon = (first > 0) & (after == 58)  # '[' digits ':'
    second = np.zeros(len(at), np.int64)
    if colon.any():
        c = np.flatnonzero(colon)
        tail = digit[c[:, None], first[c, None] + 1 + _COLS]  # (colons, 8): the digits after the ':'
        second[c] = np.where(tail.all(axis=1), 8, tail.argmin(axis=1))
        ends = chars[c, np.minimum(first[c] + 1 + second[c], 16)]
        colon[c] = (second[c] > 0) & (second[c] < 8) & ((ends == 44) | (ends == 93))  # followed by ',' or ']'
    cut = index | colon
    at, first, second, chars, colon = at[cut], first[cut], second[cut], chars[cut], colon[cut]
    values = np.zeros(len(at), np.int64)
    stops = np.zeros(len(at), np.int64)
    for j in range(int(first.max()) if len(at) else 0):
        values = np.where(j < first, values * 10 + (chars[:, j] - 48), values)
    if colon.any():
        at2 = np.flatnonzero(colon)
        c2, f2, s2 = chars[at2], first[at2], second[at2]
        r2 = np.arange(len(at2))
        for j in range(int(s2.max())):
            d = c2[r2, np.minimum(f2 + 1 + j, 16)].astype(np.int64) - 48
            stops[at2] = np.where(j < s2, stops[at2] * 10 + d, stops[at2])
    # an index keeps '[' and drops its digits; a span keeps '[' and the next two characters, which become
    # ']' and the mark, and drops the rest
    length = np.where(colon, first + second - 1, first)
    kept = _template(buf, mask, np.where(colon, at + 3, at + 1), length)
    q = (at - (np.cumsum(length) - length))[colon]  # where each span's '[' stands in the template
    kept[q + 1] = 93
    kept[q + 2] = ord(mark)
    bounds = np.empty(2 * len(q), np.int64)
    bounds[0::2], bounds[1::2] = values[colon], stops[colon]
    return codecs.ascii_decode(kept)[0], values[~colon].tolist(), bounds.tolist()  # type: ignore[arg-type]  # an ndarray is a buffer
