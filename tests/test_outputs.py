"""Output people can trust: no silent defaults, JSON you can select, tables that fit,
cost on rate machines explained, files with the usual permissions."""

import csv
import io
import json
import os
import re

import numpy as np
import pytest
from conftest import PROGRAMS, program_machine

from toymachine import parse, resolve_machine, simulate
from toymachine.errors import AsmError, DataError
from toymachine.render import Report, Section, render, render_report
from toymachine.render.cells import Num, Qty, sig
from toymachine.sim.inputs import close_name

MISSPELT = ".data x = [1, 2, 3]\nLOAD x[0], R0\nLOAD X[1], R1\nADD R0, R1, R2\nSTORE R2, y[0]\n"
UNGIVEN = ".data x = [1, 2, 3]\nLOAD x[0], R0\nLOAD w[1], R1\nADD R0, R1, R2\nSTORE R2, y[0]\n"  # w: one edit from x


# -- no silent defaults --------------------------------------------------------------------------
@pytest.mark.parametrize("text,name,guess,col", [
    (MISSPELT, "X", "x", 6),  # another case
    (".data scores = [1, 2]\nLOAD scores[0], R0\nLOAD scroes[1], R1\nADD R0, R1, R2\nSTORE R2, y[0]\n",
     "scroes", "scores", 6),  # one edit, both names long enough to be a typo
    (".data QK = [1, 2]\nLOAD QK[0], R0\nLOAD Qk[1], R1\n", "Qk", "QK", 6),
])
def test_a_misread_array_is_an_error_with_a_suggestion(toym, tmp_path, text, name, guess, col):
    prog = tmp_path / "t.asm"
    prog.write_text(text)
    code, out, err = toym("run", prog, "--no-steps")
    assert code == 2 and out == ""  # no run on random values
    assert err.startswith(f"error: array '{name}' is read but never given") and f"did you mean '{guess}'?" in err
    assert f"t.asm:3:{col}" in err and text.splitlines()[2] in err
    assert err.splitlines()[4].index("^") == err.splitlines()[3].index(name, 4)  # the caret under the name
    with pytest.raises(DataError, match=f"did you mean '{guess}'"):  # the API toym check and serve call
        simulate(parse(text))


def test_an_ungiven_array_warns_with_a_suggestion(toym, tmp_path):
    prog = tmp_path / "t.asm"
    prog.write_text(UNGIVEN)
    code, out, err = toym("run", prog, "--no-steps")
    assert code == 0 and out  # the run still happens, on deterministic random values: one-letter names are not judged
    assert err.startswith("warning: array 'w' is read but never given") and "did you mean 'x'?" in err
    assert "t.asm:3:6" in err and "LOAD w[1], R1" in err and "^" in err and "--strict" in err


def test_strict_makes_it_an_error(toym, tmp_path):
    prog = tmp_path / "t.asm"
    prog.write_text(UNGIVEN)
    code, out, err = toym("run", prog, "--strict")
    assert code == 2 and out == "" and err.startswith("error: array 'w'") and "t.asm:3:6" in err
    with pytest.raises(DataError, match="did you mean 'x'"):  # the API toym check calls
        simulate(parse(UNGIVEN), strict_inputs=True)
    code, _, err = toym("run", PROGRAMS / "softmax_safe.asm", "--strict", "--no-steps")
    assert code == 0 and err == ""  # a program whose inputs are all given


def test_the_warning_is_in_the_result_and_its_json(toym, tmp_path):
    r = simulate(parse(UNGIVEN))
    assert [w.message for w in r.warnings] == ["array 'w' is read but never given (no .data, data or .array): "
                                               "did you mean 'x'?"]
    assert r.memory["y"][0] == 1.0 + r.memory["w"][1]  # the deterministic random value was used
    d = r.to_dict()
    assert d["warnings"][0]["line"] == 3 and d["warnings"][0]["kind"] == "data"
    assert "warnings" not in simulate(parse(".data x = [1]\nLOAD x[0], R0\n")).to_dict()


@pytest.mark.parametrize("text", [
    ".array X[3]\nLOAD X[1], R0\n",                 # declared: random values on purpose
    ".array X[3] = 0\nLOAD X[1], R0\n",             # filled
    "LOAD x[0], R0\nSTORE R0, y[0]\nLOAD y[0], R1\n",  # y written before it is read; x is warned about
])
def test_declared_filled_or_written_first_is_no_warning(text):
    names = [w.message.split("'")[1] for w in simulate(parse(text)).warnings]
    assert names == (["x"] if text.startswith("LOAD x") else [])


