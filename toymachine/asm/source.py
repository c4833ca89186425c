"""Reading program text: files, standard input, encodings — with located errors."""

from __future__ import annotations

__all__ = ["open_error", "read_source", "decode_source", "line_iter"]

from typing import Iterator

from ..errors import AsmError, Location


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
