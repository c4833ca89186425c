"""toymachine.experiments.sweep and `toym sweep`: value syntax, grids, rows, every format, plots, exits."""

import csv
import io
import json
import sys

import numpy as np
import pytest

from toymachine import ConfigError
from toymachine.cli.vocabulary import flag_words
from toymachine.cost import matmul_cost, softmax_cost
from toymachine.experiments.sweep import expand_grid, parse_values, plot_sweep, sweep, sweep_report
from toymachine.gen.registry import GeneratorSpec, Param, get_generator

N = Param("n", int, 2, "size", minimum=1)
ALGO = Param("algo", str, "a", "which", choices=("a", "b"))


@pytest.mark.parametrize("text,values", [
    ("7", [7]), ("2,4,8", [2, 4, 8]), ("3..6", [3, 4, 5, 6]), ("2..9+3", [2, 5, 8]),
    ("10..10000*10", [10, 100, 1000, 10000]), ("1,3..4", [1, 3, 4]), ("5..5", [5]),
])
def test_value_syntax(text, values):
    assert parse_values(text, N) == values


@pytest.mark.parametrize("text,needle", [("6..3", "backwards"), ("x", "whole numbers"), ("0", "at least 1"),
                                         ("1..4*1", "bad step"), ("2,,3", "empty value")])
def test_bad_values(text, needle):
    with pytest.raises(ConfigError) as exc:
        parse_values(text, N)
    assert needle in exc.value.message


def test_choices_are_checked():
    assert parse_values("a,b", ALGO) == ["a", "b"]
    with pytest.raises(ConfigError):
        parse_values("c", ALGO)


def test_grid_is_the_product_in_declared_order():
    spec = get_generator("matmul")
    points = expand_grid(spec, {"schedule": "inner,outer", "registers": "3..4"})
    assert [(p["registers"], p["schedule"]) for p in points] == [(3, "inner"), (3, "outer"), (4, "inner"), (4, "outer")]
    assert all(p["n"] == 2 and p["m"] is None for p in points)
    with pytest.raises(ConfigError) as exc:
        expand_grid(spec, {"size": "2"})
    assert exc.value.hint == "its parameters are n, m, k, registers, schedule, mac_accumulator"
    assert exc.value.hint_in(flag_words).startswith("its parameters are --n, --m, --k, --registers")


def test_rows_hold_simulation_formula_and_bound():
    rows = sweep("matmul", {"n": [2, 3], "registers": "3..5"})
    assert len(rows) == 6 and all(r.matches for r in rows)
    for r in rows:
        cost = matmul_cost(r.params["n"], r.params["registers"])
        assert (r.cycles, r.loads, r.stores, r.registers) == (cost.cycles(), cost.reads, cost.writes, cost.registers)
        assert r.gap == pytest.approx((r.reads + r.writes) / r.bound.traffic) and r.gap >= 1
    seed_row = rows[0]
    assert (seed_row.params["registers"], seed_row.cycles, seed_row.loads) == (3, 25, 13)


def test_progress_callback_sees_every_point():
    seen = []
    sweep("softmax", {"n": "1..3", "algo": "safe,online"}, on_point=lambda done, total: seen.append((done, total)))
    assert seen == [(i, 6) for i in range(1, 7)]


def test_a_generator_without_formula_is_swept_but_not_checked():
    """The registry contract the tile generator will use: build only, no cost/bound."""
    from toymachine.gen.scalar.softmax import softmax_program

    spec = GeneratorSpec("plain", "softmax, no formula", (N,),
                         build=lambda n, with_data, seed: softmax_program(n, "safe", with_data=with_data))
    rows = sweep(spec, {"n": "2,3"})
    assert [r.matches for r in rows] == [None, None] and rows[1].cycles == softmax_cost(3, "safe").cycles()
    report = sweep_report(rows, spec)
    assert report.sections[0].rows[0][-3:] == ("", None, None)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json", "latex", "html"])
def test_cli_every_format(toym, fmt):
    code, out, err = toym("sweep", "matmul", "--n", "2", "--registers", "3..6", "--schedule", "inner,outer", "-f", fmt)
    assert code == 0 and out and err == ""
    assert toym("sweep", "matmul", "--n", "2", "--registers", "3..6", "--schedule", "inner,outer", "-f", fmt)[1] == out
    if fmt == "csv":
        table = list(csv.DictReader(io.StringIO(out)))
        assert len(table) == 8 and table[0]["cycles"] == "25" and table[0]["sim = formula"] == "yes"
        assert {r["schedule"] for r in table} == {"inner", "outer"}
    if fmt == "json":
        rows = json.loads(out)["sweep"]
        outer6 = [r for r in rows if r["registers"] == 6 and r["schedule"] == "outer"][0]
        assert (outer6["cycles"], outer6["loads"], outer6["registers_used"]) == (22, 10, 6)


@pytest.mark.slow
def test_cli_param_forms_and_errors(toym):
    code, out, _ = toym("sweep", "softmax", "--n=4", "--algo", "naive,safe,online", "-f", "csv")
    assert code == 0 and len(out.splitlines()) == 4
    for args, needle in [(("softmax", "--width", "3"), "no parameter 'width'"), (("softmax", "--n"), "needs values"),
                         (("softmax", "--n", "1", "--n", "2"), "given twice"), (("blur",), "no generator named"),
                         (("softmax", "stray"), "unexpected argument"), ((), "which generator")]:
        code, out, err = toym("sweep", *args)
        assert code == 2 and out == "" and needle in err and "Traceback" not in err


def test_cli_list(toym):
    code, out, _ = toym("sweep", "--list", "-f", "csv")
    # a text cell starting with "-" gets OWASP's leading quote (a spreadsheet would run "--registers" as a formula)
    assert code == 0 and "matmul,'--registers,3" in out and "attention,'--output-slots" in out


