/* toym step viewer. The page's data (toymachine.render.stepview) is the JSON in
   #toym-data: per step the registers/cells it reads (rd, rr) and writes (wr, rw), the
   written register's new value (v), the stored cells' new values (mv), where a register's
   contents came from (o) and the running counters. Stepping forward applies a step and
   remembers what it overwrote; stepping back restores that. No network, no libraries. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("toym-data").textContent);
  var S = D.steps, N = S.length, cur = 0, timer = null;
  var undo = new Array(N + 1);
  var regVal = N ? D.initial_registers.slice() : D.final_registers.slice();
  var regFrom = D.registers.map(function () { return null; });
  var lit = [], held = [], curRow = null;

  function $(id) { return document.getElementById(id); }
  function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }

  /* the display cells a rectangle [array, r0, r1, c0, c1] covers (buckets for big arrays) */
  function cellsOf(rect) {
    var a = rect[0], A = D.arrays[a], out = [];
    var r0 = Math.floor(rect[1] / A.br), r1 = Math.floor((rect[2] - 1) / A.br);
    var c0 = Math.floor(rect[3] / A.bc), c1 = Math.floor((rect[4] - 1) / A.bc);
    for (var r = r0; r <= r1; r++) {
      for (var c = c0; c <= c1; c++) {
        var el = $("m" + a + "-" + r + "-" + c);
        if (el) out.push(el);
      }
    }
    return out;
  }

  function valueHtml(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "string") return esc(v);
    var s = '<span class="tile-shape">' + v.s[0] + "\u00d7" + v.s[1] + " tile</span>";
    if (v.v) {
      s += '<table class="tile">' + v.v.map(function (row) {
        return "<tr>" + row.map(function (x) { return "<td>" + esc(x) + "</td>"; }).join("") + "</tr>";
      }).join("") + "</table>";
    }
    return s;
  }

  function showReg(i) {
    var el = $("r" + i);
    el.querySelector(".val").innerHTML = valueHtml(regVal[i]);
    el.querySelector(".from").textContent = regFrom[i] ? "\u2190 " + regFrom[i][1] : "";
  }

  function setCell(el, text) {
    el.textContent = text;
    el.classList.toggle("empty", text === "");
  }

  function apply(k) {            /* state k-1 -> state k */
    var s = S[k - 1], rec = {};
    if (s.rw !== undefined) {
      rec.v = regVal[s.rw];
      regVal[s.rw] = s.v;
      if ("o" in s) { rec.hasFrom = true; rec.from = regFrom[s.rw]; regFrom[s.rw] = s.o; }
      showReg(s.rw);
    }
    if (s.mv) {
      rec.mv = [];
      var i = 0;
      s.wr.forEach(function (rect) {
        cellsOf(rect).forEach(function (el) { rec.mv.push(el.textContent); setCell(el, s.mv[i++]); });
      });
    }
    undo[k] = rec;
  }

  function unapply(k) {          /* state k -> state k-1 */
    var s = S[k - 1], rec = undo[k];
    if (s.rw !== undefined) {
      regVal[s.rw] = rec.v;
      if (rec.hasFrom) regFrom[s.rw] = rec.from;
      showReg(s.rw);
    }
    if (rec.mv) {
      var i = 0;
      s.wr.forEach(function (rect) {
        cellsOf(rect).forEach(function (el) { setCell(el, rec.mv[i++]); });
      });
    }
  }

  function mark(el, cls) { el.classList.add(cls); lit.push([el, cls]); }

  function paint() {
    lit.forEach(function (p) { p[0].classList.remove(p[1]); });
    lit = [];
    held.forEach(function (el) { el.classList.remove("held"); });
    held = [];
    regFrom.forEach(function (from) {
      if (!from) return;
      from[0].forEach(function (rect) {
        cellsOf(rect).forEach(function (el) { el.classList.add("held"); held.push(el); });
      });
    });
    var s = cur ? S[cur - 1] : null;
    if (curRow) curRow.classList.remove("cur");
    curRow = null;
    if (s) {
      (s.rd || []).forEach(function (r) { cellsOf(r).forEach(function (el) { mark(el, "rd"); }); });
      (s.wr || []).forEach(function (r) { cellsOf(r).forEach(function (el) { mark(el, "wr"); }); });
      (s.rr || []).forEach(function (i) { mark($("r" + i), "rd"); });
      if (s.rw !== undefined) mark($("r" + s.rw), "wr");
      if (s.m === "L") mark($("bus-load"), "on");
      if (s.m === "S") mark($("bus-store"), "on");
      if (s.u !== undefined && s.u >= 0 && $("u" + s.u)) mark($("u" + s.u), "on");
      curRow = $("ln" + s.l);
      if (curRow) {
        curRow.classList.add("cur");
        var box = $("listing");
        if (curRow.offsetTop < box.scrollTop || curRow.offsetTop + curRow.offsetHeight > box.scrollTop + box.clientHeight) {
          box.scrollTop = Math.max(0, curRow.offsetTop - box.clientHeight / 3);
        }
      }
      var L = D.listing[cur - 1];
      $("d-instr").innerHTML = "<code>" + esc(L.text) + "</code> <span class=\"tile-shape\">line " + L.line + "</span>";
      var after = s.rw !== undefined && typeof s.v === "string" ? "  \u2192  " + D.registers[s.rw].name + " = " + s.v : "";
      $("d-explain").textContent = L.explain + after;
    } else {
      $("d-instr").textContent = N ? "before the first instruction" : "final state";
      $("d-explain").textContent = N ? "press \u2192 or \u25b6 to step" : "";
    }
    Object.keys(D.counters).forEach(function (key) {
      var el = $("c-" + key);
      if (el) el.textContent = fmt(D.counters[key][cur]);
    });
    if (D.counters.sram && D.sram_words) {
      var now = D.counters.sram[cur];
      $("sram-fill").style.width = Math.min(100, 100 * now / D.sram_words) + "%";
      $("sram-text").textContent = now + " / " + D.sram_words + " words (peak " + D.counters.sram_peak[cur] + ")";
    }
    $("slider").value = cur;
    $("step-label").textContent = "step " + cur + " / " + N;
    document.body.setAttribute("data-step", String(cur));
  }

  function fmt(x) {
    if (typeof x !== "number") return "";
    return x.toLocaleString("en-US", { maximumFractionDigits: 2 });
  }

  function goTo(k) {
    k = Math.max(0, Math.min(N, k | 0));
    while (cur < k) apply(++cur);
    while (cur > k) unapply(cur--);
    paint();
    try { history.replaceState(null, "", "#step=" + cur); } catch (e) { /* srcdoc, sandbox */ }
  }

  function play() {
    if (timer) { clearInterval(timer); timer = null; $("b-play").textContent = "play"; return; }
    if (cur >= N) goTo(0);
    $("b-play").textContent = "pause";
    timer = setInterval(function () {
      if (cur >= N) { play(); return; }
      goTo(cur + 1);
    }, 1000 / Number($("speed").value));
  }

  D.registers.forEach(function (_, i) { showReg(i); });
  $("b-first").onclick = function () { goTo(0); };
  $("b-prev").onclick = function () { goTo(cur - 1); };
  $("b-next").onclick = function () { goTo(cur + 1); };
  $("b-last").onclick = function () { goTo(N); };
  $("b-play").onclick = play;
  $("slider").oninput = function () { goTo(Number(this.value)); };
  $("speed").onchange = function () { if (timer) { play(); play(); } };
  $("listing").addEventListener("click", function (e) {
    var row = e.target.closest(".ln");
    if (row && row.hasAttribute("data-step")) goTo(Number(row.getAttribute("data-step")));
  });
  document.addEventListener("keydown", function (e) {
    var tag = e.target && e.target.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
    var n = e.shiftKey ? 10 : 1;
    if (e.key === "ArrowRight") goTo(cur + n);
    else if (e.key === "ArrowLeft") goTo(cur - n);
    else if (e.key === "Home") goTo(0);
    else if (e.key === "End") goTo(N);
    else if (e.key === " ") play();
    else return;
    e.preventDefault();
  });
  var m = /[#?&]step=(\d+)/.exec(location.hash + location.search);
  goTo(m ? Number(m[1]) : 0);
  window.toym = { goTo: goTo, step: function () { return cur; }, steps: N };
})();
