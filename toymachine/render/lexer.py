"""A Pygments lexer for the toy machine's assembly (seed 000's traces, the tile programs).

Registered under the entry point group ``pygments.lexers`` as ``toym`` (see pyproject), so
once toymachine is installed ``pygmentize -l toym trace.asm``, Sphinx's
``.. code-block:: toym`` and MkDocs' ```` ```toym ```` fences highlight it. The step viewer
(``toymachine.render.page``) uses it for its listing.

Tokens: ``; comment`` / ``# comment`` (Comment), ``.data``/``.array`` (Keyword.Declaration),
the mnemonics of ``toymachine.isa.ISA`` (Keyword; the table is the one source of truth),
registers ``R0``, ``T3``, ``T1.T`` (Name.Variable), array names before ``[`` (Name),
numbers including ``inf``/``nan`` (Number), ``[ ] , : =`` (Punctuation). Mnemonics and
register names are case-insensitive, as the assembler reads them.
"""

from __future__ import annotations

__all__ = ["ToyAsmLexer", "highlight_line", "token_css"]

import functools
import re

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import Comment, Keyword, Name, Number, Punctuation, Text, Whitespace

from ..isa import MNEMONICS

_NUMBER = r"[+-]?(?:(?:inf(?:inity)?|nan)\b|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"


class ToyAsmLexer(RegexLexer):
    """The toy machine's assembly: ``LOAD a[0][1], R0``, ``MAC_Z T0, T1.T, T3``, ``.data x = [1, 2]``."""

    name = "toym"
    aliases = ["toym", "toy-asm"]
    filenames: list[str] = []  # .asm is shared with real assemblers: pick this lexer by name
    mimetypes = ["text/x-toym"]
    flags = re.IGNORECASE | re.MULTILINE

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"[;#].*", Comment.Single),
            (r"\.(?:data|array)\b", Keyword.Declaration, "declaration"),
            (words(MNEMONICS, suffix=r"\b"), Keyword, "operands"),
            (r"[a-z_]\w*", Name.Label, "operands"),  # not a mnemonic: the assembler says why
            (r".", Text),
        ],
        "declaration": [
            (r"[ \t]+", Whitespace),
            (r"[;#].*", Comment.Single),
            (r"\n", Whitespace, "#pop"),
            (r"null\b", Keyword.Constant),
            (_NUMBER, Number),
            (r"[a-z_]\w*", Name),
            (r"[\[\],=]", Punctuation),
            (r".", Text),
        ],
        "operands": [
            (r"[ \t]+", Whitespace),
            (r"[;#].*", Comment.Single),
            (r"\n", Whitespace, "#pop"),
            (r"([rt]\d+|acc)(\.t)?\b", bygroups(Name.Variable, Name.Variable)),
            (r"[a-z_]\w*(?=\s*\[)", Name),
            (_NUMBER, Number),
            (r"[\[\],:]", Punctuation),
            (r".", Text),
        ],
    }


@functools.lru_cache(maxsize=1 << 16)
def highlight_line(text: str) -> str:
    """One line as HTML spans with Pygments' short class names (``k``, ``nv``, ``mi`` …). Cached:
    a trace repeats its lines, and ``toym serve`` redraws the same lines at every keystroke."""
    from pygments import highlight

    return highlight(text, _LEXER, _formatter()).rstrip("\n")


@functools.lru_cache(maxsize=1)
def _formatter():
    """One formatter for every line (building one computes its whole style sheet: ~1 ms)."""
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(nowrap=True)


def token_css(scope: str) -> str:
    """CSS for the token classes under ``scope`` (Pygments' ``default`` style)."""
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(scope)


_LEXER = ToyAsmLexer(stripnl=False, ensurenl=False)
