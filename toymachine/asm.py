"""Assembler: toy-machine assembly text → ``Program``.

Syntax (one statement per line; ``;`` or ``#`` starts a comment)::

    LOAD a[0][1], R0          ; mnemonic, then operands separated by commas
    MAC r0, R1, R2, R2        ; mnemonics and registers are case-insensitive
    .data x = [1, 2, 3, 4]    ; inline input array (a nested list literal)
    .array c[2][2]            ; declare an array's shape (optionally `= fill`)
    LOAD Q[0:64, :], T0       ; tile machine: a block of rows/columns

Registers are ``R<n>`` (or ``T<n>``, tile registers by convention); a ``.T`` suffix
reads a tile register transposed. Every error names file, line and column.
"""

from __future__ import annotations

__all__ = ["parse", "parse_file", "parse_line", "read_source", "operand_spans", "parse_literal", "line_iter"]

import math
import re
from typing import Iterable, Iterator

from .errors import AsmError, Location
from .isa import ISA, MNEMONICS
from .program import ArrayDecl, Instr, Mem, Program, Reg, Span

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REG = re.compile(r"([RrTt])(\d+)(\.[Tt])?$")
_INT = re.compile(r"\d+$")
_NUMBER = re.compile(r"[+-]?(?:inf(?:inity)?|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$", re.IGNORECASE)


def _strip_comment(text: str) -> str:
    for i, ch in enumerate(text):
        if ch == ";" or ch == "#":
            return text[:i]
    return text


def _loc(file: str, line: int, text: str, col: int, length: int = 1) -> Location:
    return Location(file, line, col, text, max(1, length))


def _split_operands(body: str, base_col: int) -> list[tuple[str, int]]:
    """Split on commas outside brackets; return (operand text, 1-based column)."""
    parts: list[tuple[str, int]] = []
    depth = 0
    start = 0
    for i, ch in enumerate(body):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append((body[start:i], start))
            start = i + 1
    parts.append((body[start:], start))
    out = []
    for text, off in parts:
        stripped = text.strip()
        lead = len(text) - len(text.lstrip())
        out.append((stripped, base_col + off + lead))
    return out


def _check_brackets(body: str, base_col: int, file: str, line: int, text: str) -> None:
    stack = []
    for i, ch in enumerate(body):
        if ch == "[":
            stack.append(i)
        elif ch == "]":
            if not stack:
                raise AsmError("malformed address: ']' without '['", loc=_loc(file, line, text, base_col + i),
                               hint="write indices as a[0][1] or a[0, 1]")
            stack.pop()
    if stack:
        i = stack[0]
        start = body.rfind(",", 0, i) + 1
        start += len(body[start:]) - len(body[start:].lstrip())
        raise AsmError("malformed address: missing ']'", loc=_loc(file, line, text, base_col + start, i - start + 1),
                       hint="close every '[' with ']', e.g. x[0]")


def operand_spans(source_line: str) -> list[tuple[int, int]]:
    """(column, length) of each operand on an instruction line, for error carets."""
    code = _strip_comment(source_line)
    m = _IDENT.search(code)
    if not m:
        return []
    body = code[m.end():]
    if not body.strip():
        return []
    return [(col, max(1, len(t))) for t, col in _split_operands(body, m.end() + 1)]


def _parse_reg(text: str) -> Reg | None:
    m = _REG.match(text)
    if not m:
        return None
    return Reg(m.group(1).upper() + str(int(m.group(2))), transpose=m.group(3) is not None)


