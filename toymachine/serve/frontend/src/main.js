// The toym playground: an editor whose every (debounced) change re-runs the trace through
// POST /api/live and redraws the machine, the step viewer (the very page `toym run -f html`
// writes, in an iframe), the cost summary and the memory; plus sweep, compare, check, export
// and share. Every user text reaches the DOM through textContent or the server's escaping.
import { EditorView, basicSetup } from "codemirror";
import { EditorState } from "@codemirror/state";
import { setDiagnostics, lintGutter } from "@codemirror/lint";
import { syntaxHighlighting, HighlightStyle } from "@codemirror/language";
import { tags } from "@lezer/highlight";
import { toymLanguage } from "./language.js";
import { encodeState, decodeState } from "./share.js";
import { linePlot } from "./plot.js";

const $ = (id) => document.getElementById(id);
const pg = (window.playground = { ready: false, refreshes: 0, latencyMs: null, result: null, error: null });

function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

async function api(path, body) {
  const init = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const res = await fetch(path, init);
  const type = res.headers.get("content-type") || "";
  let data = type.startsWith("application/json") ? await res.json() : await res.text();
  if (!res.ok && !(data && data.error)) data = { error: { message: `${res.status}: ${String(data).slice(0, 200)}` } };
  return { ok: res.ok, status: res.status, data };
}

const style = HighlightStyle.define([
  { tag: tags.comment, color: "#3d7b7b", fontStyle: "italic" },
  { tag: tags.keyword, color: "#008000", fontWeight: "bold" },
  { tag: tags.number, color: "#666666" },
  { tag: tags.atom, color: "#008000" },
  { tag: tags.special(tags.variableName), color: "#19177c" },
  { tag: tags.variableName, color: "#0000ff" },
  { tag: tags.invalid, color: "#c00", textDecoration: "underline wavy #c00" },
]);

function makeEditor(parent, doc, onChange, language) {
  return new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [basicSetup, language, syntaxHighlighting(style), lintGutter(),
        EditorView.updateListener.of((u) => { if (u.docChanged) onChange(); })],
    }),
  });
}

// -- the request: trace + machine + data + options, as the API takes it ---------------------------
function machineSpec() {
  const preset = $("preset").value;
  const yaml = $("machine-yaml").value;
  const sram = $("sram").value.trim();
  const mem = $("mem-cycles").value.trim();
  const edited = yaml !== (pg.meta.presets[preset] || "");
  if (!edited && !sram && !mem) return preset || null;
  // the controls become lines of the machine's YAML (a key already there is replaced)
  const put = (text, key, value) => (new RegExp(`^${key}:.*$`, "m").test(text)
    ? text.replace(new RegExp(`^${key}:.*$`, "m"), `${key}: ${value}`) : `${text.replace(/\s*$/, "")}\n${key}: ${value}\n`);
  let text = yaml || "name: custom\n";
  if (sram) text = put(text, "sram_words", sram);
  if (mem) text = put(text, "cycles", `{LOAD: ${mem}, STORE: ${mem}}`);
  return { yaml: text, name: "machine.yaml" };
}

function runRequest(trace, extra = {}) {
  const options = { file: fileA(), ...extra };
  const r = $("registers").value.trim();
  if (r) options.registers = Number(r);
  if ($("dtype").value) options.dtype = $("dtype").value;
  const seed = $("seed").value.trim();
  if (seed) options.seed = Number(seed);
  return { trace, machine: machineSpec(), data: $("data").value, options };
}

// -- diagnostics: the CLI's file:line:col error as a squiggle and a row in the problems list ------
const fileA = () => $("file").value || "playground.asm";
const fileB = () => pg.fileB || "b.asm";

function diagnosticFor(view, err, severity, file) {
  if (!err.line || err.file !== file) return null;
  const doc = view.state.doc;
  if (err.line > doc.lines) return null;
  const line = doc.line(err.line);
  let from = line.from + Math.max(0, Math.min((err.column || 1) - 1, line.length));
  let to = from;
  while (to < line.to && !/[\s,]/.test(doc.sliceString(to, to + 1))) to++;
  if (to === from || !err.column) { from = line.from; to = line.to; }
  return { from, to, severity, message: err.message + (err.hint ? ` (${err.hint})` : ""), source: "toym" };
}

