"""The CLI's direct option conversion (``cli.lazy``) sees through both spellings of an optional."""

from __future__ import annotations

from typing import Optional, Union

from toymachine.cli.lazy import leaf


def test_optional_in_either_spelling_unwraps_to_its_type():
    assert leaf(Optional[int]) is int  # noqa: UP045 - the typing spelling is what is tested
    assert leaf(Union[float, None]) is float  # noqa: UP007 - as above
    assert leaf(int | None) is int
    assert leaf(str) is str
    assert leaf(int | str) == int | str  # not an optional: kept whole
