"""``toym walk --format html``: seed 001's FlashAttention animation as slides — one self-contained,
offline page. Each slide (load K_j, V_j; load Q_i, O_i, ℓ_i, m_i; compute; write back) shows its
caption, the HBM blocks it moves, the words on chip drawn against M, and the watched array (O) as
it stands in HBM after the slide; a slider and buttons step through them. The data comes from
``experiments.walk.walk_frames`` (JSON-ready, deterministic); the script only draws it.
"""

from __future__ import annotations

__all__ = ["walk_page"]

import html
import json

_SCRIPT = """
const D = JSON.parse(document.getElementById('walk').textContent);
const slider = document.getElementById('slide');
slider.max = D.slides.length - 1;
function show(k) {
  const s = D.slides[k];
  slider.value = k;
  document.getElementById('caption').textContent =
    `slide ${k + 1} of ${D.slides.length} · (i, j) = ${s.pair} · ${s.what}`;
  document.getElementById('blocks').textContent = s.blocks.length ? 'HBM ⇄ SRAM: ' + s.blocks.join('  ') : 'on chip only';
  document.getElementById('steps').textContent = `steps ${s.steps} · ${s.cycles} cycles so far`;
  const fill = document.getElementById('fill');
  fill.style.width = D.cap ? Math.min(100, 100 * s.onchip / D.cap) + '%' : '0';
  document.getElementById('sram-text').textContent = D.cap ? `${s.onchip} of M = ${D.cap} words on chip (${D.rule})`
                                                          : `${s.onchip} words on chip`;
  const t = document.getElementById('array');
  t.innerHTML = '';
  s.array.forEach((row, r) => {
    const tr = t.insertRow();
    const th = document.createElement('th'); th.textContent = `${D.name}[${r}]`; tr.appendChild(th);
    row.forEach(v => { const td = tr.insertCell(); td.textContent = v; });
  });
}
slider.addEventListener('input', () => show(+slider.value));
document.getElementById('prev').onclick = () => show(Math.max(0, +slider.value - 1));
document.getElementById('next').onclick = () => show(Math.min(D.slides.length - 1, +slider.value + 1));
show(0);
"""

_STYLE = """
body { font: 15px system-ui, sans-serif; margin: 2em; max-width: 60em; }
.bar { height: 1.2em; border: 1px solid #777; width: 30em; background: #f4f4f4; }
.bar .fill { height: 100%; background: #5b9bd5; }
#caption { font-weight: bold; font-size: 1.1em; } #blocks, #steps { font-family: monospace; }
table { border-collapse: collapse; margin-top: 1em; } td, th { border: 1px solid #bbb; padding: 2px 8px; font: 13px monospace; }
"""


def walk_page(frames: dict, title: str) -> str:
    """The page (module docstring) for ``frames`` = ``walk_frames(result)``."""
    data = json.dumps(frames, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>toym walk · {html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
            f"<h1>{html.escape(title)}</h1>\n"
            "<p><button id=\"prev\">◀</button> <input id=\"slide\" type=\"range\" min=\"0\" value=\"0\"> "
            "<button id=\"next\">▶</button></p>\n<p id=\"caption\"></p><p id=\"blocks\"></p><p id=\"steps\"></p>\n"
            "<div class=\"bar\"><div class=\"fill\" id=\"fill\"></div></div><p id=\"sram-text\"></p>\n"
            f"<p>{html.escape(frames['name'])} in HBM after this slide:</p><table id=\"array\"></table>\n"
            f"<script type=\"application/json\" id=\"walk\">{data}</script>\n<script>{_SCRIPT}</script>\n"
            "</body>\n</html>\n")
