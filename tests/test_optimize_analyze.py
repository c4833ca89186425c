"""analyze: optimal register allocation of a trace's own order — the seed's traces, redundant
LOADs, an exhaustive oracle on random traces, and every generator."""

import json
import random

import numpy as np
import pytest
from conftest import PROGRAMS
from optimize_oracle import min_loads_fixed_order

from toymachine import ConfigError, RuntimeFault, parse, parse_file, simulate
from toymachine.gen import attention_program, matmul_program, softmax_program, variance_program
from toymachine.gen.tile import attention_program as tile_attention_program
from toymachine.optimize import analysis_report, analyze
from toymachine.render import render_report

NAIVE = """; the naive 2x2 matmul: four times Problem 1, 28 cycles
.data a = [[1, 2], [3, 4]]
.data b = [[5, 6], [7, 8]]
LOAD a[0][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2
LOAD a[0][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2
STORE R2, c[0][0]
LOAD a[0][0], R0
LOAD b[0][1], R1
MAC_Z R0, R1, R2
LOAD a[0][1], R0
LOAD b[1][1], R1
MAC R0, R1, R2, R2
STORE R2, c[0][1]
LOAD a[1][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2
LOAD a[1][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2
STORE R2, c[1][0]
LOAD a[1][0], R0
LOAD b[0][1], R1
MAC_Z R0, R1, R2
LOAD a[1][1], R0
LOAD b[1][1], R1
MAC R0, R1, R2, R2
STORE R2, c[1][1]
"""

# Problem 3's outer product with the same MAC order, allocated as analyze says is possible: b00
# waits in R4 (free until c10's MAC_Z overwrites it), and c00 / c01 are stored as soon as they are
# complete so that b10 can stay. 8 LOADs, 20 cycles.
OUTER_IMPROVED = """.data a = [[1, 2], [3, 4]]
.data b = [[5, 6], [7, 8]]
LOAD a[0][0], R0
LOAD b[0][0], R4
MAC_Z R0, R4, R2
LOAD b[0][1], R1
MAC_Z R0, R1, R3
LOAD a[1][0], R0
MAC_Z R0, R1, R5
MAC_Z R0, R4, R4
LOAD a[0][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2
STORE R2, c[0][0]
LOAD b[1][1], R2
MAC R0, R2, R3, R3
STORE R3, c[0][1]
LOAD a[1][1], R0
MAC R0, R2, R5, R5
MAC R0, R1, R4, R4
STORE R4, c[1][0]
STORE R5, c[1][1]
"""

# Problem 4's safe softmax, same order of computation: pass 1 keeps its running max in R2, so x[0]
# stays in R1 until pass 2 uses it; the sum then takes R1. 17 LOADs instead of 18.
SAFE_IMPROVED = ".data x = [1, 2, 3, 4, 5, 6]\nLOAD x[0], R1\nLOAD x[1], R0\nMAX R0, R1, R2\n" + "".join(
    f"LOAD x[{i}], R0\nMAX R0, R2, R2\n" for i in range(2, 6)) + "SUB R1, R2, R0\nEXP R0, R0\nMOV R0, R1\n" + "".join(
    f"LOAD x[{i}], R0\nSUB R0, R2, R0\nEXP R0, R0\nADD R1, R0, R1\n" for i in range(1, 6)) + "".join(
    f"LOAD x[{i}], R0\nSUB R0, R2, R0\nEXP R0, R0\nDIV R0, R1, R0\nSTORE R0, out[{i}]\n" for i in range(6))


def loads(program):
    return sum(1 for i in program.instrs if i.op == "LOAD")


@pytest.mark.parametrize("name", ["c00.asm", "matmul_inner_2x2.asm", "softmax_online.asm", "rescale_overflow.asm"])
def test_optimal_seed_traces_need_no_fewer_loads(name):
    program = parse_file(str(PROGRAMS / name))
    an = analyze(program)
    assert an.min_loads == an.alloc_loads == an.trace_loads == loads(program)
    assert an.alloc_stores == an.trace_stores and an.proven_optimal and not an.redundant


