"""Defaults that follow the algorithm: FlashAttention-1's backward runs Algorithm 4's loop order,
blocks come from the machine's SRAM by Algorithm 1's rule (shrunk to fit), and the program header
and the sweep's rows print what the defaults chose."""

from __future__ import annotations

from toymachine.cost.tile import attention_tile_cost, default_order
from toymachine.experiments.sweep import sweep
from toymachine.gen.tile import attention_program, resolve_blocks
from toymachine.machine import resolve_machine


def test_fa1_backward_defaults_to_algorithm_4s_column_order():
    assert default_order("fa1") == "col" and default_order("fa2") == "row" and default_order("fa1", "row") == "row"
    kw = dict(n=16, d=4, algo="fa1", pass_="backward", block_m=4, block_n=8)
    default, col = attention_program(**kw), attention_program(**kw, order="col")
    assert default.instrs == col.instrs
    assert "column order" in default.header[1] and "Algorithm 4" in default.header[1]
    assert "Algorithm 4" not in col.header[1]  # given, not defaulted: nothing to explain
    assert attention_tile_cost(**kw).ops == attention_tile_cost(**kw, order="col").ops


def test_sweep_sizes_blocks_by_the_machines_sram_and_shows_them():
    a100 = resolve_machine("a100")
    rows = sweep("attention-tile", {"n": 256, "d": 64, "algo": "fa1,fa2", "pass": "backward"}, machine=a100)
    for r in rows:
        br, bc, _ = resolve_blocks(n=256, d=64, algo=r.params["algo"], pass_="backward", sram_words=a100.sram_words,
                                   order=default_order(r.params["algo"]))
        assert (r.params["block_m"], r.params["block_n"]) == (br, bc)
        assert r.params["order"] == default_order(r.params["algo"]) and r.matches is True
