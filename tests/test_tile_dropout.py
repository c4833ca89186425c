"""Dropout on the tile machine (seed 004, the FlashAttention paper's Algorithm 2 and its backward):
the DROPOUT instruction makes the mask on chip from a counter-based hash, the programs apply it
where the paper does and never store it, and every output equals a numpy reference drawing the
same mask — a reference itself checked against finite differences."""

import numpy as np
import pytest

from toymachine import AsmError, simulate
from toymachine.gen.tile import (
    array_shapes,
    attention_backward_reference,
    attention_program,
    attention_reference,
    run_attention,
)
from toymachine.sim.engines.tile_ops import dropout_keep
from toymachine.sim.memory import random_block

EXACT = 1e-12
P = 0.3


def test_the_mask_keeps_one_minus_p_and_differs_by_seed_head_and_position():
    keep = dropout_keep(7, 0, np.arange(256), np.arange(256), P)
    assert abs(keep.mean() - (1 - P)) < 0.01  # 65536 draws: σ ≈ 0.0018
    assert abs(keep[:, :128].mean() - keep[:, 128:].mean()) < 0.02
    for other in (dropout_keep(8, 0, np.arange(256), np.arange(256), P),
                  dropout_keep(7, 1, np.arange(256), np.arange(256), P)):
        assert 0.3 < (keep != other).mean() < 0.5  # independent draws disagree on 2·p·(1−p) = 42%
    assert (keep[1:] != keep[:-1]).mean() > 0.3 and (keep[:, 1:] != keep[:, :-1]).mean() > 0.3


def test_the_mask_of_a_block_is_the_mask_of_its_coordinates():
    """Counter-based: any block, made in any order, is a slice of the one mask (as Philox)."""
    whole = dropout_keep(3, 2, np.arange(10), np.arange(12), P)
    np.testing.assert_array_equal(dropout_keep(3, 2, np.arange(4, 7), np.arange(5, 12), P), whole[4:7, 5:12])


def test_dropout_instruction():
    text = (".array x[2][3]\nLOAD x[0:2, :], T0\nDROPOUT T0, 0.5, 9, 1, 4, 6, T1\n")
    x = np.arange(1.0, 7.0).reshape(2, 3)
    r = simulate(text, data={"x": x.tolist()})
    z = dropout_keep(9, 1, np.arange(4, 6), np.arange(6, 9), 0.5) / 0.5
    np.testing.assert_array_equal(np.asarray(r.registers["T1"]), x * z)
    assert r.extra["flops"]["other"] == 6
    for bad, needle in (("1.0, 9, 1, 4, 6", "0 ≤ p < 1"), ("0.5, -1, 1, 4, 6", "seed"),
                        ("0.5, 9, 1, 2.5, 6", "row offset")):
        with pytest.raises(AsmError, match=needle):
            simulate(text.replace("0.5, 9, 1, 4, 6", bad), data={"x": x.tolist()})


# -- the references, checked by finite differences -------------------------------------------------------
def test_backward_reference_is_the_gradient_of_the_forward_reference():
    rng = np.random.default_rng(0)
    q, k, v, do = (rng.standard_normal((2, 4, 3)) for _ in range(4))
    kw = dict(causal=True, dropout=P, dropout_seed=11)
    grads = attention_backward_reference(q, k, v, do, **kw)

    def loss(q, k, v):
        return float((attention_reference(q, k, v, **kw)["O"] * do).sum())

    eps = 1e-6
    for name, x, args in (("dQ", q, lambda y: (y, k, v)), ("dK", k, lambda y: (q, y, v)),
                          ("dV", v, lambda y: (q, k, y))):
        num = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            hi, lo = x.copy(), x.copy()
            hi[idx] += eps
            lo[idx] -= eps
            num[idx] = (loss(*args(hi)) - loss(*args(lo))) / (2 * eps)
        np.testing.assert_allclose(grads[name], num, rtol=0, atol=1e-7, err_msg=name)


def test_dropout_changes_o_and_zero_is_none():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((5, 2)) for _ in range(3))
    plain = attention_reference(q, k, v)["O"]
    assert np.abs(attention_reference(q, k, v, dropout=P)["O"] - plain).max() > 1e-3
    np.testing.assert_array_equal(attention_reference(q, k, v, dropout=0.0)["O"], plain)


