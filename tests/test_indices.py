"""sim.indices: a template chunk's indices cut out in one pass (numpy on an ASCII chunk). The oracle
is the regular expression text mode used before (``re.split``): the same template text, the same
indices, the long-index check called exactly when an index has more than 7 digits."""

import re

from hypothesis import given
from hypothesis import strategies as st

from toymachine.sim.indices import cut_indices

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
