"""The README's and the docs pages' Python blocks run as written, in order within each block, and every
value a line claims in its comment (``expr   # (7, 4, [[19.0]])``, ``expr   # 21, without simulating``) is
what the expression gives."""

import ast
import io
import re
import sys
import tokenize

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "docs"))
from docgen.pages import english_pages  # noqa: E402

# the README's and the English docs pages' Python blocks
BLOCKS = [block for page in [ROOT / "README.md", *english_pages()]
          for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)]


def _comments(source: str) -> dict[int, str]:
    return {tok.start[0]: tok.string[1:].strip() for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT}


def _claim(comment: str):
    """The literal a comment claims (the whole comment, or what precedes its first ", "), or None."""
    for text in (comment, comment.split(", ")[0]):
        try:
            return True, ast.literal_eval(text)
        except (ValueError, SyntaxError):
            continue
    return False, None


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_python_block_runs_and_its_claims_hold(source, monkeypatch):
    monkeypatch.chdir(ROOT)  # the blocks name programs/… relative to the repository
    comments = _comments(source)
    namespace: dict = {"__name__": "readme"}
    checked = 0
    for node in ast.parse(source).body:
        code = compile(ast.Module([node], type_ignores=[]), "<README>", "exec")
        comment = comments.get(node.end_lineno)
        ok, want = _claim(comment) if comment and isinstance(node, ast.Expr) else (False, None)
        if ok:
            got = eval(compile(ast.Expression(node.value), "<README>", "eval"), namespace)
            assert got == want, f"README line {ast.unparse(node)!r} claims {want!r}, gives {got!r}"
            checked += 1
        else:
            exec(code, namespace)
    claims = sum(1 for line, text in comments.items() if _claim(text)[0])
    assert checked == claims  # no claim sits on a line that is not an expression
