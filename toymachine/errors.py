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
    "option_name",
    "excerpt",
    "EXCERPT_CHARS",
]

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # typing.Self is Python 3.11's; the package supports 3.10
    from typing_extensions import Self

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
    """Base class: a message a person can act on, with where and how to fix it.

    Besides the text, an error carries fields callers test and change instead of its words:
    ``key``, the option or file key it is about (a name such as ``registers``, never its flag
    spelling); ``suggestion``, a value of ``key`` that fixes it (the hint then reads ``use
    --KEY VALUE``, or ``… or ALTERNATIVE``); ``code``, what went wrong, where one kind of error
    has several causes (``yaml-syntax``); ``context``, where in a larger input it arose (a
    problem's variant), shown after the message."""

    kind = "error"

    def __init__(self, message: str, *, loc: Location | None = None, hint: str | None = None,
                 key: str | None = None, suggestion: object = None, alternative: str | None = None,
                 code: str | None = None, context: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self._hint = hint
        self.key = key
        self.suggestion = suggestion
        self.alternative = alternative
        self.code = code
        self.context = context

    @property
    def hint(self) -> str | None:
        """How to fix it: the hint given, else the suggestion worded as the option to give."""
        if self._hint is not None or self.key is None or self.suggestion is None:
            return self._hint
        text = f"use {option_name(self.key)} {self.suggestion}"
        return text + (f" or {self.alternative}" if self.alternative else "")

    @hint.setter
    def hint(self, text: str | None) -> None:
        self._hint = text

    @property
    def text(self) -> str:
        """The message as shown: with its context, if any."""
        return self.message if self.context is None else f"{self.message} [{self.context}]"

    @classmethod
    def of_option(cls, key: str, problem: str, **kwargs: Any) -> Self:
        """An error about option ``key``'s value: ``--KEY PROBLEM`` (``of_option("jobs", "must be
        at least 1, got 0")``), with ``key`` set for callers to test."""
        return cls(f"{option_name(key)} {problem}", key=key, **kwargs)

    def with_loc(self, loc: Location) -> ToyMachineError:
        """Attach a location if the error has none yet (returns self)."""
        if self.loc is None or self.loc.line == 0:
            self.loc = loc
        return self

    def render(self) -> str:
        shown = self.text
        message = shown if len(shown) <= 4 * EXCERPT_CHARS else \
            shown[:4 * EXCERPT_CHARS] + f"… ({len(shown):,} characters)"
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
        d: dict = {"kind": self.kind, "message": self.text[:4 * EXCERPT_CHARS]}
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


def option_name(key: str) -> str:
    """How the command line spells option ``key``: ``block_m`` → ``--block-m``."""
    return "--" + key.replace("_", "-")
