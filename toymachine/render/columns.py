"""Which columns a table shows: ``--columns a,b,c`` (``select_columns``) and the columns that are
the same in every row, listed once above the table instead (``collapse_constant``; human formats
only — CSV and JSON keep every column, for programs that read them)."""

from __future__ import annotations

__all__ = ["select_columns", "collapse_constant", "column_names"]

import dataclasses
import re
from collections.abc import Sequence

from ..errors import ConfigError, Opt
from .cells import text_of
from .report import Report, Section


def _norm(name: str) -> str:
    """``DRAM reads (words)``, ``dram_reads``, ``--block-m`` → ``dramreads``, ``blockm``."""
    return re.sub(r"[\s_\-]+", "", re.sub(r"\(.*?\)", "", name).lower())


def column_names(s: Section) -> list[str]:
    return [k if k == h else f"{h}" for h, k in zip(s.headers, s.json_keys())]


def _pick(s: Section, idx: list[int], **changes) -> Section:
    keys = s.json_keys()
    aligns = s.aligns()
    keep = sum(1 for i in idx if i < s.key_columns)
    return dataclasses.replace(
        s, headers=tuple(s.headers[i] for i in idx), rows=tuple(tuple(r[i] for i in idx) for r in s.rows),
        align=tuple(aligns[i] for i in idx), keys=tuple(keys[i] for i in idx), key_columns=keep, **changes)


def select_columns(report: Report, wanted: Sequence[str]) -> Report:
    """Only the named columns, in the order named, of every section that has them all (a name
    matches a header or JSON key, ignoring case, spaces, - and _ and a unit in parentheses)."""
    wanted = [w.strip() for w in wanted if w.strip()]
    if not wanted:
        raise ConfigError.of_option("columns", "is empty", hint=("name columns, e.g. ", Opt("columns", "n,cycles,gap")))
    sections = []
    for s in report.sections:
        lookup: dict[str, int] = {}
        for i, (h, k) in enumerate(zip(s.headers, s.json_keys())):
            for name in (h, k):
                lookup.setdefault(_norm(name), i)
        idx: list[int] = []
        for w in wanted:
            found = lookup.get(_norm(w))
            if found is None:
                import difflib

                close = difflib.get_close_matches(_norm(w), list(lookup), n=1, cutoff=0.6)
                guess = s.json_keys()[lookup[close[0]]] if close else None
                raise ConfigError((Opt("columns"), f": no column '{w}'" + (f" (did you mean '{guess}'?)" if guess else "")),
                                  key="columns", hint="columns: " + ", ".join(s.json_keys()))
            if found not in idx:
                idx.append(found)
        sections.append(_pick(s, idx, collapse=False))
    return dataclasses.replace(report, sections=tuple(sections))


def collapse_constant(s: Section) -> Section:
    """A section without the columns that hold one value in every row (two rows or more); they
    become one preface line above it: ``same in every row: n = 256, d = 64, causal = no``."""
    if not s.collapse or len(s.rows) < 2:
        return s
    texts = [[text_of(c) for c in r] for r in s.rows]
    constant = [i for i in range(len(s.headers)) if len({r[i] for r in texts}) == 1]
    if not constant or len(constant) == len(s.headers):
        return s
    listed = ", ".join(f"{s.headers[i]}: {texts[0][i] or '—'}" for i in constant)
    idx = [i for i in range(len(s.headers)) if i not in constant]
    return _pick(s, idx, preface=s.preface + (f"same in every row: {listed}",), collapse=False)
