"""``--format latex``: each section a ``tabular``, a fragment to ``\\input`` in any document.

It compiles under pdflatex, xelatex and lualatex with LaTeX's own commands only — no packages
(the first line says so): text goes through ``tex.tex_escape``, numbers, names and symbolic
values are math (``$a_{00} \\cdot b_{00}$``, ``$1.5\\times 10^{-7}$``), instructions are
``\\texttt``. Long expressions are abbreviated by whole terms (``render.expr``), never cut
inside a math group. ``fit=True`` (``--latex-fit``) scales each table down, never up, to the line width
and three quarters of the text height — a beamer frame holds it — with graphicx's ``\\resizebox``
(beamer loads graphicx; elsewhere the first line asks for it). ``tests/test_latex.py`` compiles every LaTeX output of the README's and the docs'
commands and of the bundled programs with pdflatex (and lualatex where installed).
"""

from __future__ import annotations

__all__ = ["render_latex", "tex_cell"]

from typing import Any

from .cells import Arr, Code, Num, Qty, Sym, nested_items, sig, text_of, unit_for
from .expr import expr_tex
from .report import Report, Section
from .tex import (
    FIT_PACKAGES_LINE,
    PACKAGES_LINE,
    tex_comment,
    tex_escape,
    tex_number,
    tex_number_math,
)

# a table scaled down to the line width, then to 3/4 of the text height (a frame's title takes the rest);
# \width, \totalheight: the box's natural size, as \resizebox defines them (the starred form scales the total
# height: a tabular sits on its centre, half of it below the baseline)
_FIT_OPEN = (r"\resizebox*{!}{\ifdim\totalheight>0.75\textheight 0.75\textheight\else\totalheight\fi}{%",
             r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%")
_FIT_CLOSE = "}}"


def tex_cell(cell: Any) -> str:
    """One cell as LaTeX (text mode, math inline)."""
    if cell is None:
        return ""
    if isinstance(cell, Sym):
        return "$" + expr_tex(cell.expr, cell.namer, cell.limit) + "$"
    if isinstance(cell, Arr):
        return "$" + nested_items(cell.values, _tex_leaf, r"\dots") + "$"
    if isinstance(cell, Code):
        return r"\texttt{" + tex_escape(cell.text) + "}"
    if isinstance(cell, Qty):
        out = tex_number(sig(cell.value, cell.digits)) + (" " + tex_escape(unit_for(cell.value, cell.unit))
                                                          if cell.unit else "")
        if cell.also:
            out += " (" + ", ".join((tex_number(sig(v, cell.digits)) + " " + tex_escape(u)).rstrip()
                                    for v, u in cell.also) + ")"
        return out + (" " + tex_escape(cell.note) if cell.note else "")
    if isinstance(cell, (Num, int, float)) and not isinstance(cell, bool):
        return tex_number(text_of(cell))
    return tex_escape(text_of(cell))


def _tex_leaf(v) -> str:
    """An element of an array inside the array's math group."""
    if v is None:
        return r"\cdot"
    if isinstance(v, (int, float)):
        return tex_number_math(sig(v)) or r"\mathrm{?}"
    if hasattr(v, "shape"):
        return r"\mathrm{tile}(" + r" \times ".join(str(n) for n in v.shape) + ")"
    if hasattr(v, "op"):
        return expr_tex(v, None, 0)
    return r"\mathrm{" + tex_escape(str(v)) + "}"


def _section(s: Section, cells: list, fit: bool = False) -> list[str]:
    cols = "".join("r" if a == "r" else "l" for a in s.aligns())
    out = [tex_comment(s.title)]
    for line in s.preface:
        out.append(r"\noindent " + tex_escape(line) + r"\par")
    if fit:
        out += [r"\noindent", *_FIT_OPEN]
    out += [f"\\begin{{tabular}}{{{cols}}}", "\\hline", " & ".join(tex_escape(h) for h in s.headers) + r" \\",
            "\\hline"]
    out += [" & ".join(row) + r" \\" for row in cells]
    out += ["\\hline", "\\end{tabular}" + (_FIT_CLOSE + r"\par" if fit else ""), ""]
    return out


def render_latex(report: Report, fit: bool = False) -> str:
    out = [FIT_PACKAGES_LINE if fit else PACKAGES_LINE]
    for s in report.sections:
        out += _section(s, [[tex_cell(c) for c in row] for row in s.rows], fit)
    for n in report.notes:
        out.append(tex_comment(n))
    return "\n".join(out).rstrip("\n") + "\n"
