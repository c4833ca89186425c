"""Tiled attention programs (toymachine.gen.tile) compute what numpy computes, and the seeds'
claims about them hold in the simulated counts."""

import numpy as np
import pytest

from toymachine import ConfigError, Machine, MachineLimitError, parse, simulate
from toymachine.cli.vocabulary import flag_words
from toymachine.cost.tile import paper_blocks
from toymachine.gen.tile import (
    array_shapes,
    attention_backward_reference,
    attention_program,
    attention_reference,
)
from toymachine.sim.memory import random_block

EXACT = 1e-12


def inputs(n, d, batch=1, heads=1, names=("Q", "K", "V"), seed=0):
    shape = (batch, heads, n, d) if batch * heads > 1 else (n, d)
    return {x: random_block(seed, x, shape) for x in names}


def run(**kw):
    seed = kw.pop("seed", 0)
    machine = kw.pop("machine", None)
    return simulate(attention_program(**kw), machine, seed=seed, steps=False)


# -- forward: values ---------------------------------------------------------------------
@pytest.mark.parametrize("algo", ["standard", "standard-3pass", "fa1", "fa2"])
@pytest.mark.parametrize("n,d,bm,bn,causal,bh", [
    (8, 4, 4, 4, False, (1, 1)),
    (11, 3, 4, 3, True, (1, 1)),  # ragged blocks; the mask empties whole rows of some blocks
    (9, 2, 2, 5, True, (2, 2)),
    (6, 5, 8, 8, False, (1, 3)),  # blocks larger than n: clamped
])
def test_forward_matches_numpy(algo, n, d, bm, bn, causal, bh):
    r = run(n=n, d=d, algo=algo, causal=causal, block_m=bm, block_n=bn, batch=bh[0], heads=bh[1])
    x = inputs(n, d, *bh)
    ref = attention_reference(x["Q"], x["K"], x["V"], causal=causal)
    np.testing.assert_allclose(r.array("O"), ref["O"], rtol=0, atol=EXACT)
    if algo == "fa1":
        np.testing.assert_allclose(r.array("m"), ref["m"], rtol=0, atol=EXACT)
        np.testing.assert_allclose(r.array("l"), ref["l"], rtol=EXACT, atol=0)
    else:
        np.testing.assert_allclose(r.array("L"), ref["L"], rtol=0, atol=EXACT)
    if "standard" in algo:
        np.testing.assert_allclose(r.array("P"), ref["P"], rtol=0, atol=EXACT)
    assert not r.alarms


@pytest.mark.parametrize("scale", [1.0, 0.3])
def test_scale_is_explicit(scale):
    r = run(n=6, d=4, algo="fa2", block_m=3, block_n=2, scale=scale)
    x = inputs(6, 4)
    np.testing.assert_allclose(r.array("O"), attention_reference(x["Q"], x["K"], x["V"], scale=scale)["O"],
                               rtol=0, atol=EXACT)
    plain = run(n=6, d=4, algo="fa2", block_m=3, block_n=2, scale=1.0)
    assert r.ops["MUL"] - plain.ops["MUL"] == (2 * 3 if scale != 1.0 else 0)  # one τ·S per block pair
    assert ("T15" in r.registers) == (scale != 1.0)  # scale 1: the seed's Q given pre-scaled, no multiply


def test_given_data_and_with_data_agree_with_the_random_inputs():
    x = inputs(5, 3, seed=4)
    prog = attention_program(n=5, d=3, block_m=2, block_n=2)
    a = simulate(prog, data=x)
    b = simulate(attention_program(n=5, d=3, block_m=2, block_n=2, with_data=True, seed=4))
    np.testing.assert_array_equal(a.array("O"), b.array("O"))


# -- backward: values and the seed's claims ----------------------------------------------------
BACKWARD = [(algo, pre, order) for algo in ("fa1", "fa2") for pre in (True, False) for order in ("row", "col")]


