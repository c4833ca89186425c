"""Renderers: ``render(result, fmt) -> str`` for every output format.

A run is first turned into a ``Report`` — titled tables of cells (``cells``: text, numbers,
quantities with units, instructions, symbolic values, arrays) — and each format draws the same
tables: ``table`` (rich, for terminals: ``terminal``), ``markdown``, ``csv`` (``csvout``),
``latex`` (``latex``, escaping by ``tex``), ``html``; ``json`` serialises ``Result.to_dict()``
(``jsonout``: field selection, big arrays summarised). Output is deterministic: same inputs,
same bytes.
"""

from __future__ import annotations

__all__ = ["FORMATS", "render", "render_report", "Report", "Section", "report_of"]

from .formats import FORMATS, render, render_report


def __getattr__(name: str):  # the tables' model loads on first use (a JSON run draws no table)
    if name in ("Report", "Section", "report_of"):
        from . import report

        return getattr(report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
