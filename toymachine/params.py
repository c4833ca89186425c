"""Checks of the parameters users give generators, cost models and experiments (``n = 0``,
``schedule = 'innr'``): a ``ConfigError`` naming the parameter, never an assert; and
``command_line``, the one way the library writes a ``toym`` command line into what it prints (a
generated program's header: the command that regenerates it)."""

from __future__ import annotations

__all__ = ["check_int", "check_choice", "command_line"]

from collections.abc import Sequence
from typing import Any

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


def command_line(command: str, **params: Any) -> str:
    """``toym COMMAND --key value …`` in the order given: None leaves a parameter out, True is its
    flag alone, False its ``--no-`` form. A flag is spelled as the CLI's vocabulary spells the key
    (``block_m`` → ``--block-m``; tests/test_vocabulary.py holds every key to it)."""
    parts = [f"toym {command}"]
    for key, value in params.items():
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        parts.append(flag if value is True else "--no-" + flag[2:] if value is False else f"{flag} {value}")
    return " ".join(parts)
