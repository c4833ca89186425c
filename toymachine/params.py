"""Checks of the parameters users give generators, cost models and experiments (``--n 0``,
``--schedule innr``): a ``ConfigError`` naming the option, never an assert."""

from __future__ import annotations

__all__ = ["check_int", "check_choice"]

from collections.abc import Sequence

import numpy as np

from .errors import ConfigError


def check_int(name: str, value, minimum: int, why: str = "") -> int:
    """``value`` as an int ≥ ``minimum``, else a ConfigError naming the option."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError.of_option(name, f"must be a whole number, got {value!r}")
    if value < minimum:
        raise ConfigError.of_option(name, f"must be at least {minimum}, got {value}", hint=why or None)
    return int(value)


def check_choice(name: str, value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ConfigError.of_option(name, f"must be one of {', '.join(choices)}; got {value!r}")
    return value