@pytest.mark.parametrize("algo,precompute_d,order", BACKWARD)
@pytest.mark.parametrize("causal", [False, True])
def test_backward_matches_numpy(algo, precompute_d, order, causal):
    n, d = 9, 3
    prog = attention_program(n=n, d=d, algo=algo, pass_="backward", causal=causal, block_m=4, block_n=3,
                             precompute_d=precompute_d, order=order, with_data=True, seed=1)
    r = simulate(prog, steps=False)
    x = inputs(n, d, names=("Q", "K", "V", "dO"), seed=1)
    ref = attention_backward_reference(x["Q"], x["K"], x["V"], x["dO"], causal=causal)
    for name in ("dQ", "dK", "dV"):
        np.testing.assert_allclose(r.array(name), ref[name], rtol=0, atol=EXACT, err_msg=name)
    assert not r.alarms


def test_backward_with_given_forward_outputs_over_heads():
    x = inputs(6, 2, 2, 1, names=("Q", "K", "V", "dO"), seed=3)
    fwd = simulate(attention_program(n=6, d=2, batch=2, heads=1, block_m=2, block_n=4), data=x)
    data = dict(x, O=fwd.array("O"), L=fwd.array("L"))
    r = simulate(attention_program(n=6, d=2, batch=2, heads=1, pass_="backward", block_m=3, block_n=2), data=data)
    ref = attention_backward_reference(x["Q"], x["K"], x["V"], x["dO"])
    for name in ("dQ", "dK", "dV"):
        np.testing.assert_allclose(r.array(name), ref[name], rtol=0, atol=EXACT)


@pytest.mark.parametrize("order", ["row", "col"])
def test_d_trick_loads_k_and_v_once_instead_of_twice(order):
    """Seed 000, 'The Dᵢ Trick': with D = rowsum(dO∘O) precomputed, K and V are loaded once;
    without it, twice."""
    kw = dict(n=16, d=4, algo="fa2", pass_="backward", block_m=4, block_n=4, order=order)
    with_trick = run(**kw, precompute_d=True).extra["tile_traffic"]
    without = run(**kw, precompute_d=False).extra["tile_traffic"]
    for name in ("K", "V"):
        assert without[name]["reads"] == 2 * with_trick[name]["reads"]
    assert "O" in with_trick and "O" not in without  # the trick reads O instead of a second pass


