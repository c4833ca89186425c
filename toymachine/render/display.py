"""Jupyter display of a ``Report``: MIME type → renderer. ``formats`` fills it as it loads (every
import of ``render`` loads ``formats`` first); ``report`` reads it, without importing ``formats``."""

from __future__ import annotations

__all__ = ["DISPLAY"]

from typing import Any, Callable

DISPLAY: dict[str, Callable[[Any], str]] = {}
