"""Reading program text: files, standard input, encodings — with located errors."""

from __future__ import annotations

__all__ = ["open_error", "read_source", "decode_source", "line_iter", "Chunks", "binary_chunks", "text_chunks",
           "line_chunks",
           "CHUNK_CHARS", "FIRST_CHUNK_CHARS"]

import codecs
from collections.abc import Iterable, Iterator
from itertools import islice

from ..errors import AsmError, Location

CHUNK_CHARS = 1 << 20  # a trace is read in chunks of whole lines of about this many characters
FIRST_CHUNK_CHARS = 1 << 13  # the first is small (the first 200 steps are recorded line by line)


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


def _cut(text: str) -> tuple[str, str]:
    """(whole lines, the partial last line)."""
    cut = text.rfind("\n") + 1
    return text[:cut], text[cut:]


def text_chunks(fh) -> Iterator[str]:
    """A text file object in chunks of whole lines (the last may lack its newline): a block read,
    and the rest of its last line (``readline``, where the object has it: no copy of the block)."""
    readline = getattr(fh, "readline", None)
    if readline is None:
        yield from _text_chunks_cut(fh)
        return
    size = FIRST_CHUNK_CHARS
    while True:
        block = fh.read(size)
        size = CHUNK_CHARS
        if not block:
            return
        if block[-1] != "\n":
            block += readline()
        yield block


def _text_chunks_cut(fh) -> Iterator[str]:
    """``text_chunks`` of an object that only reads: each block cut at its last newline."""
    tail = ""
    size = FIRST_CHUNK_CHARS
    while True:
        block = fh.read(size)
        size = CHUNK_CHARS
        if not block:
            if tail:
                yield tail
            return
        whole, tail = _cut(tail + block)
        if whole:
            yield whole


def line_chunks(lines: Iterable[str], batch: int = 16_384) -> Iterator[str]:
    """An iterable of source lines (with or without their newlines) in chunks of whole lines."""
    it = iter(lines)
    while True:
        group = list(islice(it, batch))
        if not group:
            return
        yield "".join(line if line.endswith("\n") else line + "\n" for line in group)


class Chunks:
    """Program text as an iterable of chunks of whole lines (what ``simulate`` streams)."""

    def __init__(self, chunks: Iterable[str]):
        self.chunks = chunks

    def __iter__(self) -> Iterator[str]:
        return iter(self.chunks)


def binary_chunks(stream, name: str = "<stdin>") -> Iterator[str]:
    """A binary stream (standard input) as UTF-8 text in chunks of whole lines, with NUL bytes
    and invalid UTF-8 reported at their line and column."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    tail = ""
    lines_before = 0  # newlines in the bytes already decoded
    size = FIRST_CHUNK_CHARS
    while True:
        raw = stream.read(size)
        size = CHUNK_CHARS
        if b"\x00" in raw:
            at = raw.index(b"\x00")
            line = lines_before + raw.count(b"\n", 0, at) + 1
            col = at - (raw.rfind(b"\n", 0, at) + 1) + 1 + (len(tail.encode()) if b"\n" not in raw[:at] else 0)
            raise AsmError("input looks like a binary file (NUL byte)", loc=Location(name, line, col),
                           hint="toym reads assembly text")
        try:
            text = decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            line = lines_before + raw.count(b"\n", 0, exc.start) + 1
            start = raw.rfind(b"\n", 0, exc.start) + 1
            col = exc.start - start + 1 + (len(tail.encode()) if start == 0 else 0)
            end = raw.find(b"\n", exc.start)
            shown = ((tail.encode() if start == 0 else b"") + raw[start:end if end >= 0 else len(raw)])
            raise AsmError(f"input is not valid UTF-8 (byte 0x{raw[exc.start:exc.start + 1].hex()})",
                           loc=Location(name, line, col, shown.decode("utf-8", "replace")),
                           hint="save the file as UTF-8") from None
        lines_before += raw.count(b"\n")
        if not raw:
            if tail + text:
                yield tail + text
            return
        whole, tail = _cut(tail + text)
        if whole:
            yield whole
