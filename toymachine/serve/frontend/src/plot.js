// The sweep's plot: an inline SVG of cycles and DRAM reads against the swept parameter.
const NS = "http://www.w3.org/2000/svg";

function el(name, attrs, text) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// series: [{name, color, points: [[x, y], …]}]; mark: the x to highlight (or null)
export function linePlot(series, { xLabel, width = 560, height = 300, mark = null }) {
  const pad = { l: 60, r: 130, t: 16, b: 40 };
  const svg = el("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "plot", role: "img" });
  const all = series.flatMap((s) => s.points);
  if (!all.length) return svg;
  const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs), y1 = Math.max(...ys, 1);
  const sx = (x) => pad.l + (x1 === x0 ? 0.5 : (x - x0) / (x1 - x0)) * (width - pad.l - pad.r);
  const sy = (y) => height - pad.b - (y / y1) * (height - pad.t - pad.b);
  svg.append(el("line", { x1: pad.l, y1: sy(0), x2: width - pad.r, y2: sy(0), class: "axis" }));
  svg.append(el("line", { x1: pad.l, y1: pad.t, x2: pad.l, y2: sy(0), class: "axis" }));
  for (const x of [...new Set(xs)]) svg.append(el("text", { x: sx(x), y: height - pad.b + 16, "text-anchor": "middle" }, String(x)));
  for (const f of [0, 0.5, 1]) svg.append(el("text", { x: pad.l - 6, y: sy(f * y1) + 4, "text-anchor": "end" }, String(Math.round(f * y1))));
  svg.append(el("text", { x: (pad.l + width - pad.r) / 2, y: height - 6, "text-anchor": "middle" }, xLabel));
  if (mark !== null) svg.append(el("line", { x1: sx(mark), y1: pad.t, x2: sx(mark), y2: sy(0), class: "mark" }));
  series.forEach((s, i) => {
    svg.append(el("polyline", { points: s.points.map((p) => `${sx(p[0])},${sy(p[1])}`).join(" "), fill: "none", stroke: s.color, "stroke-width": 2 }));
    for (const p of s.points) svg.append(el("circle", { cx: sx(p[0]), cy: sy(p[1]), r: 3, fill: s.color }));
    svg.append(el("text", { x: width - pad.r + 8, y: pad.t + 14 + 18 * i, fill: s.color }, s.name));
  });
  return svg;
}
