"""``--format html``: one self-contained, offline page that steps through a run.

The machine in seed 000's diagram style — DRAM (HBM) arrays as grids of cells, the
register file (SRAM tiles with their shapes and occupancy on the tile machine), the
compute unit(s) — and a step control (buttons, slider, ← → keys, ``#step=N`` in the URL).
At each step the instruction is highlighted in the listing, the cells and registers it
reads light blue, what it writes orange, blocks of memory that registers hold copies of
green (seed 001's "which blocks are in SRAM"), and the counters (cycles, DRAM words read
and written, FLOPs, SRAM in use and peak) update.

Inline CSS and JS (``page_assets/``, package data) and the step data as JSON
(``stepview.step_model``); no network references, so it opens from a USB stick. Same run,
same bytes. The run's summary tables follow in a collapsed section (and are the whole
page for a reader without JavaScript).
"""

from __future__ import annotations

__all__ = ["page_html", "document_html", "ASSETS"]

import html
import json
from importlib import resources

from ..program import ACCUMULATOR, Program
from ..result import Result
from .report import Report
from .stepview import MAX_STEPS, step_model

ASSETS = "page_assets"


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(ASSETS).joinpath(name).read_text(encoding="utf-8")


def _json_script(data: dict) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # inside <script>, "</" ends the element and "<!--" changes how the rest is parsed: <, > and & as
    # \u escapes (the same JSON strings) leave no markup at all in the block
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _head(title: str, css: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<meta name=\"generator\" content=\"toymachine\">\n"
            f"<title>{html.escape(title)}</title>\n<style>\n{css}</style>\n</head>\n")


def _number(x) -> str:
    if x is None:
        return ""
    return f"{x:,}" if isinstance(x, int) else f"{x:,.2f}"


