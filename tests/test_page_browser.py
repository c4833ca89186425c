"""The step viewer in a real browser (headless Chromium): stepping by URL, keys, buttons
and the slider changes the highlighted cells, registers, listing row and counters.

Skipped where no Chromium is installed (Debian/Ubuntu: ``apt-get install -y chromium``): the ``browser``
mark (tests/conftest.py)."""

import re
from html.parser import HTMLParser

import pytest
from conftest import PROGRAMS

from toymachine import parse_file, resolve_machine, simulate
from toymachine.render.page import page_html

pytestmark = pytest.mark.browser


class _Classes(HTMLParser):
    """id → class list, and id → text, of the dumped DOM."""

    def __init__(self):
        super().__init__()
        self.classes, self.text, self._open = {}, {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.classes[a["id"]] = (a.get("class") or "").split()
            self.text[a["id"]] = ""
            self._open.append(a["id"])
        else:
            self._open.append(None)

    def handle_endtag(self, tag):
        if self._open:
            self._open.pop()

    def handle_data(self, data):
        for ident in self._open:
            if ident is not None:
                self.text[ident] += data


def dom_at(browser, page_path, step):
    dom = browser.dom(page_path.as_uri() + f"#step={step}")
    parser = _Classes()
    parser.feed(dom)
    lit = lambda cls: sorted(i for i, c in parser.classes.items() if cls in c)  # noqa: E731
    return parser, lit


@pytest.fixture(scope="module")
def c00_page(tmp_path_factory):
    prog = parse_file(str(PROGRAMS / "c00.asm"))
    path = tmp_path_factory.mktemp("page") / "c00.html"
    path.write_text(page_html(simulate(prog, steps=True), program=prog), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def fa1_page(tmp_path_factory):
    prog = parse_file(str(PROGRAMS / "fa1_n5_d3.asm"))
    path = tmp_path_factory.mktemp("page") / "fa1.html"
    path.write_text(page_html(simulate(prog, resolve_machine("toysram-paper"), steps=True), program=prog),
                    encoding="utf-8")
    return path


def test_a_url_step_highlights_that_steps_cells_and_counters(browser, c00_page):
    """c00.asm: step 2 is LOAD b[0][0], R1; step 7 is STORE R2, c[0][0]."""
    dom, lit = dom_at(browser, c00_page, 2)
    assert dom.text["step-label"] == "step 2 / 7" and dom.text["c-cycles"] == "2" and dom.text["c-reads"] == "2"
    assert lit("rd") == ["m1-0-0"] and lit("wr") == ["r1"]  # b₀₀ read, R1 written
    assert lit("cur") == ["ln6"]  # source line 7 (0-based row 6)
    assert lit("held") == ["m0-0-0", "m1-0-0"]  # R0 holds a₀₀, R1 holds b₀₀
    assert dom.text["r1"].endswith("5") and dom.text["m2-0-0"] == ""  # c₀₀ not yet written

    dom, lit = dom_at(browser, c00_page, 7)
    assert dom.text["step-label"] == "step 7 / 7" and dom.text["c-cycles"] == "7" and dom.text["c-writes"] == "1"
    assert lit("wr") == ["m2-0-0"] and lit("rd") == ["r2"] and dom.text["m2-0-0"] == "19"
    assert lit("cur") == ["ln11"] and "on" in dom.classes["bus-store"]


def test_fa1_middle_step_is_seed_001s_picture(browser, fa1_page):
    """A block LOAD lights the whole block; SRAM occupancy and the tensor core show."""
    page = fa1_page.read_text()
    steps = re.findall(r'<div class="ln" id="ln(\d+)" data-step="(\d+)"><span class="no">\d+</span><code class="hl">'
                       r'<span class="k">LOAD</span><span class="w"> </span><span class="n">Q</span>', page)
    row, step = map(int, steps[1])  # the second Q block of the seed's walk (Br = 3): Q[3:5, :]
    dom, lit = dom_at(browser, fa1_page, step)
    q = next(i for i, name in enumerate(re.findall(r'<div class="arr" id="arr-(\d+)"><div class="aname">(\w+)', page))
             if name[1] == "Q")
    assert lit("rd") == sorted(f"m{q}-{r}-{c}" for r in (3, 4) for c in range(3))
    assert lit("cur") == [f"ln{row}"] and "/ 59 words" in dom.text["sram-text"]
    # the paper's count: Q_i (T0), K_j, V_j, O_i are on it; S (T3) and the statistics are dashed, off it
    assert "uncounted" not in dom.classes["r0"] and "uncounted" in dom.classes["r3"]
    assert int(dom.text["c-sram"]) <= 42 and int(dom.text["c-sram_peak"]) <= 42
    dom2, lit2 = dom_at(browser, fa1_page, step + 4)  # MAC_Z T0, T1.T, T3: the tensor core
    assert "on" in dom2.classes["u0"] and lit2("rd") == ["r0", "r1"] and int(dom2.text["c-flops"]) > 0
    assert int(dom2.text["c-cycles"].replace(",", "").split(".")[0]) > int(dom.text["c-cycles"].replace(",", "").split(".")[0])


def test_keys_buttons_and_slider_step_the_page(browser, c00_page):
    b = browser
    b.open(c00_page.as_uri())
    state = lambda: b.eval(  # noqa: E731
        "[toym.step(), [...document.querySelectorAll('.cell.rd,.cell.wr,.reg.rd,.reg.wr')].map(e => e.id + ':'"
        " + ['rd', 'wr'].filter(c => e.classList.contains(c)).join('+')).sort().join(' '),"
        " document.getElementById('c-cycles')"
        ".textContent, document.querySelector('.ln.cur') && document.querySelector('.ln.cur').id]")
    assert state() == [0, "", "0", None]
    b.key("ArrowRight", 39)
    assert state() == [1, "m0-0-0:rd r0:wr", "1", "ln5"]
    b.click("#b-next")
    assert state() == [2, "m1-0-0:rd r1:wr", "2", "ln6"]
    b.key("ArrowRight", 39)
    assert state() == [3, "r0:rd r1:rd r2:wr", "3", "ln7"]
    b.key("ArrowLeft", 37)
    assert state() == [2, "m1-0-0:rd r1:wr", "2", "ln6"]
    b.key("End", 35)
    assert state()[0] == 7 and b.eval("document.getElementById('m2-0-0').textContent") == "19"
    b.key("ArrowLeft", 37)  # undoing the STORE restores the cell
    assert b.eval("document.getElementById('m2-0-0').textContent") == ""
    b.key("ArrowLeft", 37, shift=True)  # ten back: clamps at 0
    assert state() == [0, "", "0", None]
    b.eval("(() => { const s = document.getElementById('slider'); s.value = 6;"
           " s.dispatchEvent(new Event('input')); })()")
    assert state() == [6, "r0:rd r1:rd r2:rd+wr", "6", "ln10"]
    assert b.eval("location.hash") == "#step=6"
    b.click("#b-first")
    assert state()[0] == 0
    b.click(".ln#ln8")  # clicking a listing row goes to its step
    assert state()[0] == 4
