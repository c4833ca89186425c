"""The step viewer page (--format html): its per-step data against the simulator's own
figures, memory replayed step by step against the final memory, and the page's form."""

import json
import re

import numpy as np
import pytest
from conftest import PROGRAMS

from toymachine import parse, parse_file, resolve_machine, simulate
from toymachine.gen.tile import attention_program
from toymachine.render import FORMATS, render, render_report
from toymachine.render.page import page_html
from toymachine.render.stepview import step_model
from toymachine.render.stepview_memory import cell_text

SCALAR = ["c00.asm", "matmul_inner_2x2.asm", "matmul_outer_2x2.asm", "matmul_inner6_2x2.asm", "softmax_safe.asm",
          "softmax_online.asm", "welford_variance.asm", "attention_outer_3x2.asm", "rescale_overflow.asm"]


def run(name, machine=None, **kw):
    return simulate(parse_file(str(PROGRAMS / name)), resolve_machine(machine), steps=True, **kw)


def tile_runs():
    paper = resolve_machine("toysram-paper")  # seed 001's walk: SRAM counted as the paper counts it
    yield "fa1 seed 001 walk", simulate(parse_file(str(PROGRAMS / "fa1_n5_d3.asm")), paper, steps=True)
    yield "fa2 seed 001 blocks", simulate(parse_file(str(PROGRAMS / "fa2_n5_d3.asm")), paper, steps=True)
    yield "fa1 toysram exact", simulate(attention_program(n=5, d=3, algo="fa1", sram_words=59), resolve_machine("toysram"),
                                        steps=True)
    # batch and heads: arrays of 4 dimensions drawn as (b·h·n) × d grids; causal masks; a100 rates
    prog = attention_program(n=12, d=4, algo="fa2", batch=2, heads=2, causal=True, block_m=4, block_n=4)
    yield "fa2 causal b2 h2 a100", simulate(prog, resolve_machine("a100"), steps=True)
    prog = attention_program(n=8, d=4, algo="fa2", pass_="backward", block_m=4, block_n=4)
    yield "fa2 backward toysram", simulate(prog, resolve_machine("toysram").with_(sram_words=None), steps=True)


RUNS = [(name, None) for name in SCALAR] + [("softmax_online.asm", "examples/machines/slow_exp.yaml")]


def _final_counters(model):
    return {k: v[-1] for k, v in model["counters"].items()}


@pytest.mark.parametrize("name,machine", RUNS)
def test_running_counters_end_at_the_results_totals(name, machine):
    """The last step's cycles, DRAM words and FLOPs equal what the simulator reports."""
    if machine:
        machine = str(PROGRAMS.parent / machine)
    r = run(name, machine)
    m = step_model(r)
    c = _final_counters(m)
    assert c["cycles"] == r.cycles and c["reads"] == r.dram_reads and c["writes"] == r.dram_writes
    assert len(m["steps"]) == r.instructions == len(m["listing"])
    # counters never decrease
    for key in ("cycles", "reads", "writes", "flops"):
        assert all(a <= b for a, b in zip(m["counters"][key], m["counters"][key][1:]))


@pytest.mark.parametrize("label,result", list(tile_runs()), ids=lambda x: x if isinstance(x, str) else "")
def test_tile_counters_equal_cycles_flops_sram_peak(label, result):
    m = step_model(result)
    c = _final_counters(m)
    assert c["cycles"] == pytest.approx(result.cycles, rel=1e-12)
    assert c["flops"] == result.extra["flops"]["matmul"] + result.extra["flops"]["other"]
    assert c["sram_peak"] == result.extra["sram_peak"] and max(m["counters"]["sram"]) == result.extra["sram_peak"]
    assert (c["reads"], c["writes"]) == (result.dram_reads, result.dram_writes)


