"""The playground in a real browser (headless Chromium, tests/browser.py) against a real
``toym serve``: type a trace, see the squiggle at the right line, fix it, step to the end and
read the cycles, move the sweep's registers control and see the DRAM reads change, share a link,
and type hostile text into every field.

Skipped where Chromium or Starlette is missing. ``TOYM_UPDATE_SCREENSHOT=1`` also writes the
docs' screenshot (docs/assets/playground.png)."""

import base64
import json
import os
import re
import subprocess
import sys
import time

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from browser import Browser  # noqa: E402
from conftest import ROOT  # noqa: E402

from toymachine import parse, simulate  # noqa: E402
from toymachine.experiments.sweep import sweep  # noqa: E402

pytestmark = pytest.mark.browser
HOSTILE = '</script><!--<script><img src=x onerror="window.__pwned=1">'


@pytest.fixture(scope="module")
def server():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "toymachine", "serve", "--port", "0"], cwd=ROOT, env=env,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        m = re.search(r"http://\S+", line)
        assert m, f"toym serve did not print its URL: {line!r}"
        yield m.group(0)
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.fixture(scope="module")
def page(server, chromium):
    with chromium.new_page() as b:
        load(b, server)
        yield b


def load(b: Browser, url: str) -> None:
    b.send("Page.enable")
    b.send("Page.navigate", url=url)
    wait(b, "window.playground && window.playground.ready", what="the playground to start")


def wait(b: Browser, expression: str, what: str, timeout: float = 30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = b.eval(f"(() => {{ try {{ const v = {expression}; return v && v.nodeType ? true : v; }}"
                     " catch (e) { return null; } })()")
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}: {expression}")


def settled(b: Browser, before: int):
    """Wait for the next redraw after an edit (``refreshes`` counts finished ones)."""
    return wait(b, f"playground.refreshes > {before} && playground.refreshes", what="the redraw")


def type_into_editor(b: Browser, text: str, select=None) -> None:
    """Select (all, or the [from, to) range) in the main editor, then type ``text`` as the keyboard would."""
    click(b, "#editor .cm-content")
    b.eval("playground.editor.focus()")
    assert b.eval("document.getElementById('editor').contains(document.activeElement)")
    sel = "{anchor: 0, head: playground.editor.state.doc.length}" if select is None else \
        f"{{anchor: {select[0]}, head: {select[1]}}}"
    b.eval(f"playground.editor.dispatch({{selection: {sel}}})")
    b.send("Input.insertText", text=text)


def click(b: Browser, selector: str) -> None:
    """A real click on the element, scrolled into view first."""
    b.eval(f"document.querySelector({json.dumps(selector)}).scrollIntoView({{block: 'center'}})")
    b.click(selector)


def frame(expression: str) -> str:
    return f"document.getElementById('viewer').contentWindow.{expression}"


def test_type_see_the_squiggle_fix_it_step_to_the_end(page):
    bad = "LOAD a[0], R0\nLOAD a[1], R1\nMULT R0, R1, R2\nSTORE R2, c[0]\n"
    n = page.eval("playground.refreshes")
    type_into_editor(page, bad)
    settled(page, n)
    wait(page, "document.querySelector('.cm-lintRange-error')", what="the squiggle")
    line = page.eval("(() => { const r = document.querySelector('.cm-lintRange-error');"
                     " const l = r.closest('.cm-line'); return [...l.parentNode.children].indexOf(l) + 1; })()")
    assert line == 3
    assert page.eval("document.querySelector('.cm-lintRange-error').textContent") == "MULT"
    problems = page.eval("document.getElementById('problems').textContent")
    name = page.eval("document.getElementById('file').value")  # the example loaded at start names the file
    assert f"{name}:3:1" in problems and "unknown instruction 'MULT'" in problems

    start = bad.index("MULT")
    n = page.eval("playground.refreshes")
    type_into_editor(page, "MUL", select=(start, start + 4))
    settled(page, n)
    wait(page, "!document.querySelector('.cm-lintRange-error')", what="the squiggle to go")
    fixed = bad.replace("MULT", "MUL")
    assert page.eval("playground.editor.state.doc.toString()") == fixed
    want = simulate(parse(fixed))  # the oracle: the library itself
    assert page.eval("document.getElementById('problems').textContent").count("warning") == 1  # a[] never given
    page.eval("document.getElementById('tabs').querySelector('[data-tab=run]').click()")
    box = page.eval("(() => { const f = document.getElementById('viewer').getBoundingClientRect();"
                    " const b = document.getElementById('viewer').contentDocument.getElementById('b-last')"
                    ".getBoundingClientRect(); return [f.x + b.x + b.width / 2, f.y + b.y + b.height / 2]; })()")
    for kind in ("mousePressed", "mouseReleased"):
        page.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)
    wait(page, frame("toym.step() === 4"), what="the last step")
    cycles = page.eval(frame("document.getElementById('c-cycles').textContent"))
    assert int(cycles) == want.cycles == 4
    assert page.eval(frame("document.getElementById('step-label').textContent")) == "step 4 / 4"
    assert page.eval("document.querySelector('#costs td[data-key=cycles]').textContent") == "4"


