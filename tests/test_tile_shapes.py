"""The tile attention generator on the shapes users run: keys of another length than
the queries (cross-attention; causal aligned bottom-right, as torch SDPA's causal_lower_right and
flash-attn do), grouped-query / multi-query attention (K, V with fewer heads than Q) and head
dimensions that are not powers of two — forward and backward in every order, against float64
numpy computed head by head (an oracle that shares no code with ``attention_reference``)."""

import numpy as np
import pytest

from toymachine import ConfigError, simulate
from toymachine.gen.tile import (
    array_shapes,
    attention_backward_reference,
    attention_program,
    attention_reference,
    run_attention,
)
from toymachine.sim.memory import random_block

EXACT = 1e-12


def brute_force(q, k, v, do, causal, tau):
    """Per head, per query: softmax over the keys j ≤ i + nk − n (causal), its gradients; dK, dV
    summed over the query heads that share a K/V head."""
    b, h, n, d = q.shape
    hk, nk = k.shape[1], k.shape[2]
    out = {name: np.zeros(x.shape) for name, x in (("O", q), ("dQ", q), ("dK", k), ("dV", k))}
    for bi in range(b):
        for hi in range(h):
            kh = hi // (h // hk)
            kk, vv = k[bi, kh], v[bi, kh]
            s = tau * q[bi, hi] @ kk.T
            for i in range(n):
                for j in range(nk):
                    if causal and j > i + nk - n:
                        s[i, j] = -np.inf
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            o = p @ vv
            dp = do[bi, hi] @ vv.T
            ds = p * (dp - (do[bi, hi] * o).sum(axis=1, keepdims=True))
            out["O"][bi, hi] = o
            out["dQ"][bi, hi] = tau * ds @ kk
            out["dK"][bi, kh] += tau * ds.T @ q[bi, hi]
            out["dV"][bi, kh] += p.T @ do[bi, hi]
    return out


SHAPES = [  # (batch, heads, kv_heads, n, nk, d)
    (1, 2, 2, 5, 9, 3),  # cross-attention, more keys
    (1, 4, 2, 7, 7, 2),  # grouped-query
    (2, 3, 1, 4, 6, 2),  # multi-query, two batches
    (1, 4, 1, 6, 3, 2),  # fewer keys than queries (non-causal only)
]


def _cases(shapes):
    """(shape, causal) pairs: causal only where nk ≥ n (the bottom-right mask needs it)."""
    return [(shape, causal) for shape in shapes for causal in (False, True) if not (causal and shape[4] < shape[3])]


def _inputs(b, h, hk, n, nk, d, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((b, h, n, d)), rng.standard_normal((b, hk, nk, d)),
            rng.standard_normal((b, hk, nk, d)), rng.standard_normal((b, h, n, d)))


@pytest.mark.parametrize("shape,causal", _cases(SHAPES))
def test_reference_equals_the_head_by_head_oracle(shape, causal):
    b, h, hk, n, nk, d = shape
    q, k, v, do = _inputs(*shape)
    want = brute_force(q, k, v, do, causal, d ** -0.5)
    fwd = attention_reference(q, k, v, causal=causal)
    bwd = attention_backward_reference(q, k, v, do, causal=causal)
    np.testing.assert_allclose(fwd["O"], want["O"], rtol=0, atol=EXACT)
    for name in ("dQ", "dK", "dV"):
        np.testing.assert_allclose(bwd[name], want[name], rtol=0, atol=EXACT, err_msg=name)


@pytest.mark.parametrize("shape,causal", _cases(SHAPES))
@pytest.mark.parametrize("algo,order", [("fa2", "row"), ("fa2", "col"), ("fa2", "split"), ("fa1", "col"),
                                        ("fa1", "split"), ("fa1", "row")])
def test_run_attention_forward_and_backward(shape, causal, algo, order):
    b, h, hk, n, nk, d = shape
    q, k, v, do = _inputs(*shape, seed=1)
    want = brute_force(q, k, v, do, causal, d ** -0.5)
    out = run_attention(q, k, v, do, algo=algo, causal=causal, block_m=3, block_n=2, dtype="fp64", order=order)
    for name in ("O", "dQ", "dK", "dV"):
        assert out[name].shape == want[name].shape
        np.testing.assert_allclose(out[name], want[name], rtol=0, atol=EXACT, err_msg=name)
    assert not out["forward"].alarms and not out["backward"].alarms


