"""The docs cannot drift (docs/, mkdocs.yml).

* Every ```` ```bash ```` ``toym …`` command of every page — English and translated — runs, in page order,
  in a folder holding copies of programs/ and examples/ (``docs/docgen/pages.py`` says how), and exits 0.
* Every ``<!-- toym-output: ARGS -->`` block is exactly what ``toym ARGS`` prints (``toym-error``: what it
  prints on stderr, exiting 2; ``python docs/refresh_outputs.py`` rewrites them from real runs), and a
  ``<!-- toym-file: PATH -->`` block is written to PATH before the commands after it.
* A translated page runs the same commands as its English page, and shows the same outputs.
* The generated reference is complete: every command and option of the app, every opcode, every JSON key
  a run writes, every machine and problem-file key.
* ``mkdocs build --strict`` passes (skipped only where mkdocs is not installed: the docs extra), the site
  it builds loads nothing from the network, and in headless Chromium (where installed) the step viewer
  embedded in a tutorial steps when its button is clicked.
"""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, built_once, need_tool

DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))

from docgen import live, reference  # noqa: E402
from docgen.pages import LANGUAGES, english_pages, normalise, pages, run_page, steps  # noqa: E402

PAGES = pages()
TRANSLATED = ("get-started.md", "tutorials/lecturer.md", "tutorials/student.md")


def _rel(path) -> str:
    return str(path.relative_to(DOCS))


def test_the_docs_have_commands_and_outputs():
    all_steps = [s for p in PAGES for s in steps(p.read_text(encoding="utf-8"))]
    assert sum(s.kind == "command" for s in all_steps) >= 100
    assert sum(s.kind == "output" for s in all_steps) >= 20


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[_rel(p) for p in PAGES])
def test_page_commands_run_and_outputs_are_real(page, toym):
    failures = []
    for step, code, out, err in run_page(page, toym):
        want = 0 if step.kind == "command" else step.exit_status
        if code != want:
            failures.append(f"toym {step.text} exited {code}, not {want}: {err[-800:]}")
        elif step.kind == "error" and normalise(err) != normalise(step.expected):
            failures.append(f"<!-- toym-error: {step.text} --> is not what the command prints on stderr "
                            f"(python docs/refresh_outputs.py {_rel(page)}):\n--- page\n{step.expected}\n--- toym\n{err}")
        elif step.kind == "output" and normalise(out) != normalise(step.expected):
            failures.append(f"<!-- toym-output: {step.text} --> is not what the command prints "
                            f"(python docs/refresh_outputs.py {_rel(page)}):\n--- page\n{step.expected}\n--- toym\n{out}")
    assert not failures, "\n".join(failures)
    assert not [p for p in os.listdir(".") if p.startswith(".toym-")]


def test_every_persona_tutorial_is_one_click_from_the_home_page():
    home = (DOCS / "index.md").read_text(encoding="utf-8")
    tutorials = sorted(p.name for p in (DOCS / "tutorials").glob("*.md") if len(p.suffixes) == 1)
    assert len(tutorials) >= 5
    assert [t for t in tutorials if f"](tutorials/{t})" not in home] == []


@pytest.mark.parametrize("rel", TRANSLATED)
@pytest.mark.parametrize("lang", LANGUAGES)
def test_translation_runs_what_the_english_page_runs(rel, lang):
    english = DOCS / rel
    translated = english.with_suffix(f".{lang}.md")
    assert translated.exists(), f"{_rel(translated)} is missing"
    want = [(s.kind, s.text, s.expected) for s in steps(english.read_text(encoding="utf-8"))]
    got = [(s.kind, s.text, s.expected) for s in steps(translated.read_text(encoding="utf-8"))]
    assert got == want, f"{_rel(translated)} must run the commands and show the outputs of {rel}, in order"


# -- the generated reference ---------------------------------------------------------------------------
REFERENCE = reference.pages()


def test_every_command_and_option_is_in_the_cli_reference():
    cli = REFERENCE["reference/cli.md"]
    paths = reference.all_command_paths()
    assert {"toym run", "toym gen matmul", "toym sweep", "toym check", "toym optimize matmul"} <= set(paths)
    missing = [p for p in paths if f"## `{p}`" not in cli]
    missing += [o for o in sorted(reference.all_options()) if f"`{o}`" not in cli]
    assert not missing, missing


def test_every_flag_of_the_vocabulary_is_on_the_flags_page():
    from toymachine.cli.vocabulary import VOCABULARY

    flags = REFERENCE["reference/flags.md"]
    assert [f.name for f in VOCABULARY if f"`{f.name}`" not in flags] == []


def test_every_opcode_is_in_the_isa_reference():
    from toymachine.isa import ISA
    from toymachine.render.isa import isa_markdown

    page = REFERENCE["reference/isa.md"]
    table = isa_markdown().strip().split("\n", 1)[1].strip()  # the table under its heading
    assert table in page
    assert [op for op, spec in ISA.items() if f"### {op}" not in page or spec.syntax not in page] == []


def test_every_json_key_a_run_writes_is_explained():
    keys = reference.json_keys()
    assert {"cycles", "dram", "ops", "memory", "steps", "warnings", "units", "sram_rule", "time_s"} <= set(keys)
    assert [k for k in keys if k not in reference.JSON_MEANINGS] == []
    from toymachine.render.jsonout import JSON_KEYS  # the keys --json-fields always accepts

    assert [k for k in JSON_KEYS if f"| `{k}` |" not in REFERENCE["reference/json.md"]] == []
    assert "**undocumented**" not in REFERENCE["reference/json.md"]
    assert '"error": {' in REFERENCE["reference/json.md"]


