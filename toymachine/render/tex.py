"""LaTeX text: the one escaping function (``tex_escape``) and math for numbers and names.

Everything ``--format latex`` prints goes through ``tex_escape`` (text) or ``tex_number`` /
``tex_name`` (math), so the output compiles under pdflatex, xelatex and lualatex with LaTeX's
own commands only (no packages): characters special to TeX are escaped, and every non-ASCII
character the project prints (subscript digits, ·, −, ×, …, ≤, ↔, Greek letters) becomes its
LaTeX command — in math mode where it is a symbol. A character outside that table falls back to
its ASCII decomposition (é → \\'e) or, failing that, to ``?``: never raw UTF-8, which pdflatex
would reject for a character its fonts do not cover.
"""

from __future__ import annotations

__all__ = ["tex_escape", "tex_comment", "tex_number", "tex_name", "SUBSCRIPTS", "PACKAGES_LINE", "FIT_PACKAGES_LINE"]

import re
import unicodedata

# the comment line every LaTeX output starts with
PACKAGES_LINE = ("% toym LaTeX fragment: \\input it in any document; LaTeX's own commands only (no packages "
                 "needed); pdflatex, xelatex, lualatex")
FIT_PACKAGES_LINE = ("% toym LaTeX fragment, each table scaled to fit (--latex-fit): \\input it in a beamer frame, or "
                     "after \\usepackage{graphicx} in any document; pdflatex, xelatex, lualatex")

SUBSCRIPTS = {c: str(i) for i, c in enumerate("₀₁₂₃₄₅₆₇₈₉")} | {"₋": "-"}
SUPERSCRIPTS = {"⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6", "⁷": "7", "⁸": "8",
                "⁹": "9", "ᵀ": r"\mathrm{T}", "⁻": "-"}

_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
            "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
            "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", '"': "''"}

# non-ASCII → (text-mode LaTeX, is math)
_UNICODE = {
    "·": (r"\cdot", True), "×": (r"\times", True), "−": ("-", True), "∘": (r"\circ", True),
    "≤": (r"\le", True), "≥": (r"\ge", True), "≠": (r"\ne", True), "≈": (r"\approx", True),
    "→": (r"\to", True), "←": (r"\leftarrow", True), "↔": (r"\leftrightarrow", True), "⇒": (r"\Rightarrow", True),
    "√": (r"\surd", True), "∞": (r"\infty", True), "±": (r"\pm", True), "∑": (r"\sum", True), "Σ": (r"\Sigma", True),
    "Θ": (r"\Theta", True), "θ": (r"\theta", True), "τ": (r"\tau", True), "α": (r"\alpha", True),
    "β": (r"\beta", True), "γ": (r"\gamma", True), "δ": (r"\delta", True), "ε": (r"\varepsilon", True),
    "λ": (r"\lambda", True), "μ": (r"\mu", True), "π": (r"\pi", True), "σ": (r"\sigma", True),
    "ℓ": (r"\ell", True), "⌈": (r"\lceil", True), "⌉": (r"\rceil", True), "⌊": (r"\lfloor", True),
    "⌋": (r"\rfloor", True), "∈": (r"\in", True), "′": (r"\prime", True), "∂": (r"\partial", True),
    "…": (r"\dots{}", False), "—": ("---", False), "–": ("--", False), "‘": ("`", False), "’": ("'", False),
    "“": ("``", False), "”": ("''", False), "°": (r"\ensuremath{^\circ}", False), "\u00a0": ("~", False),
    "µ": (r"\ensuremath{\mu}", False),
}
_ACCENTS = {"\u0301": "'", "\u0300": "`", "\u0302": "^", "\u0308": '"', "\u0303": "~", "\u0327": "c"}


def tex_comment(text: str) -> str:
    """A ``%`` comment line holding ``text``: every line break and control character folded to a
    space, so nothing after a newline in a title (``\\input{…}``, ``\\write18{…}``) leaves the comment."""
    return "% " + "".join(c if c >= " " and c not in "\x7f\x85\u2028\u2029" else " " for c in text)


def tex_escape(text: str) -> str:
    """Text → LaTeX text mode (the one escaping function of every LaTeX output)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c in _SPECIAL:
            out.append(_SPECIAL[c])
        elif c < "\x80":  # control characters and line breaks fold to a space: a cell, a title stays one line
            out.append(c if " " <= c < "\x7f" else " ")
        elif c in SUBSCRIPTS or c in SUPERSCRIPTS:  # a run of them is one math group: x₁₀ → x$_{10}$
            table, mark = (SUBSCRIPTS, "_") if c in SUBSCRIPTS else (SUPERSCRIPTS, "^")
            j = i
            while j < len(text) and text[j] in table:
                j += 1
            out.append(f"${mark}{{{''.join(table[ch] for ch in text[i:j])}}}$")
            i = j
            continue
        elif c in _UNICODE:
            cmd, math = _UNICODE[c]
            out.append(f"${cmd}$" if math else cmd)
        else:
            out.append(_fallback(c))
        i += 1
    return "".join(out)


def _fallback(c: str) -> str:
    parts = unicodedata.normalize("NFKD", c)
    base = "".join(ch for ch in parts if ch < "\x80")
    accents = [ch for ch in parts if ch in _ACCENTS]
    if base and len(base) == 1 and accents:
        return "\\" + _ACCENTS[accents[0]] + "{" + base + "}"
    if base:
        return tex_escape(base)
    return "?"


_FLOAT = re.compile(r"^(-?)(\d+(?:\.\d+)?)(?:e([+-]?\d+))?$")


def tex_number(text: str) -> str:
    """A number's text (``1.5e-07``, ``-3``, ``inf``) as LaTeX math, ``$…$`` included."""
    body = tex_number_math(text)
    return f"${body}$" if body is not None else tex_escape(text)


def tex_number_math(text: str) -> str | None:
    """The math-mode body of a number (no ``$``), or None when ``text`` is not a number."""
    t = text.strip()
    if t in ("inf", "-inf"):
        return ("-" if t[0] == "-" else "") + r"\infty"
    if t == "nan":
        return r"\mathrm{NaN}"
    m = _FLOAT.match(t)
    if not m:
        return None
    sign, mant, exp = m.groups()
    if exp is None:
        return sign + mant
    return f"{sign}{mant}\\times 10^{{{int(exp)}}}"


def tex_name(name: str) -> str:
    """An array or output name as math: ``c₀₀`` → ``c_{00}``, ``x₁₀,₃`` → ``x_{10,3}``,
    ``out₂`` → ``\\mathit{out}_{2}``, ``m`` → ``m``."""
    i = len(name)
    while i > 0 and (name[i - 1] in SUBSCRIPTS or name[i - 1] == ","):
        i -= 1
    stem, sub = name[:i], name[i:]
    base = stem if len(stem) == 1 and stem.isascii() and stem.isalpha() else \
        r"\mathit{" + "".join(r"\_" if c == "_" else (c if c.isascii() and c.isalnum() else "?") for c in stem) + "}"
    if not sub:
        return base
    return base + "_{" + "".join(SUBSCRIPTS.get(c, c) for c in sub) + "}"