def test_the_registers_control_changes_the_dram_reads(page):
    page.eval("document.querySelector('#tabs [data-tab=sweep]').click()")
    click(page, "#sw-run")
    wait(page, "playground.sweep && document.getElementById('sw-readout').textContent", what="the sweep")
    rows = sweep("matmul", {"n": "2", "registers": "3..8"})
    want = {r.params["registers"]: r.reads for r in rows}
    assert page.eval("document.getElementById('sw-readout').textContent") == \
        f"registers = 3: {rows[0].cycles} cycles, {want[3]} DRAM reads"
    assert page.eval("document.querySelectorAll('#sw-plot polyline').length") == 2
    assert page.eval("document.getElementById('sw-slider-label').textContent") == "registers"
    page.eval("document.getElementById('sw-slider').focus()")
    for _ in range(3):
        page.key("ArrowRight", 39)
    text = page.eval("document.getElementById('sw-readout').textContent")
    assert text.startswith("registers = 6:") and text.endswith(f"{want[6]} DRAM reads") and want[6] < want[3]


def test_the_cost_controls_rerun_the_trace(page):
    """LOAD/STORE cycles 100 on the trace the first test left (2 LOADs, MUL, STORE)."""
    from toymachine.machine.loader import load_machine

    page.eval("document.querySelector('#tabs [data-tab=run]').click()")
    trace = page.eval("playground.editor.state.doc.toString()")
    n = page.eval("playground.refreshes")
    click(page, "#mem-cycles")
    page.send("Input.insertText", text="100")
    settled(page, n)
    want = simulate(parse(trace), load_machine("m.yaml", text="name: custom\ncycles: {LOAD: 100, STORE: 100}\n"))
    wait(page, f"playground.result.cycles === {want.cycles}", what="the new cycle count")
    assert want.cycles == 301
    n = page.eval("playground.refreshes")
    page.eval("document.getElementById('mem-cycles').value = ''; document.getElementById('mem-cycles')"
              ".dispatchEvent(new Event('input'))")
    wait(page, "playground.result.cycles === 4", what="the machine's own costs again")


def test_compare_check_export_and_share(page, server, chromium):
    page.eval("document.querySelector('#tabs [data-tab=compare]').click()")
    wait(page, "playground.resultB", what="trace B's run")
    assert page.eval("playground.resultB.cycles") == 22  # matmul_outer_2x2.asm: the seed's figure
    wait(page, "document.getElementById('viewer-b').contentWindow.toym", what="B's step viewer")
    wait(page, "document.getElementById('viewer-a2').contentWindow.toym", what="A's step viewer beside it")
    assert page.eval("document.getElementById('viewer-a2').contentWindow.toym.steps") == 4
    page.eval("document.querySelector('#tabs [data-tab=check]').click()")
    page.eval("document.getElementById('ck-problem').value = 'p1_c00'")
    click(page, "#ck-run")
    verdict = wait(page, "document.getElementById('ck-verdict') && document.getElementById('ck-verdict').textContent",
                   what="the grade")
    assert verdict.startswith("failed")  # the editor holds a[0]*a[1], not c00
    page.eval("document.querySelector('#tabs [data-tab=export]').click()")
    page.eval("document.getElementById('ex-format').value = 'csv'")
    click(page, "#ex-run")
    csv = wait(page, "document.getElementById('ex-text').textContent", what="the export")
    assert "cycles" in csv and page.eval("document.getElementById('ex-link').download").endswith(".csv")
    click(page, "#share")
    link = wait(page, "document.getElementById('share-url').value", what="the share link")
    trace = page.eval("playground.editor.state.doc.toString()")
    with chromium.new_page() as other:  # a browser context of its own: nothing but the link is shared
        load(other, link)
        assert other.eval("playground.editor.state.doc.toString()") == trace
        wait(other, "playground.result && playground.result.cycles === 4", what="the shared trace's run")