# -- the programs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("algo", ["standard", "standard-3pass", "fa1", "fa2"])
@pytest.mark.parametrize("causal", [False, True])
def test_forward_equals_the_reference_with_the_same_mask(algo, causal):
    kw = dict(n=7, nk=9, d=3, batch=1, heads=2, kv_heads=1, causal=causal, block_m=3, block_n=2)
    r = simulate(attention_program(algo=algo, dropout=P, dropout_seed=5, with_data=True, seed=2, **kw), steps=False)
    shapes = array_shapes(algo=algo, **{x: kw[x] for x in ("n", "nk", "d", "batch", "heads", "kv_heads")})
    x = {name: random_block(2, name, shapes[name]) for name in ("Q", "K", "V")}
    ref = attention_reference(x["Q"], x["K"], x["V"], causal=causal, dropout=P, dropout_seed=5)
    np.testing.assert_allclose(r.array("O"), ref["O"], rtol=0, atol=EXACT)
    if algo != "fa1":
        np.testing.assert_allclose(r.array("L"), ref["L"], rtol=0, atol=EXACT)  # the undropped statistics
    assert not r.alarms


BACKWARD = [("fa2", "row", True), ("fa2", "row", False), ("fa2", "col", True), ("fa1", "col", False),
            ("fa1", "split", True), ("fa2", "split", True), ("standard", "row", True)]


@pytest.mark.parametrize("algo,order,precompute_d", BACKWARD)
@pytest.mark.parametrize("causal", [False, True])
def test_backward_equals_the_reference_with_the_same_mask(algo, order, precompute_d, causal):
    kw = dict(n=6, nk=8, d=2, batch=2, heads=2, kv_heads=1, causal=causal, block_m=4, block_n=3)
    prog = attention_program(algo=algo, pass_="backward", order=order, precompute_d=precompute_d, dropout=P,
                             dropout_seed=9, with_data=True, seed=3, **kw)
    r = simulate(prog, steps=False)
    shapes = array_shapes(algo=algo, pass_="backward",
                          **{x: kw[x] for x in ("n", "nk", "d", "batch", "heads", "kv_heads")})
    x = {name: random_block(3, name, shapes[name]) for name in ("Q", "K", "V", "dO")}
    ref = attention_backward_reference(x["Q"], x["K"], x["V"], x["dO"], causal=causal, dropout=P, dropout_seed=9)
    for name in ("dQ", "dK", "dV"):
        np.testing.assert_allclose(r.array(name), ref[name], rtol=0, atol=EXACT, err_msg=name)
    assert not r.alarms


def test_run_attention_with_dropout():
    rng = np.random.default_rng(2)
    q, k, v, do = (rng.standard_normal((3, 6, 4)) for _ in range(4))
    out = run_attention(q, k, v, do, causal=True, block_m=4, block_n=2, dtype="fp64", dropout=0.2, dropout_seed=4)
    ref = attention_backward_reference(q, k, v, do, causal=True, dropout=0.2, dropout_seed=4)
    np.testing.assert_allclose(out["O"], attention_reference(q, k, v, causal=True, dropout=0.2, dropout_seed=4)["O"],
                               rtol=0, atol=EXACT)
    for name in ("dQ", "dK", "dV"):
        np.testing.assert_allclose(out[name], ref[name], rtol=0, atol=EXACT)


@pytest.mark.parametrize("pass_,algo", [("forward", "fa2"), ("forward", "standard"), ("backward", "fa2"),
                                        ("backward", "standard")])
def test_the_mask_is_never_stored(pass_, algo):
    """Algorithm 2 regenerates the mask: the program declares the same arrays and moves the
    same words with and without dropout — only DROPOUT instructions are added."""
    kw = dict(n=8, d=2, algo=algo, pass_=pass_, block_m=4, block_n=4)
    plain, dropped = attention_program(**kw), attention_program(**kw, dropout=0.5)
    assert [a.shape for a in plain.arrays] == [a.shape for a in dropped.arrays]
    a, b = simulate(plain, steps=False), simulate(dropped, steps=False)
    assert (a.dram_reads, a.dram_writes) == (b.dram_reads, b.dram_writes)
    assert b.ops["DROPOUT"] > 0 and "DROPOUT" not in a.ops


@pytest.mark.parametrize("bad", [1.0, -0.1, float("nan"), "0.5"])
def test_bad_dropout_is_a_config_error(bad):
    from toymachine import ConfigError

    with pytest.raises(ConfigError) as info:
        attention_program(n=4, d=2, dropout=bad)
    assert info.value.key == "dropout"
