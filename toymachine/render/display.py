"""Jupyter display of a ``Report``: MIME type → renderer. ``formats`` fills it as it loads (every
import of ``render`` loads ``formats`` first); ``report`` reads it, without importing ``formats``."""

from __future__ import annotations

__all__ = ["DISPLAY"]

from collections.abc import Callable
from typing import Any

DISPLAY: dict[str, Callable[[Any], str]] = {}
