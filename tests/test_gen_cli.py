"""`toym gen`: text out, piping into `toym run -`, data flags, tile level, errors (exit 2)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import PROGRAMS, ROOT

from toymachine import ConfigError, parse, parse_file


def test_gen_matmul_pipes_into_run(toym):
    code, text, _ = toym("gen", "matmul", "--n", "2", "--registers", "3", "--schedule", "inner")
    assert code == 0 and text.startswith("; C = A·B")
    code, out, _ = toym("run", "-", "-f", "json", input=text)
    d = json.loads(out)
    a, b = (np.array(decl.values) for decl in parse(text).arrays)
    assert code == 0 and d["cycles"] == 25 and d["ops"]["LOAD"] == 13
    np.testing.assert_array_equal(np.array(d["memory"]["c"]), a @ b)


@pytest.mark.slow
def test_real_shell_pipe():
    """`toym gen … | toym run -` through two processes, as a user types it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    gen = subprocess.run([sys.executable, "-m", "toymachine", "gen", "softmax", "--n", "5", "--algo", "safe"],
                         capture_output=True, text=True, env=env, check=True)
    run = subprocess.run([sys.executable, "-m", "toymachine", "run", "-", "-f", "json"], input=gen.stdout,
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    d = json.loads(run.stdout)
    x = np.array(parse(gen.stdout).arrays[0].values)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(d["memory"]["out"], e / e.sum())
    assert (d["dram"]["reads"], d["dram"]["writes"]) == (15, 5)


def test_gen_softmax_is_the_bundled_seed_program(toym):
    code, text, _ = toym("gen", "softmax", "--n", "6", "--algo", "online")
    assert [str(i) for i in parse(text).instrs] == [str(i) for i in parse_file(str(PROGRAMS / "softmax_online.asm")).instrs]


def test_no_data_and_seed(toym):
    _, with_data, _ = toym("gen", "variance", "--n", "4", "--seed", "3")
    _, other_seed, _ = toym("gen", "variance", "--n", "4", "--seed", "4")
    _, without, _ = toym("gen", "variance", "--n", "4", "--no-data")
    assert ".data x = [" in with_data and with_data != other_seed and ".data" not in without
    code, out, _ = toym("run", "-", "-f", "json", input=without)
    assert code == 0 and json.loads(out)["dram"]["reads"] == 4


def test_output_file(toym, tmp_path):
    path = tmp_path / "attn.asm"
    code, out, _ = toym("gen", "attention", "--n", "3", "--d", "2", "--order", "outer", "--output-slots", "1", "-o", path)
    assert code == 0 and out == ""
    code, out, _ = toym("run", path, "--no-steps", "-f", "json")
    assert code == 0 and len(json.loads(out)["memory"]["o"]) == 3


@pytest.mark.parametrize("args,needle", [
    (("matmul", "--registers", "2"), "at least 3 registers"),
    (("matmul", "--n", "0"), "--n must be at least 1"),
    (("variance", "--n", "1"), "at least 2"),
    (("attention", "--registers", "4"), "needs 9 registers"),
    (("attention", "--sram", "100"), "--sram is not an option of --level scalar"),
    (("attention", "--order", "split"), "--order split is not an option of --level scalar"),
    (("attention", "--scale", "1"), "--scale is not an option of --level scalar"),
    (("attention", "--order", "inner", "--output-slots", "2"), "--output-slots is for --order outer"),
])
def test_errors_exit_2_without_traceback(toym, args, needle):
    code, out, err = toym("gen", *args)
    assert code == 2 and out == "" and needle in err and "Traceback" not in err


def test_order_is_one_vocabulary(toym):
    """--order inner ≡ row (query loop outside), outer ≡ col (key/value loop outside), at both levels."""
    scalar = [toym("gen", "attention", "--n", "3", "--d", "2", "--order", o)[1] for o in ("outer", "col")]
    assert scalar[0] == scalar[1] and "outer" in scalar[0].splitlines()[0]
    tile = ("gen", "attention-tile", "--n", "32", "--d", "8", "--block-m", "16", "--block-n", "16", "--pass", "backward")
    assert toym(*tile, "--order", "outer")[1] == toym(*tile, "--order", "col")[1] != toym(*tile, "--order", "inner")[1]
    assert toym(*tile, "--order", "inner")[1] == toym(*tile, "--order", "row")[1]


def test_attention_tile_is_the_tile_level(toym):
    """`gen attention-tile` (the sweep's name) writes what `gen attention --level tile` does."""
    args = ("--n", "64", "--d", "16", "--algo", "fa1", "--block-m", "32", "--block-n", "16", "--causal")
    code, out, _ = toym("gen", "attention-tile", *args)
    assert code == 0 and out == toym("gen", "attention", "--level", "tile", *args)[1]


def test_machine_sizes_the_program(toym):
    """--machine gives the register count (gen matmul) and the SRAM that sizes tile blocks."""
    assert toym("gen", "matmul", "--machine", "toy6")[1] == toym("gen", "matmul", "-r", "6")[1]
    assert toym("gen", "matmul", "--machine", "toy6", "-r", "3")[1] == toym("gen", "matmul", "-r", "3")[1]
    from toymachine import resolve_machine

    m = resolve_machine("toysram").sram_words
    tile = ("gen", "attention", "--level", "tile", "--n", "5", "--d", "3")
    assert toym(*tile, "--machine", "toysram")[1] == toym(*tile, "--sram", m)[1]


def test_tile_level_is_delegated_to_the_tile_generator(toym):
    from toymachine.gen.tile import attention_program

    code, out, err = toym("gen", "attention", "--level", "tile", "--n", "64", "--d", "16")
    assert code == 0, err
    assert out == attention_program(n=64, d=16).to_text()


def test_tile_level_passes_the_documented_keywords(toym, monkeypatch):
    from toymachine.program import Program

    seen = {}

    def attention_program(**kwargs):
        seen.update(kwargs)
        return Program((), header=("tile program",))

    monkeypatch.setattr("toymachine.cli.gen.tile_attention_program", attention_program)
    code, out, err = toym("gen", "attention", "--level", "tile", "--n", "128", "--d", "8", "--algo", "fa1",
                          "--block-m", "16", "--block-n", "32", "--sram", "4096", "--causal", "--pass", "backward",
                          "--batch", "2", "--heads", "3", "--variant", "no-rescale", "--order", "col",
                          "--no-precompute-d", "--scale", "0.5", "--seed", "4")
    assert code == 0, err
    assert out == "; tile program\n"
    assert seen == dict(n=128, d=8, algo="fa1", block_m=16, block_n=32, sram_words=4096, causal=True,
                        pass_="backward", batch=2, heads=3, variant="no-rescale", with_data=False, order="col",
                        precompute_d=False, scale=0.5, seed=4, max_instructions=10 ** 9,
                        on_size=seen["on_size"])


def test_tile_level_defaults_to_no_data(toym, monkeypatch):
    from toymachine.program import Program

    seen = {}

    def attention_program(**kwargs):
        seen.update(kwargs)
        return Program((), header=("tile program",))

    monkeypatch.setattr("toymachine.cli.gen.tile_attention_program", attention_program)
    assert toym("gen", "attention", "--level", "tile", "--n", "64", "--d", "8")[0] == 0
    assert seen["with_data"] is False
    assert toym("gen", "attention", "--level", "tile", "--n", "64", "--d", "8", "--data")[0] == 0
    assert seen["with_data"] is True


@pytest.mark.parametrize("args", [("matmul", "--n", "100000"), ("softmax", "--n", "10000000000"),
                                  ("variance", "--n", "1000000000"), ("attention", "--n", "100000", "--d", "64"),
                                  ("attention", "--level", "tile", "--n", "1000000", "--d", "64")])
def test_absurd_sizes_are_refused_before_anything_is_written(toym, args):
    """The closed form gives the count first: over --max-instructions (10⁹) nothing is generated."""
    import time

    t = time.perf_counter()
    code, out, err = toym("gen", *args)
    assert code == 2 and out == "" and "more than --max-instructions 1,000,000,000" in err
    assert time.perf_counter() - t < 5


def test_big_programs_are_announced_and_the_limit_is_an_option(toym):
    from toymachine.cost import softmax_cost

    n = 7_200_000  # 14n − 4 > 10⁸
    code, out, err = toym("gen", "softmax", "--n", str(n), "--no-data", "--max-instructions", "1000")
    assert code == 2 and f"{softmax_cost(n).instructions:,} instructions" in err
    seen = []
    from toymachine.gen import softmax_program

    softmax_program(n=1000, with_data=False, on_size=lambda count, size: seen.append(count))
    assert seen == [softmax_cost(1000).instructions]
    with pytest.raises(ConfigError, match="more than max_instructions = 100") as info:
        softmax_program(n=1000, max_instructions=100)
    assert info.value.key == "max_instructions"
