"""The Pygments lexer for the assembly (entry point ``toym``)."""

import sys

import pytest
from conftest import PROGRAMS, ROOT
from pygments.token import Comment, Error, Keyword, Name, Number, Text

from toymachine.gen.tile import attention_program
from toymachine.isa import MNEMONICS
from toymachine.render.lexer import ToyAsmLexer, highlight_line

SOURCES = sorted(PROGRAMS.glob("*.asm"))


def tokens(text):
    return list(ToyAsmLexer().get_tokens(text))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_bundled_program_lexes_without_error_tokens(path):
    text = path.read_text(encoding="utf-8")
    toks = tokens(text)
    assert "".join(v for _, v in toks) == text  # lossless
    assert not [v for t, v in toks if t in Error or (t is Text and v.strip())]


def test_generated_tile_program_lexes():
    text = attention_program(n=8, d=4, algo="fa2", causal=True, block_m=4, block_n=4).to_text()
    assert not [v for t, v in tokens(text) if t in Error or (t is Text and v.strip())]


def test_token_kinds():
    toks = [(t, v) for t, v in tokens("MAC_Z T0, T1.T, T3  ; S = Q·Kᵀ\nload q[0:2, :], t4\n.data x = [1, -inf]\n")
            if v.strip()]
    assert toks[0] == (Keyword, "MAC_Z")
    assert (Name.Variable, "T1.T") in toks or ((Name.Variable, "T1") in toks and (Name.Variable, ".T") in toks)
    assert (Comment.Single, "; S = Q·Kᵀ") in toks
    assert (Keyword, "load") in toks and (Name, "q") in toks and (Name.Variable, "t4") in toks  # case-insensitive
    assert (Keyword.Declaration, ".data") in toks and (Number, "-inf") in toks


def test_every_mnemonic_is_a_keyword():
    for m in MNEMONICS:
        assert tokens(m + " R0\n")[0] == (Keyword, m)


def test_highlight_line_is_spans():
    html = highlight_line("LOAD a[0][1], R0")
    assert html.startswith('<span class="k">LOAD</span>') and '<span class="nv">R0</span>' in html


def test_entry_point_is_declared():
    """pyproject registers the lexer under pygments.lexers as `toym` (so an installed
    toymachine gives `pygmentize -l toym`, Sphinx and MkDocs highlighting)."""
    if sys.version_info < (3, 11):
        pytest.skip("tomllib is Python 3.11+")
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = project["project"]["entry-points"]["pygments.lexers"]["toym"]
    module, _, name = target.partition(":")
    lexer = getattr(__import__(module, fromlist=[name]), name)
    assert lexer is ToyAsmLexer and "toym" in lexer.aliases
    assert "pygments" in " ".join(project["project"]["dependencies"])
    data = project["tool"]["setuptools"]["package-data"]["toymachine.render"]
    assert any("page_assets" in d for d in data)