function showProblems(view, list, errors, warnings, file) {
  const diags = [];
  list.replaceChildren();
  for (const [items, severity] of [[errors, "error"], [warnings, "warning"]]) {
    for (const err of items) {
      const d = diagnosticFor(view, err, severity, file);
      if (d) diags.push(d);
      const where = [err.file, err.line, err.column].filter((x) => x !== null && x !== undefined).join(":");
      const row = h("li", { class: severity }, h("span", { class: "where" }, where), " ", h("span", { class: "msg" }, `${severity}: ${err.message}`));
      if (err.hint) row.append(h("div", { class: "hint" }, `hint: ${err.hint}`));
      if (err.line && d) row.addEventListener("click", () => { view.dispatch({ selection: { anchor: d.from } }); view.focus(); });
      list.append(row);
    }
  }
  if (!list.children.length) list.append(h("li", { class: "ok" }, "no problems"));
  view.dispatch(setDiagnostics(view.state, diags));
}

// -- the run's panels --------------------------------------------------------------------------
function num(x) {
  if (typeof x === "number") return x.toLocaleString("en-US", { maximumFractionDigits: 6 });
  if (x === null || x === undefined) return "";
  if (typeof x === "object" && !Array.isArray(x)) return Object.entries(x).map(([k, v]) => `${k} ${num(v)}`).join(", ");
  return String(x);
}

function shapeOf(v) { // a register's value: a number, a tile (nested lists) or a summary
  if (v && v.summary) return `${v.shape.join("×")} tile`;
  if (!Array.isArray(v)) return v;
  return `${v.length}×${Array.isArray(v[0]) ? v[0].length : 1} tile`;
}

function costRows(r) {
  const mem = r.tile_traffic || r.sram_peak !== undefined ? "HBM" : "DRAM";
  const rows = [["cycles", r.cycles], ["instructions", r.instructions], [`${mem} reads (words)`, r.dram && r.dram.reads],
    [`${mem} writes (words)`, r.dram && r.dram.writes], ["registers used", r.registers_used]];
  if (r.flops !== undefined) rows.push(["FLOPs", r.flops]);
  if (r.sram_peak !== undefined) rows.push(["SRAM peak (words)", r.sram_words ? `${num(r.sram_peak)} of ${num(r.sram_words)}` : r.sram_peak]);
  if (r.cycle_breakdown) rows.push(["cycles by unit", r.cycle_breakdown]);
  if (r.intensity) rows.push(["FLOPs per word", r.intensity.flops_per_word]);
  if (r.ops) rows.push(["instructions by opcode", r.ops]);
  rows.push(["numerical alarms", (r.alarms || []).length]);
  return rows;
}

