"""Declare once: every opcode has a parse rule, a semantic, a cost, and is documented."""

import re

from conftest import ROOT
from toymachine import DEFAULT_MACHINE, parse
from toymachine.docs import isa_markdown
from toymachine.isa import ISA
from toymachine.symbolic import SYMBOLIC_OPS


def test_every_opcode_parses_executes_and_costs():
    for op, spec in ISA.items():
        operands = ["x[0]" if k == "mem" else f"R{i}" for i, k in enumerate(spec.signature)]
        p = parse(f"{op} {', '.join(operands)}\n")
        assert p.instrs[0].op == op
        assert DEFAULT_MACHINE.op_cycles(op) == 1  # the seed: every instruction 1 cycle
        if spec.kind not in ("load", "store"):
            assert callable(spec.numeric) and op in SYMBOLIC_OPS


def test_seed_instruction_set_exactly():
    assert set(ISA) == {"LOAD", "STORE", "MAC_Z", "MAC", "MAX", "SUB", "ADD", "MUL", "DIV", "EXP", "MOV"}


def test_readme_instruction_reference_is_generated_from_the_table():
    readme = (ROOT / "README.md").read_text()
    start = readme.index("<!-- isa:begin -->") + len("<!-- isa:begin -->")
    end = readme.index("<!-- isa:end -->")
    assert readme[start:end].strip() == isa_markdown().strip(), "regenerate with `toym isa --format markdown`"


def test_sub_is_ra_minus_rb():
    from toymachine import simulate

    r = simulate(parse(".data x = [5, 3]\nLOAD x[0], R0\nLOAD x[1], R1\nSUB R0, R1, R2\nDIV R0, R1, R3\n"))
    assert r.registers["R2"] == 2 and r.registers["R3"] == 5 / 3
