"""The preset ``tpu-v5e-seed`` (``accounting: seed-002``): seed 002's TPU table to the cycle through the
CLI, and the simulated ``by_op`` equal to ``cost.tpu_seed``'s closed form (the seed's op list)."""

from __future__ import annotations

import json

import pytest

from toymachine import resolve_machine
from toymachine.cost.tpu_seed import SEED_TABLE, seed_attention_cycles, seed_by_op, seed_vpu_ops
from toymachine.errors import ConfigError
from toymachine.gen.tile import attention_program
from toymachine.machine.loader import load_machine
from toymachine.sim import simulate

SEED = "tpu-v5e-seed"


def _units(algo: str, n: int, d: int, block: int | None):
    machine = resolve_machine(SEED)
    kw = {} if block is None else dict(block_m=block, block_n=block)
    prog = attention_program(n=n, d=d, algo=algo, causal=True, machine=machine, **kw)
    return simulate(prog, machine).extra["units"]


@pytest.mark.slow
@pytest.mark.parametrize("args, key", [
    (["--algo", "standard"], "standard"),
    (["--algo", "fa2", "--block-m", "128", "--block-n", "128"], 128),
    (["--algo", "fa2", "--block-m", "64", "--block-n", "64"], 64),
])
def test_readme_commands_give_the_seed_table(toym, args, key):
    code, prog, _ = toym("gen", "attention", "--level", "tile", *args, "--n", 512, "--d", 64, "--causal",
                         "--machine", SEED)
    assert code == 0
    code, out, _ = toym("run", "-", "--machine", SEED, "-f", "json", input=prog)
    assert code == 0
    units = json.loads(out)["units"]
    want = SEED_TABLE[key]
    assert units["mxu"]["cycles"] == want["mxu"]
    assert units["vpu"]["cycles"] == want["vpu"]
    assert units["total"] == want["total"]
    assert round(units["mxu"]["utilization"], 3) == want["utilization"]
    assert round(units["total"] / SEED_TABLE["standard"]["total"], 2) == want["vs_standard"]


@pytest.mark.parametrize("algo, n, d, block", [
    ("standard", 512, 64, None), ("standard", 1024, 64, None), ("standard", 256, 32, None),
    ("flash", 512, 64, 64), ("flash", 512, 64, 128), ("flash", 1024, 64, 128), ("flash", 256, 80, 64),
])
def test_by_op_is_the_seed_op_list(algo, n, d, block):
    """Simulated per-op cycles equal the closed form of the seed's accounting, op by op."""
    units = _units("standard" if algo == "standard" else "fa2", n, d, block)
    want = seed_attention_cycles(algo=algo, n=n, d=d, block=block)
    got = {k: v for k, v in units["vpu"]["by_op"].items() if v}
    assert got == seed_by_op(seed_vpu_ops(algo=algo, n=n, d=d, block=block))
    assert (units["mxu"]["cycles"], units["mxu"]["macs"], units["vpu"]["cycles"]) == (want.mxu, want.macs, want.vpu)


@pytest.mark.slow
def test_seed_formula_beyond_the_arrays():
    """The seed prices (1024, 64)·(64, 1024) as one pass: 1024 + 64 + 1024 − 2 (tpu-v5e splits it)."""
    units = _units("standard", 1024, 64, None)
    assert units["mxu"]["cycles"] == 2 * (1024 + 64 + 1024 - 2) == 4220
    assert units["mxu"]["passes"] == 2
    toym = simulate(attention_program(n=1024, d=64, algo="standard", causal=True,
                                      machine=resolve_machine("tpu-v5e")), resolve_machine("tpu-v5e"))
    assert toym.extra["units"]["mxu"]["cycles"] == 6392


@pytest.mark.parametrize("text, needle", [
    ("accounting: seed-003\nmxu: {rows: 8, cols: 8}\nvpu: {lanes: 8}\n", "'accounting' must be one of"),
    ("accounting: seed-002\n", "this machine has none"),
])
def test_accounting_errors(text, needle):
    with pytest.raises(ConfigError, match=needle):
        load_machine("m.yaml", text)