function table(rows, cls = "kv") {
  return h("table", { class: cls }, ...rows.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", { "data-key": k }, num(v)))));
}

function memoryTable(name, value) {
  const box = h("div", { class: "memarr" }, h("div", { class: "aname" }, name));
  if (value && value.summary) {
    box.append(h("div", {}, `${value.shape.join("×")} · min ${num(value.min)} · max ${num(value.max)} · mean ${num(value.mean)}`));
    return box;
  }
  const rows = Array.isArray(value) && Array.isArray(value[0]) ? value : [Array.isArray(value) ? value : [value]];
  const t = h("table", { class: "grid" });
  for (const row of rows.slice(0, 32)) t.append(h("tr", {}, ...(Array.isArray(row) ? row : [row]).slice(0, 32).map((v) => h("td", {}, v === null ? "·" : num(v)))));
  box.append(t);
  return box;
}

function showRun(r) {
  $("costs").replaceChildren(table(costRows(r)));
  $("memory").replaceChildren(...Object.entries(r.memory || {}).map(([k, v]) => memoryTable(k, v)));
  const regs = Object.entries(r.registers || {}).map(([k, v]) => [k, shapeOf(v)]);
  $("regs").replaceChildren(table(regs.length ? regs : [["(none used)", ""]]));
  const m = r.machine || {};
  const mrows = [["machine", m.name], ["registers", m.registers === null ? "unbounded" : m.registers], ["word bytes", m.word_bytes], ["dtype", m.dtype]];
  if (m.sram_words !== undefined) mrows.push(["SRAM words", m.sram_words]);
  for (const [op, c] of Object.entries(m.cycles || {})) mrows.push([`${op} cycles`, c]);
  $("machine-info").replaceChildren(table(mrows));
  $("status").textContent = `${num(r.cycles)} cycles · ${num(r.dram && r.dram.reads)} reads · ${num(r.dram && r.dram.writes)} writes`;
}

// The viewer is the page `toym run -f html` writes. The first one loads as the iframe's srcdoc;
// later ones are written into the same document (document.open/write: no navigation, about half
// the time of a srcdoc reload), at the step the reader was on.
function showPage(frame, html, done) {
  let w = null, step = null;
  try { w = frame.contentWindow; step = w.toym ? w.toym.step() : null; } catch (e) { w = null; }
  if (!w || !w.toym) {
    frame.onload = () => { frame.onload = null; done(); };
    frame.srcdoc = html;
    return;
  }
  const last = w.setInterval(() => {}, 1e9); // the replaced page's play timer must not outlive it
  for (let i = 0; i <= last; i++) w.clearInterval(i);
  const doc = frame.contentDocument;
  doc.open();
  doc.write(html);
  doc.close();
  try { if (step) w.toym.goTo(Math.min(step, w.toym.steps)); } catch (e) { /* a page without steps */ }
  requestAnimationFrame(() => done());
}

// -- live: no fixed debounce — an edit starts a run at once when none is in flight; edits made
// while one runs wait for it and then start one run with the newest text (at most one request in
// flight and one waiting, however fast the typing), and only the newest answer is drawn.
function liveRunner(getView, frame, onResult, onPage = () => {}, getFile = fileA) {
  let inflight = false, pending = false, lastEdit = 0, timer = null;
  async function refresh() {
    inflight = true;
    pending = false;
    const view = getView();
    const t0 = performance.now();
    let reply;
    try { reply = await api("/api/live", runRequest(view.state.doc.toString(), { file: getFile() })); } catch (e) { reply = { ok: false, data: { error: { message: `the server did not answer: ${e.message}` } } }; }
    const t1 = performance.now();
    if (pending) return refresh(); // typed meanwhile: this answer is already old
    const { ok, data } = reply;
    if (ok) {
      const r = JSON.parse(data.json);
      onResult(r, null, data.warnings);
      const t2 = performance.now();
      onPage(data.page);
      await new Promise((resolve) => showPage(frame, data.page, resolve));
      pg.timing = { waitMs: t0 - lastEdit, apiMs: t1 - t0, panelsMs: t2 - t1, viewerMs: performance.now() - t2 };
    } else {
      onResult(null, data.error || { message: String(data) }, []);
    }
    pg.latencyMs = performance.now() - lastEdit;
    pg.refreshes++;
    inflight = false;
    if (pending) refresh();
  }
  return {
    schedule() {
      lastEdit = performance.now();
      if (inflight) { pending = true; return; }
      clearTimeout(timer);
      timer = setTimeout(refresh, 0); // edits of one event loop turn (a paste, a replace) are one run
    },
    now() { lastEdit = performance.now(); clearTimeout(timer); return inflight ? (pending = true, null) : refresh(); },
  };
}

// -- sweep -------------------------------------------------------------------------------------
function sweepForm() {
  const gen = pg.meta.generators[$("sw-gen").value];
  const box = $("sw-params");
  box.replaceChildren();
  const defaults = { matmul: { n: "2", registers: "3..8" } }[$("sw-gen").value] || {};
  for (const p of gen) {
    const value = defaults[p.name] !== undefined ? defaults[p.name] : p.default === null ? "" : String(p.default);
    box.append(h("label", { title: p.help + (p.choices ? ` (${p.choices.join(", ")})` : "") }, p.name, " ",
      h("input", { "data-param": p.name, value, size: "10" })));
  }
  $("sw-x").replaceChildren(...gen.map((p) => h("option", { value: p.name }, p.name)));
  $("sw-x").value = gen.some((p) => p.name === "registers") ? "registers" : gen[0].name;
}

async function runSweep() {
  const params = {};
  for (const input of $("sw-params").querySelectorAll("input")) if (input.value.trim()) params[input.dataset.param] = input.value.trim();
  $("sw-status").textContent = "running…";
  const { ok, data } = await api("/api/sweep", { generator: $("sw-gen").value, params, machine: $("preset").value || null, options: { format: "json" } });
  if (!ok) { $("sw-status").textContent = `error: ${data.error.message}${data.error.hint ? ` (hint: ${data.error.hint})` : ""}`; return; }
  pg.sweep = data.sweep;
  $("sw-status").textContent = `${data.sweep.length} points`;
  const x = $("sw-x").value;
  const xs = [...new Set(data.sweep.map((row) => row[x]))].filter((v) => typeof v === "number").sort((a, b) => a - b);
  const slider = $("sw-slider");
  slider.min = 0; slider.max = Math.max(0, xs.length - 1); slider.value = 0;
  pg.sweepXs = xs;
  $("sw-slider-label").textContent = x;
  drawSweep();
}

function drawSweep() {
  const rows = pg.sweep || [], x = $("sw-x").value, xs = pg.sweepXs || [];
  const reads = "dram_reads", label = rows.length && "sram_peak" in rows[0] ? "HBM reads" : "DRAM reads";
  const mark = xs.length ? xs[Number($("sw-slider").value)] : null;
  const at = rows.filter((row) => row[x] === mark);
  const pts = (key) => xs.map((v) => [v, rows.find((row) => row[x] === v)[key]]).filter((p) => typeof p[1] === "number");
  $("sw-plot").replaceChildren(linePlot([{ name: "cycles", color: "#d9480f", points: pts("cycles") },
    { name: label, color: "#1864ab", points: pts(reads) }], { xLabel: x, mark }));
  $("sw-readout").textContent = at.length ? `${x} = ${mark}: ${num(at[0].cycles)} cycles, ${num(at[0][reads])} ${label}` : "";
  $("sw-table").replaceChildren(h("table", { class: "rows" }, h("tr", {}, ...Object.keys(rows[0] || {}).map((k) => h("th", {}, k))),
    ...rows.map((row) => h("tr", { class: row[x] === mark ? "sel" : "" }, ...Object.values(row).map((v) => h("td", {}, num(v)))))));
}

// -- check, export, share, examples ------------------------------------------------------------
async function runCheck() {
  const name = $("ck-problem").value;
  const { ok, data } = await api("/api/check", { trace: pg.editor.state.doc.toString(), problem: name, options: { format: "json", file: $("file").value || "playground.asm" } });
  if (!ok) { $("ck-result").replaceChildren(h("p", { class: "error" }, `error: ${data.error.message}`)); return; }
  $("ck-result").replaceChildren(h("p", { class: data.passed ? "pass" : "fail", id: "ck-verdict" }, data.passed ? `passed: all ${data.checks.length} checks` : `failed: ${data.checks.filter((c) => !c.passed).length} of ${data.checks.length} checks`),
    h("table", { class: "rows" }, h("tr", {}, ...["check", "result", "figure", "limit", "message"].map((k) => h("th", {}, k))),
      ...data.checks.map((c) => h("tr", { class: c.passed ? "pass" : "fail" }, h("td", {}, c.name), h("td", {}, c.passed ? "pass" : "FAIL"), h("td", {}, num(c.figure)), h("td", {}, num(c.limit)), h("td", {}, c.message || "")))));
}

async function showProblem() {
  const name = $("ck-problem").value;
  if (!name) return;
  const { ok, data } = await api(`/api/examples/problems/${encodeURIComponent(name)}`);
  $("ck-text").textContent = ok ? data : data.error.message;
}

const EXT = { markdown: "md", latex: "tex", csv: "csv", json: "json", html: "html" };
async function runExport() {
  const fmt = $("ex-format").value;
  const { ok, status, data } = await api("/api/run", runRequest(pg.editor.state.doc.toString(), { format: fmt }));
  if (!ok) { $("ex-text").textContent = `error ${status}: ${data.error.message}`; return; }
  const text = typeof data === "string" ? data : JSON.stringify(data, null, 2);
  $("ex-text").textContent = text.length > 20000 ? text.slice(0, 20000) + "\n…" : text;
  const link = $("ex-link");
  if (link.href) URL.revokeObjectURL(link.href);
  link.href = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
  link.download = `${($("file").value || "playground.asm").replace(/\.asm$/, "").replace(/[^\w.-]/g, "_")}.${EXT[fmt]}`;
  link.textContent = `download ${link.download}`;
}

function state() {
  return { v: 1, trace: pg.editor.state.doc.toString(), traceB: pg.editorB.state.doc.toString(), preset: $("preset").value,
    fileB: fileB(), machine: $("machine-yaml").value, registers: $("registers").value, sram: $("sram").value, dtype: $("dtype").value,
    seed: $("seed").value, data: $("data").value, file: $("file").value, memCycles: $("mem-cycles").value };
}

async function share() {
  const code = await encodeState(state());
  history.replaceState(null, "", `#s=${code}`);
  $("share-url").value = location.href;
  $("share-url").select();
  try { await navigator.clipboard.writeText(location.href); $("share-note").textContent = "copied"; } catch (e) { $("share-note").textContent = "copy the link above"; }
}

function setDoc(view, text) { view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }); }

