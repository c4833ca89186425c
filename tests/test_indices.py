"""sim.cut: a template chunk's indices cut out in one pass (numpy on an ASCII chunk). The oracle
is the regular expression text mode used before (``re.split``): the same template text, the same
indices, the long-index check called exactly when an index has more than 7 digits."""

import re

from hypothesis import given
from hypothesis import strategies as st

from toymachine.sim.cut import cut_indices, cut_spans

_INDEX = re.compile(r"\[([0-9]+)\]")


def _reference(text):
    parts = _INDEX.split(text)
    if text.endswith("\n"):
        parts[-1] = parts[-1][:-1]
    nums = parts[1::2]
    return "[]".join(parts[0::2]), [int(x) for x in nums], max(map(len, nums), default=0) > 7


def _cut(text):
    called = []
    ktext, ints = cut_indices(text, lambda: called.append(1))
    return ktext, ints, bool(called)


_PIECES = st.sampled_from(["[", "]", "[]", "][", "0", "7", "12", "x", "LOAD x", ", R0", "\n", " ", ":", "é",
                           "[3]", "[0][1]", "[12345678]", "[123456789]", "[00]", "[1:2, :]", "[[4]", "[5]]"])


@given(st.lists(st.one_of(_PIECES, st.integers(0, 10 ** 12).map(str)), max_size=40))
def test_random_text_cuts_as_the_regular_expression(pieces):
    text = "".join(pieces)
    assert _cut(text) == _reference(text)


@given(st.lists(st.tuples(st.sampled_from(["LOAD x[{}], R0", "STORE R1, out[{}]", "LOAD a[{}][{}], R2", "MUL R0, R0, R1"]),
                          st.integers(0, 10 ** 9), st.integers(0, 99)), min_size=1, max_size=30), st.booleans())
def test_trace_lines_cut_as_the_regular_expression(lines, newline):
    text = "\n".join(form.format(i, j) for form, i, j in lines) + ("\n" if newline else "")
    assert _cut(text) == _reference(text)


def test_edges():
    for text in ["", "\n", "x[1]", "x[1]\n", "x[12", "x[", "[", "x[99999999]", "x[123456789]\n", "é[1]\n[2]",
                 "x[0000001]", "LOAD x[7], R0\nLOAD x[", "]" * 3 + "[" * 3]:
        assert _cut(text) == _reference(text), text


# sim.text_slices' cut of a chunk whose tile lines name new blocks: indices and the first span of a tile block
_CUT = re.compile(r"\[([0-9]{1,7})(?:\]|:([0-9]{1,7})(?=[,\]]))")


def _spans_reference(text):
    parts = _CUT.split(text)
    texts, starts, stops = parts[0::3], parts[1::3], parts[2::3]
    for i, stop in enumerate(stops, 1):
        if stop is not None:
            texts[i] = "\x01" + texts[i]
    if text.endswith("\n"):
        texts[-1] = texts[-1][:-1]
    bounds = [int(x) for start, stop in zip(starts, stops) if stop is not None for x in (start, stop)]
    return "[]".join(texts), [int(s) for s, stop in zip(starts, stops) if stop is None], bounds


def _spans(text):
    got = cut_spans(text, "\x01")
    if got is None:  # (refused: not ASCII, or 8 digits after a bracket — the regular expression's then)
        assert not text.isascii() or re.search(r"\[[0-9]{8}", text), text
        return _spans_reference(text)
    return got


_SPAN_PIECES = st.sampled_from(["[", "]", ":", ",", " ", "0", "7", "12", "1234567", "12345678", "x", "\n", "é",
                                "[3]", "[0][1]", "[1:2, :]", "[12:14, :]", "[1:2]", "[1:2:3]", "[:5]", "[5:]",
                                "[1:12345678]", "[1234567:7654321,", "[3:4", "LOAD Q", ", T0", ":, ", "[[4:5]"])


@given(st.lists(st.one_of(_SPAN_PIECES, st.integers(0, 10 ** 9).map(str)), max_size=40))
def test_random_text_spans_cut_as_the_regular_expression(pieces):
    text = "".join(pieces)
    assert _spans(text) == _spans_reference(text)


@given(st.lists(st.tuples(st.sampled_from(["LOAD x[{}], R0", "LOAD Q[{}:{}, :], T0", "STORE T1, O[{}:{}, 2:4]",
                                           "LOAD v[{}:{}], T2", "LOAD a[{}][{}], R2", "MUL T0, T0, T1"]),
                          st.integers(0, 10 ** 8), st.integers(0, 10 ** 8)), min_size=1, max_size=30), st.booleans())
def test_tile_trace_lines_cut_as_the_regular_expression(lines, newline):
    text = "\n".join(form.format(i, j) for form, i, j in lines) + ("\n" if newline else "")
    assert _spans(text) == _spans_reference(text)


def test_span_edges():
    for text in ["", "\n", "Q[1:2, :]", "Q[1:2, :]\n", "Q[1:2", "Q[1:2,", "Q[1:2]", "x[1]\nQ[3:4, 5:6]\n",
                 "Q[1234567:7654321, :]", "Q[1:12345678, :]", "Q[1:1234567]", "é[1:2, :]", "[[1:2]]", "[1:2:3]"]:
        assert _spans(text) == _spans_reference(text), text
    assert cut_spans("Q[12345678:1, :]", "\x01") is None and cut_spans("é", "\x01") is None
