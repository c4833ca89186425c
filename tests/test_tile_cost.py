"""Closed forms (toymachine.cost.tile) equal what the simulator counts, at random parameter
points; and the FlashAttention paper's asymptotics hold in them."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import simulate
from toymachine.cost.tile import Blocks, attention_tile_cost, paper_blocks
from toymachine.gen.tile import attention_program
from toymachine.machine import resolve_machine

H100 = resolve_machine("h100")


@st.composite
def points(draw):
    pass_ = draw(st.sampled_from(["forward", "backward"]))
    algo = draw(st.sampled_from(["standard", "fa1", "fa2"] if pass_ == "backward"
                                else ["standard", "standard-3pass", "fa1", "fa2"]))
    variants = ["exact"] if pass_ == "backward" else (["exact", "no-max"] if "standard" in algo
                                                      else ["exact", "no-max", "no-rescale"])
    return dict(
        n=draw(st.integers(1, 13)), d=draw(st.integers(1, 4)), algo=algo, pass_=pass_,
        batch=draw(st.integers(1, 2)), heads=draw(st.integers(1, 2)), causal=draw(st.booleans()),
        block_m=draw(st.integers(1, 6)), block_n=draw(st.integers(1, 6)), variant=draw(st.sampled_from(variants)),
        precompute_d=algo == "standard" or draw(st.booleans()),
        order="row" if algo == "standard" else draw(st.sampled_from(["row", "col"])),
        scale=draw(st.sampled_from([None, 1.0])))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(points())
def test_simulated_counts_equal_the_closed_forms(p):
    assert_counts_equal_the_closed_forms(p)


@st.composite
def split_points(draw):
    """The split backward (FlashAttention-2's three kernels), whole or one launch."""
    return dict(
        n=draw(st.integers(1, 13)), d=draw(st.integers(1, 4)), algo=draw(st.sampled_from(["fa1", "fa2"])),
        pass_="backward", order="split", batch=draw(st.integers(1, 2)), heads=draw(st.integers(1, 2)),
        causal=draw(st.booleans()), block_m=draw(st.integers(1, 6)), block_n=draw(st.integers(1, 6)),
        scale=draw(st.sampled_from([None, 1.0])),
        phase=draw(st.sampled_from([None, "preprocess", "dkdv", "dq", "dv", "dk"])))


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(split_points())
def test_split_counts_equal_the_closed_forms(p):
    assert_counts_equal_the_closed_forms(p)


@st.composite
def shape_points(draw):
    """Cross-attention (keys nk ≠ n, causal aligned bottom-right, so nk ≥ n when causal),
    grouped-query attention (kv_heads dividing heads) and dropout, every algorithm, pass and order."""
    base = draw(st.one_of(points(), split_points()))
    n = base["n"]
    causal = base["causal"]
    nk = draw(st.integers(n if causal else 1, 15))
    heads = draw(st.sampled_from([1, 2, 4, 6]))
    kv_heads = draw(st.sampled_from([k for k in (1, 2, 3, 6) if heads % k == 0]))
    return {**base, "nk": nk, "heads": heads, "kv_heads": kv_heads, "dropout": draw(st.sampled_from([0.0, 0.25])),
            "sram_rule": draw(st.sampled_from(["exact", "paper"]))}


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(shape_points())
def test_cross_and_grouped_counts_equal_the_closed_forms(p):
    assert_counts_equal_the_closed_forms(p)


def assert_counts_equal_the_closed_forms(p):
    """Everything the simulator counts equals the closed form (SRAM counted by the point's rule)."""
    machine = H100.with_(sram_rule=p.get("sram_rule", "exact"))
    r = simulate(attention_program(**p), machine, dtype="fp64", steps=False)
    c = attention_tile_cost(**p)
    assert dict(r.ops) == dict(c.ops)
    assert (r.dram_reads, r.dram_writes) == (c.reads, c.writes)
    assert {k: (v["reads"], v["writes"]) for k, v in r.extra["tile_traffic"].items()} == dict(c.traffic)
    assert r.extra["flops"] == {"matmul": c.flops_matmul, "other": c.flops_other}
    assert r.extra["sfu_ops"] == c.sfu_ops
    assert r.extra["sram_peak"] == c.sram_peak
    assert r.extra["hbm_footprint"] == c.hbm_footprint
    assert r.registers_used == c.registers
    assert r.cycles == pytest.approx(c.cycles(machine), rel=1e-12)
    assert r.extra["time_s"] == pytest.approx(c.time_s(H100), rel=1e-12)
    assert r.extra["intensity"]["flops_per_byte"] == pytest.approx(c.intensity(machine), rel=1e-12)


@pytest.mark.parametrize("n,d,b", [(64, 8, 16), (48, 4, 8), (40, 2, 20)])
def test_closed_forms_when_blocks_divide_n(n, d, b):
    """The module docstring's formulas in n, d, Tr, Tc (non-causal, Br = Bc = b dividing n)."""
    t = n // b
    kw = dict(n=n, d=d, block_m=b, block_n=b)
    fa2 = attention_tile_cost(algo="fa2", **kw)
    assert (fa2.reads, fa2.writes) == (n * d + 2 * t * n * d, n * d + n)
    fa1 = attention_tile_cost(algo="fa1", **kw)
    assert (fa1.reads, fa1.writes) == (2 * n * d + (2 * d + 2) * n * t, (d + 2) * n * t)
    std = attention_tile_cost(algo="standard", **kw)  # Algorithm 0: S and P each written once, read once
    assert (std.reads, std.writes) == (n * d + 2 * t * n * d + 2 * n * n, 2 * n * n + n * d + n)
    three = attention_tile_cost(algo="standard-3pass", **kw)  # the seed's 3-pass softmax reads S 3×
    assert (three.reads, three.writes) == (n * d + 2 * t * n * d + 4 * n * n, 2 * n * n + n * d + n)
    assert fa2.flops_matmul == n * n * (2 * d - 1) + 2 * n * n * d  # Q·Kᵀ (MAC_Z) and P·V (MAC)
    back = attention_tile_cost(algo="fa2", pass_="backward", order="col", **kw)
    assert back.reads == 2 * n * d + 2 * n * d + (3 * d + 2) * n * t  # D pre-pass, K V once, per pair
    assert back.writes == n + d * n * t + 2 * n * d


def test_causal_pair_sums():
    g = Blocks(n=10, br=4, bc=3, causal=True)
    pairs = [(i0, j0) for i0, i1 in g.rows() for j0, j1 in g.cols() if j0 < i1]
    masked = [(i0, j0) for i0, i1 in g.rows() for j0, j1 in g.cols() if j0 < i1 and j1 > i0 + 1]
    s = g.sums()
    assert s["P"] == len(pairs) and s["MP"] == len(masked)
    assert s["PRC"] == sum((min(10, i0 + 4) - i0) * (min(10, j0 + 3) - j0) for i0, j0 in pairs)

def test_fa1_traffic_is_theta_n2_d2_over_m():
    """FlashAttention Theorem 2: FA1 makes Θ(N²d²/M) HBM accesses. With the paper's blocks
    (Bc = ⌈M/4d⌉) doubling M halves the dominant term, and the count is ≈ 8N²d²/M."""
    n, d = 4096, 64

    def dominant(m):
        br, bc = paper_blocks(d, m)
        c = attention_tile_cost(n=n, d=d, algo="fa1", block_m=br, block_n=bc)
        return c.reads + c.writes - 2 * n * d  # minus the compulsory K, V reads

    for m in (2 ** 14, 2 ** 15, 2 ** 16):
        assert dominant(2 * m) / dominant(m) == pytest.approx(0.5, rel=1e-9)
        assert dominant(m) / (n * n * d * d / m) == pytest.approx(4 * (3 * d + 4) / d, rel=1e-9)


def test_standard_traffic_is_theta_nd_plus_n2():
    """Standard attention: Θ(Nd + N²) — doubling N quadruples the N² term, whatever the blocks;
    Algorithm 0 moves 4N² words of S and P (each written once, read once), the 3-pass variant 6N²."""
    d, b = 64, 64

    def quadratic(n, algo):
        c = attention_tile_cost(n=n, d=d, algo=algo, block_m=b, block_n=b)
        return c.reads + c.writes - (n * d + 2 * (n // b) * n * d + n * d + n)

    for n in (512, 1024, 2048):
        assert quadratic(2 * n, "standard") == 4 * quadratic(n, "standard") == 4 * 4 * n * n
        assert quadratic(2 * n, "standard-3pass") == 4 * quadratic(n, "standard-3pass") == 4 * 6 * n * n


def test_fa2_beats_fa1_and_standard_on_hbm():
    for n in (256, 1024, 4096):
        kw = dict(n=n, d=64, block_m=128, block_n=64)
        traffic = {a: (lambda c: c.reads + c.writes)(attention_tile_cost(algo=a, **kw))
                   for a in ("standard", "fa1", "fa2")}
        assert traffic["fa2"] < traffic["fa1"] < traffic["standard"]


@pytest.mark.parametrize("n,d,b", [(64, 8, 16), (48, 4, 8), (40, 2, 20)])
def test_split_closed_forms_when_blocks_divide_n(n, d, b):
    """The split backward's formula (module docstring), non-causal, Br = Bc = b dividing n:
    preprocess 2nd | n; dkdv 2nd + (2d + 2)·n·Tc | 2nd; dq (2d + 2)·n + 2d·n·Tr | nd."""
    t = n // b
    kw = dict(n=n, d=d, algo="fa2", pass_="backward", order="split", block_m=b, block_n=b)
    words = {ph: (lambda c: (c.reads, c.writes))(attention_tile_cost(phase=ph, **kw))
             for ph in ("preprocess", "dkdv", "dq")}
    assert words == {"preprocess": (2 * n * d, n), "dkdv": (2 * n * d + (2 * d + 2) * n * t, 2 * n * d),
                     "dq": ((2 * d + 2) * n + 2 * d * n * t, n * d)}
    whole = attention_tile_cost(**kw)
    assert (whole.reads, whole.writes) == (4 * n * d + (2 * d + 2) * (n * t + n) + 2 * d * n * t, 3 * n * d + n)
    # 7 products per score (dkdv: Q·Kᵀ, Pᵀ·dO, dO·Vᵀ, dSᵀ·Q; dq: Q·Kᵀ, dO·Vᵀ, dS·K), the other orders 5
    assert whole.flops_matmul == n * n * (14 * d - 4)
    assert attention_tile_cost(**{**kw, "order": "col"}).flops_matmul == n * n * (10 * d - 2)


def test_split_phases_add_up_to_the_whole_backward():
    kw = dict(n=11, d=3, algo="fa2", pass_="backward", order="split", batch=2, heads=3, causal=True,
              block_m=4, block_n=3)
    whole = attention_tile_cost(**kw)
    parts = [attention_tile_cost(phase=ph, **kw) for ph in ("preprocess", "dkdv", "dq")]
    assert whole.reads == sum(c.reads for c in parts) and whole.writes == sum(c.writes for c in parts)
    ops = {}
    for c in parts:
        for op, k in c.ops.items():
            ops[op] = ops.get(op, 0) + k
    ops["FILL"] -= 2  # the τ tile: once per program
    assert dict(whole.ops) == ops
    assert whole.flops_matmul == sum(c.flops_matmul for c in parts)