def _replay(model):
    """Apply every step's stored cells to the contents before step 1 (what the page's
    script does going forward) and return the contents after the last step."""
    cells = {a["name"]: list(a["cells"]) for a in model["arrays"] if a["cells"] is not None}
    names = [a["name"] for a in model["arrays"]]
    for step in model["steps"]:
        if "mv" not in step:
            continue
        values = iter(step["mv"])
        for a, r0, r1, c0, c1 in step["wr"]:
            cols = model["arrays"][a]["cols"]
            for row in range(r0, r1):
                for col in range(c0, c1):
                    cells[names[a]][row * cols + col] = next(values)
    return cells


@pytest.mark.parametrize("name", SCALAR)
def test_memory_replayed_step_by_step_is_the_final_memory(name):
    r = run(name)
    m = step_model(r)
    after = _replay(m)
    for array in r.written_arrays:
        want = [cell_text(v) for v in np.asarray(r.memory[array], dtype=object).ravel().tolist()]
        assert after[array] == want, array


@pytest.mark.parametrize("label,result", list(tile_runs())[:3], ids=["fa1", "fa2", "fa1-exact"])
def test_tile_memory_replay(label, result):
    m = step_model(result)
    after = _replay(m)
    for array in result.written_arrays:
        want = [cell_text(float(v)) for v in np.asarray(result.array(array)).ravel()]
        assert after[array] == want, array


def test_the_papers_sram_count():
    """On toysram-paper only registers holding HBM matrix blocks count (Q_i, K_j, V_j, O_i):
    seed 001's Br = 3, Bc = 4 walk peaks at 9 + 12 + 12 + 9 = 42 words; S is off the count."""
    m = step_model(next(tile_runs())[1])
    counted = {r["name"] for r in m["registers"] if r.get("counted")}
    assert m["sram_rule"] == "paper" and counted == {"T0", "T1", "T2", "T4"}
    assert max(m["counters"]["sram"]) == 42


def test_contents_before_the_run():
    """Read-only inputs show their values; outputs start blank unless a LOAD saw them
    first (FA1 loads O = 0, l = 0, m = −∞ before storing them)."""
    m = step_model(run("c00.asm"))
    arrays = {a["name"]: a for a in m["arrays"]}
    assert arrays["a"]["cells"] == ["1", "2", "3", "4"] and arrays["c"]["cells"] == [""]
    assert [a["name"] for a in m["arrays"]] == ["a", "b", "c"]
    assert arrays["a"]["labels"] == ["a₀₀", "a₀₁", "a₁₀", "a₁₁"]
    fa1 = step_model(next(tile_runs())[1])
    arrays = {a["name"]: a for a in fa1["arrays"]}
    assert set(arrays["O"]["cells"]) == {"0"} and set(arrays["m"]["cells"]) == {"−∞"}
    assert (arrays["l"]["rows"], arrays["l"]["cols"]) == (5, 1)  # moved in blocks: a column beside O


def test_each_step_reads_and_writes_what_its_operands_name():
    m = step_model(run("c00.asm"))
    load_a00, load_b00, mac_z = m["steps"][:3]
    assert load_a00["rd"] == [[0, 0, 1, 0, 1]] and load_a00["rw"] == 0 and load_a00["v"] == "1"
    assert load_b00["rd"] == [[1, 0, 1, 0, 1]] and load_b00["o"][1] == "b[0][0]"
    assert mac_z["rr"] == [0, 1] and mac_z["rw"] == 2 and mac_z["v"] == "5" and mac_z["o"] is None
    store = m["steps"][-1]
    assert store["wr"] == [[2, 0, 1, 0, 1]] and store["mv"] == ["19"] and store["rr"] == [2]
    assert m["listing"][5]["explain"] == "R2 = R0 × R1 + R2"
    fa1 = step_model(next(tile_runs())[1])
    load_q = next(s for s, row in zip(fa1["steps"], fa1["listing"]) if row["text"] == "LOAD Q[3:5, :], T0")
    assert load_q["rd"] == [[2, 3, 5, 0, 3]] and load_q["v"]["s"] == [2, 3]


