"""Lexical pieces of the assembler: comments, operand splitting, registers, numbers.

Shared by the parser and by the simulator's error carets (``operand_spans``) and its
fast path for LOAD/STORE lines.
"""

from __future__ import annotations

__all__ = ["strip_comment", "operand_spans", "split_operands", "check_brackets", "parse_number", "closest",
           "make_loc", "IDENT", "REG", "INT", "NUMBER"]

import math
import re
from collections.abc import Iterable

from ..errors import AsmError, Location
from ..limits import LIMITS

try:
    MAX_DIGITS = int(LIMITS["literal_digits"].value())  # read once: parse_number is on the literal path
except Exception:  # noqa: BLE001 - a malformed TOYM_MAX_LITERAL_DIGITS is reported where YAML reads it
    MAX_DIGITS = int(LIMITS["literal_digits"].default)


IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


REG = re.compile(r"(?:([RrTt])([0-9]{1,9})|([Aa][Cc][Cc]))(\.[Tt])?$")  # R<n>, T<n>, or ACC (the MAC unit's accumulator)


INT = re.compile(r"[0-9]+$")  # ASCII digits only: '²' and '٣' are not numbers here


NUMBER = re.compile(r"[+-]?(?:inf(?:inity)?|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$", re.IGNORECASE | re.ASCII)


def strip_comment(text: str) -> str:
    for i, ch in enumerate(text):
        if ch == ";" or ch == "#":
            return text[:i]
    return text


def make_loc(file: str, line: int, text: str, col: int, length: int = 1) -> Location:
    return Location(file, line, col, text, max(1, length))


def split_operands(body: str, base_col: int) -> list[tuple[str, int]]:
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


def check_brackets(body: str, base_col: int, file: str, line: int, text: str) -> None:
    stack = []
    for i, ch in enumerate(body):
        if ch == "[":
            stack.append(i)
        elif ch == "]":
            if not stack:
                raise AsmError("malformed address: ']' without '['", loc=make_loc(file, line, text, base_col + i),
                               hint="write indices as a[0][1] or a[0, 1]")
            stack.pop()
    if stack:
        i = stack[0]
        start = body.rfind(",", 0, i) + 1
        start += len(body[start:]) - len(body[start:].lstrip())
        raise AsmError("malformed address: missing ']'", loc=make_loc(file, line, text, base_col + start, i - start + 1),
                       hint="close every '[' with ']', e.g. x[0]")


def operand_spans(source_line: str) -> list[tuple[int, int]]:
    """(column, length) of each operand on an instruction line, for error carets."""
    code = strip_comment(source_line)
    m = IDENT.search(code)
    if not m:
        return []
    body = code[m.end():]
    if not body.strip():
        return []
    return [(col, max(1, len(t))) for t, col in split_operands(body, m.end() + 1)]


def parse_number(text: str):
    if len(text) > MAX_DIGITS:  # Python refuses 4,300-digit ints; nobody means a 400-digit number
        raise ValueError(f"a number of {len(text):,} characters (at most {MAX_DIGITS})")
    low = text.lower().lstrip("+")
    if low in ("inf", "infinity"):
        return math.inf
    if low in ("-inf", "-infinity"):
        return -math.inf
    if low.lstrip("-") == "nan":
        return math.nan
    if INT.match(low.lstrip("-")):
        return int(low)
    return float(low)


def closest(word: str, options: Iterable[str]) -> str | None:
    import difflib

    got = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return got[0] if got else None