def test_outer_product_trace_could_keep_b00_and_b10():
    """Problem 3's 22-cycle trace: the same order of MACs needs only 8 LOADs on 6 registers."""
    an = analyze(parse_file(str(PROGRAMS / "matmul_outer_2x2.asm")))
    assert (an.trace_loads, an.min_loads, an.alloc_cycles) == (10, 8, 20)
    assert [(r.line, r.value) for r in an.redundant] == [(14, "b[0][0]"), (24, "b[1][0]")]
    better = simulate(parse(OUTER_IMPROVED), registers=6)
    seed = simulate(parse_file(str(PROGRAMS / "matmul_outer_2x2.asm")), registers=6)
    assert better.cycles == 20 and better.ops["LOAD"] == an.min_loads
    assert better.memory["c"] == seed.memory["c"]


def test_safe_softmax_trace_could_keep_x0_through_pass_one():
    an = analyze(parse_file(str(PROGRAMS / "softmax_safe.asm")))
    assert (an.trace_loads, an.min_loads) == (18, 17)
    assert [(r.line, r.value, r.kept_since) for r in an.redundant] == [(18, "x[0]", 8)]
    better = simulate(parse(SAFE_IMPROVED), registers=3)
    seed = simulate(parse_file(str(PROGRAMS / "softmax_safe.asm")), registers=3)
    assert better.ops["LOAD"] == 17 and better.cycles == seed.cycles - 1
    np.testing.assert_allclose(better.memory["out"], seed.memory["out"], rtol=0, atol=0)


def test_naive_matmul_reloads_a01_and_a11():
    an = analyze(parse(NAIVE))
    assert (an.trace_loads, an.min_loads, an.trace_cycles, an.alloc_cycles) == (16, 14, 28, 26)
    notes = [r.note for r in an.redundant]
    assert notes == ["line 14 reloads a[0][1], which an optimal allocation would have kept in a register since line 9",
                     "line 28 reloads a[1][1], which an optimal allocation would have kept in a register since line 23"]


def test_a_load_that_is_never_used_is_redundant():
    an = analyze(parse(".data x = [1, 2]\nLOAD x[0], R0\nLOAD x[1], R0\nEXP R0, R1\nSTORE R1, y[0]"))
    assert an.min_loads == 1 and [r.line for r in an.redundant] == [2]
    assert "never used" in an.redundant[0].note


def _random_trace(rng: random.Random):
    """An abstract order of computation and a program realising it (one register per value,
    every use of an input reloaded)."""
    n_in = rng.randint(2, 5)
    uses, lines, values, reg = [], [], [], {}
    for i in range(n_in):
        values.append(f"x{i}")
    for t in range(rng.randint(3, 9)):
        op = rng.choice(["ADD", "MUL", "MAX", "SUB", "EXP", "MAC"])
        arity = {"EXP": 1, "MAC": 3}.get(op, 2)
        srcs = [rng.choice(values) for _ in range(arity)]
        out = f"v{t}"
        for s in srcs:
            if s.startswith("x"):
                reg[s] = len(reg) if s not in reg else reg[s]
                lines.append(f"LOAD x[{s[1:]}], R{reg[s]}")
        reg[out] = len(reg)
        lines.append(f"{op} {', '.join(f'R{reg[s]}' for s in srcs)}, R{reg[out]}")
        uses.append((tuple(srcs), out))
        values.append(out)
    lines.append(f"STORE R{reg[values[-1]]}, y[0]")
    data = ".data x = [" + ", ".join(str(0.1 * (i + 1)) for i in range(n_in)) + "]\n"
    return uses, parse(data + "\n".join(lines))


@pytest.mark.parametrize("seed", range(40))
def test_min_loads_equal_an_exhaustive_oracle(seed):
    rng = random.Random(seed)
    uses, program = _random_trace(rng)
    for R in (3, 4, 5):
        an = analyze(program, registers=R)
        assert an.min_loads == min_loads_fixed_order(uses, R)
        assert an.alloc_loads + an.alloc_stores >= an.lower_bound


GENERATED = [
    lambda: matmul_program(3, 3, "inner"), lambda: matmul_program(3, 5, "outer"), lambda: matmul_program(4, 7),
    lambda: softmax_program(8, "naive"), lambda: softmax_program(8, "safe"), lambda: softmax_program(8, "online"),
    lambda: attention_program(n=3, d=2), lambda: attention_program(n=3, d=2, order="outer", output_slots=1),
    lambda: variance_program(6),
]