@pytest.mark.parametrize("algo", ["standard", "fa1", "fa2"])
@pytest.mark.parametrize("causal", [False, True])
def test_forward_with_data_cross_and_grouped(algo, causal):
    kw = dict(n=5, nk=8, d=3, batch=1, heads=4, kv_heads=2, causal=causal, block_m=2, block_n=3)
    r = simulate(attention_program(algo=algo, with_data=True, seed=5, **kw), steps=False)
    shapes = array_shapes(algo=algo, **{k: kw[k] for k in ("n", "nk", "d", "batch", "heads", "kv_heads")})
    x = {name: random_block(5, name, shapes[name]) for name in ("Q", "K", "V")}
    ref = attention_reference(x["Q"], x["K"], x["V"], causal=causal)
    np.testing.assert_allclose(r.array("O"), ref["O"], rtol=0, atol=EXACT)
    if algo == "standard":
        assert r.array("P").shape == (1, 4, 5, 8)
        np.testing.assert_allclose(r.array("P"), ref["P"], rtol=0, atol=EXACT)
    assert not r.alarms


@pytest.mark.parametrize("order", ["row", "col", "split"])
def test_backward_with_data_multi_query(order):
    kw = dict(n=6, nk=9, d=2, batch=2, heads=3, kv_heads=1, causal=True, block_m=4, block_n=2)
    prog = attention_program(algo="fa2", pass_="backward", order=order, with_data=True, seed=7, **kw)
    r = simulate(prog, steps=False)
    shapes = array_shapes(pass_="backward", **{k: kw[k] for k in ("n", "nk", "d", "batch", "heads", "kv_heads")})
    x = {name: random_block(7, name, shapes[name]) for name in ("Q", "K", "V", "dO")}
    ref = attention_backward_reference(x["Q"], x["K"], x["V"], x["dO"], causal=True)
    for name in ("dQ", "dK", "dV"):
        np.testing.assert_allclose(r.array(name), ref[name], rtol=0, atol=EXACT, err_msg=name)


def test_grouped_col_order_reads_k_and_v_once_per_kv_head():
    """Column order keeps K_j, V_j, dK_j, dV_j in SRAM while the group's query heads stream past:
    K, V read once per key/value head (not once per query head), dK, dV written once."""
    kw = dict(n=8, nk=12, d=2, batch=1, heads=4, block_m=4, block_n=4, algo="fa2", pass_="backward", order="col")
    grouped = simulate(attention_program(kv_heads=1, **kw), steps=False).extra["tile_traffic"]
    full = simulate(attention_program(kv_heads=4, **kw), steps=False).extra["tile_traffic"]
    assert grouped["K"]["reads"] == 12 * 2 and full["K"]["reads"] == 4 * 12 * 2
    assert grouped["dK"] == {"reads": 0, "writes": 12 * 2}
    assert grouped["Q"] == full["Q"]


@pytest.mark.parametrize("d", [80, 96, 48, 5])
@pytest.mark.parametrize("pass_,order", [("forward", "row"), ("backward", "col"), ("backward", "split")])
def test_head_dims_that_are_not_powers_of_two(d, pass_, order):
    n = 6
    prog = attention_program(n=n, d=d, pass_=pass_, order=order, causal=True, block_m=4, block_n=4,
                             with_data=True, seed=3)
    r = simulate(prog, steps=False)
    names = ("Q", "K", "V", "dO")
    x = {name: random_block(3, name, (n, d)) for name in names}
    if pass_ == "forward":
        np.testing.assert_allclose(r.array("O"), attention_reference(x["Q"], x["K"], x["V"], causal=True)["O"],
                                   rtol=0, atol=EXACT)
    else:
        ref = attention_backward_reference(*(x[k] for k in names), causal=True)
        for name in ("dQ", "dK", "dV"):
            np.testing.assert_allclose(r.array(name), ref[name], rtol=0, atol=EXACT)


