"""Machine presets of the tile machine: examples/machines mirror the built-in presets, the
GPU presets carry their datasheet rates, and a tile machine's YAML keys are validated."""

import pytest
from conftest import ROOT

from toymachine import ConfigError, load_machine, resolve_machine, simulate
from toymachine.gen.tile import attention_program
from toymachine.machine import PRESET_DIR, TILE_FIELDS, preset_names

EXAMPLES = ROOT / "examples" / "machines"


def test_examples_equal_the_built_in_presets():
    """Every built-in preset has its identical copy in examples/machines/; the other example
    files there (custom machines) load."""
    examples = {p.stem: p.read_text() for p in EXAMPLES.glob("*.yaml")}
    presets = {p.stem: p.read_text() for p in PRESET_DIR.glob("*.yaml")}
    assert {name: examples.get(name) for name in presets} == presets
    for name in preset_names():
        assert load_machine(EXAMPLES / f"{name}.yaml") == resolve_machine(name)
    for name in set(examples) - set(presets):
        assert load_machine(EXAMPLES / f"{name}.yaml").name


@pytest.mark.parametrize("name,tensor_tflops,hbm_tbs,sram_kb", [("h100", 989.4, 3.35, 228), ("a100", 312, 2.039, 164)])
def test_gpu_presets_match_their_datasheets(name, tensor_tflops, hbm_tbs, sram_kb):
    m = resolve_machine(name)
    assert m.tensor_flops_per_cycle * m.clock_hz / 1e12 == pytest.approx(tensor_tflops, rel=1e-3)
    assert m.hbm_bytes_per_cycle * m.clock_hz / 1e12 == pytest.approx(hbm_tbs, rel=1e-3)
    assert m.sram_words * m.word_bytes == sram_kb * 1024
    assert all(getattr(m, f) is not None for f in TILE_FIELDS)


def test_h100_estimates_time_as_a_roofline():
    prog = attention_program(n=256, d=64, block_m=64, block_n=64)
    r = simulate(prog, resolve_machine("h100"), dtype="fp32")
    m = resolve_machine("h100")
    hbm_s = (r.dram_reads + r.dram_writes) * 2 / m.hbm_bytes_per_cycle / m.clock_hz
    assert r.extra["roofline"]["hbm_s"] == pytest.approx(hbm_s)
    assert r.extra["time_s"] == max(r.extra["roofline"]["hbm_s"], r.extra["roofline"]["compute_s"])
    assert r.extra["sram_peak"] <= m.sram_words


def test_toysram_is_seed_001s_machine():
    m = resolve_machine("toysram")
    assert m.sram_words == 59 and m.clock_hz is None
    r = simulate(attention_program(n=5, d=3, algo="fa1", sram_words=59), m)
    assert r.extra["sram_peak"] <= 59 and "time_s" not in r.extra
    words = r.dram_reads + r.dram_writes
    assert r.extra["cycle_breakdown"]["hbm"] == words  # one word per cycle


@pytest.mark.parametrize("text,needle", [
    ("clock_hz: 1.0e+9\n", "needs hbm_bytes_per_cycle"),
    ("sram_words: 0\n", "positive integer"),
    ("hbm_bytes_per_cycle: fast\n", "positive number"),
    ("tensor_flops: 5\n", "unknown key"),
])
def test_tile_keys_are_validated(tmp_path, text, needle):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_machine(str(path))
    assert needle in e.value.message and e.value.loc.file == str(path)


def test_yaml_exponent_without_sign_reads_as_a_number(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("clock_hz: 1.5e9\nhbm_bytes_per_cycle: 100\ntensor_flops_per_cycle: 10\n"
                    "vector_flops_per_cycle: 1\n")
    assert load_machine(str(path)).clock_hz == 1.5e9