async function restore() {
  const m = /#s=([\w-]+)/.exec(location.hash);
  if (!m) return false;
  const s = await decodeState(m[1], pg.meta.limits.body_bytes);
  const str = (v) => (typeof v === "string" ? v : "");
  if (str(s.preset) in pg.meta.presets || s.preset === "") $("preset").value = str(s.preset);
  for (const id of ["registers", "sram", "dtype", "seed", "data", "file"]) $(id).value = str(s[id]);
  $("mem-cycles").value = str(s.memCycles);
  pg.fileB = str(s.fileB) || null;
  $("machine-yaml").value = str(s.machine) || pg.meta.presets[$("preset").value] || "";
  setDoc(pg.editor, str(s.trace));
  setDoc(pg.editorB, str(s.traceB));
  return true;
}

async function loadExample(view, name, file) {
  const { ok, data } = await api(`/api/examples/programs/${encodeURIComponent(name)}`);
  if (!ok) return;
  const machine = /^;\s*machine:\s*([\w-]+)/m.exec(data);
  if (view === pg.editorB) pg.fileB = `${name}.asm`;
  if (view === pg.editor) {
    $("file").value = `${name}.asm`;
    $("preset").value = machine && machine[1] in pg.meta.presets ? machine[1] : "";
    $("machine-yaml").value = pg.meta.presets[$("preset").value] || "";
  }
  setDoc(view, data);
}