def test_symbolic_runs_read_symbols_not_random_values():
    assert simulate(parse("LOAD a[0], R0\nLOAD b[0], R1\nMUL R0, R1, R2\n"), symbolic=True).warnings == ()


@pytest.mark.parametrize("name,given,guess", [
    ("X", ["x", "y"], "x"), ("Qk", ["QK", "q"], "QK"), ("xs", ["x", "y"], "x"), ("ab", ["ba"], "ba"),
    ("abc", ["abd", "abe"], None), ("zzz", ["x"], None), ("out", ["Out", "oot"], "Out"),
])
def test_did_you_mean(name, given, guess):
    assert close_name(name, given) == guess


@pytest.mark.parametrize("text", ["", "; only a comment\n", ".data x = [1, 2]\n\n# nothing to run\n"])
def test_an_empty_trace_exits_2_with_a_hint(toym, text):
    code, out, err = toym("run", "-", input=text)
    assert code == 2 and out == "" and "no instructions" in err and "hint:" in err and "Traceback" not in err
    with pytest.raises(AsmError, match="no instructions"):
        simulate(parse(text))


# -- JSON: fields, size, errors --------------------------------------------------------------------
def test_json_fields_select_keys_and_paths(toym):
    code, out, _ = toym("run", PROGRAMS / "matmul_outer_2x2.asm", "-f", "json", "--json-fields", "cycles,dram.reads,ops")
    d = json.loads(out)
    assert code == 0 and list(d) == ["cycles", "dram", "ops"] and d["dram"] == {"reads": 10}
    assert d["cycles"] == 22 and d["ops"]["LOAD"] == 10
    code, out, err = toym("run", PROGRAMS / "c00.asm", "-f", "json", "--json-fields", "cycels")
    assert code == 2 and "did you mean 'cycles'" in err and json.loads(out)["error"]["message"].startswith(
        "--json-fields: no key 'cycels'")
    code, out, err = toym("run", PROGRAMS / "c00.asm", "-f", "json", "--json-fields", "dram.bytes")
    assert code == 2 and "read_bytes" in err


@pytest.mark.slow
def test_json_default_keeps_big_runs_small_and_full_dump_on_request(toym, tmp_path):
    prog = tmp_path / "big.asm"
    code, _, _ = toym("gen", "attention-tile", "--n", "256", "--d", "32", "-o", prog)
    small = json.loads(toym("run", prog, "--no-steps", "-f", "json")[1])
    full = json.loads(toym("run", prog, "--no-steps", "-f", "json", "--full-memory")[1])
    o = np.array(full["memory"]["O"])
    assert o.shape == (256, 32)
    s = small["memory"]["O"]
    assert s["summary"] is True and s["shape"] == [256, 32] and s["elements"] == 256 * 32
    assert (s["min"], s["max"], s["nan"], s["inf"]) == (o.min(), o.max(), 0, 0)
    assert s["mean"] == pytest.approx(o.mean(), rel=1e-12)
    assert small["memory"]["L"] == full["memory"]["L"]  # 256 elements: under the limit, whole
    assert all(small[k] == full[k] for k in ("cycles", "instructions", "ops", "dram", "registers_used"))
    assert len(toym("run", prog, "--no-steps", "-f", "json")[1]) * 20 < len(toym("run", prog, "--no-steps", "-f",
                                                                                "json", "--full-memory")[1])
    no_mem = json.loads(toym("run", prog, "--no-steps", "-f", "json", "--no-memory")[1])
    assert "memory" not in no_mem and no_mem["cycles"] == full["cycles"]
    tiny = json.loads(toym("run", prog, "--no-steps", "-f", "json", "--memory-max", "10")[1])
    assert tiny["memory"]["L"]["summary"] is True
    t_reg = next(k for k, v in tiny["registers"].items() if isinstance(v, dict))  # a tile register, summarised
    assert tiny["registers"][t_reg]["summary"] and isinstance(full["registers"][t_reg], list)


@pytest.mark.slow
def test_golden_programs_json_unchanged_by_the_default(toym):
    """The seed's programs are far under the limit: their JSON is whole, as the goldens pin."""
    for p in PROGRAMS.glob("*.asm"):
        d = json.loads(toym("run", p, "-f", "json", *program_machine(p))[1])
        assert all(isinstance(v, list) for v in d["memory"].values())


@pytest.mark.parametrize("args,needle", [
    (("run", "nope.asm"), "nope.asm"),
    (("sweep", "matmul", "--n", "0"), "--n"),
    (("numerics", "--dtype", "fp8"), "fp8"),
])
def test_errors_under_json_are_an_object_on_stdout(toym, args, needle):
    code, out, err = toym(*args, "-f", "json")
    assert code == 2 and err.startswith("error:") and needle in err
    e = json.loads(out)["error"]
    assert set(e) >= {"message", "file", "line", "column", "hint"} and needle in e["message"] + (e["file"] or "")