def test_cli_exits_1_when_simulation_and_formula_disagree(toym, monkeypatch):
    from toymachine.cost import Cost

    spec = get_generator("variance")
    wrong = GeneratorSpec(spec.name, spec.summary, spec.params, spec.build,
                          cost=lambda **p: Cost({"LOAD": 1}, registers=6), bound=spec.bound)
    from toymachine.gen import registry

    monkeypatch.setitem(registry._REGISTRY, "variance", wrong)
    code, out, err = toym("sweep", "variance", "--n", "3")
    assert code == 1 and "NO" in out and "differs from its closed-form cost" in err


@pytest.mark.slow
def test_no_progress_bar_when_not_a_terminal(toym):
    code, out, err = toym("sweep", "softmax", "--n", "1..20")
    assert code == 0 and err == ""


@pytest.mark.slow
def test_plot_png_and_svg(toym, tmp_path):
    pytest.importorskip("matplotlib")
    png, svg = tmp_path / "m.png", tmp_path / "s.svg"
    code, _, _ = toym("sweep", "matmul", "--n", "2,3", "--registers", "3..6", "--plot", png)
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, _, _ = toym("sweep", "softmax", "--n", "10..1000*10", "--algo", "safe,online", "--plot", svg, "--y", "traffic")
    assert code == 0 and "<svg" in svg.read_text()[:500]


def test_plot_errors(tmp_path):
    pytest.importorskip("matplotlib")
    rows = sweep("softmax", {"n": "2,3"})
    for kwargs, needle in [({"path": str(tmp_path / "p.pdf")}, ".png or .svg"),
                           ({"path": str(tmp_path / "p.png"), "metric": "joy"}, "unknown metric"),
                           ({"path": str(tmp_path / "p.png"), "x": "algo"}, "not a numeric parameter")]:
        with pytest.raises(ConfigError) as exc:
            plot_sweep(rows, "softmax", **kwargs)
        assert needle in exc.value.message


def test_plot_without_matplotlib_is_a_clear_error(toym, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    code, out, err = toym("sweep", "softmax", "--n", "2,3", "--plot", tmp_path / "p.png")
    assert code == 2 and "needs matplotlib" in err and "toymachine[plot]" in err


@pytest.mark.slow
def test_forced_progress_bar_goes_to_stderr_only(toym):
    plain = toym("sweep", "softmax", "--n", "1..4", "-f", "csv")
    code, out, err = toym("sweep", "softmax", "--n", "1..4", "-f", "csv", "--progress")
    assert code == 0 and out == plain[1]


@pytest.mark.slow
def test_tile_sweep_rows_carry_sram_peak_flops_and_time():
    """Tile sweeps show SRAM peak, FLOPs and (with a clocked machine) time; they are plot metrics."""
    from toymachine import resolve_machine, simulate
    from toymachine.experiments.sweep import METRICS, sweep, sweep_report
    from toymachine.gen.tile import attention_program

    grid = {"n": "64,128", "d": "16", "algo": "fa1,fa2", "block_m": "16", "block_n": "16"}
    rows = sweep("attention-tile", grid, machine=resolve_machine("h100"))
    for row in rows:
        direct = simulate(attention_program(n=row.params["n"], d=16, algo=row.params["algo"], block_m=16, block_n=16),
                          resolve_machine("h100"), steps=False)
        assert row.sram_peak == direct.extra["sram_peak"] == METRICS["sram_peak"](row)
        assert row.flops == sum(direct.extra["flops"].values()) == METRICS["flops"](row)
        assert row.time_s == direct.extra["time_s"] and row.time_s > 0
    keys = sweep_report(rows, "attention-tile").sections[0].json_keys()  # the stable JSON keys
    assert {"sram_peak", "flops", "time_s", "roofline_bound"} <= set(keys)
    scalar = sweep("softmax", {"n": "4", "algo": "online"})
    assert scalar[0].sram_peak is None and "sram_peak" not in sweep_report(scalar, "softmax").sections[0].json_keys()


def test_tile_sweep_over_every_algorithm_backward_and_attention_shapes():
    """Every tile algorithm and pass sweeps with its closed form and bound (Algorithm 3 reads P
    instead of O and the statistics); cross-attention, grouped heads and the SRAM rule are sweep
    parameters; intensity is a column and a metric."""
    from toymachine.experiments.sweep import METRICS, sweep, sweep_report
    from toymachine.gen.tile import array_shapes

    rows = sweep("attention-tile", {"n": "16", "d": "4", "algo": "standard,fa1,fa2", "pass": "forward,backward",
                                    "block_m": "8", "block_n": "8", "nk": "24", "heads": "2", "kv_heads": "1"})
    assert len(rows) == 6 and all(r.matches for r in rows)
    back = [r for r in rows if r.params["pass"] == "backward" and r.params["algo"] == "standard"][0]
    shapes = array_shapes(n=16, nk=24, d=4, heads=2, kv_heads=1, algo="standard", pass_="backward")
    size = {a: int(np.prod(s)) for a, s in shapes.items()}
    assert back.bound.reads == sum(size[a] for a in ("Q", "K", "V", "dO", "P"))
    assert back.intensity == METRICS["intensity"](back) and back.intensity > 0
    rule = sweep("attention-tile", {"n": "5", "d": "3", "algo": "fa1", "sram": "59", "sram_rule": "exact,paper"})
    assert [r.sram_peak for r in rule] == [45, 48]
    assert "FLOPs/word" in sweep_report(sweep("softmax", {"n": "4"}), "softmax").sections[0].headers
