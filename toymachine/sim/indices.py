"""A template chunk's integer indices cut out in one pass (``sim.text``'s template mode).

``LOAD x[123], R0`` becomes the template ``LOAD x[], R0`` and the index 123 joins the chunk's
index stream, for every ``[digits]`` of the chunk, in order: what ``re.split(r"\\[([0-9]+)\\]")``
gives, without a Python string per index and per piece of text between them. An ASCII chunk is
read as bytes by numpy: the ``[`` positions, the (at most 8) characters after each, the digits
dropped from the text by one mask. A chunk that is not ASCII, or holds a bracket followed by 9
digits or more, takes the regular expression (the same answer).
"""

from __future__ import annotations

__all__ = ["cut_indices", "cut_spans"]

import re

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

_INDEX = re.compile(r"\[([0-9]+)\]")  # an integer index, as in x[3] or a[0][1] (ASCII digits)
_PAD = bytes(9)  # the 9 characters after a '[': up to 8 digits, then the ']'
_SPAN_PAD = bytes(17)  # the 17 characters after a '[': 7 digits, ':', 8 digits, the ',' or ']' after them
_COLS = np.arange(8)


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


def _cut_ascii(text: str, on_long):
    raw = text.encode("ascii") + _PAD  # (9 NULs after the end: no digit, no ']')
    buf = np.frombuffer(raw, np.uint8)
    n = len(raw) - len(_PAD)
    at = np.flatnonzero(buf[:n] == 91)  # '['
    if not len(at):
        return (text[:-1] if text.endswith("\n") else text), []
    chars = sliding_window_view(buf, 10)[at, 1:]  # (brackets, 9): the characters after each '['
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
    keep = np.ones(n, bool)  # (the text's characters, not the padding)
    total = int(length.sum())
    before = np.cumsum(length) - length  # digits of the indices before each
    keep[np.repeat(at + 1 - before, length) + np.arange(total)] = False
    if buf[n - 1] == 10:
        keep[-1] = False  # the template text without its final newline
    return buf[:n][keep].tobytes().decode("ascii"), values.tolist()


def cut_spans(text: str, mark: str):
    """``(template text, indices, bounds)`` of an ASCII chunk as ``sim.text_slices`` cuts a chunk whose
    tile lines name new blocks — what ``re.split(r"\\[([0-9]{1,7})(?:\\]|:([0-9]{1,7})(?=[,\\]]))")``
    gives: every ``[digits]`` made ``[]`` (the integer to ``indices``), every ``[start:stop`` followed
    by ``,`` or ``]`` made ``[]`` + ``mark`` (start and stop to ``bounds``), the text less its final
    newline — or None where the chunk is not ASCII or a bracket is followed by 8 digits or more
    (the regular expression's then: such a number stays in its line)."""
    if not text.isascii() or len(mark) != 1 or not mark.isascii():
        return None
    raw = bytearray(text.encode("ascii"))
    raw += _SPAN_PAD
    buf = np.frombuffer(raw, np.uint8)
    n = len(raw) - len(_SPAN_PAD)
    at = np.flatnonzero(buf[:n] == 91)  # '['
    if not len(at):
        return (text[:-1] if text.endswith("\n") else text), [], []
    chars = sliding_window_view(buf, 18)[at, 1:]  # (brackets, 17): the characters after each '['
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
        tail = digit[rows[:, None], first[:, None] + 1 + _COLS]  # (brackets, 8): digits after the ':'
        second = np.where(tail.all(axis=1), 8, tail.argmin(axis=1))
        ends = chars[rows, np.minimum(first + 1 + second, 16)]
        colon &= (second > 0) & (second < 8) & ((ends == 44) | (ends == 93))  # followed by ',' or ']'
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
    # an index keeps '[' and drops its digits; a span keeps '[', writes ']' and the mark after it, drops the rest
    spans = at[colon]
    buf[spans + 1] = 93
    buf[spans + 2] = ord(mark)
    start = np.where(colon, at + 3, at + 1)
    length = np.where(colon, first + second - 1, first)
    keep = np.ones(n, bool)  # (the text's characters, not the padding)
    total = int(length.sum())
    before = np.cumsum(length) - length
    keep[np.repeat(start - before, length) + np.arange(total)] = False
    if buf[n - 1] == 10:
        keep[-1] = False  # the template text without its final newline
    bounds = np.empty(2 * len(spans), np.int64)
    bounds[0::2], bounds[1::2] = values[colon], stops[colon]
    return buf[:n][keep].tobytes().decode("ascii"), values[~colon].tolist(), bounds.tolist()