def test_hostile_text_in_every_field_stays_text(page):
    page.eval("document.querySelector('#tabs [data-tab=run]').click()")
    n = page.eval("playground.refreshes")
    type_into_editor(page, f"; {HOSTILE}\nLOAD x[0], R0\nSTORE R0, y[0]\n")
    page.eval("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    for field in ("file", "data", "machine-yaml"):
        page.eval(f"document.getElementById({json.dumps(field)}).value = ''")
        click(page, f"#{field}")
        assert page.eval("document.activeElement.id") == field
        page.send("Input.insertText", text=HOSTILE)
    page.eval("document.querySelector('#tabs [data-tab=compare]').click()")
    click(page, "#editor-b .cm-content")
    page.eval("playground.editorB.focus()")  # the click may land while the tab is still laying out
    assert page.eval("document.getElementById('editor-b').contains(document.activeElement)")
    page.eval("playground.editorB.dispatch({selection: {anchor: 0, head: playground.editorB.state.doc.length}})")
    page.send("Input.insertText", text=f"; {HOSTILE}\nLOAD {HOSTILE}\n")
    assert HOSTILE in page.eval("playground.editorB.state.doc.toString()")
    wait(page, "document.getElementById('problems-b').textContent.includes('error')", what="B's error")
    page.eval("document.querySelector('#tabs [data-tab=sweep]').click()")
    page.eval("document.querySelector('#sw-params input').focus(); document.querySelector('#sw-params input').value = ''")
    page.send("Input.insertText", text=HOSTILE)
    click(page, "#sw-run")
    wait(page, "document.getElementById('sw-status').textContent.startsWith('error')", what="the sweep's error")
    wait(page, "document.getElementById('problems').textContent.includes('machine.yaml:1:1')",
         what="the machine YAML's error")
    assert HOSTILE in page.eval("document.getElementById('sw-status').textContent")  # the error quotes it, as text
    assert page.eval("document.querySelectorAll('script').length") == 1
    assert page.eval("document.querySelectorAll('img').length") == 0
    assert page.eval("window.__pwned") is None
    # the machine panel's YAML breaks the run; with a clean machine the step viewer shows the text
    page.eval("document.querySelector('#tabs [data-tab=run]').click()")
    n = page.eval("playground.refreshes")
    page.eval("document.getElementById('machine-yaml').value = ''; document.getElementById('data').value = '';"
              " document.getElementById('preset').dispatchEvent(new Event('change'))")
    settled(page, n)
    wait(page, frame(f"document.querySelector('h1').textContent === {json.dumps(HOSTILE)}"),
         what="the step viewer titled with the file name, as text")
    assert HOSTILE in page.eval(frame("document.getElementById('listing').textContent"))
    assert page.eval(frame("document.querySelectorAll('script').length")) == 2  # its data and its code
    assert page.eval(frame("document.querySelectorAll('img').length")) == 0
    assert page.eval(frame("window.__pwned")) is None and page.eval("window.__pwned") is None


def test_screenshot_for_the_docs(server, browser):
    """The docs' screenshot: the playground on matmul_inner_2x2.asm at step 13."""
    load(browser, server)
    wait(browser, frame("toym"), what="the step viewer")
    browser.eval(frame("toym.goTo(13)"))
    shot = base64.b64decode(browser.send("Page.captureScreenshot", format="png")["data"])
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
    if os.environ.get("TOYM_UPDATE_SCREENSHOT"):
        (ROOT / "docs" / "assets").mkdir(parents=True, exist_ok=True)
        (ROOT / "docs" / "assets" / "playground.png").write_bytes(shot)