@pytest.mark.parametrize("make", GENERATED)
def test_generated_traces_never_need_more_than_they_load(make):
    program = make()
    an = analyze(program)
    assert an.min_loads <= an.alloc_loads and an.min_loads <= an.trace_loads
    assert an.alloc_loads + an.alloc_stores <= an.trace_loads + an.trace_stores
    assert an.output_stores <= an.alloc_stores and an.compulsory_loads <= an.min_loads
    # each LOAD the trace makes serves one use; at most min_loads of them serve uses an optimal
    # allocation must load for, so the others are reported
    assert len(an.redundant) >= an.trace_loads - an.min_loads
    load_lines = {line for line, ins in zip(range(1, 10**6), program.to_text().splitlines()) if ins.startswith("LOAD")}
    assert {r.line for r in an.redundant} <= load_lines


@pytest.mark.parametrize("R", range(3, 9))
def test_searched_optimal_schedules_are_optimally_allocated(R):
    """A schedule proven optimal by the search cannot be improved by re-allocating its order."""
    program = matmul_program(2, R, "best")
    an = analyze(program, registers=R)
    assert an.min_loads == an.trace_loads and not an.redundant


def test_fewer_registers_than_an_instruction_reads_is_an_error():
    with pytest.raises(ConfigError) as exc:
        analyze(parse_file(str(PROGRAMS / "matmul_inner_2x2.asm")), registers=2)
    assert (exc.value.key, exc.value.hint) == ("registers", "use registers = 3 or more")


def test_tile_traces_are_refused():
    with pytest.raises(ConfigError) as exc:
        analyze(tile_attention_program(n=8, d=4, block_m=4, block_n=4))
    assert "scalar" in exc.value.message


def test_a_trace_that_does_not_run_reports_like_the_simulator():
    with pytest.raises(RuntimeFault):
        analyze(parse("ADD R0, R1, R2\nSTORE R2, y[0]"))


def test_dict_and_report():
    an = analyze(parse(NAIVE))
    d = an.to_dict()
    json.dumps(d)
    assert d["optimal_allocation"]["min_loads"] == 14 and len(d["redundant_loads"]) == 2
    for fmt in ("table", "markdown", "csv", "latex", "html", "json"):
        assert render_report(analysis_report(an), fmt)
    assert "line 14 reloads a[0][1]" in render_report(analysis_report(an), "table")


def _outputs(result, program):
    """The words a trace writes, as the run left them."""
    words = {(i.args[1].array, i.args[1].index) for i in program.instrs if i.op == "STORE"}
    return {w: result.array(w[0])[w[1]] for w in words}


EMITTED = [(lambda name=name: parse_file(str(PROGRAMS / name)), R) for name, R in
           [("matmul_outer_2x2.asm", 6), ("matmul_outer_2x2.asm", 3), ("softmax_safe.asm", 3),
            ("softmax_online.asm", 4), ("rescale_overflow.asm", 3)]] + \
          [(lambda: parse(NAIVE), 3), (lambda: attention_program(n=3, d=2, order="outer", output_slots=1), 9),
           (lambda: softmax_program(6, "online"), 4), (lambda: variance_program(5), 6),
           (lambda: matmul_program(3, 5, "outer"), 4)]


@pytest.mark.parametrize("make,R", EMITTED)
def test_the_allocation_written_out_runs_and_costs_what_analyze_says(make, R):
    """--emit: the same instructions in the same order on R registers, with the allocation's LOADs
    and STOREs — it computes the trace's outputs and costs exactly what the analysis claims."""
    program = make()
    an = analyze(program, registers=R)
    trace = simulate(program, steps=False)
    mine = simulate(an.program, registers=R, steps=False)
    assert mine.ops.get("LOAD", 0) == an.alloc_loads and mine.ops.get("STORE", 0) == an.alloc_stores
    assert mine.cycles == an.alloc_cycles and mine.registers_used <= R
    assert [i.op for i in an.program.instrs if i.op not in ("LOAD", "STORE")] == \
        [i.op for i in program.instrs if i.op not in ("LOAD", "STORE")]
    got, want = _outputs(mine, program), _outputs(trace, program)
    for word, value in want.items():
        np.testing.assert_array_equal(got[word], value)