def _array_html(i: int, arr: dict, show_labels: bool) -> str:
    shape = "×".join(str(n) for n in arr["shape"]) or "?"
    rows, cols, br, bc = arr["rows"], arr["cols"], arr["br"], arr["bc"]
    drows, dcols = -(-rows // br), -(-cols // bc)
    cells = []
    for r in range(drows):
        for c in range(dcols):
            cid = f"m{i}-{r}-{c}"
            if arr["cells"] is not None:
                k = r * cols + c
                text = arr["cells"][k]
                label = arr["labels"][k] if arr["labels"] else ""
                empty = " empty" if text == "" else ""
                tag = f' data-label="{html.escape(label)}"' if show_labels and label != text else ""
                cells.append(f'<div class="cell{empty}" id="{cid}" title="{html.escape(label)}"{tag}>{html.escape(text)}</div>')
            else:
                span = f"rows {r * br}–{min(rows, (r + 1) * br) - 1}, cols {c * bc}–{min(cols, (c + 1) * bc) - 1}"
                cells.append(f'<div class="cell bucket" id="{cid}" title="{span}"></div>')
    bucket = "" if arr["cells"] is not None else f" · one square = {br}×{bc} elements"
    return (f'<div class="arr" id="arr-{i}"><div class="aname">{html.escape(arr["name"])}'
            f'<span class="shape">{shape}{bucket}</span></div>'
            f'<div class="grid" style="grid-template-columns:repeat({dcols},auto)">' + "".join(cells) + "</div></div>")


def _listing_html(model: dict) -> str:
    """The program: its source lines when known (comments too), else the executed
    instructions; a row's ``data-step`` is the first step that runs it (a click goes there)."""
    from .lexer import highlight_line

    cache: dict[str, str] = {}

    def code(text: str) -> str:
        got = cache.get(text)
        if got is None:
            got = cache[text] = highlight_line(text)
        return got

    first_step: dict[int, int] = {}
    for k, row in enumerate(model["steps"]):
        first_step.setdefault(row["l"], k + 1)
    if model["source"] is not None:
        texts = [(i + 1, line) for i, line in enumerate(model["source"])]
    else:
        texts = [(row["line"], row["text"]) for row in model["listing"]]
    rows = []
    for i, (line, text) in enumerate(texts):
        step = f' data-step="{first_step[i]}"' if i in first_step else ""
        rows.append(f'<div class="ln" id="ln{i}"{step}><span class="no">{line}</span><code class="hl">{code(text)}</code></div>')
    if not rows:
        rows.append('<div class="ln"><span class="no"></span><code>(no steps recorded)</code></div>')
    return "\n".join(rows)


def _client_data(model: dict) -> dict:
    """What the script needs (cells, labels and the source are already in the HTML)."""
    data = {k: v for k, v in model.items() if k not in ("arrays", "source")}
    data["arrays"] = [{k: a[k] for k in ("name", "rows", "cols", "br", "bc")} for a in model["arrays"]]
    return data


def _counter_rows(model: dict) -> str:
    hbm = "HBM" if model["tile"] else "DRAM"
    labels = [("cycles", "cycles"), ("reads", f"{hbm} reads (words)"), ("writes", f"{hbm} writes (words)"),
              ("flops", "FLOPs"), ("sram", "SRAM in use (words)"), ("sram_peak", "SRAM peak (words)")]
    return "".join(f'<tr><td>{label}</td><td id="c-{key}">0</td></tr>' for key, label in labels
                   if key in model["counters"])


def page_html(result: Result, *, steps: bool = True, max_steps: int = MAX_STEPS, program: Program | None = None,
              summary: str = "") -> str:
    """The step viewer for ``result`` as one HTML document (see the module docstring).

    ``steps=False`` draws the final state only; runs with more than ``max_steps`` steps
    replay the first ``max_steps`` (a note on the page says so). ``program``, the program
    that ran, puts its source (with comments) in the listing. ``summary``: HTML shown in a
    collapsed section below (``render(result, "html")`` passes the run's summary tables)."""
    from .lexer import token_css

    model = step_model(result, max_steps=max_steps, steps=steps, program=program)
    n = len(model["steps"])
    tile = model["tile"]
    css = _asset("page.css") + token_css(".hl") + "\n.listing code.hl { background: none; }\n"
    title = f"toym · {result.file}"
    sub = [f"machine {model['machine']}" if model["machine"] else "",
           f"{model['total_steps']:,} steps", f"{_number(model['totals']['cycles'])} cycles",
           f"{hbm_word(tile)}: {model['totals']['reads']:,} words read, {model['totals']['writes']:,} written"]
    if model["sram_words"]:
        sub.append(f"SRAM peak {model['totals']['sram_peak']} of {model['sram_words']} words")
    if result.symbolic:
        sub.append("symbolic")
    out = [_head(title, css), "<body>\n<header>", f"<h1>{html.escape(result.file)}</h1>",
           f'<span class="sub">{html.escape(" · ".join(s for s in sub if s))}</span>', "</header>"]
    out.append(
        '<div class="controls" id="controls">'
        '<button id="b-first" title="first step (Home)">|◀</button>'
        '<button id="b-prev" title="step back (←, Shift+← ten)">◀</button>'
        '<button id="b-play" title="play / pause (Space)">play</button>'
        '<button id="b-next" title="step forward (→, Shift+→ ten)">▶</button>'
        '<button id="b-last" title="last step (End)">▶|</button>'
        f'<input type="range" id="slider" min="0" max="{n}" value="0" aria-label="step">'
        f'<span class="step" id="step-label">step 0 / {n}</span>'
        '<label>speed <select id="speed"><option value="1">1/s</option><option value="2">2/s</option>'
        '<option value="5" selected>5/s</option><option value="20">20/s</option><option value="100">100/s</option>'
        '</select></label><span class="keys">← → step · Shift ×10 · Home/End · Space plays · #step=N links a step</span>'
        "</div>")
    if model["note"]:
        out.append(f'<p class="note" id="note">{html.escape(model["note"])}</p>')
    out.append('<div class="machine">')
    out.append(f'<section class="box dram"><h2>{hbm_word(tile)}</h2><div class="arrays">'
               + "".join(_array_html(i, a, not tile and not result.symbolic) for i, a in enumerate(model["arrays"])) + "</div></section>")
    out.append('<div class="bus"><span class="arrow load" id="bus-load">LOAD →</span>'
               '<span class="arrow store" id="bus-store">← STORE</span></div>')
    def reg_html(i: int, r: dict, extra: str = "") -> str:
        if r["tile"] and not r["counted"]:
            extra += " uncounted"
        return (f'<div class="reg{extra}" id="r{i}"><div class="rname">{html.escape(r["name"])}<span class="from">'
                '</span></div><div class="val"></div></div>')

    # the MAC unit's own accumulator (seed 000's Blackwell remark) is drawn inside the MAC unit
    regs = "".join(reg_html(i, r) for i, r in enumerate(model["registers"]) if r["name"] != ACCUMULATOR)
    acc = "".join(reg_html(i, r, " acc") for i, r in enumerate(model["registers"]) if r["name"] == ACCUMULATOR)
    sram = ""
    if tile and model["sram_words"]:
        rule = (" <span class=\"tile-shape\">(the paper's count: blocks of HBM matrices only; dashed tiles are off "
                "the count)</span>") if model["sram_rule"] == "paper" else ""
        sram = (f'<div class="sram">SRAM <span id="sram-text"></span>{rule}<div class="bar"><div class="fill" '
                'id="sram-fill"></div></div></div>')
    out.append(f'<section class="box regs"><h2>{"SRAM (tile registers)" if tile else "Register file"}</h2>'
               f'<div class="regfile">{regs}</div>{sram}</section>')
    units = "".join(f'<div class="unit" id="u{i}"><div class="uname">{html.escape(u["name"])}</div>'
                    + (f'<div class="ulabel">{html.escape(u["label"])}</div>' if u["label"] else "")
                    + f'<div class="uops">{html.escape(" ".join(u["ops"]))}</div>'
                    + (acc if any(op in ("MAC", "MAC_Z") for op in u["ops"]) else "") + "</div>"
                    for i, u in enumerate(model["units"]))
    if acc and "MAC" not in units:  # no MAC ran (yet): the accumulator still belongs to the unit
        units = f'<div class="unit"><div class="uname">MAC</div>{acc}</div>' + units
    out.append(f'<section class="box compute"><h2>Compute</h2>{units}</section>')
    out.append("</div>")
    out.append('<div class="lower"><section class="panel"><h2>Program</h2><div class="listing" id="listing">'
               + _listing_html(model) + "</div></section>")
    out.append('<section class="panel detail"><h2>Step</h2><div class="instr" id="d-instr"></div>'
               '<div class="explain" id="d-explain"></div>'
               f'<table class="counters">{_counter_rows(model)}</table>'
               '<div class="legend"><span class="l-rd">read</span><span class="l-wr">written</span>'
               '<span class="l-held">held in a register</span></div></section></div>')
    if summary:
        out.append(f'<details class="summary"><summary>Run summary (tables)</summary>\n{summary}</details>')
    out.append(f'<script type="application/json" id="toym-data">{_json_script(_client_data(model))}</script>')
    out.append(f"<script>\n{_asset('page.js')}</script>\n</body>\n</html>\n")
    return "\n".join(out)


def hbm_word(tile: bool) -> str:
    return "HBM" if tile else "DRAM"


def document_html(report: Report, fragment: str) -> str:
    """A report's tables (``render_report(report, "html-fragment")``) as a whole page:
    doctype, title, inline style. What ``--format html`` writes for sweeps and other tables."""
    css = _asset("page.css")
    return (_head(f"toym · {report.title}", css) + "<body>\n<header><h1>" + html.escape(report.title)
            + '</h1></header>\n<main class="doc">\n' + fragment + "</main>\n</body>\n</html>\n")