def test_row_order_makes_two_outer_products_col_order_one():
    """Seed 000, 'Row-wise vs. column-wise': row-wise, dK and dV are rank-Br updates
    (read-modified-written per block pair) and dQ completes in SRAM; column-wise only dQ is."""
    kw = dict(n=16, d=4, algo="fa2", pass_="backward", block_m=4, block_n=4)
    row, col = run(**kw, order="row").extra["tile_traffic"], run(**kw, order="col").extra["tile_traffic"]
    nd, pairs = 16 * 4, (16 // 4)
    assert row["dQ"] == {"reads": 0, "writes": nd}
    assert row["dK"] == row["dV"] == {"reads": pairs * nd, "writes": pairs * nd}
    assert col["dK"] == col["dV"] == {"reads": 0, "writes": nd}
    assert col["dQ"] == {"reads": pairs * nd, "writes": pairs * nd}


# -- backward, split order: FlashAttention-2's kernels -------------------------------------------
@pytest.mark.parametrize("algo", ["fa1", "fa2"])
@pytest.mark.parametrize("n,d,bm,bn,causal,bh", [
    (9, 3, 4, 3, False, (1, 1)),  # ragged last blocks
    (9, 3, 4, 3, True, (1, 1)),
    (11, 2, 2, 5, True, (2, 2)),  # Bc > Br: a key block meets several query blocks on the diagonal
    (8, 4, 8, 2, True, (1, 3)),  # one query block
])
def test_split_backward_matches_numpy(algo, n, d, bm, bn, causal, bh):
    kw = dict(n=n, d=d, algo=algo, pass_="backward", order="split", causal=causal, block_m=bm, block_n=bn,
              batch=bh[0], heads=bh[1], with_data=True, seed=2)
    x = inputs(n, d, *bh, names=("Q", "K", "V", "dO"), seed=2)
    ref = attention_backward_reference(x["Q"], x["K"], x["V"], x["dO"], causal=causal)
    r = simulate(attention_program(**kw), steps=False)
    for name in ("dQ", "dK", "dV", "D"):
        np.testing.assert_allclose(r.array(name), ref[name], rtol=0, atol=EXACT, err_msg=name)
    assert not r.alarms
    # each launch alone (the phase reads D from the data where its preprocess would have written it)
    for phase, outputs in (("preprocess", ("D",)), ("dkdv", ("dK", "dV")), ("dq", ("dQ",)), ("dv", ("dV",)),
                           ("dk", ("dK",))):
        alone = simulate(attention_program(phase=phase, **kw), steps=False)
        for name in outputs:
            np.testing.assert_allclose(alone.array(name), ref[name], rtol=0, atol=EXACT, err_msg=f"{phase} {name}")
        assert set(alone.written_arrays) == set(outputs)


def test_split_order_reads_and_writes_like_the_kernels():
    """Preprocess: O, dO once; dK/dV launch: K, V once, Q, dO, L, D once per pair; dQ launch:
    Q, dO, L, D once, K, V once per pair; every gradient written once and never read (no
    read-modify-write)."""
    n, d, b = 16, 4, 4
    t = run(n=n, d=d, algo="fa2", pass_="backward", order="split", block_m=b, block_n=b).extra["tile_traffic"]
    nd, blocks = n * d, n // b
    assert t["K"] == t["V"] == {"reads": nd + blocks * nd, "writes": 0}
    assert t["Q"] == {"reads": blocks * nd + nd, "writes": 0}
    assert t["dO"] == {"reads": nd + blocks * nd + nd, "writes": 0}  # the preprocess reads it too
    assert t["L"] == {"reads": blocks * n + n, "writes": 0}
    assert t["D"] == {"reads": blocks * n + n, "writes": n}
    assert t["dQ"] == t["dK"] == t["dV"] == {"reads": 0, "writes": nd}
    assert t["O"] == {"reads": nd, "writes": 0}


@pytest.mark.parametrize("kw,needle", [
    (dict(pass_="backward", order="split", precompute_d=False), "preprocess launch"),
    (dict(pass_="backward", order="col", phase="dq"), "one launch of the split"),
    (dict(pass_="forward", phase="dkdv"), "one launch of the split"),
    (dict(pass_="backward", order="split", phase="dx"), "phase must be one of"),
    (dict(pass_="backward", order="diagonal"), "order must be one of"),
])
def test_split_parameters_are_config_errors(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        attention_program(n=8, d=2, **kw)


def test_run_attention_split_order():
    from toymachine.gen.tile import run_attention

    rng = np.random.default_rng(1)
    q, k, v, do = (rng.standard_normal((2, 7, 4)) for _ in range(4))
    out = run_attention(q, k, v, do, algo="fa2", causal=True, block_m=4, block_n=2, dtype="fp64", order="split")
    grads = attention_backward_reference(q, k, v, do, causal=True)
    for name in ("dQ", "dK", "dV", "D"):
        np.testing.assert_allclose(out[name], grads[name], rtol=0, atol=EXACT)


# -- forward: the seeds' cost claims -----------------------------------------------------
def test_fa2_writes_o_once_fa1_once_per_key_block():
    """Seed 000's table: the inner-product order (FA2) stores each output once, the outer
    (FA1) once per KV block — and loads K, V once, where FA2 reloads them per query block."""
    n, d, b = 32, 4, 8
    fa1 = run(n=n, d=d, algo="fa1", block_m=b, block_n=b).extra["tile_traffic"]
    fa2 = run(n=n, d=d, algo="fa2", block_m=b, block_n=b).extra["tile_traffic"]
    tc = tr = n // b
    assert fa2["O"]["writes"] == n * d and fa1["O"]["writes"] == tc * n * d
    assert fa1["K"]["reads"] == n * d and fa2["K"]["reads"] == tr * n * d
    assert fa2["Q"]["reads"] == n * d and fa1["Q"]["reads"] == tc * n * d


def test_standard_materialises_s_and_p():
    """Algorithm 0 (seed 004): S written once and read once, P written once and read once; the
    3-pass variant reads S three times (the seed's safe softmax over blocks of S)."""
    r = run(n=16, d=4, algo="standard", block_m=4, block_n=8)
    t = r.extra["tile_traffic"]
    assert t["S"] == {"reads": 16 * 16, "writes": 16 * 16}
    assert t["P"] == {"reads": 16 * 16, "writes": 16 * 16}
    assert r.extra["sram_peak"] >= 4 * 16  # a 4 × 16 row block of S in SRAM at once
    three = run(n=16, d=4, algo="standard-3pass", block_m=4, block_n=8)
    t3 = three.extra["tile_traffic"]
    assert t3["S"] == {"reads": 3 * 16 * 16, "writes": 16 * 16} and t3["P"] == t["P"]
    assert three.extra["sram_peak"] < r.extra["sram_peak"]


def test_causal_skips_blocks_above_the_diagonal():
    full = run(n=16, d=4, algo="fa2", block_m=4, block_n=4).extra["tile_traffic"]["K"]["reads"]
    causal = run(n=16, d=4, algo="fa2", block_m=4, block_n=4, causal=True).extra["tile_traffic"]["K"]["reads"]
    assert causal == (1 + 2 + 3 + 4) * 4 * 4 and full == 16 * 16 // 4 * 4


# -- seed 003's break-it variants --------------------------------------------------------------
def test_no_max_overflows():
    x = inputs(8, 4)
    data = {k: v * 30 for k, v in x.items()}  # scores in the thousands: e^S overflows fp64
    r = simulate(attention_program(n=8, d=4, variant="no-max", block_m=4, block_n=4), data=data)
    assert "overflow" in {a.kind for a in r.alarms} and not np.isfinite(r.array("O")).all()
    exact = simulate(attention_program(n=8, d=4, block_m=4, block_n=4), data=data)
    assert not exact.alarms and np.isfinite(exact.array("O")).all()


@pytest.mark.parametrize("algo", ["fa1", "fa2"])
def test_no_rescale_is_finite_but_wrong(algo):
    x = inputs(16, 4)
    r = simulate(attention_program(n=16, d=4, algo=algo, variant="no-rescale", block_m=4, block_n=4), data=x)
    err = np.abs(r.array("O") - attention_reference(x["Q"], x["K"], x["V"])["O"]).max()
    assert not r.alarms and np.isfinite(r.array("O")).all() and err > 1e-2


def test_no_max_fp16_overflows_where_fp32_does_not():
    """Seed 003: fp16's range ends at 65504 (e^12 overflows it); fp32's at 3.4e38."""
    x = {k: v * 2.5 for k, v in inputs(16, 4).items()}
    prog = attention_program(n=16, d=4, variant="no-max", block_m=8, block_n=8, scale=1.0)
    assert "overflow" in {a.kind for a in simulate(prog, data=x, dtype="fp16").alarms}
    assert not simulate(prog, data=x, dtype="fp32").alarms


# -- blocks from the SRAM size -------------------------------------------------------------------
def test_paper_blocks_of_seed_001():
    """Seed 001: N = 5, d = 3, M = 59 → Br = min(⌈M/4d⌉, d) = 3 and Bc = ⌈59/12⌉ = 5 (the
    seed prints 4: it rounded down)."""
    assert paper_blocks(3, 59) == (3, 5)


def test_blocks_from_sram_fit_and_the_machine_enforces_them():
    prog = attention_program(n=5, d=3, algo="fa1", sram_words=59)
    assert any("shrink" in h for h in prog.header)
    r = simulate(prog, Machine(sram_words=59))
    assert r.extra["sram_peak"] <= 59
    big = attention_program(n=5, d=3, algo="fa1", block_m=3, block_n=5)
    with pytest.raises(MachineLimitError, match="sram_words = 59"):
        simulate(big, Machine(sram_words=59))


def test_sram_too_small_is_a_clear_error():
    with pytest.raises(ConfigError, match="even with 1-row blocks") as e:
        attention_program(n=64, d=64, sram_words=100)
    assert e.value.key == "sram" and e.value.hint.startswith("use sram = ")
    with pytest.raises(ConfigError, match="need") as e:
        attention_program(n=64, d=8, block_m=64, block_n=64, sram_words=1000)
    assert e.value.key == "sram" and e.value.hint_in(flag_words).startswith("use --block-m ")


@pytest.mark.parametrize("kw,key,needle", [
    (dict(algo="fa3"), "algo", "must be one of"),
    (dict(pass_="sideways"), "pass", "must be one of"),
    (dict(n=0), "n", "must be at least 1"),
    (dict(block_m=0), "block_m", "must be at least 1"),
    (dict(variant="no-max", pass_="backward"), "variant", "backward pass is exact"),
    (dict(algo="standard-3pass", pass_="backward"), "algo", "forward pass only"),
    (dict(algo="standard", variant="no-rescale"), "variant", "no-rescale"),
    (dict(scale=float("inf")), "scale", "finite non-zero"),
])
def test_bad_parameters_are_config_errors(kw, key, needle):
    with pytest.raises(ConfigError, match=needle) as info:
        attention_program(**{"n": 8, "d": 2, **kw})
    assert info.value.key == key


# -- the program text ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(algo="fa2", causal=True, batch=2, heads=2), dict(algo="fa1"),
                                dict(algo="standard"), dict(pass_="backward", order="col", precompute_d=False),
                                dict(pass_="backward", order="split"),
                                dict(pass_="backward", order="split", phase="dq")])
