"""The docs cannot drift (docs/, mkdocs.yml).

* What a reader sees is what runs: every ```` ```bash ```` ``toym …`` command of every page — English and
  translated — runs, in page order, in a folder holding copies of programs/ and examples/
  (``docs/docgen/pages.py`` says how), and exits 0. Each page runs once per test run
  (tests/page_runs.py: tests/test_latex.py reads the same run); a translated page whose steps are its
  English page's shares that page's run.
* Every ``<!-- toym-output -->`` block is exactly what the command shown directly above it prints
  (``toym-error``: what it prints on stderr, exiting 2; ``python docs/refresh_outputs.py`` rewrites them
  from real runs). A marker cannot name a command of its own; a titled fence is a file the page writes,
  and every bundled file an output's command reads is shown on the page.
* A translated page runs the same commands as its English page, and shows the same outputs.
* The generated reference is complete: every command and option of the app, every opcode, every JSON key
  a run writes, every machine and problem-file key.
* ``mkdocs build --strict`` passes (skipped only where mkdocs is not installed: the docs extra), the site
  it builds loads nothing from the network, and in headless Chromium (where installed) the step viewer
  embedded in a tutorial steps when its button is clicked.
"""

import functools
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
from docgen.pages import (  # noqa: E402
    LANGUAGES,
    PageError,
    english_pages,
    normalise,
    pages,
    stale_files,
    steps,
    unshown_files,
)

PAGES = pages()
EVERY_PAGE = [ROOT / "README.md", *PAGES]
TRANSLATED = ("get-started.md", "tutorials/lecturer.md", "tutorials/student.md")


def _rel(path) -> str:
    return str(path.relative_to(DOCS))


def test_the_docs_have_commands_and_outputs():
    all_steps = [s for p in PAGES for s in steps(p.read_text(encoding="utf-8"))]
    assert sum(s.kind == "command" for s in all_steps) >= 100
    assert sum(s.kind == "output" for s in all_steps) >= 20


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[_rel(p) for p in PAGES])
def test_page_commands_run_and_outputs_are_real(page, page_runs):
    failures = []
    for step, code, out, err in page_runs(page).results:
        want = 0 if step.kind == "command" else step.exit_status
        if code != want:
            failures.append(f"toym {step.text} exited {code}, not {want}: {err[-800:]}")
        elif step.kind == "error" and normalise(err) != normalise(step.expected):
            failures.append(f"line {step.line}: the error block under `toym {step.text}` is not what it prints on "
                            f"stderr (python docs/refresh_outputs.py {_rel(page)}):\n--- page\n{step.expected}\n--- toym\n{err}")
        elif step.kind == "output" and normalise(out) != normalise(step.expected):
            failures.append(f"line {step.line}: the output block under `toym {step.text}` is not what it prints "
                            f"(python docs/refresh_outputs.py {_rel(page)}):\n--- page\n{step.expected}\n--- toym\n{out}")
    assert not failures, "\n".join(failures)
    assert not [p for p in os.listdir(".") if p.startswith(".toym-")]


# -- what a reader sees is what runs ----------------------------------------------------------------------
SHOWN = """Run it:

```bash
toym gen matmul --n 2 -o m.asm
toym run m.asm --no-steps   # the summary
```

<!-- toym-output -->
```text
Summary
```
"""


def test_an_output_block_belongs_to_the_last_command_shown_above_it():
    found = [(s.kind, s.text, s.expected) for s in steps(SHOWN)]
    assert found == [("command", "gen matmul --n 2 -o m.asm", None), ("output", "run m.asm --no-steps", "Summary\n")]


@pytest.mark.parametrize("page", [
    SHOWN.replace("<!-- toym-output -->", "<!-- toym-output: run other.asm -->"),  # a hidden command
    SHOWN.replace("Run it:\n\n```bash", "```bash").replace("```\n\n<!--", "```\n\nProse.\n\n<!--"),  # prose between
    SHOWN.replace("```bash", "```sh"),  # not a bash fence
    SHOWN.replace("toym gen matmul --n 2 -o m.asm\ntoym run m.asm --no-steps   # the summary\n", "ls\n"),  # no toym command
    SHOWN.replace("<!-- toym-output -->\n```text", "<!-- toym-output -->\n```bash"),  # not over a text fence
    SHOWN.replace("<!-- toym-output -->", "<!-- toym-ouput -->"),  # a misspelt marker is not ignored
    SHOWN + "\n<!-- toym-output -->\n```text\nagain\n```\n",  # a second block for one command
], ids=["names-a-command", "prose-between", "not-bash", "no-toym-command", "not-over-text", "misspelt",
        "second-block"])