def test_json_error_has_the_location(toym, tmp_path):
    prog = tmp_path / "bad.asm"
    prog.write_text("LOAD x[0], R0\nFROB R0\n")
    code, out, _ = toym("run", prog, "-f", "json")
    e = json.loads(out)["error"]
    assert code == 2 and (e["file"], e["line"], e["column"]) == (str(prog), 2, 1) and e["kind"] == "assembly"


# -- numbers, tables -------------------------------------------------------------------------------
@pytest.mark.parametrize("value,text", [(27521.30739052273, "27521.3"), (7, "7"), (2.0, "2"), (1.5e-07, "1.5e-07"),
                                        (float("nan"), "nan"), (-float("inf"), "-inf"), (1e20, "1e+20"), (12345678.5, "12345678"),
                                        (0.000123456789, "0.000123457")])
def test_significant_digits(value, text):
    assert sig(value) == text


@pytest.mark.slow
def test_every_human_format_rounds_numbers_and_csv_is_numeric(toym):
    args = ("sweep", "attention-tile", "--n", "256", "--d", "64", "--algo", "fa1,fa2", "--block-m", "64", "--block-n", "64",
            "--machine", "h100")
    for fmt in ("table", "markdown", "csv", "latex", "html"):
        out = toym(*args, "-f", fmt)[1]
        assert "758.501" in out and "758.50" + "1" + "2" not in out and not re.search(r"\d\.\d{7,}", out)
    rows = list(csv.DictReader(io.StringIO(toym(*args, "-f", "csv")[1])))
    for key in ("cycles", "formula cycles", "time (s, roofline)", "gap", "HBM reads (words)"):
        assert all(float(r[key]) > 0 for r in rows), key  # bare numbers, no units in the cells


def test_a_wide_table_folds_at_the_terminal_width_and_never_splits_a_number():
    rows = tuple((i, "x" * 3) + tuple(12345678.25 + j for j in range(12)) for i in range(3))
    s = Section("Wide", ("step", "what") + tuple(f"column {j}" for j in range(12)), rows,
                align=("r", "l") + ("r",) * 12, key_columns=2)
    out = render_report(Report("t", (s,)), "table", width=60)
    assert max(len(line) for line in out.splitlines()) <= 60
    assert "Wide (columns 3–" in out and out.count("12345678 ") + out.count("12345678\n") == 3
    for j in range(12):  # every number whole (to significant digits: no fraction at this size), once per row
        assert sum(re.findall(r"\d+", line).count(str(12345678 + j)) for line in out.splitlines()) == 3
    assert out.count(" what") >= 3  # the key columns repeat in every block
    whole = render_report(Report("t", (s,)), "table")  # no width (a file or a pipe): one block
    assert "columns 3–" not in whole and len(whole.splitlines()[1]) > 60


def test_symbolic_tables_abbreviate_whole_terms(toym):
    out = toym("run", PROGRAMS / "softmax_safe.asm", "--symbolic", "-f", "markdown")[1]
    assert "e^(x₀−m) + e^(x₁−m) + e^(x₂−m) + e^(x₃−m) + … + e^(x₅−m)" in out
    assert "e^(x…" not in out and "e^(x₄…" not in out
    tex = toym("run", PROGRAMS / "softmax_safe.asm", "--symbolic", "-f", "latex")[1]
    assert r"\frac{e^{x_{5} - m}}{e^{x_{0} - m} + \dots + e^{x_{5} - m}}" in tex
    assert "₀" not in tex and "…" not in tex
    assert r"\max(x_{0}, x_{1})" in tex  # the comma outside the subscript
    for line in tex.splitlines():  # every math group balanced
        if not line.startswith("%"):
            assert line.count("{") - line.count(r"\{") == line.count("}") - line.count(r"\}"), line
            assert (line.count("$") - line.count(r"\$")) % 2 == 0, line


def test_c00_latex_memory_is_math(toym):
    tex = toym("run", PROGRAMS / "c00.asm", "--symbolic", "-f", "latex")[1]
    assert r"c & $[[a_{00} \cdot b_{00} + a_{01} \cdot b_{10}]]$ \\" in tex
    assert tex.startswith("% toym LaTeX fragment") and "no packages" in tex.splitlines()[0]


