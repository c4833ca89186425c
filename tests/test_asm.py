"""Assembler: syntax, round-trips, and errors that point at the offending token."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import AsmError, parse
from toymachine.asm import parse_literal
from toymachine.asm.parser import parse_line
from toymachine.isa import ISA
from toymachine.program import ArrayDecl, Instr, Mem, Program, Reg, Span


def test_case_insensitive_mnemonics_and_registers():
    p = parse("load a[0][1], r0\nMaC R0, r1, R2, r2\n")
    assert p.instrs[0] == Instr("LOAD", (Mem("a", (0, 1)), Reg("R0")))
    assert p.instrs[1].args == (Reg("R0"), Reg("R1"), Reg("R2"), Reg("R2"))


def test_comments_both_styles_and_blank_lines():
    p = parse("; header\n\nLOAD x[0], R0   # trailing\n  ; indented\nSTORE R0, y[0] ; done\n")
    assert [i.op for i in p.instrs] == ["LOAD", "STORE"]
    assert p.header == ("header",)


def test_data_directive_nested_literal_without_eval():
    p = parse(".data a = [[1, -2.5], [3e2, -inf]]\n")
    assert p.arrays == (ArrayDecl("a", (2, 2), values=[[1.0, -2.5], [300.0, float("-inf")]]),)


def test_array_directive_with_fill():
    p = parse(".array m[4] = -inf\n.array O[4][2]\n")
    assert p.arrays[0].fill == float("-inf") and p.arrays[0].shape == (4,)
    assert p.arrays[1].shape == (4, 2) and p.arrays[1].fill is None


def test_tile_addresses_parse():
    p = parse("LOAD Q[0:64, :], T0\n")
    m = p.instrs[0].args[0]
    assert str(m) == "Q[0:64, :]" and str(p.instrs[0].args[1]) == "T0"


def err(text):
    with pytest.raises(AsmError) as exc:
        parse(text, "t.asm")
    return exc.value


@pytest.mark.parametrize("text,line,col,needle", [
    ("LOAD x[0], R0\nFOO R0, R1\n", 2, 1, "unknown instruction 'FOO'"),
    ("MAX R0, R1\n", 1, 1, "MAX takes 3 operands, found 2"),
    ("ADD R0, R1, R2, R3\n", 1, 17, "ADD takes 3 operands, found 4"),
    ("LOAD x[0, R0\n", 1, 6, "missing ']'"),
    ("LOAD x[a], R0\n", 1, 8, "index 'a' is not a non-negative integer"),
    ("LOAD x[0], y\n", 1, 12, "expected a register"),
    ("ADD R0, x[1], R2\n", 1, 9, "needs a register here, found DRAM address"),
    ("LOAD R1, R0\n", 1, 6, "needs a DRAM address here, found register"),
    (".data x = [1, 2\n", 1, 16, "unexpected end"),
    (".data x = [1, foo]\n", 1, 15, "unexpected 'foo]'"),
    (".data x = [[1, 2], [3]]\n", 1, 11, "ragged"),
    (".bogus x\n", 1, 1, "unknown directive"),
])
def test_errors_name_line_and_column(text, line, col, needle):
    e = err(text)
    assert needle in e.message
    assert (e.loc.file, e.loc.line, e.loc.col) == ("t.asm", line, col)
    rendered = e.render()
    assert f"t.asm:{line}:{col}" in rendered and "^" in rendered and "hint" in rendered


def test_unknown_opcode_suggests_closest():
    assert "did you mean MAC_Z" in err("MACZ R0, R1, R2\n").hint


def test_caret_sits_under_the_token():
    e = err("LOAD x[0], y\n")
    lines = e.render().splitlines()
    src = next(l for l in lines if "LOAD" in l)
    caret = lines[lines.index(src) + 1]
    assert src.index("y") == caret.index("^")


def test_literal_parser_rejects_code():
    with pytest.raises(AsmError):
        parse_literal("__import__('os')")


# -- round trip: parse(p.to_text()) == p --------------------------------------------------
regs = st.builds(lambda kind, i: Reg(f"{kind}{i}"), st.sampled_from("RT"), st.integers(0, 12))
src_regs = st.builds(lambda r, t: Reg(r.name, transpose=t and r.name[0] == "T"), regs, st.booleans())
spans = st.builds(lambda a, n: Span(a, None if a is None or n is None else a + n),
                  st.one_of(st.none(), st.integers(0, 20)), st.one_of(st.none(), st.integers(1, 64)))
mems = st.builds(lambda n, idx: Mem(n, tuple(idx)), st.sampled_from(["a", "b", "x", "out"]),
                 st.lists(st.one_of(st.integers(0, 20), spans), min_size=1, max_size=3))
imms = st.one_of(st.integers(0, 100), st.floats(allow_nan=False, width=64))
OPERANDS = {"mem": mems, "src": src_regs, "dst": regs, "imm": imms}


def instr_for(op):
    spec = ISA[op]
    parts = [OPERANDS[k] for k in spec.signature]
    return st.tuples(*parts).map(lambda args: Instr(op, tuple(args)))


instrs = st.sampled_from(list(ISA)).flatmap(instr_for)
floats = st.floats(allow_nan=False, width=64)
decls = st.builds(lambda n, v: ArrayDecl(n, (len(v),), values=v), st.sampled_from(["d0", "d1"]),
                  st.lists(floats, min_size=1, max_size=4))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(instrs, max_size=30), st.lists(decls, max_size=2, unique_by=lambda d: d.name))
def test_round_trip(instr_list, decl_list):
    p = Program(tuple(instr_list), tuple(decl_list))
    q = parse(p.to_text())
    assert q == p


@pytest.mark.parametrize("text,after", [
    ("LOAD a[0][0] R0\n", "a[0][0]"),
    ("LOAD a[0, 1]   R0 ; a comment\n", "a[0, 1]"),
    ("STORE R2 c[0][0]\n", "R2"),
    ("MAC R0, R1 R2, R3\n", "R1"),
])
def test_a_missing_comma_is_reported_where_it_belongs(text, after):
    """The caret sits just after the operand the comma should follow; the line with a comma there parses."""
    e = err(text)
    col = text.index(after) + len(after) + 1
    assert (e.loc.line, e.loc.col) == (1, col)
    fixed = parse_line(text[:col - 1] + "," + text[col - 1:], 1, "t.asm")
    assert fixed is not None and fixed.op == text.split()[0]
    assert f"`{text[:col - 1]}, {text[col - 1:].split(';')[0].strip()}`" in e.hint
