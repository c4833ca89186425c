"""Parser: one source line → ``Instr`` / ``ArrayDecl``; a whole text → ``Program``."""

from __future__ import annotations

__all__ = ["parse", "parse_file", "parse_line"]

import re

from ..errors import AsmError
from ..isa import ISA, MNEMONICS, OpSpec
from ..limits import LIMITS, LimitError
from ..program import ACCUMULATOR, ArrayDecl, Instr, Mem, Operand, Program, Reg, Span
from .lexer import (
    IDENT,
    INT,
    NUMBER,
    REG,
    check_brackets,
    closest,
    make_loc,
    parse_number,
    split_operands,
    strip_comment,
)
from .literal import parse_literal, shape_of
from .source import read_source


def _parse_reg(text: str) -> Reg | None:
    m = REG.match(text)
    if not m:
        return None
    name = ACCUMULATOR if m.group(3) else m.group(1).upper() + str(int(m.group(2)))
    return Reg(name, transpose=m.group(4) is not None)


def _number(otext: str, file: str, line: int, src: str, col: int):
    try:
        return parse_number(otext)
    except ValueError as exc:
        raise AsmError(f"{exc}", loc=make_loc(file, line, src, col, len(otext)),
                       hint="write a shorter number (1e400 is inf; numbers are float64)") from None


def _index(p: str, file: str, line: int, src: str, col: int) -> int:
    """One literal index, bounded before int() sees it: at most ``limits.array_elements`` − 1."""
    cap = LIMITS["array_elements"].value()
    if len(p) > 19 or int(p) >= cap:
        raise LimitError(f"index {p[:40]}{'…' if len(p) > 40 else ''} is beyond the largest array toym holds "
                         f"({int(cap):,} elements)", loc=make_loc(file, line, src, col, len(p)),
                         hint=LIMITS["array_elements"].lift_hint(int(p) + 1 if len(p) <= 19 else None))
    return int(p)


def _parse_mem(text: str, file: str, line: int, src: str, col: int) -> Mem:
    m = IDENT.match(text)
    if not m or m.end() == len(text) or text[m.end()] != "[":
        raise AsmError(
            f"expected a DRAM address like x[0] or a[0][1], found '{text}'",
            loc=make_loc(file, line, src, col, len(text)),
            hint="an address is an array name followed by one [index] per dimension",
        )
    name = m.group(0)
    rest = text[m.end():]
    items: list = []
    pos = m.end()
    while rest:
        if not rest.startswith("["):
            raise AsmError(f"malformed address '{text}': unexpected '{rest[0]}'",
                           loc=make_loc(file, line, src, col + pos, 1),
                           hint="write indices as a[0][1] or a[0, 1]")
        close = rest.find("]")
        if close < 0:
            raise AsmError(f"malformed address '{text}': missing ']'",
                           loc=make_loc(file, line, src, col + pos, len(rest)),
                           hint="close every '[' with ']'")
        inner = rest[1:close]
        off = pos + 1
        for piece in inner.split(","):
            lead = len(piece) - len(piece.lstrip())
            p = piece.strip()
            pcol = col + off + lead
            if ":" in p:
                a, _, b = p.partition(":")
                a, b = a.strip(), b.strip()
                if (a and not INT.match(a)) or (b and not INT.match(b)):
                    raise AsmError(f"malformed slice '{p}' in address '{text}'",
                                   loc=make_loc(file, line, src, pcol, len(p)),
                                   hint="a slice is start:stop with non-negative integers, e.g. Q[0:64, :]")
                items.append(Span(_index(a, file, line, src, pcol) if a else None,
                                  _index(b, file, line, src, pcol + len(p) - len(b)) if b else None))
            elif INT.match(p):
                items.append(_index(p, file, line, src, pcol))
            else:
                what = "an empty index" if not p else f"index '{p}'"
                raise AsmError(f"malformed address '{text}': {what} is not a non-negative integer",
                               loc=make_loc(file, line, src, pcol, max(1, len(p))),
                               hint="indices are literal integers, e.g. x[3]; generate loops with `toym gen`")
            off += len(piece) + 1
        pos += close + 1
        rest = rest[close + 1:]
    return Mem(name, tuple(items))


