"""Renderers: ``render(result, fmt) -> str`` for every output format.

A run is first turned into a ``Report`` — titled tables of strings — and each format
draws the same tables: ``table`` (rich, for terminals), ``markdown``, ``csv``,
``latex``, ``html``; ``json`` serialises ``Result.to_dict()``. Output is deterministic:
same inputs, same bytes.
"""

from __future__ import annotations

__all__ = ["FORMATS", "render", "render_report", "Report", "Section", "report_of"]

from .report import Report, Section, report_of
from .formats import FORMATS, render, render_report
