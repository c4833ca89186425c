"""The resource policy (``toymachine.limits``), the strict YAML loader (``toymachine.yamlsafe``), the
closed-form size guards, the internal-error path (exit 3, ``--debug``) and the reference page."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import yamlsafe
from toymachine.cli.vocabulary import flag_words
from toymachine.cost.tile.blocks import Blocks, floor_sum
from toymachine.errors import ConfigError, DataError, Location, ToyMachineError, excerpt
from toymachine.limits import LIMITS, LimitError, render_markdown
from toymachine.optimize.attention_blocks import _sizes


# -- the table and its page ---------------------------------------------------------------------------
def test_reference_page_holds_the_generated_table():
    page = (ROOT / "docs" / "reference" / "limits.md").read_text(encoding="utf-8")
    start, end = "<!-- limits-table:start -->\n", "<!-- limits-table:end -->"
    assert page[page.index(start) + len(start):page.index(end)] == render_markdown(flag_words)


def test_every_limit_is_named_by_its_environment_variable(monkeypatch):
    for lim in LIMITS.values():
        assert lim.env == "TOYM_MAX_" + lim.name.upper() and lim.value() == lim.default
        monkeypatch.setenv(lim.env, "12")
        assert lim.value() == 12
        monkeypatch.setenv(lim.env, "zero")
        with pytest.raises(LimitError, match=lim.env):
            lim.value()
        monkeypatch.delenv(lim.env)


def test_a_refusal_names_the_estimate_the_limit_and_the_lift(monkeypatch):
    with pytest.raises(LimitError) as err:
        LIMITS["trials"].check(10 ** 9, "'trials: 1000000000'")
    msg = err.value.render()
    assert "1_000_000_000 trials" in msg and "the limit is 1000" in msg and "TOYM_MAX_TRIALS=1_000_000_000" in msg
    monkeypatch.setenv("TOYM_MAX_TRIALS", "2000000000")
    LIMITS["trials"].check(10 ** 9, "lifted")  # no error


def test_an_excerpt_of_a_long_line_is_bounded_and_keeps_the_caret():
    line = "x" * 2_500_000 + "BAD" + "y" * 2_500_000
    piece, col = excerpt(line, 2_500_001)
    assert len(piece) <= 202 and piece[col - 1:col + 2] == "BAD"
    err = ToyMachineError("m" * 10_000, loc=Location("f", 1, 2_500_001, line, 3))
    text = err.render()
    assert len(text) < 1500 and "^^^" in text


# -- the strict YAML loader ---------------------------------------------------------------------------
@pytest.mark.parametrize("text, needle", [
    ("a: 1\na: 2\n", "duplicate key 'a' (first on line 1)"),
    ("? [a, b]\n: 1\n", "a key must be a plain value"),
    ("a: !!python/object/apply:os.system ['true']\n", "tag !!python/object/apply:os.system is not allowed"),
    ("a: !!binary aGk=\n", "tag !!binary"),
    ("a: !local x\n", "tag !local"),
    ("a: &x [*x]\n", "recursive alias"),
    ("a: " + "[" * 70 + "]" * 70 + "\n", "deeper than 64"),
    ("a: " + "9" * 500 + "\n", "a number of 500 characters"),
])
def test_strict_yaml_refuses_naming_the_line(text, needle):
    with pytest.raises(ToyMachineError, match=needle.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")) as err:
        yamlsafe.load(text, "f.yaml")
    assert err.value.loc.file == "f.yaml" and err.value.loc.line >= 1


def test_an_alias_bomb_is_counted_not_built():
    levels = ["&a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"] + [f"&a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    bomb = f"x: [{', '.join(levels)}]\ny: *a9\n"  # 10^10 leaves once expanded
    t0 = time.perf_counter()
    with pytest.raises(LimitError, match="more than 100,000 YAML nodes") as err:
        yamlsafe.load(bomb, "bomb.yaml")
    assert time.perf_counter() - t0 < 1.0 and len(err.value.render()) < 2000


def test_plain_yaml_loads_as_safe_load_does_and_dates_stay_text():
    text = "a: 1\nb: [1.5, .inf, null, true]\nc: {d: x}\nwhen: 2024-01-01\nref: &r [1, 2]\nuse: *r\n"
    assert yamlsafe.load(text, "f.yaml") == {"a": 1, "b": [1.5, float("inf"), None, True], "c": {"d": "x"},
                                              "when": "2024-01-01", "ref": [1, 2], "use": [1, 2]}


def test_the_data_loader_uses_the_error_class_it_is_given(tmp_path):
    with pytest.raises(DataError, match="duplicate key"):
        yamlsafe.load("x: [1]\nx: [2]\n", "d.yaml", "data file", DataError)
    with pytest.raises(ConfigError, match="not valid YAML"):
        yamlsafe.load("a: [1\n", "m.yaml", "machine file")


def test_a_yaml_file_is_read_no_further_than_its_limit(monkeypatch, tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("a: " + "x" * 5000 + "\n")
    monkeypatch.setenv("TOYM_MAX_FILE_BYTES", "1000")
    with pytest.raises(LimitError, match="at least"):
        yamlsafe.read_text(str(path))


# -- closed-form size guards --------------------------------------------------------------------------
@pytest.mark.slow
@settings(max_examples=300, derandomize=True, deadline=None)
@given(n=st.integers(0, 60), m=st.integers(1, 40), a=st.integers(-50, 50), b=st.integers(-50, 50))
def test_floor_sum_is_the_sum(n, m, a, b):
    assert floor_sum(n, m, a, b) == sum((a * i + b) // m for i in range(n))


@pytest.mark.slow
@settings(max_examples=400, derandomize=True, deadline=None)
@given(n=st.integers(1, 90), br=st.integers(1, 70), bc=st.integers(1, 70), causal=st.booleans(),
       nk=st.none() | st.integers(1, 90))
def test_block_sums_in_closed_form_equal_the_walk_over_rows(n, br, bc, causal, nk):
    g = Blocks(n, br, bc, causal, nk)
    assert g.sums() == g.sums_by_rows()
    walked = sum(g.tc - min(g.tc, g.unmasked(i0)) for i0, _ in g.rows()) if causal else 0
    assert g.masked_key_blocks() == walked


def test_block_sums_of_ten_billion_rows_take_no_time():
    t0 = time.perf_counter()
    s = Blocks(10 ** 10, 64, 64, True).sums()
    assert time.perf_counter() - t0 < 0.05 and s["P"] > 10 ** 16


@pytest.mark.parametrize("n", [*range(1, 200), 1000, 4097, 10 ** 5 + 7])
def test_block_sizes_in_root_time_equal_the_definition(n):
    every = sorted({-(-n // t) for t in range(1, n + 1)})
    assert _sizes(n) == every
    for cap in (1, 7, 64):
        assert _sizes(n, cap) == [v for v in every if v <= cap]


# -- internal errors: exit 3, a traceback only under --debug ------------------------------------------
_BUG = ("import sys, toymachine.api as r  # the run command imports run_path from api as it runs\n"
        "def boom(*a, **k): raise RuntimeError('simulated bug')\n"
        "r.run_path = boom\n"
        "from toymachine.cli.app import main\n"
        "main(sys.argv[1:])\n")


@pytest.mark.slow
@pytest.mark.parametrize("debug", [False, True])
def test_an_unexpected_exception_is_an_internal_error(tmp_path, debug):
    (tmp_path / "t.asm").write_text("LOAD x[0], R0\n")
    args = (["--debug"] if debug else []) + ["run", "t.asm"]
    proc = subprocess.run([sys.executable, "-c", _BUG, *args], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 3
    assert "internal error: RuntimeError: simulated bug" in proc.stderr and "bug in toym" in proc.stderr
    assert ("Traceback (most recent call last)" in proc.stderr) == debug


# -- generators stream ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_gen_softmax_streams_the_same_bytes():
    import io

    from toymachine.gen.scalar.softmax import softmax_program

    for algo in ("naive", "safe", "online"):
        # n = 20,000: over 140,000 lines for every algo, two whole blocks of 65,536 lines and the rest
        for n, data in ((1, True), (7, False), (20_000, True)):
            buf, blocks = io.StringIO(), []
            assert softmax_program(n=n, algo=algo, with_data=data, seed=3,
                                   stream=lambda text, buf=buf, blocks=blocks: blocks.append(buf.write(text))) is None
            assert buf.getvalue() == softmax_program(n=n, algo=algo, with_data=data, seed=3).to_text()
            assert n < 20_000 or len(blocks) >= 4  # the header, two whole blocks, the rest


@pytest.mark.slow
def test_gen_softmax_writes_more_than_its_memory_holds(tmp_path):
    """4.2 million instructions (63 MB of text) under a 400 MB address-space cap: as a Program they
    would need about a gigabyte."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))

    proc = subprocess.run([sys.executable, "-m", "toymachine", "gen", "softmax", "--n", "300000", "--no-data",
                           "-o", "big.asm"], cwd=tmp_path, capture_output=True, text=True, preexec_fn=cap,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(tmp_path / "big.asm", "rb") as fh:
        fh.seek(-40, os.SEEK_END)
        assert fh.read().endswith(b"STORE R0, out[299999]\n")


# -- one table for every front: serve's and the grader's limits are rows of it ---------------------------
def test_serve_and_grade_limits_are_typed_views_of_the_central_table(monkeypatch):
    from dataclasses import fields

    from toymachine.check.limits import DEFAULT_LIMITS, ROWS, GradeLimits
    from toymachine.serve.limits import Limits

    assert Limits.from_table() == Limits() and GradeLimits.from_table() == GradeLimits() == DEFAULT_LIMITS
    serve = [f.name for f in fields(Limits) if f.name != "workers"]
    for name in serve:
        lim = LIMITS["serve_" + name]
        assert lim.front != "all" and getattr(Limits(), name) == lim.default
        monkeypatch.setenv(lim.env, "7")
        assert getattr(Limits.from_table(), name) == 7  # the variable moves the front's limit
        monkeypatch.delenv(lim.env)
    assert set(ROWS) == {f.name for f in fields(GradeLimits)}
    for name, row in ROWS.items():
        lim = LIMITS[row]
        assert lim.front != "all" and getattr(GradeLimits(), name) == lim.default
        monkeypatch.setenv(lim.env, "9")
        assert getattr(GradeLimits.from_table(), name) == 9
        monkeypatch.delenv(lim.env)
    assert {n for n, lim in LIMITS.items() if lim.front != "all"} == {"serve_" + n for n in serve} | set(ROWS.values())


@pytest.mark.slow
def test_toym_grade_reads_its_limits_from_the_table(toym, tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ann.asm").write_text("\n".join(["LOAD a[0][0], R0"] * 3), encoding="utf-8")  # 3 lines
    problem = ROOT / "examples" / "problems" / "p1_c00.yaml"
    monkeypatch.setenv("TOYM_MAX_GRADE_INSTRUCTIONS", "2")
    code, _, err = toym("grade", subs, "-p", problem, "--out", tmp_path / "o")
    assert code == 0, err
    book = (tmp_path / "o" / "gradebook.csv").read_text(encoding="utf-8")
    assert "too long: 3 lines; the limit is 2 instructions" in book
    code, _, _ = toym("grade", subs, "-p", problem, "--out", tmp_path / "o2", "--max-instructions", "5")
    assert "too long" not in (tmp_path / "o2" / "gradebook.csv").read_text(encoding="utf-8")  # the flag wins
    monkeypatch.setenv("TOYM_MAX_GRADE_INSTRUCTIONS", "-1")
    code, _, err = toym("grade", subs, "-p", problem, "--out", tmp_path / "o3")
    assert code == 2 and "TOYM_MAX_GRADE_INSTRUCTIONS must be positive" in err and "Traceback" not in err


@pytest.mark.slow
def test_toym_serve_reads_its_limits_from_the_table(monkeypatch):
    pytest.importorskip("starlette")
    pytest.importorskip("httpx")
    from starlette.testclient import TestClient

    from toymachine.serve.app import create_app
    from toymachine.serve.limits import Limits

    monkeypatch.setenv("TOYM_MAX_SERVE_BODY_BYTES", "1000")
    monkeypatch.setenv("TOYM_MAX_SERVE_TRACE_LINES", "5")
    c = TestClient(create_app(), base_url="http://127.0.0.1")  # no lifespan: the body is refused before any worker
    r = c.post("/api/run", json={"trace": "LOAD x[0], R0\n" * 100})
    assert r.status_code == 413 and "limit of 1,000 bytes" in r.json()["error"]["message"]
    with TestClient(create_app(Limits.from_table(workers=1)), base_url="http://127.0.0.1") as c:  # the workers' view
        assert c.get("/api/meta").json()["limits"]["trace_lines"] == 5
        r = c.post("/api/run", json={"trace": "LOAD x[0], R0\n" * 6})
        assert r.status_code == 422 and "6 lines" in r.json()["error"]["message"] and r.json()["error"]["line"] == 6


def test_a_problem_reads_trials_and_input_size_from_the_table(tmp_path, monkeypatch):
    from toymachine.check import load_problem

    path = tmp_path / "p.yaml"
    path.write_text("title: t\ninputs:\n  a: {shape: [4, 4]}\nexpect:\n  out: a\ntrials: 20\n", encoding="utf-8")
    load_problem(path)
    monkeypatch.setenv("TOYM_MAX_TRIALS", "10")
    with pytest.raises(ConfigError, match="'trials' must be at most 10, got 20") as err:
        load_problem(path)
    assert "TOYM_MAX_TRIALS=20" in err.value.render()
    monkeypatch.delenv("TOYM_MAX_TRIALS")
    monkeypatch.setenv("TOYM_MAX_EXPR_ELEMENTS", "15")
    with pytest.raises(ConfigError, match="input 'a' has 16 elements; at most 15"):
        load_problem(path)