function tabs() {
  for (const b of document.querySelectorAll("#tabs button")) {
    b.addEventListener("click", () => {
      for (const o of document.querySelectorAll("#tabs button")) o.classList.toggle("on", o === b);
      for (const s of document.querySelectorAll(".tab")) s.hidden = s.id !== `tab-${b.dataset.tab}`;
      if (b.dataset.tab === "compare" && pg.pageA) showPage($("viewer-a2"), pg.pageA, () => {});
    });
  }
}

async function main() {
  const meta = await api("/api/meta");
  pg.meta = meta.data;
  const lang = toymLanguage(pg.meta.opcodes);
  const options = (el, items) => el.append(...items.map(([v, t]) => h("option", { value: v }, t)));
  options($("preset"), [["", "default (toy)"], ...Object.keys(pg.meta.presets).map((n) => [n, n])]);
  options($("dtype"), [["", "machine's"], ...pg.meta.dtypes.map((d) => [d, d])]);
  const ex = pg.meta.examples;
  for (const sel of [$("examples"), $("cmp-example")]) {
    sel.append(h("option", { value: "" }, "examples…"), h("optgroup", { label: "programs" }, ...ex.programs.map((p) => h("option", { value: `programs/${p.name}`, title: p.title }, p.name))));
  }
  $("examples").append(h("optgroup", { label: "problem sets" }, ...ex.problems.map((p) => h("option", { value: `problems/${p.name}`, title: p.title }, `${p.name} (check)`))));
  options($("ck-problem"), ex.problems.map((p) => [p.name, `${p.name}: ${p.title}`]));
  options($("sw-gen"), Object.keys(pg.meta.generators).map((g) => [g, g]));
  $("sw-gen").value = "matmul" in pg.meta.generators ? "matmul" : $("sw-gen").value;
  sweepForm();

  const liveA = liveRunner(() => pg.editor, $("viewer"), (r, err, warnings) => {
    pg.result = r; pg.error = err;
    showProblems(pg.editor, $("problems"), err ? [err] : [], warnings, fileA());
    if (r) showRun(r); else $("status").textContent = `error: ${err.message}`;
    $("panels").classList.toggle("stale", !r);
    compareTable();
  }, (html) => { pg.pageA = html; if (!$("tab-compare").hidden) showPage($("viewer-a2"), html, () => {}); });
  const liveB = liveRunner(() => pg.editorB, $("viewer-b"), (r, err, warnings) => {
    pg.resultB = r;
    showProblems(pg.editorB, $("problems-b"), err ? [err] : [], warnings, fileB());
    compareTable();
  }, () => {}, fileB);
  pg.editor = makeEditor($("editor"), "", () => liveA.schedule(), lang);
  pg.editorB = makeEditor($("editor-b"), "", () => liveB.schedule(), lang);
  pg.live = liveA;
  const rerun = () => { liveA.schedule(); liveB.schedule(); };
  for (const id of ["registers", "sram", "mem-cycles", "seed", "data", "machine-yaml", "file"]) $(id).addEventListener("input", rerun);
  for (const id of ["dtype"]) $(id).addEventListener("change", rerun);
  $("preset").addEventListener("change", () => { $("machine-yaml").value = pg.meta.presets[$("preset").value] || ""; rerun(); });
  $("examples").addEventListener("change", async () => {
    const [kind, name] = $("examples").value.split("/");
    if (kind === "programs") await loadExample(pg.editor, name);
    else if (kind === "problems") { $("ck-problem").value = name; showProblem(); document.querySelector('#tabs button[data-tab="check"]').click(); }
    $("examples").value = "";
  });
  $("cmp-example").addEventListener("change", () => { const [, name] = $("cmp-example").value.split("/"); if (name) loadExample(pg.editorB, name); });
  $("sw-gen").addEventListener("change", sweepForm);
  $("sw-run").addEventListener("click", runSweep);
  $("sw-slider").addEventListener("input", drawSweep);
  $("sw-x").addEventListener("change", runSweep);
  $("ck-problem").addEventListener("change", showProblem);
  $("ck-run").addEventListener("click", runCheck);
  $("ex-run").addEventListener("click", runExport);
  $("share").addEventListener("click", share);
  tabs();
  showProblem();
  let restored = false;
  try { restored = await restore(); } catch (e) { $("status").textContent = `this share link could not be read: ${e.message}`; }
  if (!restored) {
    await loadExample(pg.editor, ex.programs.some((p) => p.name === "matmul_inner_2x2") ? "matmul_inner_2x2" : (ex.programs[0] || {}).name);
    if (ex.programs.some((p) => p.name === "matmul_outer_2x2")) await loadExample(pg.editorB, "matmul_outer_2x2");
  }
  await liveA.now();
  pg.ready = true;
}

function compareTable() {
  const a = pg.result, b = pg.resultB;
  if (!b) { $("cmp-table").replaceChildren(); return; }
  const ra = a ? costRows(a) : [], rb = costRows(b);
  $("cmp-table").replaceChildren(h("table", { class: "rows" }, h("tr", {}, h("th", {}, ""), h("th", {}, "A (editor)"), h("th", {}, "B")),
    ...rb.map(([k, v], i) => h("tr", {}, h("th", {}, k), h("td", {}, ra[i] ? num(ra[i][1]) : ""), h("td", {}, num(v))))));
}

main().catch((e) => { $("status").textContent = `the playground failed to start: ${e.message}`; throw e; });