def _parse_mem(text: str, file: str, line: int, src: str, col: int) -> Mem:
    m = _IDENT.match(text)
    if not m or m.end() == len(text) or text[m.end()] != "[":
        raise AsmError(
            f"expected a DRAM address like x[0] or a[0][1], found '{text}'",
            loc=_loc(file, line, src, col, len(text)),
            hint="an address is an array name followed by one [index] per dimension",
        )
    name = m.group(0)
    rest = text[m.end():]
    items: list = []
    pos = m.end()
    while rest:
        if not rest.startswith("["):
            raise AsmError(f"malformed address '{text}': unexpected '{rest[0]}'",
                           loc=_loc(file, line, src, col + pos, 1),
                           hint="write indices as a[0][1] or a[0, 1]")
        close = rest.find("]")
        if close < 0:
            raise AsmError(f"malformed address '{text}': missing ']'",
                           loc=_loc(file, line, src, col + pos, len(rest)),
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
                if (a and not _INT.match(a)) or (b and not _INT.match(b)):
                    raise AsmError(f"malformed slice '{p}' in address '{text}'",
                                   loc=_loc(file, line, src, pcol, len(p)),
                                   hint="a slice is start:stop with non-negative integers, e.g. Q[0:64, :]")
                items.append(Span(int(a) if a else None, int(b) if b else None))
            elif _INT.match(p):
                items.append(int(p))
            else:
                what = "an empty index" if not p else f"index '{p}'"
                raise AsmError(f"malformed address '{text}': {what} is not a non-negative integer",
                               loc=_loc(file, line, src, pcol, max(1, len(p))),
                               hint="indices are literal integers, e.g. x[3]; generate loops with `toym gen`")
            off += len(piece) + 1
        pos += close + 1
        rest = rest[close + 1:]
    return Mem(name, tuple(items))


def parse_line(text: str, line: int = 1, file: str = "<input>"):
    """Parse one source line: an ``Instr``, an ``ArrayDecl``, or None (blank/comment)."""
    code = _strip_comment(text)
    stripped = code.strip()
    if not stripped:
        return None
    if stripped[0] == ".":
        return _parse_directive(code, line, file, text)
    lead = len(code) - len(code.lstrip())
    m = _IDENT.match(code, lead)
    if not m:
        raise AsmError(f"expected an instruction mnemonic, found '{stripped.split()[0]}'",
                       loc=_loc(file, line, text, lead + 1, len(stripped.split()[0])),
                       hint=f"instructions are: {', '.join(MNEMONICS)}")
    word = m.group(0)
    spec = ISA.get(word.upper())
    if spec is None:
        close = _closest(word.upper(), MNEMONICS)
        hint = f"did you mean {close}?" if close else f"instructions are: {', '.join(MNEMONICS)}"
        raise AsmError(f"unknown instruction '{word}'", loc=_loc(file, line, text, lead + 1, len(word)), hint=hint)
    body = code[m.end():]
    if body and not body[0].isspace():
        raise AsmError(f"expected a space after '{word}'", loc=_loc(file, line, text, m.end() + 1),
                       hint=f"write it as `{spec.syntax}`")
    _check_brackets(body, m.end() + 1, file, line, text)
    ops = _split_operands(body, m.end() + 1) if body.strip() else []
    if len(ops) != spec.arity:
        col = ops[spec.arity][1] if len(ops) > spec.arity else lead + 1
        length = len(ops[spec.arity][0]) if len(ops) > spec.arity else len(word)
        raise AsmError(
            f"{spec.mnemonic} takes {spec.arity} operand{'s' if spec.arity != 1 else ''}, found {len(ops)}",
            loc=_loc(file, line, text, col, length), hint=f"write it as `{spec.syntax}`")
    args = []
    for (otext, ocol), kind in zip(ops, spec.signature):
        if not otext:
            raise AsmError("empty operand", loc=_loc(file, line, text, ocol), hint=f"write it as `{spec.syntax}`")
        if kind == "mem":
            if _REG.match(otext):
                raise AsmError(f"{spec.mnemonic} needs a DRAM address here, found register '{otext}'",
                               loc=_loc(file, line, text, ocol, len(otext)), hint=f"write it as `{spec.syntax}`")
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
                raise AsmError(msg, loc=_loc(file, line, text, ocol, len(otext)), hint=hint)
            if reg.transpose and kind == "dst":
                raise AsmError("a destination register cannot be transposed",
                               loc=_loc(file, line, text, ocol, len(otext)), hint="drop the .T suffix")
            args.append(reg)
        elif kind == "imm":
            if not _NUMBER.match(otext):
                raise AsmError(f"expected a number, found '{otext}'", loc=_loc(file, line, text, ocol, len(otext)),
                               hint=f"write it as `{spec.syntax}`")
            args.append(_number(otext))
        else:  # pragma: no cover - the ISA table only uses the kinds above
            raise AssertionError(kind)
    return Instr(spec.mnemonic, tuple(args), line)


def _number(text: str):
    low = text.lower().lstrip("+")
    if low in ("inf", "infinity"):
        return math.inf
    if low in ("-inf", "-infinity"):
        return -math.inf
    if low.lstrip("-") == "nan":
        return math.nan
    if _INT.match(low.lstrip("-")):
        return int(low)
    return float(low)


def _closest(word: str, options: Iterable[str]) -> str | None:
    import difflib

    got = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return got[0] if got else None


def _parse_directive(code: str, line: int, file: str, text: str) -> ArrayDecl:
    lead = len(code) - len(code.lstrip())
    m = re.match(r"\.([A-Za-z_]+)", code[lead:])
    name = m.group(1).lower() if m else ""
    if name not in ("data", "array"):
        word = m.group(0) if m else "."
        raise AsmError(f"unknown directive '{word}'", loc=_loc(file, line, text, lead + 1, len(word)),
                       hint="directives are `.data NAME = [...]` and `.array NAME[d0][d1] [= fill]`")
    pos = lead + m.end()
    rest = code[pos:]
    sp = len(rest) - len(rest.lstrip())
    pos += sp
    nm = _IDENT.match(code, pos)
    if not nm:
        raise AsmError(f".{name} needs an array name", loc=_loc(file, line, text, pos + 1),
                       hint=f"write `.{name} x = [1, 2, 3]`" if name == "data" else "write `.array c[2][2]`")
    arr = nm.group(0)
    pos = nm.end()
    if name == "data":
        eq = re.compile(r"\s*=\s*").match(code, pos)
        if not eq:
            raise AsmError("expected '=' after the array name", loc=_loc(file, line, text, pos + 1),
                           hint=f"write `.data {arr} = [1, 2, 3]`")
        values = parse_literal(code[eq.end():], file=file, line=line, source=text, col0=eq.end() + 1)
        if not isinstance(values, list):
            values = [values]
        shape = _shape_of(values, file, line, text, eq.end() + 1)
        return ArrayDecl(arr, shape, values=values, line=line)
    # .array NAME[d0][d1] [= fill]
    dims = []
    while True:
        dm = re.compile(r"\[\s*(\d+)\s*\]").match(code, pos)
        if not dm:
            break
        if int(dm.group(1)) == 0:
            raise AsmError("array dimensions must be positive", loc=_loc(file, line, text, dm.start(1) + 1),
                           hint="use a size of at least 1")
        dims.append(int(dm.group(1)))
        pos = dm.end()
    if not dims:
        raise AsmError(f".array {arr} needs a shape", loc=_loc(file, line, text, pos + 1),
                       hint=f"write `.array {arr}[4][4]` (one [size] per dimension)")
    fill = None
    tail = code[pos:].strip()
    if tail:
        fm = re.compile(r"\s*=\s*(\S+)\s*$").match(code, pos)
        if not fm or not _NUMBER.match(fm.group(1)):
            raise AsmError(f"unexpected '{tail}' after the shape", loc=_loc(file, line, text, pos + 1 + (len(code[pos:]) - len(code[pos:].lstrip())), len(tail)),
                           hint=f"write `.array {arr}{''.join(f'[{d}]' for d in dims)} = 0` to fill it")
        fill = float(_number(fm.group(1)))
    return ArrayDecl(arr, tuple(dims), fill=fill, line=line)


def _shape_of(values, file, line, text, col) -> tuple[int, ...]:
    def shape(v):
        if isinstance(v, list):
            if not v:
                raise AsmError("empty list in .data", loc=_loc(file, line, text, col),
                               hint="every dimension needs at least one element")
            subs = [shape(x) for x in v]
            if any(s != subs[0] for s in subs):
                raise AsmError("ragged .data: rows have different lengths", loc=_loc(file, line, text, col),
                               hint="every row of a nested list must have the same length")
            return (len(v),) + subs[0]
        return ()

    return shape(values)


_LIT_TOKEN = re.compile(r"\s*(?:(\[)|(\])|(,)|([+-]?(?:inf(?:inity)?|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))|(null))",
                        re.IGNORECASE)


def parse_literal(text: str, *, file: str = "<input>", line: int = 0, source: str | None = None, col0: int = 1):
    """Parse a nested list literal of numbers (no eval): ``[[1, 2], [3, -inf]]``."""
    src = source if source is not None else text
    pos = 0

    def err(msg, at, hint="write a nested list of numbers, e.g. [[1, 2], [3, 4]]"):
        return AsmError(msg, loc=_loc(file, line, src, col0 + at), hint=hint)

    def token():
        nonlocal pos
        m = _LIT_TOKEN.match(text, pos)
        if not m:
            rest = text[pos:].strip()
            if not rest:
                raise err("unexpected end of .data literal", len(text.rstrip()))
            at = pos + (len(text[pos:]) - len(text[pos:].lstrip()))
            raise err(f"unexpected '{rest.split()[0][:20]}' in .data literal", at)
        pos = m.end()
        return m

    def value():
        start = pos
        m = token()
        if m.group(1):
            items = []
            # empty list?
            m2 = _LIT_TOKEN.match(text, pos)
            if m2 and m2.group(2):
                token()
                return items
            while True:
                items.append(value())
                m3 = token()
                if m3.group(2):
                    return items
                if not m3.group(3):
                    raise err("expected ',' or ']'", m3.start() + (len(m3.group(0)) - len(m3.group(0).lstrip())))
        if m.group(4):
            return float(_number(m.group(4)))
        at = m.start() + (len(m.group(0)) - len(m.group(0).lstrip()))
        raise err(f"unexpected '{m.group(0).strip()}' in .data literal", at if start >= 0 else 0)

    v = value()
    if text[pos:].strip():
        at = pos + (len(text[pos:]) - len(text[pos:].lstrip()))
        raise err(f"unexpected '{text[pos:].strip()[:20]}' after the literal", at)
    return v


def open_error(path: str, exc: OSError) -> AsmError:
    """The error to raise when a program file cannot be opened."""
    if isinstance(exc, FileNotFoundError):
        return AsmError(f"no such file: {path}", loc=Location(path),
                        hint="check the path, or pass - to read standard input")
    if isinstance(exc, IsADirectoryError):
        return AsmError(f"{path} is a directory, not a program", loc=Location(path))
    return AsmError(f"cannot read {path}: {exc.strerror}", loc=Location(path))


def read_source(path: str) -> str:
    """Read a program file as UTF-8, with clear errors for binary or mis-encoded files."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise open_error(path, exc) from None
    return decode_source(raw, path)


def decode_source(raw: bytes, path: str) -> str:
    if b"\x00" in raw:
        at = raw.index(b"\x00")
        line = raw.count(b"\n", 0, at) + 1
        col = at - (raw.rfind(b"\n", 0, at) + 1) + 1
        raise AsmError(f"{path} looks like a binary file (NUL byte)", loc=Location(path, line, col),
                       hint="toym reads assembly text; pass a .asm file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start
        line = raw.count(b"\n", 0, at) + 1
        col = at - (raw.rfind(b"\n", 0, at) + 1) + 1
        bad = raw[at:at + 1].hex()
        text_line = raw.split(b"\n")[line - 1].decode("utf-8", "replace")
        raise AsmError(f"{path} is not valid UTF-8 (byte 0x{bad})", loc=Location(path, line, col, text_line),
                       hint="save the file as UTF-8") from None


def line_iter(stream) -> Iterator[str]:
    """Yield decoded lines of a binary stream, with UTF-8 errors located (streaming)."""
    for n, raw in enumerate(stream, 1):
        if b"\x00" in raw:
            raise AsmError("input looks like a binary file (NUL byte)", loc=Location(getattr(stream, "name", "<stdin>"), n, raw.index(b"\x00") + 1),
                           hint="toym reads assembly text")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AsmError(f"input is not valid UTF-8 (byte 0x{raw[exc.start:exc.start + 1].hex()})",
                           loc=Location(str(getattr(stream, "name", "<stdin>")), n, exc.start + 1, raw.decode("utf-8", "replace")),
                           hint="save the file as UTF-8") from None


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
                               loc=_loc(file, n, src, 1, len(src.rstrip())), hint="keep one .data/.array per array")
            seen[item.name] = n
            arrays.append(item)
        else:
            instrs.append(item)
    return Program(tuple(instrs), tuple(arrays), tuple(header), file, tuple(lines))


def parse_file(path: str) -> Program:
    return parse(read_source(path), path)


__all__ += ["decode_source", "open_error"]
