"""The README and the docs pages cannot drift: every figure they quote from a command is produced here by
that command. (The figures moved from the README into the docs pages — docs/how-to/numerics.md,
docs/explanation/intensity.md, docs/how-to/generate.md … — and are checked wherever they are.)

* **Figure tables**: a table after ``<!-- figure: toym … | columns: a, b, … -->`` is that
  command's output (``-f csv``) in those columns, row for row. One tolerance, for numbers below
  1e-14 (fp64 round-off): they must both be below 1e-14 — their last digits depend on the CPU's
  BLAS kernels (OpenBLAS picks them at run time), e.g. ``toym numerics``'s no-max fp64 row is
  7.77e-16 on this machine's AMD EPYC and 8.33e-16 on another x86-64 host.
* **Claims**: each function below runs a command (or the library call behind it) and builds the
  README's sentence from what it prints; the sentence must appear in the README verbatim. A
  change that alters a figure fails here until the README says the new one.

Not covered, on purpose: the GPU benchmark and ``verify-gpu`` figures (measured on a GPU, in
kernels_gpu/PERFORMANCE.md) and the Performance section's timings (benchmark scripts print them).
"""

import csv
import io
import re
import shlex
import sys

import numpy as np
import pytest
from conftest import PROGRAMS, ROOT

from toymachine import simulate
from toymachine.experiments.numerics import numerics_table
from toymachine.gen import matmul_program, variance_program
from toymachine.gen.tile import attention_program
from toymachine.machine import resolve_machine

sys.path.insert(0, str(ROOT / "docs"))
from docgen.pages import english_pages  # noqa: E402

# the README and every English docs page (translations quote the same commands, not these sentences)
README = "\n".join(p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *english_pages()])
FIGURE = re.compile(r"<!-- figure: (toym [^|]*?) \| columns: (.*?) -->\n((?:\|.*\n)+)")
FIGURES = FIGURE.findall(README)
ROUNDOFF = 1e-14