# -- rate machines ---------------------------------------------------------------------------------
def test_summary_on_a_rate_machine_explains_the_cost(toym, tmp_path):
    prog = tmp_path / "fa2.asm"
    toym("gen", "attention-tile", "--n", "256", "--d", "64", "-o", prog)
    r = simulate(parse(prog.read_text()), resolve_machine("h100"))
    out = toym("run", prog, "--machine", "h100", "-f", "csv")[1]
    rows = {(x["Metric"], x["Unit"]): x for x in csv.DictReader(io.StringIO(out)) if x["table"] == "Summary"}
    assert float(rows[("cycles", "cycles")]["Value"]) == pytest.approx(r.cycles, rel=1e-5)
    parts = r.extra["cycle_breakdown"]
    assert "in order" in rows[("cycles", "cycles")]["Note"] and f"issue {parts['issue']}" in rows[("cycles", "cycles")]["Note"]
    assert sum(parts.values()) == pytest.approx(r.cycles)
    t = next(v for (m, u), v in rows.items() if m == "time (roofline)")
    assert float(t["Value"]) * {"s": 1, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}[t["Unit"]] == pytest.approx(
        r.extra["time_s"], rel=1e-5)
    assert rows[("bound", "")]["Value"] == r.extra["roofline"]["bound"]
    assert int(rows[("HBM reads", "words")]["Value"]) == r.dram_reads
    assert int(rows[("HBM reads", "B")]["Value"]) == r.dram_reads * 2  # fp16 words
    assert ("DRAM reads", "words") not in rows and "of 116736 words" in rows[("SRAM peak", "words")]["Note"]
    toy = {x["Metric"] for x in csv.DictReader(io.StringIO(toym("run", PROGRAMS / "c00.asm", "-f", "csv")[1]))}
    assert "DRAM reads" in toy and "time (roofline)" not in toy


def test_sim_equals_formula_compares_like_with_like(toym, monkeypatch):
    from toymachine.experiments.sweep import sweep

    rows = sweep("attention-tile", {"n": "256", "d": "64", "algo": "fa1,fa2"}, machine=resolve_machine("h100"))
    for r in rows:
        assert r.cycles != int(r.cycles) and r.formula_cycles == pytest.approx(r.cycles, rel=1e-12) and r.matches
    # a formula that gets the instructions right but the units' work wrong is a mismatch
    from toymachine.cost import Cost
    from toymachine.gen import registry
    from toymachine.gen.registry import GeneratorSpec, get_generator

    spec = get_generator("attention-tile")

    def off(**p):
        c = spec.cost(**p)
        return Cost(ops=dict(c.ops), registers=c.registers, work={**c.work, "words": c.work["words"] + 64})

    monkeypatch.setitem(registry._REGISTRY, "attention-tile", GeneratorSpec(spec.name, spec.summary, spec.params,
                                                                           spec.build, cost=off, bound=spec.bound,
                                                                           machine=spec.machine))
    code, out, err = toym("sweep", "attention-tile", "--n", "256", "--d", "64", "--machine", "h100")
    assert code == 1 and "NO" in out


def test_sim_equals_formula_for_scalar_programs_on_a_rate_machine():
    from toymachine.experiments.sweep import sweep

    for r in sweep("matmul", {"n": "2,3", "registers": "3..5"}, machine=resolve_machine("h100")):
        assert r.matches and r.cycles == pytest.approx(r.formula_cycles) and r.cycles != int(r.cycles)


# -- sweep columns ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_constant_columns_are_listed_once_and_columns_can_be_chosen(toym):
    args = ("sweep", "matmul", "--n", "2", "--registers", "3..6", "--schedule", "inner,outer")
    md = toym(*args, "-f", "markdown")[1]
    assert "same in every row: n: 2, STOREs: 4" in md and "sim = formula: yes" in md
    header = next(line for line in md.splitlines() if line.startswith("| registers"))
    assert "| n |" not in header and "STOREs" not in header
    full = list(csv.DictReader(io.StringIO(toym(*args, "-f", "csv")[1])))
    assert full[0]["n"] == "2" and full[0]["STOREs"] == "4"  # CSV keeps every column
    code, out, _ = toym(*args, "--columns", "schedule,registers,cycles,dram-reads", "-f", "csv")
    assert code == 0 and out.splitlines()[0] == "table,schedule,registers,cycles,DRAM reads (words)"
    code, out, err = toym(*args, "--columns", "cycles,gapp")
    assert code == 2 and "no column 'gapp'" in err and "did you mean 'gap'" in err


