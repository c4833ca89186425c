"""Block-size search for the tile machine: exhaustive check, simulated winner, the paper's rule."""

import json

import pytest

from toymachine import ConfigError
from toymachine.cost import attention_tile_cost, paper_blocks
from toymachine.machine import resolve_machine
from toymachine.optimize import block_table, block_table_report, blocks_report, optimize_blocks
from toymachine.render import render_report


def brute_force(n, d, M, pass_="forward", causal=False, algos=("fa1", "fa2"), orders=("",), key="traffic",
                machine=None):
    """Every (Br, Bc) in 1..n for every loop order, straight from the closed form."""
    best = None
    for algo in algos:
        for order in orders:
            kw = {"order": order} if order else {}
            for br in range(1, n + 1):
                for bc in range(1, n + 1):
                    c = attention_tile_cost(n=n, d=d, algo=algo, pass_=pass_, causal=causal, block_m=br,
                                            block_n=bc, **kw)
                    if c.sram_peak > M:
                        continue
                    value = c.reads + c.writes if key == "traffic" else c.time_s(machine)
                    best = value if best is None else min(best, value)
    return best


@pytest.mark.parametrize("n,d,M", [(16, 4, 120), (24, 4, 300), (20, 3, 200), (32, 2, 150)])
def test_forward_optimum_equals_every_pair(n, d, M):
    s = optimize_blocks(n=n, d=d, sram_words=M)
    assert s.best.traffic == brute_force(n, d, M)
    assert s.verified["matches_closed_form"]


@pytest.mark.parametrize("n,d,M", [(12, 3, 150), (16, 2, 120)])
def test_causal_optimum_equals_every_pair(n, d, M):
    s = optimize_blocks(n=n, d=d, sram_words=M, causal=True)
    assert s.best.traffic == brute_force(n, d, M, causal=True)
    assert s.verified["matches_closed_form"]


@pytest.mark.parametrize("order", ["row", "col", "split"])
def test_backward_orders(order):
    s = optimize_blocks(n=12, d=2, sram_words=200, pass_="backward", order=order)
    assert s.best.order == order
    assert s.best.traffic == brute_force(12, 2, 200, pass_="backward", orders=(order,))
    assert s.verified["matches_closed_form"]


def test_backward_searches_every_loop_order():
    s = optimize_blocks(n=12, d=2, sram_words=200, pass_="backward")
    assert {c.loop for c in s.per_loop} == {f"{a}/{o}" for a in ("fa1", "fa2") for o in ("row", "col", "split")}
    assert s.best.traffic == min(c.traffic for c in s.per_loop)


def test_time_objective_on_a_machine_with_rates():
    a100 = resolve_machine("a100")
    s = optimize_blocks(n=32, d=4, sram_words=400, machine=a100)
    assert s.objective == "time_s"
    assert s.best.time_s == pytest.approx(brute_force(32, 4, 400, key="time_s", machine=a100))


@pytest.mark.slow
def test_more_sram_never_costs_more():
    traffic = [optimize_blocks(n=64, d=8, sram_words=M, verify=False).best.traffic for M in range(300, 5000, 300)]
    assert all(b <= a for a, b in zip(traffic, traffic[1:]))


def test_paper_rule_beside_the_optimum():
    rows = block_table(n=64, d=8, sram_list=[300, 600, 1200, 4800])
    fa1 = {r["sram_words"]: r for r in rows if r["loop"] == "fa1"}
    # small SRAM: the rule (Q_i, K_j, V_j, O_i ≈ M/4 each) is not optimal for FA1 — long K/V blocks are
    assert not fa1[600]["paper_optimal"] and fa1[600]["best"].traffic < fa1[600]["paper"].traffic
    # enough SRAM for K and V whole (Bc = n): the rule's blocks reach the optimum
    assert fa1[4800]["paper_optimal"]
    for r in rows:  # the rule, as the generator applies it, is never better than the optimum
        assert r["paper"] is None or r["paper"].traffic >= r["best"].traffic
    br, bc = paper_blocks(8, 4800)
    assert (fa1[4800]["paper"].br, fa1[4800]["paper"].bc) == (min(br, 64), min(bc, 64))


@pytest.mark.slow
def test_bound_and_dict():
    s = optimize_blocks(n=64, d=8, sram_words=600)
    assert s.bound == 64 * 64 * 8 * 8 / 600
    d = s.to_dict()
    json.dumps(d)
    assert d["ratio_to_bound"] == s.best.traffic / s.bound and d["verified"]["matches_closed_form"]
    for fmt in ("table", "markdown", "csv", "latex", "html", "json"):
        assert render_report(blocks_report(s), fmt)
        assert render_report(block_table_report(block_table(n=64, d=8, sram_list=[600]), n=64, d=8), fmt)


def test_too_little_sram_is_a_clear_error():
    with pytest.raises(ConfigError) as exc:
        optimize_blocks(n=64, d=8, sram_words=20)
    assert exc.value.key == "sram" and exc.value.hint == "use a larger sram"


def test_order_needs_the_backward_pass():
    with pytest.raises(ConfigError):
        optimize_blocks(n=64, d=8, sram_words=600, order="row")