def test_a_marker_that_could_hide_its_command_is_refused(page):
    with pytest.raises(PageError):
        steps(page)


@pytest.mark.parametrize("page", EVERY_PAGE, ids=[str(p.relative_to(ROOT)) for p in EVERY_PAGE])
def test_every_file_an_output_reads_is_on_the_page(page):
    """A trace, a machine or problem file, an input: a bundled file an output's command reads is shown on
    the page (a titled fence or a ``--8<--`` include), and a titled fence of a bundled file is that file."""
    text = page.read_text(encoding="utf-8")
    assert [f"line {s.line}: `toym {s.text}` reads {path}" for s, path in unshown_files(text)] == []
    assert stale_files(text) == []


@pytest.mark.parametrize("page", EVERY_PAGE, ids=[str(p.relative_to(ROOT)) for p in EVERY_PAGE])
def test_no_unmarked_block_looks_like_toym_output(page):
    """A ```` ```text ```` fence that holds a table rule or an ``error:`` line is toym output: it must be an
    output block under its command, so that the test runs it."""
    text = page.read_text(encoding="utf-8")
    outputs = {s.expected for s in steps(text) if s.kind in ("output", "error")}
    blocks = re.findall(r"^ *```text\n(.*?)^ *```$", text, flags=re.DOTALL | re.MULTILINE)
    assert [b[:200] for b in blocks if b not in outputs and re.search(r"━━━|^\s*error: ", b, flags=re.MULTILINE)] == []