@pytest.mark.parametrize("n, block", [(300, 128), (257, 64), (777, 128)])
def test_partial_tiles_are_padded_as_the_seed_pads(n, block):
    """The seed pads to whole blocks: n = 300, blocks 128 → 6 tiles of (128,64)·(64,128) and
    (128,128)·(128,64): 6 × 2 × 318 = 3,816 MXU cycles (tpu-v5e, partial tiles: 3,144)."""
    units = _units("fa2", n, 64, block)
    want = seed_attention_cycles(algo="flash", n=n, d=64, block=block)
    assert (units["mxu"]["cycles"], units["vpu"]["cycles"]) == (want.mxu, want.vpu)
    if n == 300:
        assert want.mxu == 6 * 2 * (128 + 64 + 128 - 2) == 3816
        toym = simulate(attention_program(n=300, d=64, algo="fa2", causal=True, machine=resolve_machine("tpu-v5e")),
                        resolve_machine("tpu-v5e"))
        assert toym.extra["units"]["mxu"]["cycles"] == 3144


def test_memory_table_offers_both_fit_criteria(toym):
    """toym's criterion (fused attention's whole VMEM peak) and the seed's (the scores alone) part
    at n = 5,792: 5792²·4 B ≤ 128 MiB < 5793²·4 B."""
    code, out, _ = toym("memory", "--machine", "tpu-v5e", "--n", "5792,5793", "--d", 64, "-f", "json")
    assert code == 0
    assert 5792 ** 2 * 4 <= 128 * 2 ** 20 < 5793 ** 2 * 4
    rows = json.loads(out)["memory scaling"]
    assert [(r["fits on-chip?"], r["scores alone ≤ VMEM?"]) for r in rows] == [("NO", "yes"), ("NO", "NO")]


def test_tpu_table_command_is_the_seed_table(toym):
    """`toym tpu-table` (tpu-v5e-seed): every figure equal to the seed's, "vs standard" included."""
    code, out, _ = toym("tpu-table", "-f", "json")
    assert code == 0
    rows = next(iter(json.loads(out).values()))
    assert [r["seed 002"] for r in rows] == ["equal"] * 5
    by = {r[""]: r for r in rows}
    assert by["Total cycles"]["block=64"] == "24,556" and by["vs standard"]["block=64"] == "1.19x"


def test_tpu_table_on_toym_model_shows_the_differences(toym):
    code, out, _ = toym("tpu-table", "--machine", "tpu-v5e", "-f", "json")
    rows = {r[""]: r for r in next(iter(json.loads(out).values()))}
    assert code == 0 and rows["VPU cycles"]["block=64"] == "10,497" and rows["MXU cycles"]["seed 002"] == "equal"


@pytest.mark.parametrize("args, needle", [(["--machine", "toy"], "no compute units"),
                                          (["--n", "9000"], "more than this table simulates")])
def test_tpu_table_errors(toym, args, needle):
    code, _, err = toym("tpu-table", *args)
    assert code == 2 and needle in err


@pytest.mark.parametrize("algo, kw", [
    ("fa2", dict(n=300, d=64, block_m=128, block_n=64, causal=False)),
    ("fa2", dict(n=200, d=32, block_m=64, block_n=64, causal=True, heads=2, scale=1)),
    ("standard", dict(n=200, d=32, causal=False)),
    ("standard", dict(n=96, d=16, causal=True, heads=3, scale=1)),
])
def test_closed_form_beyond_the_seeds_point(algo, kw):
    """cost.tpu_seed (the accounting in closed form) equals the simulated tpu-v5e-seed run off the seed's
    point too: non-causal, Br ≠ Bc, several heads, no scale; and `toym sweep` says sim = formula."""
    machine = resolve_machine(SEED)
    prog = attention_program(algo=algo, machine=machine, **kw)
    units = simulate(prog, machine, steps=False).extra["units"]
    want = seed_attention_cycles(algo="standard" if algo == "standard" else "flash", n=kw["n"], d=kw["d"],
                                 block=kw.get("block_m"), block_n=kw.get("block_n"), causal=kw["causal"],
                                 scaled=kw.get("scale") != 1, heads=kw.get("heads", 1), prices=machine.vpu)
    assert (units["mxu"]["cycles"], units["mxu"]["macs"], units["vpu"]["cycles"]) == (want.mxu, want.macs, want.vpu)


@pytest.mark.slow
def test_sweep_on_the_seed_machine_agrees_with_its_formula(toym):
    code, out, _ = toym("sweep", "attention-tile", "--machine", SEED, "--algo", "fused,fa2", "--causal", "true,false",
                        "--n", "128,200", "--d", 32, "--heads", "1,2")
    assert code == 0 and "NO" not in out
