"""Arithmetic intensity (seed 000's quizzes "Arithmetic Intensity: Inner Product vs. Outer
Product" and "…: Flash Attention", and the backward section's "the Dᵢ trick doubles the
arithmetic intensity"): FLOPs per word (per byte on the tile machine) of DRAM/HBM traffic, in
every run's summary and JSON, in sweeps, and in the closed forms — and the seed's claims held
to the counts."""

import pytest
from conftest import PROGRAMS

from toymachine import simulate
from toymachine.cost.tile import attention_tile_cost
from toymachine.experiments.sweep import sweep, sweep_report
from toymachine.machine import resolve_machine
from toymachine.render import render

H100 = resolve_machine("h100")


def test_matmul_quiz_inner_vs_outer_product():
    """2×2 matmul: 4 MAC_Z (1 FLOP) + 4 MAC (2 FLOPs) = 12 FLOPs either way; the inner product (3
    registers) moves 13 + 4 = 17 words, the outer product (6 registers) 10 + 4 = 14."""
    inner = simulate((PROGRAMS / "matmul_inner_2x2.asm").read_text(), steps=False)
    outer = simulate((PROGRAMS / "matmul_outer_2x2.asm").read_text(), steps=False)
    assert inner.extra["intensity"] == {"flops": 12, "words": 17, "bytes": 68, "flops_per_word": 12 / 17,
                                        "flops_per_byte": 12 / 68}
    assert outer.extra["intensity"]["flops_per_word"] == 12 / 14
    assert "0.7059 FLOPs/word (0.1765 per byte)" in render(inner, "table", steps=False)


def test_matmul_sweep_shows_intensity_and_registers_bound_it():
    rows = sweep("matmul", {"n": "2,8", "registers": "3,6", "schedule": "inner,outer"})
    by = {(r.params["n"], r.params["registers"], r.params["schedule"]): r.intensity for r in rows}
    assert by[(2, 3, "inner")] == 12 / 17 and by[(2, 6, "outer")] == 12 / 14
    for n in (2, 8):  # 3 registers: every product reloads an operand, intensity stays near 1 FLOP/word
        assert by[(n, 3, "inner")] < 1 and by[(n, 6, "outer")] > by[(n, 3, "outer")]
    assert "FLOPs/word" in sweep_report(rows, "matmul").sections[0].headers


def test_flash_attention_quiz_intensity_grows_with_the_block():
    """FA2 reads K, V once per query block: ≈ 4n²d FLOPs over ≈ 2·n·d·n/Br words, about 2·Br
    FLOPs per word — doubling Br doubles it; standard attention is capped near 4d/(4 + 2d/Br)
    FLOPs per word by its n² words of S and P, whatever n."""
    n, d = 4096, 64

    def fa2(br):
        return attention_tile_cost(n=n, d=d, algo="fa2", block_m=br, block_n=64).intensity(H100)

    for br in (32, 64, 128):
        assert fa2(2 * br) / fa2(br) == pytest.approx(2, rel=0.05)
        assert fa2(br) * H100.word_bytes == pytest.approx(2 * br, rel=0.1)  # FLOPs per word
    std = [attention_tile_cost(n=m, d=d, algo="standard", block_m=64, block_n=64).intensity(H100)
           for m in (1024, 4096)]
    assert std[1] == pytest.approx(std[0], rel=0.02) and std[0] < fa2(64) / 2
    three = attention_tile_cost(n=n, d=d, algo="standard-3pass", block_m=64, block_n=64).intensity(H100)
    assert three < std[1]  # the 3-pass softmax reads S twice more: lower intensity


def test_the_d_trick_halves_k_v_loads_but_does_not_double_intensity():
    """Seed 000: "This doubles the arithmetic intensity of the backward pass." Counted: the trick
    halves the K and V words (exactly), but it also drops the second recomputation of P and dP
    (~29% of the FLOPs), so FLOPs per byte move by 0.92× (row order) and 1.04× (column order);
    counting only the FLOPs both must do, 1.30× and 1.46× — not 2×."""
    kw = dict(n=1024, d=64, algo="fa2", pass_="backward", block_m=64, block_n=64)
    for order, ratio, useful in (("row", 0.925, 1.30), ("col", 1.044, 1.46)):
        with_d = attention_tile_cost(order=order, precompute_d=True, **kw)
        without = attention_tile_cost(order=order, precompute_d=False, **kw)
        for a in ("K", "V"):
            assert 2 * with_d.traffic[a][0] == without.traffic[a][0]
        assert with_d.intensity(H100) / without.intensity(H100) == pytest.approx(ratio, abs=0.001)
        same_work = with_d.flops / ((without.reads + without.writes) * H100.word_bytes)
        assert with_d.intensity(H100) / same_work == pytest.approx(useful, abs=0.01)


def test_intensity_in_json_for_every_run():
    r = simulate((PROGRAMS / "softmax_online.asm").read_text(), steps=False)
    ai = r.to_dict(steps=False)["intensity"]
    assert ai["words"] == r.dram_reads + r.dram_writes and ai["flops_per_word"] == ai["flops"] / ai["words"]
    empty = simulate("FILL 1, 2, 2, T0\nEXP T0, T1\n", steps=False)
    assert empty.extra["intensity"]["flops"] == 4 and empty.extra["intensity"]["flops_per_word"] is None
