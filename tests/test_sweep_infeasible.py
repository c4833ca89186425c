"""A sweep goes on past an infeasible point (its row says why; --strict stops), and a point too big
to simulate is costed by its closed form (its row says so)."""

from __future__ import annotations

import pytest

from toymachine.cost.tile import attention_tile_cost
from toymachine.errors import ToyMachineError
from toymachine.experiments.simulable import CHECK_ELEMENTS
from toymachine.experiments.sweep import sweep, sweep_report
from toymachine.machine import resolve_machine


def test_sweep_reports_an_infeasible_point_and_goes_on():
    rows = sweep("attention-tile", {"n": 64, "d": 16, "algo": ["fa2"], "block_m": "16,64", "block_n": 32, "sram": 3000})
    assert [r.error is None for r in rows] == [True, False]
    assert rows[1].error["kind"] == "ConfigError" and "SRAM" in rows[1].error["message"]
    assert rows[0].matches is True
    table = sweep_report(rows, "attention-tile").sections[0]
    assert "why" in table.keys


def test_strict_sweep_stops_at_the_infeasible_point():
    with pytest.raises(ToyMachineError):
        sweep("attention-tile", {"n": 64, "d": 16, "block_m": "16,64", "block_n": 64, "sram": 3000}, strict=True)


def test_points_too_big_to_simulate_take_the_closed_form():
    n = 4096  # one head: 16.8M score elements > CHECK_ELEMENTS
    assert n * n > CHECK_ELEMENTS
    rows = sweep("attention-tile", {"n": f"64,{n}", "d": 64, "algo": "fa1,fa2", "block_m": 64, "block_n": 64},
                 machine=resolve_machine("a100"))
    assert [r.source for r in rows] == ["sim", "sim", "closed form", "closed form"]
    assert [r.matches for r in rows] == [True, True, None, None]
    for r in rows[2:]:
        c = attention_tile_cost(n=n, d=64, algo=r.params["algo"], block_m=64, block_n=64)
        assert (r.reads, r.writes, r.sram_peak) == (c.reads, c.writes, c.sram_peak)
        assert r.matches is None and r.time_s == pytest.approx(c.time_s(resolve_machine("a100")))


def test_a_closed_form_point_that_overflows_sram_says_so():
    rows = sweep("attention-tile", {"n": 4096, "d": 64, "block_m": "64,4096"}, machine=resolve_machine("a100"))
    assert rows[0].error is None and "SRAM" in rows[1].error["message"]
