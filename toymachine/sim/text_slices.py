"""Text mode's template cut (``sim.text``): a chunk's integer indices, and — where its tile lines name
new blocks — the first span of its tile blocks, cut out of the chunk in one regex pass.

``LOAD x[123], R0`` → the key ``LOAD x[], R0`` and 123 in the chunk's index stream (``run.next_index``),
as ever. A chunk whose tile LOAD/STORE lines mostly name blocks not named before in its head
(``mixed-new``: ``LOAD Q[12:14, :], T0``) has the first span of each block cut too: the key ``LOAD
Q[]␁, :], T0`` (``MARK`` after the cut span), 12 and 14 in the chunk's *bound stream*
(``run.tile_bounds``: a list and its position), so its tile lines are one template each
(``engines.tile_templates``) and the chunk runs as blocks. A chunk whose tile lines repeat
(``mixed``) keeps them as whole lines — its tile blocks are then counted, not run
(``tile_blocks.separate``) — and so does one holding ``MARK``; a number of 8 digits or more is never
cut (the line compiles as itself: the parser's bound, at its line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["cut", "tile_miss", "template_ahead", "MARK"]

import re
from itertools import chain, compress, count, repeat
from operator import is_

from ..errors import Location
from ..limits import LIMITS, LimitError
from .engines import scalar
from .engines.kinds import SKIP, SKIP_SLOT
from .engines.tile_templates import MARK, template_code
from .indices import cut_indices, cut_spans

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