def parse_line(text: str, line: int = 1, file: str = "<input>"):
    """Parse one source line: an ``Instr``, an ``ArrayDecl``, or None (blank/comment)."""
    code = strip_comment(text)
    stripped = code.strip()
    if not stripped:
        return None
    if stripped[0] == ".":
        return _parse_directive(code, line, file, text)
    lead = len(code) - len(code.lstrip())
    m = IDENT.match(code, lead)
    if not m:
        raise AsmError(f"expected an instruction mnemonic, found '{stripped.split()[0]}'",
                       loc=make_loc(file, line, text, lead + 1, len(stripped.split()[0])),
                       hint=f"instructions are: {', '.join(MNEMONICS)}")
    word = m.group(0)
    spec = ISA.get(word.upper())
    if spec is None:
        close = closest(word.upper(), MNEMONICS)
        hint = f"did you mean {close}?" if close else f"instructions are: {', '.join(MNEMONICS)}"
        raise AsmError(f"unknown instruction '{word}'", loc=make_loc(file, line, text, lead + 1, len(word)), hint=hint)
    body = code[m.end():]
    if body and not body[0].isspace():
        raise AsmError(f"expected a space after '{word}'", loc=make_loc(file, line, text, m.end() + 1),
                       hint=f"write it as `{spec.syntax}`")
    check_brackets(body, m.end() + 1, file, line, text)
    ops = split_operands(body, m.end() + 1) if body.strip() else []
    if len(ops) < spec.arity:
        _check_commas(ops, spec, file, line, text)
    if len(ops) != spec.arity:
        col = ops[spec.arity][1] if len(ops) > spec.arity else lead + 1
        length = len(ops[spec.arity][0]) if len(ops) > spec.arity else len(word)
        raise AsmError(
            f"{spec.mnemonic} takes {spec.arity} operand{'s' if spec.arity != 1 else ''}, found {len(ops)}",
            loc=make_loc(file, line, text, col, length), hint=f"write it as `{spec.syntax}`")
    args: list[Operand] = []
    for (otext, ocol), kind in zip(ops, spec.signature):
        if not otext:
            raise AsmError("empty operand", loc=make_loc(file, line, text, ocol), hint=f"write it as `{spec.syntax}`")
        if kind == "mem":
            if REG.match(otext):
                raise AsmError(f"{spec.mnemonic} needs a DRAM address here, found register '{otext}'",
                               loc=make_loc(file, line, text, ocol, len(otext)), hint=f"write it as `{spec.syntax}`")
            args.append(_parse_mem(otext, file, line, text, ocol))
        elif kind in ("src", "dst"):
            reg = _parse_reg(otext)
            if reg is None:
                if "[" in otext:
                    msg = f"{spec.mnemonic} needs a register here, found DRAM address '{otext}'"
                    hint = f"only LOAD and STORE touch DRAM; write it as `{spec.syntax}`"
                else:
                    msg = f"expected a register (R0, R1, …), found '{otext}'"
                    hint = "registers are named R<n> (case-insensitive), e.g. R0, r1"
                raise AsmError(msg, loc=make_loc(file, line, text, ocol, len(otext)), hint=hint)
            if reg.transpose and kind == "dst":
                raise AsmError("a destination register cannot be transposed",
                               loc=make_loc(file, line, text, ocol, len(otext)), hint="drop the .T suffix")
            args.append(reg)
        elif kind == "imm":
            if not NUMBER.match(otext):
                raise AsmError(f"expected a number, found '{otext}'", loc=make_loc(file, line, text, ocol, len(otext)),
                               hint=f"write it as `{spec.syntax}`")
            args.append(_number(otext, file, line, text, ocol))
        else:  # pragma: no cover - the ISA table only uses the kinds above
            raise AssertionError(kind)
    return Instr(spec.mnemonic, tuple(args), line)


def _missing_comma(operand: str) -> int | None:
    """Where in ``operand`` a comma belongs: the first blank outside brackets between two words
    (``a[0][0] R0`` → 7), or None."""
    depth = 0
    for i, ch in enumerate(operand):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch.isspace() and depth == 0:
            return i
    return None


def _check_commas(ops: list[tuple[str, int]], spec: OpSpec, file: str, line: int, text: str) -> None:
    """Too few operands because two are written without a comma between them: say so where the comma belongs."""
    for otext, ocol in ops:
        at = _missing_comma(otext)
        if at is not None:
            col = ocol + at
            fixed = strip_comment(text[:col - 1].rstrip() + ", " + text[col - 1:].lstrip()).strip()
            example = f": `{fixed}`" if len(fixed) <= 80 else ""
            raise AsmError("expected ',' between operands", loc=make_loc(file, line, text, col),
                           hint=f"{spec.mnemonic} is written `{spec.syntax}`{example}")