def test_every_machine_and_problem_key_is_in_the_schemas():
    import dataclasses

    from toymachine.check.expr import FUNCTIONS
    from toymachine.check.problem import KEYS
    from toymachine.machine import resolve_machine
    from toymachine.machine.config import Machine
    from toymachine.machine.loader import preset_names

    machine = REFERENCE["reference/machine-yaml.md"]
    assert [f.name for f in dataclasses.fields(Machine) if f"| `{f.name}` |" not in machine] == []
    blank = [line.split("|")[1].strip() for line in machine.splitlines()
             if line.startswith("| `") and line.rstrip().endswith("|  |")]
    assert blank == [], f"machine keys without a meaning: {blank}"
    assert [p for p in preset_names() if f"| `{p}` |" not in machine] == []
    assert resolve_machine("h100").description in machine
    problem = REFERENCE["reference/problem-yaml.md"]
    assert [k for k in KEYS if f"| `{k}` |" not in problem] == []
    assert [f for f in FUNCTIONS if f"`{f}()`" not in problem] == []
    assert "**undocumented**" not in problem


def test_api_page_documents_the_public_modules():
    api = REFERENCE["reference/api.md"]
    assert all(f"::: {m}" in api for m in ("toymachine", "toymachine.gen", "toymachine.check", "toymachine.optimize"))


# -- live pages ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_step_viewers_are_offline_pages_embedded_in_the_docs():
    files = live.files()
    embedded = "\n".join(p.read_text(encoding="utf-8") for p in english_pages())
    for path in live.STEP_VIEWERS:
        html = files[path].decode("utf-8")
        assert html.startswith("<!DOCTYPE html>") and "<script>" in html
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), f"{path} loads from the network"
        assert f'src="../../{path}"' in embedded or f'src="../{path}"' in embedded, f"no page embeds {path}"
    for command in [*live.STEP_VIEWERS.values(), *live.PLOTS.values()]:  # a reader can make each one
        assert "toym " + command.split(" OUT")[0] in embedded, f"no page shows the command behind {command}"
    if live.have_matplotlib():
        for path in live.PLOTS:
            assert files[path].startswith(b"\x89PNG")
            assert path.split("/")[-1] in embedded, f"no page shows {path}"


# -- the site ---------------------------------------------------------------------------------------------
HAVE_MKDOCS = importlib.util.find_spec("mkdocs") is not None


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The site, built once per session with ``mkdocs build --strict`` (a warning fails the build)."""
    need_tool(HAVE_MKDOCS, "mkdocs", "pip install -e '.[docs]'")

    def build(folder):
        env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
        res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(folder)],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-6000:]

    return built_once(tmp_path_factory, "site", build)


@pytest.mark.docs
def test_mkdocs_build_strict(site):
    for lang in ("", "zh/", "ja/"):
        assert (site / lang / "tutorials" / "lecturer" / "index.html").exists()
    assert "简体中文" in (site / "index.html").read_text(encoding="utf-8")  # the language switcher
    external = []
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        external += [f"{page.relative_to(site)}: {m}" for m in
                     re.findall(r"""<(?:script|link|img|iframe)[^>]*?(?:src|href)=["'](?:https?:)?//[^"']*""", text)]
    assert not external, external[:10]
    embedded = 0
    for page in site.rglob("index.html"):  # every step viewer a page embeds, in every language, is in the site
        for src in re.findall(r'<iframe[^>]*src="([^"]+)"', page.read_text(encoding="utf-8")):
            assert (page.parent / src).resolve().is_file(), f"{page.relative_to(site)} embeds a missing {src}"
            embedded += 1
    assert embedded >= 3 * 3  # home, lecturer tutorial (2), seeds: in three languages


@pytest.mark.docs
@pytest.mark.browser
def test_step_viewer_steps_inside_the_docs_page(site, browser, tmp_path):
    """Headless Chromium opens the lecturer tutorial from a local server, scrolls to the embedded step
    viewer, clicks its → button: the viewer steps and its cycle counter follows; a screenshot is taken."""
    import functools
    import http.server
    import threading
    import time

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    frame = "document.querySelector('iframe.toym-live')"
    viewer = f"{frame}.contentWindow"
    try:
        browser.send("Page.enable")
        browser.send("Page.navigate", url=f"http://127.0.0.1:{server.server_address[1]}/tutorials/lecturer/")
        deadline = time.time() + 60
        while not browser.eval(f"!!({frame} && ({frame}.scrollIntoView(), {viewer}.toym))"):
            assert time.time() < deadline, "the embedded step viewer did not load"
            time.sleep(0.1)
        assert browser.eval(f"{viewer}.toym.step()") == 0
        browser.eval(f"{viewer}.document.getElementById('b-next').click()")
        assert browser.eval(f"{viewer}.toym.step()") == 1
        assert browser.eval(f"{viewer}.document.getElementById('c-cycles').textContent") == "1"
        shot = browser.send("Page.captureScreenshot", format="png")["data"]
    finally:
        server.shutdown()
    import base64

    png = base64.b64decode(shot)
    (tmp_path / "lecturer.png").write_bytes(png)
    assert png.startswith(b"\x89PNG") and len(png) > 20000  # a page drawn, not a blank one
