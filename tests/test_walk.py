"""`toym walk` (experiments.walk): seed 001's walk as slides, and its second example's printout —
O after every (i, j) visit — against an independent numpy re-implementation of the seed's torch code."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from conftest import ROOT

from toymachine import resolve_machine, simulate
from toymachine.experiments.walk import store_visits, walk_slides
from toymachine.gen.tile import attention_program

DATA = ROOT / "examples" / "data" / "seed001_example2.yaml"
# Seed 001's printout (O_BLOCKS[0], O_BLOCKS[1] after each "Attn : Q{i}xK{j}"), 4 decimals as torch prints.
SEED_PRINTOUT = [
    ("Q0xK0", [[-0.7460, -0.4906, 0.8255, 0.6993], [0, 0, 0, 0]]),
    ("Q1xK0", [[-0.7460, -0.4906, 0.8255, 0.6993], [-0.7460, -0.4906, 0.8255, 0.6993]]),
    ("Q0xK1", [[-0.7637, -0.4576, 0.7968, 0.6991], [-0.7460, -0.4906, 0.8255, 0.6993]]),
    ("Q1xK1", [[-0.7637, -0.4576, 0.7968, 0.6991], [-0.7522, -0.4790, 0.8155, 0.6992]]),
]


def seed_blocks_printout(Q, K, V, block=1):
    """Seed 001's tiled loop, transcribed to numpy (NEG_INF, EPSILON and all): O after each visit."""
    NEG_INF, EPSILON = -1e10, 1e-10
    n = Q.shape[0]
    O, l, m = np.zeros_like(Q), np.zeros((n, 1)), np.full((n, 1), NEG_INF)
    out = []
    for j in range(n // block):
        Kj, Vj = K[j * block:(j + 1) * block], V[j * block:(j + 1) * block]
        for i in range(n // block):
            rows = slice(i * block, (i + 1) * block)
            Qi, Oi, li, mi = Q[rows], O[rows].copy(), l[rows].copy(), m[rows].copy()
            S_ij = Qi @ Kj.T
            m_block_ij = S_ij.max(-1, keepdims=True)
            P_ij = np.exp(S_ij - m_block_ij)
            l_block_ij = P_ij.sum(-1, keepdims=True) + EPSILON
            mi_new = np.maximum(m_block_ij, mi)
            li_new = np.exp(mi - mi_new) * li + np.exp(m_block_ij - mi_new) * l_block_ij
            O[rows] = (li / li_new) * np.exp(mi - mi_new) * Oi + (np.exp(m_block_ij - mi_new) / li_new) * (P_ij @ Vj)
            l[rows], m[rows] = li_new, mi_new
            out.append((f"Q{i}xK{j}", O.copy()))
    return out


def _example2():
    data = yaml.safe_load(DATA.read_text())
    prog = attention_program(n=2, d=4, algo="fa1", block_m=1, block_n=1, scale=1)
    return data, simulate(prog, data=data, steps=True)


def test_second_example_visits_equal_the_seeds_code_and_printout():
    data, result = _example2()
    Q, K, V = (np.array(data[k], dtype=float) for k in "QKV")
    visits = store_visits(result, "O")
    reference = seed_blocks_printout(Q, K, V)
    assert [f"Q{v.pair[0]}xK{v.pair[1]}" for v in visits] == [name for name, _ in reference]
    for v, (_, want) in zip(visits, reference):
        np.testing.assert_allclose(v.value, want, rtol=0, atol=1e-9)  # EPSILON = 1e-10 is the only difference
    assert [(name, np.round(o, 4).tolist()) for name, o in reference] == [
        (name, np.array(o, dtype=float).tolist()) for name, o in SEED_PRINTOUT]
    S = Q @ K.T
    P = np.exp(S - S.max(1, keepdims=True))
    np.testing.assert_allclose(visits[-1].value, (P / P.sum(1, keepdims=True)) @ V, rtol=1e-12)


def test_walk_command_prints_the_seed_printout(toym, tmp_path):
    prog = tmp_path / "ex2.asm"
    code, _, _ = toym("gen", "attention", "--level", "tile", "--algo", "fa1", "--n", 2, "--d", 4, "--block-m", 1,
                      "--block-n", 1, "--scale", 1, "-o", prog)
    assert code == 0
    code, out, _ = toym("walk", prog, "--data", DATA, "-f", "json")
    assert code == 0
    rows = json.loads(out)["o after each visit"]
    fmt = lambda row: "[" + ", ".join(f"{x:.4f}" for x in row) + "]"  # noqa: E731
    assert [(r["Attn"], r["O[0]"], r["O[1]"]) for r in rows] == [(a, fmt(o[0]), fmt(o[1])) for a, o in SEED_PRINTOUT]


def test_seed001_walk_is_the_animation():
    """programs/fa1_n5_d3.asm on toysram-paper: seed 001's slides — for each K_j, V_j: for each Q_i:
    load Q_i, O_i, ℓ_i, m_i; compute; write back — with Q_i, K_j, V_j, O_i counted against M = 59."""
    machine = resolve_machine("toysram-paper")
    result = simulate((ROOT / "programs" / "fa1_n5_d3.asm").read_text(), machine, steps=True)
    slides = walk_slides(result)
    inner = ["load", "compute on chip", "write back"]
    assert [s.kind for s in slides] == (["load K_j, V_j"] + inner * 2) * 2
    assert [s.pair for s in slides if s.kind == "write back"] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    br, bc, d = 3, 4, 3
    assert slides[0].onchip == 2 * bc * d  # K_0, V_0
    assert slides[1].onchip == 2 * bc * d + 2 * br * d == 42  # + Q_0, O_0: the paper's count
    assert max(s.onchip for s in slides) <= 59
    assert slides[-1].cycles == result.cycles and slides[-1].last == result.instructions == 104
    assert slides[2].what.startswith("compute S_ij")


@pytest.mark.parametrize("args, needle", [(["--watch", "Z"], "no array 'Z'")])
def test_walk_errors(toym, args, needle):
    code, _, err = toym("walk", str(ROOT / "programs" / "fa1_n5_d3.asm"), "--machine", "toysram-paper", *args)
    assert code == 2 and needle in err


@pytest.mark.slow
def test_walk_refuses_long_runs(toym, tmp_path):
    prog = tmp_path / "big.asm"
    toym("gen", "attention", "--level", "tile", "--algo", "fa1", "--n", 64, "--d", 2, "--block-m", 1, "--block-n", 1,
         "-o", prog)
    code, _, err = toym("walk", prog)
    assert code == 2 and "at most 5,000" in err


def test_small_tiles_show_their_values_in_tables(toym):
    """Step tables (markdown, LaTeX, HTML) show a tile of ≤ 16 elements as its values, rounded to 3
    significant digits (seed 001's 3 × 4 blocks); bigger ones by shape."""
    from toymachine.render.cells import text_of

    t = np.array([[0.83741, -0.14351], [1.63489, 0.498]])
    assert text_of(t) == "[[0.837, -0.144], [1.63, 0.498]]"
    assert text_of(np.zeros((5, 4))) == "tile(5, 4)"
    code, out, _ = toym("run", str(ROOT / "programs" / "fa1_n5_d3.asm"), "--machine", "toysram-paper", "-f", "markdown")
    Q = simulate((ROOT / "programs" / "fa1_n5_d3.asm").read_text(), resolve_machine("toysram-paper")).memory["Q"]
    first = "[" + ", ".join("[" + ", ".join(f"{x:.3g}" for x in row) + "]" for row in np.asarray(Q)[0:3]) + "]"
    assert code == 0 and f"| LOAD Q[0:3, :], T0 | {first} |" in out


def test_walk_page_is_the_slides(toym, tmp_path):
    """`toym walk -f html`: one frame per slide, the words on chip against M = 59, O after each slide."""
    page = tmp_path / "walk.html"
    code, _, _ = toym("walk", str(ROOT / "programs" / "fa1_n5_d3.asm"), "--machine", "toysram-paper", "-f", "html",
                      "-o", page)
    data = json.loads(page.read_text().split('id="walk">', 1)[1].split("</script>", 1)[0])
    result = simulate((ROOT / "programs" / "fa1_n5_d3.asm").read_text(), resolve_machine("toysram-paper"), steps=True)
    slides = walk_slides(result)
    assert code == 0 and data["cap"] == 59 and len(data["slides"]) == len(slides) == 14
    assert [f["onchip"] for f in data["slides"]] == [s.onchip for s in slides]
    final = np.asarray(result.memory["O"])
    assert data["slides"][-1]["array"] == [[f"{x:.4f}" for x in row] for row in final.tolist()]
    assert data["slides"][0]["array"] == [["0.0000"] * 3] * 5  # O starts at zero in HBM


def test_cycle_level_machines_count_whole_macs(toym, tmp_path):
    """toysram does one MAC a cycle: a length-k dot product is k multiply-adds, k cycles — not 2k − 1
    FLOPs at 2 a cycle. Seed 001's walk ends on a whole cycle."""
    prog = tmp_path / "ex2.asm"  # 4 pairs × (S_ij: 1×4·4×1, 4 MACs + P̃_ij·V_j: 1×1·1×4, 4 MACs) = 32 MACs
    toym("gen", "attention", "--level", "tile", "--algo", "fa1", "--n", 2, "--d", 4, "--block-m", 1, "--block-n", 1,
         "--scale", 1, "-o", prog)
    code, out, _ = toym("run", prog, "--machine", "toysram", "--no-steps")
    line = next(x for x in out.splitlines() if x.lstrip().startswith("cycles"))
    assert code == 0 and "tensor 32 " in line and "averages" not in line
    result = simulate((ROOT / "programs" / "fa1_n5_d3.asm").read_text(), resolve_machine("toysram-paper"), steps=True)
    slides = walk_slides(result)
    assert all(float(s.cycles).is_integer() for s in slides) and slides[-1].cycles == result.cycles
    assert result.extra["cycle_breakdown"]["tensor"] == 150  # 245 FLOPs + 55 elements MAC_Z wrote = 150 MACs


def test_bandwidth_models_say_their_cycles_are_averages(toym, tmp_path):
    prog = tmp_path / "ex2.asm"
    toym("gen", "attention", "--level", "tile", "--algo", "fa1", "--n", 2, "--d", 4, "--block-m", 1, "--block-n", 1,
         "-o", prog)
    code, out, _ = toym("run", prog, "--machine", "a100", "--no-steps")
    line = next(x for x in out.splitlines() if x.lstrip().startswith("cycles"))
    assert code == 0 and "averages" in line and "time is below" in line
