"""Errors a user can cause, each with a source location and a hint.

Every error renders the way a compiler's does::

    error: machine has 3 registers (R0-R2); R5 is beyond them
      --> trace.asm:4:16
       |
     4 | LOAD a[0][0], R5
       |               ^^
       = hint: use --registers 6 or a machine file with `registers: 6`

The CLI maps every ``ToyMachineError`` to exit status 2.
"""

from __future__ import annotations

__all__ = [
    "ToyMachineError",
    "AsmError",
    "ConfigError",
    "DataError",
    "MachineLimitError",
    "RuntimeFault",
    "NumericsError",
    "Location",
    "flags_named",
    "excerpt",
    "EXCERPT_CHARS",
]

import re
from dataclasses import dataclass

EXCERPT_CHARS = 200  # an error quotes at most this much of an offending line (or of a message)


@dataclass(frozen=True)
class Location:
    """Where in a source text something happened (1-based line and column)."""

    file: str = "<input>"
    line: int = 0
    col: int = 0
    source_line: str | None = None
    length: int = 1


def excerpt(text: str, col: int = 1, width: int = EXCERPT_CHARS) -> tuple[str, int]:
    """A window of at most ``width`` characters of ``text`` around column ``col`` (1-based), with
    ``…`` where it was cut, and the column of ``col`` inside it: a 5 MB line quotes 200 characters."""
    if len(text) <= width:
        return text, col
    start = max(0, min(col - 1 - width // 2, len(text) - width))
    piece = text[start:start + width]
    new_col = col - start
    if start > 0:
        piece = "…" + piece
        new_col += 1
    if start + width < len(text):
        piece += "…"
    return piece, new_col


class ToyMachineError(Exception):
    """Base class: a message a person can act on, with where and how to fix it."""

    kind = "error"

    def __init__(self, message: str, *, loc: Location | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.hint = hint

    def with_loc(self, loc: Location) -> "ToyMachineError":
        """Attach a location if the error has none yet (returns self)."""
        if self.loc is None or self.loc.line == 0:
            self.loc = loc
        return self

    def render(self) -> str:
        message = self.message if len(self.message) <= 4 * EXCERPT_CHARS else \
            self.message[:4 * EXCERPT_CHARS] + f"… ({len(self.message):,} characters)"
        out = [f"error: {message}"]
        loc = self.loc
        if loc is not None:
            where = loc.file
            if loc.line:
                where += f":{loc.line}"
                if loc.col:
                    where += f":{loc.col}"
            out.append(f"  --> {where}")
            if loc.line and loc.source_line is not None:
                num = str(loc.line)
                pad = " " * len(num)
                text, col = excerpt(loc.source_line.rstrip("\r\n").expandtabs(1), max(1, loc.col))
                out.append(f" {pad} |")
                out.append(f" {num} | {text}")
                if loc.col:
                    caret = " " * (col - 1) + "^" * max(1, min(loc.length, EXCERPT_CHARS))
                    out.append(f" {pad} | {caret}")
        if self.hint:
            out.append(f"  = hint: {self.hint}")
        return "\n".join(out)

    def to_dict(self) -> dict:
        d: dict = {"kind": self.kind, "message": self.message[:4 * EXCERPT_CHARS]}
        if self.loc is not None:
            d.update(file=self.loc.file, line=self.loc.line, col=self.loc.col)
        if self.hint:
            d["hint"] = self.hint
        return d

    def __str__(self) -> str:
        return self.render()


class AsmError(ToyMachineError):
    """The text is not a valid program: bad opcode, operand, address, directive."""

    kind = "assembly"


class ConfigError(ToyMachineError):
    """A machine file or option is invalid (unknown key, wrong type, bad value)."""

    kind = "config"


class DataError(ToyMachineError):
    """Input data is unreadable or does not fit the program."""

    kind = "data"


class MachineLimitError(ToyMachineError):
    """The program needs more than the machine has (registers, SRAM words)."""

    kind = "machine-limit"


class RuntimeFault(ToyMachineError):
    """The program did something undefined while running (read of an empty register...)."""

    kind = "runtime"


class NumericsError(RuntimeFault):
    """--strict-numerics turned a numerical alarm into an error."""

    kind = "numerics"


_QUALIFIED = re.compile(r"`?toym [a-z][a-z-]*(?: [a-z][a-z-]*)?[^;()`]*`?")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]*[a-z]|(?<![\w-])--[a-z]\b")


def flags_named(text: str | None) -> list[str]:
    """The ``--flags`` a hint tells the user to give *to the command that printed it*: those not in
    a ``toym COMMAND …`` of their own (``use --registers 6`` names one; ``toym gen matmul --n 4``
    none). Each command's hints may name only its own (``tests/test_vocabulary.py``)."""
    if not text:
        return []
    return _FLAG.findall(_QUALIFIED.sub(" ", text))