def test_bottom_right_mask_in_the_program_text():
    """δ = nk − n shifts MASK's row offset: query block i0 masks keys after i0 + δ."""
    text = attention_program(n=4, nk=7, d=2, causal=True, block_m=2, block_n=2).to_text()
    assert "MASK T3, 5, 6, T3" in text  # rows 2..3 + δ = 3: keys 6 masked for row 2 (6 > 2 + 3)
    assert "bottom-right" in text and "--nk 7" in text


def test_defaults_are_the_plain_programs():
    a = attention_program(n=6, d=2, heads=2, block_m=2, block_n=3)
    b = attention_program(n=6, d=2, heads=2, nk=6, kv_heads=2, block_m=2, block_n=3)
    assert a.instrs == b.instrs and [x.shape for x in a.arrays] == [x.shape for x in b.arrays]


@pytest.mark.parametrize("kw,key,needle", [
    (dict(nk=3, causal=True), "nk", "first 5 queries would attend no key"),
    (dict(heads=4, kv_heads=3), "kv_heads", "heads = 4 is not a multiple of kv_heads = 3"),
    (dict(nk=0), "nk", "nk must be at least 1"),
    (dict(kv_heads=0), "kv_heads", "kv_heads must be at least 1"),
])
def test_bad_shapes_are_config_errors(kw, key, needle):
    with pytest.raises(ConfigError, match=needle) as info:
        attention_program(**{"n": 8, "d": 2, **kw})
    assert info.value.key == key


def test_run_attention_rejects_mismatched_shapes():
    q = np.zeros((3, 4, 2))
    with pytest.raises(ConfigError, match="multiple of the key/value heads"):
        run_attention(q, np.zeros((2, 4, 2)), np.zeros((2, 4, 2)))
    with pytest.raises(ConfigError, match="same"):
        run_attention(q, np.zeros((3, 4, 5)), np.zeros((3, 4, 5)))


# -- the standard backward (the FlashAttention paper's Algorithm 3) --------------------------------------
@pytest.mark.parametrize("shape,causal", _cases(SHAPES + [(1, 1, 1, 7, 7, 3)]))
def test_standard_backward_algorithm_3(shape, causal):
    b, h, hk, n, nk, d = shape
    q, k, v, do = _inputs(*shape, seed=4)
    want = brute_force(q, k, v, do, causal, d ** -0.5)
    for algo in ("standard", "standard-3pass"):
        out = run_attention(q, k, v, do, algo=algo, causal=causal, block_m=3, block_n=2, dtype="fp64")
        for name in ("O", "dQ", "dK", "dV"):
            np.testing.assert_allclose(out[name], want[name], rtol=0, atol=EXACT, err_msg=name)
        assert not out["backward"].alarms


def test_standard_backward_moves_p_ds_dp_as_algorithm_3():
    """P read twice (dV, then the row blocks for D and dS), dP written and read once, dS written
    once and read twice (dQ, dK): Θ(n·d + n²) words, where FlashAttention's backward moves none."""
    n, d = 16, 4
    t = simulate(attention_program(n=n, d=d, algo="standard", pass_="backward", block_m=4, block_n=8),
                 steps=False).extra["tile_traffic"]
    nn = n * n
    assert t["P"] == {"reads": 2 * nn, "writes": 0}
    assert t["dP"] == {"reads": nn, "writes": nn}
    assert t["dS"] == {"reads": 2 * nn, "writes": nn}
    assert t["dQ"] == t["dK"] == t["dV"] == {"reads": 0, "writes": n * d}


@pytest.mark.parametrize("kw,needle", [
    (dict(order="col"), "Algorithm 3's fixed schedule"),
    (dict(precompute_d=False), "Algorithm 3's fixed schedule"),
    (dict(algo="standard-3pass"), "forward pass only"),
])
def test_standard_backward_parameters(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        attention_program(**{"n": 8, "d": 2, "algo": "standard", "pass_": "backward", **kw})
