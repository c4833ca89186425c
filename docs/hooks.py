"""MkDocs hook: the generated pages and live files, written into docs/ before MkDocs collects them.

* ``reference/{cli,flags,isa,json,machine-yaml,problem-yaml,api}.md`` from ``docgen/reference.py`` (the
  typer app, ``isa.py``, the schemas, the docstrings);
* ``live/*.html`` (the step viewer) and ``live/*.png`` (plots) from ``docgen/live.py``;
* ``images/fa1_page.png``, the step viewer's screenshot in ``examples/``.

They are build outputs (listed in .gitignore), never edited or checked in. A file is rewritten only when
its bytes change, so ``mkdocs serve`` does not rebuild in a loop. (Written into docs/ rather than through
mkdocs-gen-files because mkdocs-static-i18n only serves pages that live in docs/ to every language.)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
GENERATED = ("reference/cli.md", "reference/flags.md", "reference/isa.md", "reference/json.md",
             "reference/machine-yaml.md", "reference/problem-yaml.md", "reference/api.md")
_done = False
MISSING: set[str] = set()  # plots not made (no matplotlib)


def _write(rel: str, data: bytes) -> None:
    path = DOCS / rel
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def generate() -> None:
    for path in (str(DOCS), str(ROOT)):  # docgen, and this tree's toymachine (not an installed copy elsewhere)
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)
    from docgen import live, reference

    pages = reference.pages()
    assert set(pages) == set(GENERATED), sorted(pages)
    for rel, text in pages.items():
        _write(rel, text.encode("utf-8"))
    made = live.files()
    for rel, data in made.items():
        _write(rel, data)
    _write("images/fa1_page.png", (ROOT / "examples" / "fa1_page.png").read_bytes())
    for rel in live.PLOTS:  # without matplotlib: no plot, and the pages say so (on_page_markdown)
        if rel not in made:
            MISSING.add(Path(rel).name)
            stale = DOCS / rel
            if stale.exists():
                stale.unlink()


def on_config(config, **kwargs):
    global _done
    if not _done:  # mkdocs-static-i18n builds each language from the same config: generate once
        generate()
        _done = True
    return config


def on_page_markdown(markdown, **kwargs):
    """A plot that could not be made (matplotlib is not installed) becomes a note instead of a broken image."""
    for name in MISSING:
        markdown = re.sub(r"!\[([^\]]*)\]\([^)]*/live/" + re.escape(name) + r"\)",
                          lambda m: f'!!! note "Plot not built"\n    {m.group(1)}: this plot is drawn when the site is '
                                    "built with matplotlib installed (the docs extra: `pip install -e '.[docs]'`).", markdown)
    return markdown


LANGUAGES = ("zh", "ja")  # mkdocs-static-i18n builds these under zh/ and ja/


def on_page_content(html, page, **kwargs):
    """An ``<iframe src>`` is raw HTML, which mkdocs-static-i18n does not rewrite: a page built under zh/ or
    ja/ (a translation, or the English page it falls back to) reaches the site's live/ one level further up."""
    if page.url.split("/", 1)[0] in LANGUAGES:
        html = re.sub(r'(<iframe\b[^>]*\bsrc=")(?![a-z]+:|/)', r"\1../", html)
    return html
