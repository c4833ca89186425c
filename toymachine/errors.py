"""Errors a user can cause, each with a source location and a hint.

Every error renders the way a compiler's does::

    error: machine has 3 registers (R0-R2); R5 is beyond them
      --> trace.asm:4:16
       |
     4 | LOAD a[0][0], R5
       |               ^^
       = hint: use --registers 6 or a machine file with `registers: 6`

An error's words name the parameters it is about as ``Opt`` parts, never as a flag's spelling:
the library says a parameter by its key (``registers = 6``, the name the Python API, the JSON and
``toym serve``'s forms use), and the CLI says it as its flag (``--registers 6``) by passing its
naming function (``cli.vocabulary.flag_words``) to ``render`` and ``to_dict``. The CLI maps every
``ToyMachineError`` to exit status 2.
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
    "Opt",
    "Words",
    "Namer",
    "field_words",
    "say",
    "excerpt",
    "EXCERPT_CHARS",
]

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # typing.Self is Python 3.11's; the package supports 3.10
    from typing_extensions import Self

EXCERPT_CHARS = 200  # an error quotes at most this much of an offending line (or of a message)


@dataclass(frozen=True)
class Opt:
    """A parameter named in an error's words (with ``value``, the value it is given or should be):
    each front says it its own way (``Namer``)."""

    key: str
    value: object = None


Words = str | tuple[str | Opt, ...]  # an error's text: plain, or parts naming parameters
Namer = Callable[[str, object], str]  # how a front says parameter ``key`` (given ``value``; None: no value)


def field_words(key: str, value: object = None) -> str:
    """The library's (and the JSON's, and ``toym serve``'s) words for a parameter: its key, ``key = value``."""
    return key if value is None else f"{key} = {value}"


def say(words: Words, name: Namer = field_words) -> str:
    """``words`` as text, each parameter said by ``name``."""
    if isinstance(words, str):
        return words
    return "".join(p if isinstance(p, str) else name(p.key, p.value) for p in words)


@dataclass(frozen=True)
class Location:
    """Where in a source text something happened (1-based line and column); or, with ``option``,
    in which parameter (each front says it its own way, as an error's ``Opt`` parts)."""

    file: str = "<input>"
    line: int = 0
    col: int = 0
    source_line: str | None = None
    length: int = 1
    option: str | None = None

    @classmethod
    def of_option(cls, key: str) -> Location:
        """The value of parameter ``key`` (the CLI shows ``--> --KEY``)."""
        return cls(key, option=key)

    def where(self, name: Namer) -> str:
        """The file, or the parameter said by ``name``."""
        return self.file if self.option is None else name(self.option, None)


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
    spelling); ``suggestion``, a value of ``key`` that fixes it (the hint then reads ``use KEY =
    VALUE``, on the command line ``use --KEY VALUE``, or ``… or ALTERNATIVE``); ``code``, what went wrong, where one kind of error
    has several causes (``yaml-syntax``); ``context``, where in a larger input it arose (a
    problem's variant), shown after the message."""

    kind = "error"

    def __init__(self, message: Words, *, loc: Location | None = None, hint: Words | None = None,
                 key: str | None = None, suggestion: object = None, alternative: str | None = None,
                 code: str | None = None, context: str | None = None):
        super().__init__(message)
        self.words = message
        self.loc = loc
        self._hint = hint
        self.key = key
        self.suggestion = suggestion
        self.alternative = alternative
        self.code = code
        self.context = context

    @property
    def message(self) -> str:
        """The message in the library's words (``message_in`` says it as a front does)."""
        return say(self.words)

    @message.setter
    def message(self, words: Words) -> None:
        self.words = words

    @property
    def hint(self) -> str | None:
        """How to fix it, in the library's words (``hint_in``)."""
        return self.hint_in(field_words)

    @hint.setter
    def hint(self, words: Words | None) -> None:
        self._hint = words

    def hint_in(self, name: Namer) -> str | None:
        """How to fix it: the hint given, else the suggestion worded as the parameter to give."""
        if self._hint is not None or self.key is None or self.suggestion is None:
            return None if self._hint is None else say(self._hint, name)
        text = f"use {name(self.key, self.suggestion)}"
        return text + (f" or {self.alternative}" if self.alternative else "")

    @property
    def text(self) -> str:
        """The message as shown: with its context, if any."""
        return self.text_in(field_words)

    def text_in(self, name: Namer) -> str:
        message = say(self.words, name)
        return message if self.context is None else f"{message} [{self.context}]"

    @classmethod
    def of_option(cls, key: str, problem: str, **kwargs: Any) -> Self:
        """An error about parameter ``key``'s value: ``KEY PROBLEM`` (``of_option("jobs", "must be at
        least 1, got 0")``; the CLI says ``--jobs must be …``), with ``key`` set for callers to test."""
        return cls((Opt(key), f" {problem}"), key=key, **kwargs)

    def with_loc(self, loc: Location) -> ToyMachineError:
        """Attach a location if the error has none yet (returns self)."""
        if self.loc is None or self.loc.line == 0:
            self.loc = loc
        return self

    def render(self, name: Namer = field_words) -> str:
        """The error as a compiler's, each parameter said by ``name`` (the CLI: as its flag)."""
        shown = self.text_in(name)
        message = shown if len(shown) <= 4 * EXCERPT_CHARS else \
            shown[:4 * EXCERPT_CHARS] + f"… ({len(shown):,} characters)"
        out = [f"error: {message}"]
        loc = self.loc
        if loc is not None:
            where = loc.where(name)
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
        hint = self.hint_in(name)
        if hint:
            out.append(f"  = hint: {hint}")
        return "\n".join(out)

    def to_dict(self, name: Namer = field_words) -> dict:
        d: dict = {"kind": self.kind, "message": self.text_in(name)[:4 * EXCERPT_CHARS]}
        if self.loc is not None:
            d.update(file=self.loc.where(name), line=self.loc.line, col=self.loc.col)
        hint = self.hint_in(name)
        if hint:
            d["hint"] = hint
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

