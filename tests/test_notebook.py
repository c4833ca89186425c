"""Notebook display: reprs of results, tables and grades; view(); the example notebook
run top to bottom in a real kernel."""

import html
import os
import sys

import pytest
from conftest import PROGRAMS, ROOT

import toymachine
from toymachine import parse_file, resolve_machine, simulate
from toymachine.experiments.sweep import sweep, sweep_report
from toymachine.render import render, render_report


def test_result_reprs_are_its_tables():
    r = simulate(parse_file(str(PROGRAMS / "c00.asm")), symbolic=True)
    assert r._repr_html_() == render(r, "html-fragment") and "a₀₀·b₀₀" in r._repr_html_()
    assert r._repr_markdown_() == render(r, "markdown")


def test_sweep_tables_render_in_notebooks():
    rows = sweep("matmul", {"n": [2], "registers": [3, 6], "schedule": ["inner", "outer"]})
    rep = sweep_report(rows, "matmul")
    assert rep._repr_html_() == render_report(rep, "html-fragment") and "<table>" in rep._repr_html_()
    assert rep._repr_markdown_().startswith("### Sweep")


@pytest.mark.slow
def test_view_is_the_stepper_in_an_iframe():
    pytest.importorskip("IPython")
    shown = toymachine.view(PROGRAMS / "c00.asm")
    assert type(shown).__name__ == "HTML"
    markup = shown.data
    assert markup.startswith('<div class="toym-view"><iframe srcdoc="')
    page = html.unescape(markup.split('srcdoc="', 1)[1].split('" style=', 1)[0])
    assert page.startswith("<!DOCTYPE html>") and "; accumulate into R2" in page  # the source listing


def test_view_takes_results_programs_and_run_options():
    pytest.importorskip("IPython")
    r = simulate(parse_file(str(PROGRAMS / "fa1_n5_d3.asm")), resolve_machine("toysram-paper"), steps=True)
    assert "SRAM (tile registers)" in html.unescape(toymachine.view(r).data)
    shown = toymachine.view(parse_file(str(PROGRAMS / "softmax_online.asm")), registers=4, symbolic=True)
    assert "e^(x₀−max(x₀, x₁)) + e^(x₁−max(x₀, x₁))" in html.unescape(shown.data)  # the running sum, symbolic
    with pytest.raises(TypeError, match="no run options"):
        toymachine.view(r, registers=3)


def test_view_without_ipython_returns_the_page(monkeypatch):
    monkeypatch.setitem(sys.modules, "IPython", None)
    monkeypatch.setitem(sys.modules, "IPython.display", None)
    page = toymachine.view(PROGRAMS / "c00.asm")
    assert isinstance(page, str) and page.startswith("<!DOCTYPE html>")


@pytest.mark.slow  # a notebook kernel
def test_the_example_notebook_runs_top_to_bottom():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(ROOT / "examples" / "lecture.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = str(ROOT) + (os.pathsep + env_path if env_path else "")  # the kernel imports this tree
    try:
        nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                                resources={"metadata": {"path": str(ROOT / "examples")}}).execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    htmls = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("a₀₀·b₀₀" in h for h in htmls)  # the seed's Problem 1 table
    assert sum('<iframe srcdoc="' in h for h in htmls) == 2  # two step viewers
    assert any("SRAM (tile registers)" in html.unescape(h) for h in htmls)  # the FA1 animation
    assert any("sim = formula" in h for h in htmls)  # the sweep
    assert any("25 cycles: 3 over the budget of 22" in h for h in htmls)  # a graded trace over budget
    assert any("passed: False" in o.get("text", "") for o in outputs)
