"""Each docs page and the README run once per test run, for every test that reads what they print.

tests/test_docs.py and tests/test_readme.py compare a page's output blocks with its run;
tests/test_latex.py compiles the LaTeX each reporting command of a page prints with ``-f latex``.
A page runs as ``docgen.pages.run_page`` runs it (top to bottom, in a fresh folder holding copies of
programs/ and examples/); where LaTeX is wanted, right after each reporting command has run as
written its ``-f latex`` variant runs in the same folder (the folder as that command left it: a
later command may read an earlier one's ``-o`` file), and may change no file of the folder.

A translated page whose steps are its English page's (the same commands, files and outputs, in
order) shares the English page's run. The runs are made once for every pytest-xdist worker
(``conftest.built_once``) and kept as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from conftest import ROOT, built_once, cli_runner

sys.path.insert(0, str(ROOT / "docs"))

from docgen.pages import DOCS, LANGUAGES, Step, iter_page, run_stages, stages, steps  # noqa: E402

# the commands whose report takes ``-f latex``
FORMATTED = ("run", "sweep", "numerics", "isa", "verify-gpu")


@dataclass(frozen=True)
class PageRun:
    """A page's run: ``results`` pairs each step run with its (exit code, stdout, stderr), in page
    order (files and skipped commands left out); ``latex`` is (command, LaTeX) for each reporting
    command (made only where asked for)."""

    results: list[tuple[Step, int, str, str]]
    latex: list[tuple[str, str]]


def latex_variant(command: str) -> list[list[str]] | None:
    """The pipeline with its last stage asked for LaTeX on stdout, its output-file flags dropped
    (None: the command prints no report)."""
    pipeline = stages(command)
    last = pipeline[-1]
    if not last or last[0] not in FORMATTED:
        return None
    out, i = [], 0
    while i < len(last):
        a = last[i]
        if a in ("-o", "--output", "--plot", "-f", "--format"):
            i += 2
            continue
        if a.startswith(("--format=", "--output=", "--plot=")):
            i += 1
            continue
        out.append(a)
        i += 1
    return pipeline[:-1] + [out + ["-f", "latex"]]


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file of the folder: (size, modification time in ns)."""
    found = {}
    for base, _, names in os.walk(folder):
        for name in names:
            st = os.stat(os.path.join(base, name))
            found[os.path.relpath(os.path.join(base, name), folder)] = (st.st_size, st.st_mtime_ns)
    return found


def _run(page: Path, latex: bool) -> dict:
    toym = cli_runner()
    results, fragments = [], []
    for at, step, code, out, err in iter_page(page, toym):
        results.append([at, code, out, err])
        variant = latex_variant(step.text) if latex and step.kind != "error" and step.exit_status == 0 else None
        if variant is None or code != 0:
            continue
        folder = Path.cwd()  # the page's folder while iter_page holds this step
        before = _files(folder)
        code, tex, err = run_stages(toym, variant)
        assert code == 0, (f"toym {step.text}, with -f latex", err)
        changed = sorted(set(before.items()) ^ set(_files(folder).items()))
        assert not changed, f"the -f latex variant of toym {step.text} changed files of the page's folder: {changed}"
        fragments.append(["toym " + step.text, tex])
    return {"results": results, "latex": fragments}


def _english(page: Path) -> Path | None:
    """The English page of a translated page (page.zh.md: page.md), or None."""
    if len(page.suffixes) > 1 and page.suffixes[-2][1:] in LANGUAGES:
        return page.with_name(page.name.split(".")[0] + ".md")
    return None


def _same_steps(a: Path, b: Path) -> bool:
    def key(page: Path) -> list:
        return [(s.kind, s.text, s.expected, s.exit_status) for s in steps(page.read_text(encoding="utf-8"))]

    return key(a) == key(b)


def page_run(tmp_path_factory, page: Path, latex: bool) -> PageRun:
    """The page's run, made once per test run (``latex``: with each reporting command's LaTeX; every
    test of a run asks with the same ``latex``: conftest's ``page_runs``)."""
    english = _english(page)
    runs = english if english is not None and english.exists() and _same_steps(page, english) else page
    rel = runs.relative_to(DOCS) if runs.is_relative_to(DOCS) else runs.relative_to(ROOT)
    name = "page-run-" + str(rel).replace("/", "-").removesuffix(".md") + ("-latex" if latex else "")
    folder = built_once(tmp_path_factory, name, lambda out: (out / "run.json").write_text(
        json.dumps(_run(runs, latex)), encoding="utf-8"))
    data = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    own = steps(page.read_text(encoding="utf-8"))  # this page's steps: its own lines, for the messages
    return PageRun([(own[at], code, out, err) for at, code, out, err in data["results"]],
                   [(what, tex) for what, tex in data["latex"]])