def _parse_directive(code: str, line: int, file: str, text: str) -> ArrayDecl:
    lead = len(code) - len(code.lstrip())
    m = re.match(r"\.([A-Za-z_]+)", code[lead:])
    name = m.group(1).lower() if m else ""
    if m is None or name not in ("data", "array"):
        word = m.group(0) if m else "."
        raise AsmError(f"unknown directive '{word}'", loc=make_loc(file, line, text, lead + 1, len(word)),
                       hint="directives are `.data NAME = [...]` and `.array NAME[d0][d1] [= fill]`")
    pos = lead + m.end()
    rest = code[pos:]
    sp = len(rest) - len(rest.lstrip())
    pos += sp
    nm = IDENT.match(code, pos)
    if not nm:
        raise AsmError(f".{name} needs an array name", loc=make_loc(file, line, text, pos + 1),
                       hint=f"write `.{name} x = [1, 2, 3]`" if name == "data" else "write `.array c[2][2]`")
    arr = nm.group(0)
    pos = nm.end()
    if name == "data":
        eq = re.compile(r"\s*=\s*").match(code, pos)
        if not eq:
            raise AsmError("expected '=' after the array name", loc=make_loc(file, line, text, pos + 1),
                           hint=f"write `.data {arr} = [1, 2, 3]`")
        values = parse_literal(code[eq.end():], file=file, line=line, source=text, col0=eq.end() + 1)
        if not isinstance(values, list):
            values = [values]
        shape = shape_of(values, file, line, text, eq.end() + 1)
        count = 1
        for n in shape:
            count *= n
        LIMITS["array_elements"].check(count, f".data {arr}", loc=make_loc(file, line, text, lead + 1, len(arr) + 6))
        return ArrayDecl(arr, shape, values=values, line=line)
    # .array NAME[d0][d1] [= fill]
    dims = []
    count = 1
    while True:
        dm = re.compile(r"\[\s*([0-9]+)\s*\]").match(code, pos)
        if not dm:
            break
        dim = _index(dm.group(1), file, line, text, dm.start(1) + 1)
        if dim == 0:
            raise AsmError("array dimensions must be positive", loc=make_loc(file, line, text, dm.start(1) + 1),
                           hint="use a size of at least 1")
        dims.append(dim)
        count *= dim
        LIMITS["array_elements"].check(count, f".array {arr}{''.join(f'[{d}]' for d in dims)}",
                                       loc=make_loc(file, line, text, lead + 1, dm.end() - lead))
        pos = dm.end()
    if not dims:
        raise AsmError(f".array {arr} needs a shape", loc=make_loc(file, line, text, pos + 1),
                       hint=f"write `.array {arr}[4][4]` (one [size] per dimension)")
    fill = None
    tail = code[pos:].strip()
    if tail:
        fm = re.compile(r"\s*=\s*(\S+)\s*$").match(code, pos)
        if not fm or not NUMBER.match(fm.group(1)):
            raise AsmError(f"unexpected '{tail}' after the shape", loc=make_loc(file, line, text, pos + 1 + (len(code[pos:]) - len(code[pos:].lstrip())), len(tail)),
                           hint=f"write `.array {arr}{''.join(f'[{d}]' for d in dims)} = 0` to fill it")
        fill = float(_number(fm.group(1), file, line, text, fm.start(1) + 1))
    return ArrayDecl(arr, tuple(dims), fill=fill, line=line)


def parse(text: str, file: str = "<input>") -> Program:
    """Parse a whole program text."""
    lines = text.splitlines()
    instrs: list[Instr] = []
    arrays: list[ArrayDecl] = []
    header: list[str] = []
    seen: dict[str, int] = {}
    in_header = True
    for n, src in enumerate(lines, 1):
        item = parse_line(src, n, file)
        if item is None:
            s = src.strip()
            if in_header and s[:1] in (";", "#"):
                header.append(s[1:][1:] if s[1:2] == " " else s[1:])
            elif in_header and s:
                in_header = False
            continue
        in_header = False
        if isinstance(item, ArrayDecl):
            if item.name in seen:
                raise AsmError(f"array '{item.name}' is declared twice (first on line {seen[item.name]})",
                               loc=make_loc(file, n, src, 1, len(src.rstrip())), hint="keep one .data/.array per array")
            seen[item.name] = n
            arrays.append(item)
        else:
            instrs.append(item)
    return Program(tuple(instrs), tuple(arrays), tuple(header), file, tuple(lines))


def parse_file(path: str) -> Program:
    return parse(read_source(path), path)


