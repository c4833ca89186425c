"""``toym systolic --format html``: the systolic array as an animation (seed 002's "Cycle-by-cycle
systolic array execution" figure) above the run's tables — one self-contained, offline page.

The grid is the array (K × N cells weight-stationary, M × N output-stationary); a slider and
buttons step through the ticks. Each cell shows its stationary value (B[k,n], or C[i,j] so far),
the operand passing through it this tick and its partial sum after the tick; the cells at work are
shaded. The data (``systolic_frames``) is JSON-ready and deterministic; the script only draws it.
"""

from __future__ import annotations

__all__ = ["systolic_frames", "systolic_page"]

import html
import json

from ..sim.systolic import SystolicRun
from .cells import sig


def systolic_frames(run: SystolicRun) -> dict:
    """Per tick and cell: [operand text, partial sum text] (empty when idle); the stationary values.
    The run must have recorded its cells and sums (the page is made for small arrays only)."""
    recorded, sums = run.cells, run.sums
    if recorded is None or sums is None:
        raise ValueError("systolic_frames: the run recorded no cells (the array is too big to animate)")
    rows_n, cols_n = run.grid
    frames = []
    for t in range(run.ticks):
        frame = []
        for r in range(rows_n):
            row = []
            for c in range(cols_n):
                v = int(recorded[t, r, c])
                if v < 0:
                    row.append(["", ""])
                    continue
                what = (f"A[{v},{r}] = {sig(run.a[v, r].item())}" if run.dataflow == "weight"
                        else f"A[{r},{v}]·B[{v},{c}] = {sig(run.a[r, v].item())}·{sig(run.b[v, c].item())}")
                row.append([what, sig(sums[t, r, c].item())])
            frame.append(row)
        frames.append(frame)
    if run.dataflow == "weight":
        fixed = [[f"B[{r},{c}] = {sig(run.b[r, c].item())}" for c in range(cols_n)] for r in range(rows_n)]
    else:
        fixed = [[f"C[{r},{c}]" for c in range(cols_n)] for r in range(rows_n)]
    return {"rows": rows_n, "cols": cols_n, "dataflow": run.dataflow, "fixed": fixed, "frames": frames,
            "exits": run.exits.tolist(), "cycles": run.cycles, "ticks": run.ticks}


_SCRIPT = """
const D = JSON.parse(document.getElementById('frames').textContent);
const grid = document.getElementById('grid'), slider = document.getElementById('tick'),
      label = document.getElementById('tick-label');
grid.style.gridTemplateColumns = `repeat(${D.cols}, minmax(7em, 1fr))`;
const cells = [];
for (let r = 0; r < D.rows; r++) for (let c = 0; c < D.cols; c++) {
  const div = document.createElement('div'); div.className = 'pe';
  div.innerHTML = `<div class="fixed"></div><div class="op"></div><div class="sum"></div>`;
  div.querySelector('.fixed').textContent = D.fixed[r][c];
  grid.appendChild(div); cells.push(div);
}
function show(t) {
  const f = D.frames[t];
  for (let r = 0; r < D.rows; r++) for (let c = 0; c < D.cols; c++) {
    const div = cells[r * D.cols + c], [op, sum] = f[r][c];
    div.classList.toggle('busy', op !== '');
    div.querySelector('.op').textContent = op ? op + ' in' : 'idle';
    div.querySelector('.sum').textContent = sum === '' ? '' : 'Σ = ' + sum;
  }
  slider.value = t;
  label.textContent = `cycle ${t} of ${D.ticks - 1}` + (t >= D.cycles ? ' (idle: the array is empty)' : '');
}
slider.max = D.ticks - 1;
slider.addEventListener('input', () => show(+slider.value));
document.getElementById('prev').onclick = () => show(Math.max(0, +slider.value - 1));
document.getElementById('next').onclick = () => show(Math.min(D.ticks - 1, +slider.value + 1));
show(0);
"""

_STYLE = """
#grid { display: grid; gap: 4px; margin: 1em 0; max-width: 60em; }
.pe { border: 1px solid #999; border-radius: 4px; padding: 4px; font: 12px monospace; background: #fafafa; }
.pe.busy { background: #ffe9a8; }
.pe .fixed { color: #555; } .pe .sum { font-weight: bold; }
"""


def systolic_page(run: SystolicRun, tables_page: str) -> str:
    """The animation inserted at the top of ``tables_page`` (the report as ``--format html``)."""
    if run.cells is None or run.sums is None:
        return tables_page
    data = json.dumps(systolic_frames(run), ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    flow = ("A streams in from the left (row k delayed k cycles), partial sums flow down; B stays in the cells"
            if run.dataflow == "weight" else "A streams in from the left, B from the top; C stays in the cells")
    block = (f'<section class="systolic"><h2>The array, cycle by cycle</h2><p>{html.escape(flow)}.</p>'
             '<p><button id="prev">◀</button> <input id="tick" type="range" min="0" value="0"> '
             '<button id="next">▶</button> <span id="tick-label"></span></p><div id="grid"></div>'
             f'<script type="application/json" id="frames">{data}</script>'
             f"<script>{_SCRIPT}</script></section>\n")
    page = tables_page.replace("</head>", f"<style>{_STYLE}</style>\n</head>", 1)
    return page.replace('<main class="doc">\n', '<main class="doc">\n' + block, 1)