def test_symbolic_registers_are_the_seeds_names():
    prog = parse_file(str(PROGRAMS / "c00.asm"))
    r = simulate(prog, steps=True, symbolic=True)
    m = step_model(r, program=prog)
    assert [s.get("v") for s in m["steps"]] == ["a₀₀", "b₀₀", "a₀₀·b₀₀", "a₀₁", "b₁₀", "c₀₀", None]
    a = next(x for x in m["arrays"] if x["name"] == "a")
    assert a["shape"] == [2, 2] and a["cells"] == ["a₀₀", "a₀₁", "a₁₀", "a₁₁"]  # shape from the declaration
    page = page_html(r, program=prog)
    assert "a₀₀·b₀₀" in page and "; accumulate into R2" in page  # the source listing keeps comments


def test_page_is_one_offline_document():
    page = render(run("matmul_outer_2x2.asm"), "html")
    assert page.startswith("<!DOCTYPE html>\n<html") and page.rstrip().endswith("</html>")
    assert "<style>" in page and "<script>" in page and 'id="toym-data"' in page
    assert not re.search(r"(?i)(https?:|//cdn|<link|src=|@import|url\()", page)
    data = json.loads(re.search(r'<script type="application/json" id="toym-data">(.*?)</script>', page, re.S)
                      .group(1).replace("<\\/", "</"))
    assert len(data["steps"]) == 22 and data["counters"]["cycles"][-1] == 22


def test_page_bytes_are_deterministic():
    fa1 = parse_file(str(PROGRAMS / "fa1_n5_d3.asm"))
    a = page_html(simulate(fa1, resolve_machine("toysram-paper"), steps=True), program=fa1)
    b = page_html(simulate(fa1, resolve_machine("toysram-paper"), steps=True), program=fa1)
    assert a == b


def test_long_runs_replay_the_first_steps_with_a_note():
    r = simulate(parse(".data x = [1, 2]\nLOAD x[0], R0\n" + "ADD R0, R0, R0\n" * 60 + "STORE R0, y[0]\n"), steps=True)
    m = step_model(r, max_steps=25)
    assert len(m["steps"]) == 25 and "first 25 of 62 steps" in m["note"]
    page = page_html(r, max_steps=25)
    assert 'max="25"' in page and "first 25 of 62 steps" in page


def test_a_run_without_steps_shows_its_final_state_and_says_why():
    r = simulate(parse(".data x = [1, 2]\nLOAD x[0], R0\n" + "ADD R0, R0, R0\n" * 300 + "STORE R0, y[0]\n"))
    assert r.steps is None
    m = step_model(r)
    assert m["steps"] == [] and "--steps" in m["note"]
    assert m["final_registers"] == [cell_text(r.registers["R0"], 6)]
    assert "Steps were not recorded" in render(r, "html")


def test_fragment_format_is_the_tables_without_a_page():
    r = run("c00.asm")
    assert "html-fragment" in FORMATS
    frag = render(r, "html-fragment")
    assert frag.startswith('<div class="toym-report">') and "<!DOCTYPE" not in frag
    from toymachine.render.isa import isa_report

    doc = render_report(isa_report(), "html")
    assert doc.startswith("<!DOCTYPE html>") and render_report(isa_report(), "html-fragment") in doc


def test_big_arrays_are_drawn_in_buckets():
    prog = attention_program(n=96, d=8, algo="fa2", block_m=32, block_n=32)
    r = simulate(prog, resolve_machine("toysram").with_(sram_words=None), steps=True)
    m = step_model(r)
    q = next(a for a in m["arrays"] if a["name"] == "Q")
    assert (q["rows"], q["cols"], q["br"], q["bc"]) == (96, 8, 3, 1) and q["cells"] is None
    page = page_html(r)
    assert page.count('class="cell bucket"') >= 4 * 32 * 8