def test_plot_is_checked_before_the_sweep_runs(toym, monkeypatch, tmp_path):
    def boom(*a, **k):
        raise AssertionError("the sweep ran")

    monkeypatch.setattr("toymachine.cli.sweep.sweep_table", boom)
    for args, needle in [(("--plot", tmp_path / "p.pdf"), ".png or .svg"), (("--plot", tmp_path / "p.png", "--y", "joy"),
                                                                             "unknown metric"),
                         (("--plot", tmp_path / "p.png", "--x", "algo"), "not a numeric parameter")]:
        code, _, err = toym("sweep", "softmax", "--n", "2,3", "--algo", "safe,online", *args)
        assert code == 2 and needle in err


@pytest.mark.slow
def test_plot_series_are_distinguishable(tmp_path):
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    from toymachine.experiments.plot import sweep_figure
    from toymachine.experiments.sweep import sweep

    rows = sweep("matmul", {"n": "2,4,8", "registers": "3", "schedule": "inner,best"})  # best is inner at R = 3
    fig = sweep_figure(rows, "matmul", metric="traffic")
    ax = fig.axes[0]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["schedule=inner", "schedule=best (= schedule=inner)", "lower bound"]  # one entry each
    styles = {(ln.get_marker(), ln.get_linestyle()) for ln in ax.get_lines()[:2]}
    assert len(styles) == 2  # the coinciding series differ in marker and dash
    assert ax.get_xscale() == "log"  # 2, 4, 8: a geometric sweep
    plt.close(fig)


# -- files -----------------------------------------------------------------------------------------
def test_output_files_respect_the_umask(toym, tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "r.json"
        assert toym("run", PROGRAMS / "c00.asm", "-f", "json", "-o", path)[0] == 0
        assert path.stat().st_mode & 0o777 == 0o644
        os.umask(0o077)
        other = tmp_path / "s.md"
        assert toym("sweep", "softmax", "--n", "2", "-f", "markdown", "-o", other)[0] == 0
        assert other.stat().st_mode & 0o777 == 0o600
        os.chmod(path, 0o640)  # an existing file keeps its mode
        assert toym("run", PROGRAMS / "c00.asm", "-f", "json", "-o", path)[0] == 0
        assert path.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".toym-")]


def test_quantities_in_every_format():
    q = Qty(147456, "words", ((294912, "B"),))
    rep = Report("t", (Section("S", ("Metric", "Value"), (("reads", q), ("one", Qty(1, "words")),
                                                          ("x", Num(27521.30739052273)))),))
    md = render_report(rep, "markdown")
    assert "| reads | 147456 words (294912 B) |" in md and "| one | 1 word |" in md and "| x | 27521.3 |" in md
    rows = list(csv.DictReader(io.StringIO(render_report(rep, "csv"))))
    assert [(r["Metric"], r["Value"], r["Unit"]) for r in rows] == [
        ("reads", "147456", "words"), ("reads", "294912", "B"), ("one", "1", "words"), ("x", "27521.3", "")]
    assert json.loads(render_report(rep, "json"))["s"][0]["Value"] == 147456
    assert render(simulate(parse(".data x = [1]\nLOAD x[0], R0\n")), "latex").count("$") % 2 == 0


def test_usage_errors_under_json_are_an_object_too(capsys):
    """A bad option value is click's error (exit 2); the entry point adds the JSON object under -f json."""
    from toymachine.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["run", str(PROGRAMS / "c00.asm"), "-f", "json", "--registers", "x"])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and "--registers" in err
    assert "--registers" in json.loads(out)["error"]["message"]
    with pytest.raises(SystemExit) as exc:
        main(["run", str(PROGRAMS / "c00.asm"), "--registers", "x"])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == ""
    with pytest.raises(SystemExit) as exc:
        main(["run", str(PROGRAMS / "c00.asm"), "-f", "json", "--json-fields", "cycles"])
    assert exc.value.code == 0 and json.loads(capsys.readouterr().out) == {"cycles": 7}


@pytest.mark.slow
def test_forced_progress_changes_nothing_on_stdout(toym, tmp_path):
    prog = tmp_path / "long.asm"
    toym("gen", "softmax", "--n", "3000", "--no-data", "-o", prog)
    plain = toym("run", prog, "--no-steps", "-f", "json")
    code, out, err = toym("run", prog, "--no-steps", "-f", "json", "--progress")
    assert code == 0 and out == plain[1] and "Traceback" not in err
    code, out, _ = toym("run", "-", "--no-steps", "-f", "json", "--progress", input=prog.read_text())
    assert code == 0 and json.loads(out)["cycles"] == json.loads(plain[1])["cycles"]
    from toymachine.api import run_file

    seen = []
    r = run_file(str(prog), progress=lambda done, total: seen.append((done, total)))
    size = prog.stat().st_size
    assert r.instructions == json.loads(plain[1])["instructions"] and seen and seen[-1] == (size, size)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
