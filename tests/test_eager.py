"""Eager attention on the tile machine (``gen.tile.eager``, ``cost.tile.eager``): the closed form
equals the simulation on small shapes, the values equal numpy's, the blocks fit the SRAM."""

from __future__ import annotations

import numpy as np
import pytest

from toymachine.cost.tile import attention_tile_cost
from toymachine.cost.tile.eager import eager_blocks
from toymachine.errors import ConfigError
from toymachine.gen.tile import (
    attention_backward_reference,
    attention_program,
    attention_reference,
)
from toymachine.machine import resolve_machine
from toymachine.sim import simulate
from toymachine.sim.memory import random_block

SHAPES = [  # n, nk, d, Br, Bc, causal, dropout, pass, scale, batch, heads
    (8, 8, 4, 4, 4, False, 0.0, "forward", None, 1, 1),
    (10, 10, 3, 4, 3, True, 0.2, "forward", None, 1, 2),
    (10, 12, 3, 4, 5, True, 0.2, "backward", None, 2, 1),
    (7, 7, 2, 3, 2, False, 0.0, "backward", 1.0, 1, 1),
    (9, 9, 4, 4, 4, True, 0.0, "backward", None, 1, 3),
    (5, 5, 3, 5, 5, False, 0.0, "forward", 1.0, 1, 1),
]


@pytest.mark.parametrize("n,nk,d,br,bc,causal,dropout,pass_,scale,batch,heads", SHAPES)
def test_eager_closed_form_equals_simulation(n, nk, d, br, bc, causal, dropout, pass_, scale, batch, heads):
    cross = None if nk == n else nk
    kw = dict(n=n, d=d, nk=cross, algo="eager", pass_=pass_, block_m=br, block_n=bc, causal=causal, dropout=dropout,
              scale=scale, batch=batch, heads=heads)
    r = simulate(attention_program(**kw), resolve_machine("toy"), steps=False)
    c = attention_tile_cost(**kw)
    assert dict(r.ops) == dict(c.ops)
    assert (r.dram_reads, r.dram_writes) == (c.reads, c.writes)
    assert r.extra["sram_peak"] == c.sram_peak
    assert sum(r.extra["flops"].values()) == c.flops
    assert r.registers_used == c.registers
    assert r.extra["memory_peak"]["hbm"] == c.hbm_footprint * resolve_machine("toy").word_bytes


def test_eager_moves_every_score_matrix_through_hbm_once_per_op():
    """Forward (4 + 2·(scale + mask + dropout))·n², backward (7 + 2·(scale + dropout))·n² words of
    the score matrices, whatever the blocks: the op-by-op count, independent of M."""
    n, d = 64, 8
    for causal, dropout, k_fwd, k_bwd in ((False, 0.0, 6, 9), (True, 0.1, 10, 11)):
        for br, bc in ((8, 8), (16, 32)):
            costs = {p: attention_tile_cost(n=n, d=d, algo="eager", pass_=p, block_m=br, block_n=bc, causal=causal,
                                            dropout=dropout) for p in ("forward", "backward")}
            square = {p: sum(rw for a, (r, w) in c.traffic.items() for rw in (r, w) if a in ("S", "P", "Pd", "dP", "dS"))
                      for p, c in costs.items()}
            assert square == {"forward": k_fwd * n * n, "backward": k_bwd * n * n}


@pytest.mark.parametrize("causal,dropout", [(False, 0.0), (True, 0.25)])
def test_eager_values_equal_numpy(causal, dropout):
    n, d = 9, 4
    kw = dict(n=n, d=d, algo="eager", block_m=4, block_n=3, causal=causal, dropout=dropout, with_data=True)
    fwd = simulate(attention_program(**kw), resolve_machine("toy"), steps=False)
    q, k, v, do = (random_block(0, x, (n, d)) for x in ("Q", "K", "V", "dO"))
    np.testing.assert_allclose(fwd.array("O"), attention_reference(q, k, v, causal=causal, dropout=dropout)["O"],
                               atol=1e-12)
    bwd = simulate(attention_program(**kw, pass_="backward"), resolve_machine("toy"), steps=False)
    grads = attention_backward_reference(q, k, v, do, causal=causal, dropout=dropout)
    for name in ("dQ", "dK", "dV"):
        np.testing.assert_allclose(bwd.array(name), grads[name], atol=1e-12)


def test_eager_blocks_from_sram_fit_and_run():
    """From M: the largest power-of-two square matmul tile, the softmax's rows shrunk until the
    whole program fits — and the program runs on a machine of that SRAM."""
    sram = 3000
    br, bc, rows, how = eager_blocks(pass_="backward", n=48, nk=48, d=8, sram_words=sram, block_m=None,
                                     block_n=None, heads=1, scaled=True, dropout=False)
    assert (br, bc) == (32, 32) and rows < br and "power-of-two" in how
    prog = attention_program(n=48, d=8, algo="eager", pass_="backward", sram_words=sram)
    r = simulate(prog, resolve_machine("toy").with_(sram_words=sram), steps=False)
    assert r.extra["sram_peak"] <= sram


def test_eager_refuses_what_it_has_no_use_for():
    with pytest.raises(ConfigError) as e:
        attention_program(n=8, d=4, algo="eager", pass_="backward", order="col")
    assert e.value.hint
    with pytest.raises(ConfigError):
        attention_program(n=8, d=4, algo="eager", heads=4, kv_heads=2)
    with pytest.raises(ConfigError):
        attention_program(n=64, d=4, algo="eager", sram_words=40)
