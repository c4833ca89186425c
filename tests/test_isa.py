"""Declare once: every opcode has a parse rule, a semantic, a cost, a symbolic semantic (or
an explicit "not symbolic"), and is documented — scalar and tile instructions alike."""

import numpy as np
import pytest
from conftest import ROOT

from toymachine import DEFAULT_MACHINE, parse, simulate
from toymachine.isa import ISA, SCALAR_MNEMONICS, TILE_ONLY, UNITS
from toymachine.render.isa import isa_markdown
from toymachine.sim.symbolic import SYMBOLIC_OPS

SEED = {"LOAD", "STORE", "MAC_Z", "MAC", "MAX", "SUB", "ADD", "MUL", "DIV", "EXP", "MOV"}


def scalar_line(op):
    spec = ISA[op]
    operands = ["x[0]" if k == "mem" else f"R{i}" for i, k in enumerate(spec.signature)]
    return f"{op} {', '.join(operands)}"


def tile_line(op):
    """The tile form of ``op``: 2×2 tiles in T registers, blocks of a 2×2 array."""
    spec = ISA[op]
    if op == "FILL":
        return "FILL 0.5, 2, 2, T9"
    if op == "MASK":
        return "MASK T0, 0, 0, T9"
    if op == "DROPOUT":
        return "DROPOUT T0, 0.5, 7, 0, 0, 0, T9"
    operands = []
    for i, k in enumerate(spec.signature):
        operands.append({"mem": "x[0:2, :]", "src": f"T{i}", "dst": "T9"}[k])
    return f"{op} {', '.join(operands)}"


def test_scalar_subset_is_exactly_the_seeds():
    assert set(SCALAR_MNEMONICS) == SEED
    assert set(ISA) == SEED | TILE_ONLY and not SEED & TILE_ONLY


@pytest.mark.parametrize("op", list(ISA))
def test_every_opcode_parses_has_semantics_cost_and_a_symbolic_answer(op):
    spec = ISA[op]
    # a parse rule: the syntax the table documents round-trips
    ins = parse(tile_line(op) + "\n").instrs[0]
    assert ins.op == op and str(ins) == tile_line(op)
    # a cost: 1 cycle on the seed's machine, a unit, a documented FLOP count on tiles
    assert DEFAULT_MACHINE.op_cycles(op) == 1 and spec.cost_class in UNITS and spec.tile_flops
    # symbolic semantics (LOAD/STORE: the simulator moves expressions), or an explicit "none"
    assert spec.symbolic == (op in SYMBOLIC_OPS or spec.kind in ("load", "store"))
    if op in SEED:
        assert spec.symbolic and spec.level == "scalar" and spec.operation
        if spec.kind not in ("load", "store"):
            assert callable(spec.numeric)
    else:
        assert not spec.symbolic and spec.level == "tile" and spec.numeric is None


@pytest.mark.parametrize("op", list(ISA))
def test_every_opcode_executes_on_tiles(op):
    """A semantic on tiles for every instruction: run its tile form on 2×2 tiles."""
    setup = ".array x[2][2]\nLOAD x[0:2, :], T0\nLOAD x[0:2, :], T1\nLOAD x[0:2, :], T2\n"
    text = setup + tile_line(op) + "\n"
    r = simulate(text, data={"x": [[1.0, 2.0], [3.0, 4.0]]})
    assert r.ops[op] >= 1
    if op == "STORE":
        assert r.memory["x"] == [[1.0, 2.0], [3.0, 4.0]]
    else:
        assert np.asarray(r.registers["T9"]).shape in ((2, 2), (2, 1))


@pytest.mark.parametrize("op", sorted(SEED - {"LOAD", "STORE"}))
def test_scalar_forms_execute_as_the_seed_says(op):
    setup = ".data x = [2, 3, 5]\nLOAD x[0], R0\nLOAD x[1], R1\nLOAD x[2], R2\n"
    r = simulate(setup + scalar_line(op) + "\n")
    spec = ISA[op]
    args = [r.registers[f"R{i}"] for i in range(spec.arity - 1)]
    assert r.registers[f"R{spec.arity - 1}"] == spec.numeric(*[(2.0, 3.0, 5.0)[i] for i in range(len(args))])


def test_docs_instruction_reference_is_generated_from_the_table():
    """The docs' instruction reference (docs/reference/isa.md, made at build time by docs/hooks.py) is the
    table: `toym isa --format markdown`, then every instruction by name."""
    import sys

    sys.path.insert(0, str(ROOT / "docs"))
    from docgen.reference import isa_page

    page = isa_page()
    assert isa_markdown().strip().split("\n", 1)[1].strip() in page
    for op in ISA:
        assert ISA[op].syntax in page and f"### {op}" in page


def test_sub_is_ra_minus_rb():
    r = simulate(parse(".data x = [5, 3]\nLOAD x[0], R0\nLOAD x[1], R1\nSUB R0, R1, R2\nDIV R0, R1, R3\n"))
    assert r.registers["R2"] == 2 and r.registers["R3"] == 5 / 3