def _cells(line: str) -> list[str]:
    inner = line.strip()[1:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def _same(readme: str, got: str) -> bool:
    if readme == got:
        return True
    try:
        a, b = float(readme), float(got)
    except ValueError:
        return False
    return abs(a) < ROUNDOFF and abs(b) < ROUNDOFF


def test_the_readme_has_figure_tables():
    assert len(FIGURES) >= 6


@pytest.mark.slow
@pytest.mark.parametrize("command,columns,table", FIGURES, ids=[f[0] for f in FIGURES])
def test_figure_table_is_the_commands_output(toym, command, columns, table):
    code, out, err = toym(*shlex.split(command)[1:], "-f", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    names = [c.strip() for c in columns.split(", ")]
    lines = table.strip().splitlines()
    assert _cells(lines[0]) == names
    want = [[r[c] for c in names] for r in rows]
    got = [_cells(line) for line in lines[2:]]
    assert len(got) == len(want), f"{command}: the README has {len(got)} rows, the command prints {len(want)}"
    for readme_row, command_row in zip(got, want):
        assert all(_same(a, b) for a, b in zip(readme_row, command_row)), (
            f"{command}: README row {readme_row} but the command prints {command_row}")


# -- claims: sentences built from what the commands print ---------------------------------------------
def run(name: str, **kw):
    return simulate((PROGRAMS / name).read_text(), steps=False, **kw)


def claims_programs():
    c00, inner, outer = run("c00.asm"), run("matmul_inner_2x2.asm"), run("matmul_outer_2x2.asm")
    yield f"runs the seed's {outer.cycles}-cycle outer-product matmul"
    yield f"| {c00.cycles} cycles |"
    yield f"| {inner.cycles} cycles, {inner.ops['LOAD']} LOADs |"
    yield f"| {outer.cycles} cycles, {outer.ops['LOAD']} LOADs |"
    yield f"| {run('rescale_overflow.asm').cycles} cycles; the naive form overflows"
    yield f"| o = {run('seed001_attention.asm').array('O')[0, 0]:.4f} |"


def claims_gen_matmul():
    inner3 = simulate(matmul_program(n=2, registers=3, schedule="inner"), steps=False)
    outer6 = simulate(matmul_program(n=2, registers=6, schedule="outer"), steps=False)
    inner6 = simulate(matmul_program(n=2, registers=6, schedule="inner"), steps=False)
    best = {R: matmul_program(n=2, registers=R, schedule="best") for R in (3, 4, 5, 6)}
    assert all("proven optimal" in "\n".join(best[R].header) for R in (4, 5, 6))  # the searched table
    cycles = {R: simulate(p, steps=False).cycles for R, p in best.items()}
    yield f"# the seed's {inner3.cycles} cycles, {inner3.ops['LOAD']} LOADs"
    yield f"# the seed's {outer6.cycles}-cycle outer product"
    yield f"# the quiz: {cycles[6]} cycles, proven optimal"
    yield (f"With n = 2: inner R = 3 → {inner3.cycles} cycles, outer R = 6 → {outer6.cycles}, inner R = 6 → "
           f"{inner6.cycles} (keep a\n  row of A and three B values); best R = 3/4/5/6 → "
           f"{'/'.join(str(cycles[R]) for R in (3, 4, 5, 6))}, each proven optimal.")


def claims_variance():
    cycles = {n: simulate(variance_program(n=n), steps=False).cycles for n in (2, 5, 8)}
    a = (cycles[8] - cycles[2]) // 6
    assert all(c == a * n + (cycles[2] - 2 * a) for n, c in cycles.items())
    yield f"6 registers, {a}n + {cycles[2] - 2 * a} cycles"


def claims_numerics():
    default = numerics_table()
    scale1 = numerics_table(scale=1)
    step4 = numerics_table(batch=2, heads=4, d=32, block_m=32, block_n=32, variants="no-rescale", dtypes="fp64")
    seeds = [numerics_table(seed=s, variants="no-rescale", dtypes="fp64").rows[0].max_error for s in range(8)]
    yield f"{default.row('no-rescale', 'fp64').max_error:.3f} at the default setting"
    assert len({f"{r.max_error:.3f}" for r in default.rows if r.variant == "no-rescale"}) == 1  # every format
    yield f"{min(seeds):.2f}–{max(seeds):.2f} over seeds\n  0–7"
    yield f"{step4.rows[0].max_error:.3f} in the seed's own Step 4 setting"
    yield f"error is {scale1.row('no-rescale', 'fp64').max_error:.2f}."
    yield f"the largest of all 65 536 is {default.score_max:.2f}"
    yield f"changes nothing but round-off ({default.row('no-max', 'fp16').max_error:.4f} in\n  fp16)"
    yield f"(largest\n  score {scale1.score_max:.1f})"
    first = scale1.row("no-max", "fp16").alarms[0]
    assert first.kind == "overflow" and first.instruction.startswith("EXP")
    yield f"the first EXP of the first tile pair (step {first.step})"
    e32, e16 = default.row("exact", "fp32").max_error, default.row("exact", "fp16").max_error
    yield f"the machine gives\n  {e32:.1e}".replace("e-07", "e-7") + f" and {e16:.1e}".replace("e-03", "e-3")


def claims_intensity():
    inner, outer = run("matmul_inner_2x2.asm"), run("matmul_outer_2x2.asm")
    yield f"# intensity {inner.extra['intensity']['flops_per_word']:.4f} FLOPs/word"
    yield f"# intensity {outer.extra['intensity']['flops_per_word']:.4f} FLOPs/word"
    n = 8
    yield f"(2n³ − n²)/3n² ≈ 2n/3 FLOPs per word ({(2 * n ** 3 - n ** 2) / (3 * n ** 2):.1f} at n = {n})"
    h100 = resolve_machine("h100")
    ridge = h100.tensor_flops_per_cycle / h100.hbm_bytes_per_cycle
    yield f"{h100.tensor_flops_per_cycle:.0f}/{h100.hbm_bytes_per_cycle:.0f} = {ridge:.0f} FLOPs/byte"
    kw = dict(n=1024, d=64, algo="fa2", pass_="backward", block_m=64, block_n=64)
    r = {(o, p): simulate(attention_program(order=o, precompute_d=p, **kw), h100, steps=False)
         for o in ("row", "col") for p in (True, False)}
    words = {k: v.dram_reads + v.dram_writes for k, v in r.items()}
    flops = {k: v.extra["intensity"]["flops"] for k, v in r.items()}
    per_byte = {k: v.extra["intensity"]["flops_per_byte"] for k, v in r.items()}
    for o in ("row", "col"):
        assert 2 * r[o, True].extra["tile_traffic"]["K"]["reads"] == r[o, False].extra["tile_traffic"]["K"]["reads"]
    fall = {o: 100 * (1 - words[o, True] / words[o, False]) for o in ("row", "col")}
    yield f"falls by {fall['row']:.1f}% (row order) and {fall['col']:.1f}% (column order)"
    assert flops["row", True] == flops["col", True] and flops["row", False] == flops["col", False]
    yield f"the FLOPs fall too, by {100 * (1 - flops['row', True] / flops['row', False]):.1f}%"
    ratio = {o: per_byte[o, True] / per_byte[o, False] for o in ("row", "col")}
    yield f"FLOPs per byte move by {ratio['row']:.2f}× (row) and {ratio['col']:.2f}× (column)"
    useful = {o: words[o, False] / words[o, True] for o in ("row", "col")}
    yield f"do, {useful['row']:.2f}× and {useful['col']:.2f}×."
    time = {o: r[o, False].extra["time_s"] / r[o, True].extra["time_s"] for o in ("row", "col")}
    yield f"falls by the same {time['row']:.2f}× and {time['col']:.2f}×"


def claims_seed001():
    r = run("seed001_attention.asm")
    o = r.array("O")[0, 0]
    yield f"# o = {o:.5f}: the seed's 5.4329"
    yield f"It prints O = {o:.5f} (float64: {o:.6f}), ℓ = {r.array('l')[0]:.5f}, m = {r.array('m')[0]:g}."
    walk = simulate(attention_program(n=5, d=3, algo="fa1", sram_words=59, sram_rule="paper", block_m=3, block_n=4),
                    resolve_machine("toysram-paper"), steps=False)
    exact = attention_program(n=5, d=3, algo="fa1", block_m=3, block_n=4)
    yield f"9 + 12 + 12 + 9 = **{walk.extra['sram_peak']}** words"
    yield f"come to **{simulate(exact, steps=False).extra['sram_peak']}**"
    paper = attention_program(n=5, d=3, algo="fa1", sram_words=59, sram_rule="paper")
    p = simulate(paper, resolve_machine("toysram-paper"), steps=False)
    g = [h for h in paper.header if h.startswith("Blocks:")][0]
    assert "Br = 3 query rows (block_m), Bc = 5 key rows (block_n); Tr = 2, Tc = 1" in g
    yield f"Bc = 5, Br = 3 ({p.extra['sram_peak']} words; a 2 × 1 walk)"
    shrunk = attention_program(n=5, d=3, algo="fa1", sram_words=59)
    assert any("Bc = 2 key rows (block_n); Tr = 3, Tc = 3" in h for h in shrunk.header)
    yield f"to 2 × 2 ({simulate(shrunk, resolve_machine('toysram'), steps=False).extra['sram_peak']} words ≤ 59; a 3 × 3 walk)"


CLAIMS = [claims_programs, claims_gen_matmul, claims_variance, claims_numerics, claims_intensity, claims_seed001]


@pytest.mark.slow
@pytest.mark.parametrize("claims", CLAIMS, ids=[c.__name__ for c in CLAIMS])
def test_readme_says_what_the_commands_print(claims):
    missing = [text for text in claims() if text not in README]
    assert not missing, "no docs page says (update it to what the command prints):\n" + "\n".join(missing)


def test_seed001_example_matches_numpy():
    x = np.arange(1.0, 7.0)
    o = run("seed001_attention.asm").array("O")[0, 0]
    assert o == pytest.approx((np.exp(x) / np.exp(x).sum()) @ x, rel=1e-15)
