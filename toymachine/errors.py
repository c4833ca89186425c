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
]

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """Where in a source text something happened (1-based line and column)."""

    file: str = "<input>"
    line: int = 0
    col: int = 0
    source_line: str | None = None
    length: int = 1


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
        out = [f"error: {self.message}"]
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
                text = loc.source_line.rstrip("\r\n").expandtabs(1)
                out.append(f" {pad} |")
                out.append(f" {num} | {text}")
                if loc.col:
                    caret = " " * (loc.col - 1) + "^" * max(1, loc.length)
                    out.append(f" {pad} | {caret}")
        if self.hint:
            out.append(f"  = hint: {self.hint}")
        return "\n".join(out)

    def to_dict(self) -> dict:
        d: dict = {"kind": self.kind, "message": self.message}
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
