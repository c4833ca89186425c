"""One column vocabulary (toymachine/experiments/columns.py) across the sweep's JSON keys, its
--columns, its plot's --y/--x and `toym sweep --columns help` — checked both ways: every key the
sweep writes is in the table, every name the table gives is accepted where it says."""

import json

import pytest

from toymachine.errors import ConfigError
from toymachine.experiments.columns import COLUMNS, column_key, metric_key, normalized
from toymachine.experiments.sweep import METRICS, check_plot, expand_grid, sweep, sweep_report
from toymachine.gen.registry import get_generator
from toymachine.machine import resolve_machine

# sweeps that between them show every table column: the scalar machine, a clocked tile machine, units
_SWEEPS = [("matmul", {"n": "2", "registers": "3,4"}, None),
           ("attention-tile", {"n": "32", "d": "8", "algo": "fa2"}, "h100"),
           ("attention-tile", {"n": "128", "d": "64", "algo": "fa2", "block_m": "64", "block_n": "64"}, "tpu-v5e")]


@pytest.fixture(scope="module")
def reports():
    out = []
    for gen, grid, machine in _SWEEPS:
        rows = sweep(gen, grid, machine=resolve_machine(machine) if machine else None)
        out.append((gen, rows, sweep_report(rows, gen).sections[0]))
    return out


def test_every_json_key_is_a_column_or_a_parameter_and_snake_case(reports):
    known = {c.key for c in COLUMNS if c.in_table}
    for gen, _, section in reports:
        params = {p.name for p in get_generator(gen).params}
        for key in section.json_keys():
            assert key in known | params, f"sweep {gen} writes key {key!r}, which the column table lacks"
            assert key == key.lower() and " " not in key and "-" not in key, key


def test_every_table_column_is_written_by_some_sweep(reports):
    written = {k for _, _, s in reports for k in s.json_keys()}
    missing = [c.key for c in COLUMNS if c.in_table and c.key not in written]
    assert not missing, f"in the column table but no sweep writes them: {missing}"


def test_headers_are_the_tables(reports):
    """Display keeps the readable header (with its unit); the key is the snake_case name."""
    for _, _, section in reports:
        for header, key in zip(section.headers, section.json_keys()):
            c = next((c for c in COLUMNS if c.key == key), None)
            if c is not None:
                assert header in (c.header.format(mem="DRAM", per="word"), c.header.format(mem="HBM", per="byte"))


def test_every_name_selects_its_column(reports):
    """Key, header (either machine's) and every older name choose the same column in --columns."""
    from toymachine.render.columns import select_columns

    for gen, _, section in reports:
        params = [p.name for p in get_generator(gen).params]
        keys = section.json_keys()
        for c in COLUMNS:
            if c.key not in keys:
                continue
            names = [c.key, c.header.format(mem="DRAM", per="word"), c.header.format(mem="HBM", per="byte"),
                     *c.aliases]
            for name in names:
                if name in params:  # a parameter's name is the parameter (registers: the budget R)
                    continue
                key = column_key(name, params)
                assert key == c.key, (gen, name, key)
                from toymachine.render.report import Report

                picked = select_columns(Report("s", (section,)), [key]).sections[0]
                assert picked.json_keys() == (c.key,)


def test_old_names_still_work():
    """The names of three vocabularies, still accepted as aliases: the plot's, the headers', the JSON's earlier keys."""
    assert column_key("reads") == column_key("DRAM reads (words)") == column_key("dram_reads") == "dram_reads"
    assert column_key("DRAM reads") == column_key("HBM reads (words)") == "dram_reads"
    assert column_key("registers used") == column_key("registers") == "registers_used"
    assert column_key("registers", ["n", "registers"]) == "registers"  # the parameter R first
    assert column_key("sim = formula") == column_key("matches") == "sim_equals_formula"
    assert column_key("time (s)") == column_key("time") == "time_s"
    assert column_key("HBM peak (B)") == column_key("hbm_peak") == "memory_peak"
    assert column_key("on-chip peak (B)") == "onchip_peak" and column_key("bound") == "roofline_bound"
    assert column_key("formula-cycles") == "formula_cycles" and column_key("nonesuch") == "nonesuch"
    assert metric_key("reads") == metric_key("DRAM reads (words)") == "dram_reads"
    assert metric_key("registers") == "registers_used" and metric_key("traffic") == "traffic"


def test_every_metric_is_a_column_name_and_plots_by_any_name():
    spec = get_generator("matmul")
    points = expand_grid(spec, {"n": "2", "registers": "3..5"})
    assert set(METRICS) == {c.key for c in COLUMNS if c.value is not None}
    for c in COLUMNS:
        for name in (c.key, *c.aliases):
            if c.value is None:
                with pytest.raises(ConfigError, match="unknown metric"):
                    check_plot(spec, points, "x.svg", metric=name)
            else:
                assert check_plot(spec, points, "x.svg", metric=name) == "registers"
    with pytest.raises(ConfigError) as e:
        check_plot(spec, points, "x.svg", metric="redas")
    assert "did you mean 'dram_reads'" in e.value.message and "dram_reads" in e.value.hint


def test_cli_columns_by_any_name(toym):
    code, out, _ = toym("sweep", "matmul", "--n", "2", "-r", "3,4", "-f", "json",
                        "--columns", "registers,reads,DRAM writes (words),registers used,sim = formula,gap")
    rows = json.loads(out)["sweep"]
    assert code == 0 and list(rows[0]) == ["registers", "dram_reads", "dram_writes", "registers_used",
                                           "sim_equals_formula", "gap"]
    assert [r["registers"] for r in rows] == [3, 4] and [r["registers_used"] for r in rows] == [3, 4]
    code, _, err = toym("sweep", "matmul", "--n", "2", "--columns", "n,gapp")
    assert code == 2 and "did you mean 'gap'" in err and "dram_reads" in err


def test_columns_help_lists_every_name(toym):
    code, out, _ = toym("sweep", "--columns", "help", "-f", "csv")
    assert code == 0 and all(f",{c.key}," in out for c in COLUMNS)
    code, out, _ = toym("sweep", "matmul", "--columns", "help", "-f", "csv")
    assert code == 0 and ",schedule," in out and ",dram_reads," in out
    assert len({normalized(c.key) for c in COLUMNS}) == len(COLUMNS)


def test_no_name_means_two_columns():
    seen: dict[str, str] = {}
    for c in COLUMNS:
        for name in {c.key, c.header.format(mem="DRAM", per="word"), c.header.format(mem="HBM", per="byte"), *c.aliases}:
            assert seen.setdefault(normalized(name), c.key) == c.key, f"{name!r} names {seen[normalized(name)]} and {c.key}"


def test_docs_column_table_is_the_vocabulary():
    from conftest import ROOT

    from toymachine.experiments.columns import columns_report
    from toymachine.render import render_report

    page = (ROOT / "docs" / "reference" / "vocabulary.md").read_text(encoding="utf-8")
    start = page.index("<!-- columns:begin -->") + len("<!-- columns:begin -->")
    block = page[start:page.index("<!-- columns:end -->")].strip()
    assert block == render_report(columns_report(), "markdown").strip(), \
        "regenerate with `toym sweep --columns help -f markdown`"