def test_header_and_round_trip(kw):
    p = attention_program(n=6, d=2, block_m=2, block_n=3, **kw)
    text = p.to_text()
    head = "\n".join(p.header)
    for needle in ("Computes", "Blocks: Br = 2", "SRAM peak", "HBM per head", "Regenerate", "Registers"):
        assert needle in head
    assert parse(text) == p
    shapes = array_shapes(n=6, d=2, **{k: v for k, v in kw.items() if k in ("algo", "pass_", "batch", "heads")})
    assert {a.name: a.shape for a in p.arrays} == shapes


def test_generated_text_runs_like_the_program(tmp_path):
    p = attention_program(n=7, d=3, algo="fa2", causal=True, block_m=3, block_n=2)
    a, b = simulate(p), simulate(iter(p.to_text().splitlines(True)))
    np.testing.assert_array_equal(a.array("O"), b.array("O"))
    assert a.to_dict(steps=False)["dram"] == b.to_dict(steps=False)["dram"] and a.cycles == b.cycles


@pytest.mark.parametrize("shape", [(7, 4), (3, 7, 4), (2, 2, 7, 4)])
@pytest.mark.parametrize("algo", ["fa1", "fa2"])
def test_run_attention_arrays_in_arrays_out(shape, algo):
    from toymachine.gen.tile import run_attention

    rng = np.random.default_rng(0)
    q, k, v, do = (rng.standard_normal(shape) for _ in range(4))
    out = run_attention(q, k, v, do, algo=algo, causal=True, block_m=4, block_n=2, dtype="fp64")
    ref = attention_reference(q, k, v, causal=True)
    grads = attention_backward_reference(q, k, v, do, causal=True)
    np.testing.assert_allclose(out["O"], ref["O"], rtol=0, atol=EXACT)
    for name in (("m", "l") if algo == "fa1" else ("L",)):
        np.testing.assert_allclose(out[name], ref[name], rtol=EXACT, atol=EXACT)
    for name in ("dQ", "dK", "dV", "D"):
        np.testing.assert_allclose(out[name], grads[name], rtol=0, atol=EXACT)
    assert not out["forward"].alarms and not out["backward"].alarms