def test_one_way_to_build_the_docs():
    """README, Get started (every language) and mkdocs.yml give the same install for building the site, and
    that extra holds everything the build uses (mkdocs and its plugins, and matplotlib for the plots)."""
    import tomllib

    installs = {}
    for page in [ROOT / "README.md", *sorted(DOCS.glob("get-started*.md"))]:
        fences = [f for f in re.findall(r"^```bash\n(.*?)^```$", page.read_text(encoding="utf-8"),
                                        flags=re.DOTALL | re.MULTILINE) if "mkdocs build --strict" in f]
        assert len(fences) == 1, f"{page.name} must say how to build the site, once"
        installs[page.name] = re.findall(r"^pip install .*$", fences[0], flags=re.MULTILINE)
    installs["mkdocs.yml"] = re.findall(r"`(pip install [^`]*)`", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert {name: found for name, found in installs.items() if found != ["pip install -e '.[docs]'"]} == {}
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    wanted = {"mkdocs", "mkdocs-material", "mkdocstrings", "mkdocs-static-i18n", "matplotlib"}
    assert wanted <= {re.split(r"[\[<>=]", req)[0] for req in extra["docs"]}


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
@functools.cache
def _reference() -> dict[str, str]:
    """The generated reference pages (made when a test first reads them, not at collection)."""
    return reference.pages()


def test_every_command_and_option_is_in_the_cli_reference():
    cli = _reference()["reference/cli.md"]
    paths = reference.all_command_paths()
    assert {"toym run", "toym gen matmul", "toym sweep", "toym check", "toym optimize matmul"} <= set(paths)
    missing = [p for p in paths if f"## `{p}`" not in cli]
    missing += [o for o in sorted(reference.all_options()) if f"`{o}`" not in cli]
    assert not missing, missing


def test_every_flag_of_the_vocabulary_is_on_the_flags_page():
    from toymachine.cli.vocabulary import VOCABULARY

    flags = _reference()["reference/flags.md"]
    assert [f.name for f in VOCABULARY if f"`{f.name}`" not in flags] == []


def test_every_opcode_is_in_the_isa_reference():
    from toymachine.isa import ISA
    from toymachine.render.isa import isa_markdown

    page = _reference()["reference/isa.md"]
    table = isa_markdown().strip().split("\n", 1)[1].strip()  # the table under its heading
    assert table in page
    assert [op for op, spec in ISA.items() if f"### {op}" not in page or spec.syntax not in page] == []


def test_every_json_key_a_run_writes_is_explained():
    keys = reference.json_keys()
    assert {"cycles", "dram", "ops", "memory", "steps", "warnings", "units", "sram_rule", "time_s"} <= set(keys)
    assert [k for k in keys if k not in reference.JSON_MEANINGS] == []
    from toymachine.render.jsonout import (
        JSON_KEYS,  # the keys --json-fields always accepts
    )

    assert [k for k in JSON_KEYS if f"| `{k}` |" not in _reference()["reference/json.md"]] == []
    assert "**undocumented**" not in _reference()["reference/json.md"]
    assert '"error": {' in _reference()["reference/json.md"]


def test_every_machine_and_problem_key_is_in_the_schemas():
    import dataclasses

    from toymachine.check.expr import FUNCTIONS
    from toymachine.check.problem import KEYS
    from toymachine.machine import resolve_machine
    from toymachine.machine.config import Machine
    from toymachine.machine.loader import preset_names

    machine = _reference()["reference/machine-yaml.md"]
    assert [f.name for f in dataclasses.fields(Machine) if f"| `{f.name}` |" not in machine] == []
    blank = [line.split("|")[1].strip() for line in machine.splitlines()
             if line.startswith("| `") and line.rstrip().endswith("|  |")]
    assert blank == [], f"machine keys without a meaning: {blank}"
    assert [p for p in preset_names() if f"| `{p}` |" not in machine] == []
    assert resolve_machine("h100").description in machine
    problem = _reference()["reference/problem-yaml.md"]
    assert [k for k in KEYS if f"| `{k}` |" not in problem] == []
    assert [f for f in FUNCTIONS if f"`{f}()`" not in problem] == []
    assert "**undocumented**" not in problem


def test_api_page_documents_the_public_modules():
    api = _reference()["reference/api.md"]
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
    """The site, built once per test run with ``mkdocs build --strict`` (a warning fails the build)."""
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


@pytest.fixture(scope="session")
def served(site):
    """The built site on a local HTTP server (a step viewer's frame is readable only over http): its URL."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.mark.docs
@pytest.mark.browser
def test_step_viewer_steps_inside_the_docs_page(served, browser, tmp_path):
    """Headless Chromium opens the lecturer tutorial from a local server, scrolls to the embedded step
    viewer, clicks its → button: the viewer steps and its cycle counter follows; a screenshot is taken."""
    import time

    frame = "document.querySelector('iframe.toym-live')"
    viewer = f"{frame}.contentWindow"
    b = browser
    b.send("Page.enable")
    b.send("Page.navigate", url=served + "tutorials/lecturer/")
    deadline = time.time() + 60
    while not b.eval(f"!!({frame} && ({frame}.scrollIntoView(), {viewer}.toym))"):
        assert time.time() < deadline, "the embedded step viewer did not load"
        time.sleep(0.1)
    assert b.eval(f"{viewer}.toym.step()") == 0
    b.eval(f"{viewer}.document.getElementById('b-next').click()")
    assert b.eval(f"{viewer}.toym.step()") == 1
    assert b.eval(f"{viewer}.document.getElementById('c-cycles').textContent") == "1"
    shot = b.send("Page.captureScreenshot", format="png")["data"]
    import base64

    png = base64.b64decode(shot)
    (tmp_path / "lecturer.png").write_bytes(png)
    assert png.startswith(b"\x89PNG") and len(png) > 20000  # a page drawn, not a blank one


# -- pages that fit any screen ------------------------------------------------------------------------------
SCREEN_PAGES = {"home": "", "get-started": "get-started/", "tutorial": "tutorials/lecturer/", "cli": "reference/cli/",
                "translated": "zh/tutorials/lecturer/"}
FIT = """(() => {
  const page = document.documentElement;
  const wide = [...document.querySelectorAll('pre > code')].filter(c => c.scrollWidth > c.clientWidth + 1);
  const frames = [...document.querySelectorAll('iframe.toym-live')].map(f => {
    const doc = f.contentDocument, box = f.getBoundingClientRect();
    return {src: f.getAttribute('src'), height: box.height, width: box.width,
            contentHeight: doc.documentElement.scrollHeight, contentWidth: doc.documentElement.scrollWidth,
            viewWidth: doc.documentElement.clientWidth}; });
  return {scrollWidth: page.scrollWidth, clientWidth: page.clientWidth, frames,
          unscrolled: wide.filter(c => !['auto', 'scroll'].includes(getComputedStyle(c).overflowX)).length,
          wideBlocks: wide.length};
})()"""


def _open(b, url: str) -> None:
    """Navigate and wait until every embedded step viewer has loaded (lazy frames are made eager)."""
    import time

    b.send("Page.navigate", url=url)
    deadline = time.time() + 60
    while b.eval("document.readyState") != "complete" or not b.eval(
            "[...document.querySelectorAll('iframe.toym-live')].every(f => (f.loading = 'eager', "
            "f.contentWindow && f.contentWindow.toym && f.contentDocument.readyState === 'complete'))"):
        assert time.time() < deadline, f"{url} did not load"
        time.sleep(0.1)
    time.sleep(0.3)  # the frames' resize observers run


@pytest.mark.docs
@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 390], ids=["desktop", "phone"])
def test_pages_fit_the_screen(served, browser, width):
    """Home, Get started, a tutorial, the CLI reference and a translation, at 1280 px and at 390 px (a phone):
    the page never scrolls sideways, a wide code block scrolls inside itself, and each embedded step viewer
    shows all of its content (as tall as its content, nothing wider than its frame)."""
    failures = []
    b = browser
    b.send("Page.enable")
    b.send("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=width < 600)
    seen_frames = seen_wide = 0
    for name, rel in SCREEN_PAGES.items():
        _open(b, served + rel)
        fit = b.eval(FIT)
        if fit["scrollWidth"] > fit["clientWidth"]:
            failures.append(f"{name}: the page scrolls sideways ({fit['scrollWidth']} > {fit['clientWidth']} px)")
        if fit["unscrolled"]:
            failures.append(f"{name}: {fit['unscrolled']} wide code block(s) do not scroll")
        for f in fit["frames"]:
            if f["contentHeight"] > f["height"] + 1 or f["contentWidth"] > f["viewWidth"] + 1:
                failures.append(f"{name}: the viewer {f['src']} is clipped: content {f['contentWidth']}×"
                                f"{f['contentHeight']} in a {f['width']:.0f}×{f['height']:.0f} frame")
        seen_frames += len(fit["frames"])
        seen_wide += fit["wideBlocks"]
    assert not failures, "\n".join(failures)
    assert seen_frames >= 3 and seen_wide >= 1  # the pages do hold viewers and a wide block to judge


@pytest.mark.docs
@pytest.mark.browser
@pytest.mark.parametrize("lang,text", [("zh", "快速上手"), ("ja", "はじめに")])
def test_translated_pages_draw_their_script_with_a_declared_font(served, browser, lang, text):
    """The heading of a translated Get started is drawn with a font from the CJK stack docs/assets/toym.css
    declares for the language (not a fallback without the glyphs: empty boxes), as Chromium reports the
    fonts it used. Skipped where no CJK font is installed (CI installs fonts-noto-cjk: .ci/run)."""
    import shutil

    need_tool(shutil.which("fc-list") and subprocess.run(["fc-list", f":lang={lang}", "family"], capture_output=True,
                                                         text=True, check=False).stdout.strip(),
              f"a font with {lang} glyphs", "apt-get install -y fonts-noto-cjk")
    css = (DOCS / "assets" / "toym.css").read_text(encoding="utf-8")
    block = re.search(r'\[lang="' + lang + r'"\] \{(.*?)\}', css, flags=re.DOTALL).group(1)
    stack = re.findall(r'"([^"]+)"', re.search(r"--md-text-font:(.*?);", block, flags=re.DOTALL).group(1))
    b = browser
    b.send("Page.enable")
    _open(b, served + f"{lang}/get-started/")
    assert b.eval("document.documentElement.lang") == lang
    b.send("DOM.enable")
    b.send("CSS.enable")
    root = b.send("DOM.getDocument")["root"]["nodeId"]
    h1 = b.send("DOM.querySelector", nodeId=root, selector="h1")["nodeId"]
    assert text in b.eval("document.querySelector('h1').textContent")
    fonts = b.send("CSS.getPlatformFontsForNode", nodeId=h1)["fonts"]
    used = {f["familyName"] for f in fonts if f["glyphCount"]}
    assert used and used <= set(stack), f"drawn with {used}, not the declared {stack}"
