"""Symbolic values (``sim.symbolic.Expr``) as text and as LaTeX math, abbreviated by whole terms.

A long expression is shortened the way a lecturer would write it on a slide: a sum keeps its
first terms and its last, ``e^(x₀−m) + e^(x₁−m) + … + e^(x₅−m)``; a product or a max likewise;
a subterm too long for its share of the room becomes ``…`` as a whole. Nothing is ever cut in the
middle of a term, so the LaTeX form (``e^{x_{0}-m} + \\dots + e^{x_{5}-m}``) always balances its
braces. Text rendering matches ``sim.symbolic.render`` when nothing is abbreviated.
"""

from __future__ import annotations

__all__ = ["expr_text", "expr_tex"]

from .tex import tex_name, tex_number_math

_PREC = {"leaf": 9, "const": 9, "exp": 9, "max": 9, "·": 5, "/": 5, "+": 3, "−": 3, "…": 9}
_ELLIPSIS = object()  # a dropped run of terms / an abbreviated subterm


def expr_text(e, namer=None, limit: int = 0) -> str:
    """The expression as text (``e^(x₀−m) + …``), at most about ``limit`` characters (0: whole)."""
    return _Renderer(namer, tex=False).show(e, limit)


def expr_tex(e, namer=None, limit: int = 0) -> str:
    """The expression as LaTeX math (no ``$``), abbreviated exactly as ``expr_text`` is."""
    return _Renderer(namer, tex=True).show(e, limit)


class _Renderer:
    def __init__(self, namer, tex: bool):
        self.namer = namer
        self.tex = tex
        self._full: dict = {}  # node → its whole rendering (memo)
        self._text = _Renderer(namer, False) if tex else self  # sizes are measured in text characters

    # -- sizes: the text length of a subterm, rendered whole -----------------------------------
    def length(self, x) -> int:
        return len(self._text.whole(x))

    def name(self, x) -> str | None:
        return self.namer.name_of(x) if self.namer else None

    def whole(self, x) -> str:
        got = self._full.get(x)
        if got is None:
            got = self._full[x] = self._node(x, 0)
        return got

    def show(self, e, limit: int) -> str:
        return self.node(e, limit if limit and self.length(e) > limit else 0)

    # -- one node; budget 0 = no abbreviation ----------------------------------------------------
    def node(self, x, budget: int) -> str:
        if x is not _ELLIPSIS and (not budget or self.length(x) <= budget):
            return self.whole(x)
        return self._node(x, budget)

    def _node(self, x, budget: int) -> str:
        if x is _ELLIPSIS:
            return r"\dots" if self.tex else "…"
        nm = self.name(x)
        if nm is not None:
            return tex_name(nm) if self.tex else nm
        if x.op == "leaf":
            return tex_name(x.name) if self.tex else x.name
        if x.op == "const":
            return (tex_number_math(x.name) or x.name) if self.tex else x.name
        if budget and budget < 4:
            return self.node(_ELLIPSIS, 0)
        if x.op == "exp":
            a = x.args[0]
            inner = self.node(a, max(budget - 4, 1) if budget else 0)
            if self.tex:
                return "e^{" + inner + "}"
            simple = a.op in ("leaf", "const") or self.name(a) is not None
            return f"e^{inner}" if simple else f"e^({inner})"
        if x.op == "max":
            items = self.keep(x.args, budget - 5 if budget else 0, 2)
            body = ", ".join(self.node(a, b) for a, b in items)
            return (r"\max(" if self.tex else "max(") + body + ")"
        if x.op == "/" and self.tex:
            half = budget // 2 if budget else 0
            return r"\frac{" + self.node(x.args[0], half) + "}{" + self.node(x.args[1], half) + "}"
        sep = {"+": 3, "−": 1, "·": 1, "/": 1}[x.op]
        items = self.keep(x.args, budget, sep) if x.op in ("+", "·") else \
            [(a, (budget // len(x.args)) if budget else 0) for a in x.args]
        parts = []
        for i, (a, b) in enumerate(items):
            t = self.node(a, b)
            pa = 9 if (a is _ELLIPSIS or self.name(a) is not None) else _PREC[a.op]
            need = pa < _PREC[x.op] or (i > 0 and x.op in ("−", "/") and pa == _PREC[x.op])
            parts.append(self.paren(t) if need else t)
        if self.tex:
            joiner = {"+": " + ", "−": " - ", "·": r" \cdot ", "/": " / "}[x.op]
        else:
            joiner = " + " if x.op == "+" else x.op
        return joiner.join(parts)

    def paren(self, t: str) -> str:
        return (r"\left(" + t + r"\right)") if self.tex else f"({t})"

    def keep(self, args, budget: int, sep: int) -> list:
        """(arg, its budget) for the args shown: all of them, or the first few, ``…`` and the last."""
        if not budget or sum(self.length(a) for a in args) + sep * (len(args) - 1) <= budget:
            return [(a, 0) for a in args]
        if len(args) < 3:
            share = max(budget // len(args) - sep, 1)
            return [(a, share) for a in args]
        last = args[-1]
        room = budget - self.length(last) - 2 * sep - 1  # the last term, "…" and its separators
        shown: list = []
        for a in args[:-1]:
            need = self.length(a) + (sep if shown else 0)
            if need > room:
                break
            shown.append((a, 0))
            room -= need
        if not shown:  # not even the first term fits whole: abbreviate it and the last
            share = max(budget // 2 - 2 * sep, 1)
            return [(args[0], share), (_ELLIPSIS, 0), (last, share)]
        return shown + [(_ELLIPSIS, 0), (last, 0 if self.length(last) <= budget // 2 else budget // 2)]
