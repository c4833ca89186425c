"""One submitted file, read without trusting it: from a folder or a zip member (``check.submissions``
groups an export's files into students).

Nothing here trusts its input: a zip is read member by member in memory, never extracted
(no path leaves the archive: zip-slip cannot happen), each member read at most
``max_bytes + 1`` bytes whatever its header claims, members that inflate past ``max_ratio``
or past the archive's byte budget are refused, symbolic links are never followed, and a
file that is empty, binary, too big, too long or not UTF-8 becomes a ``Submission`` with
its ``reason`` — one failing row, never an aborted batch.
"""

from __future__ import annotations

__all__ = ["Submission", "read_student_folder", "read_file", "decode_trace",
           "decode_submission", "safe_id", "zip_entry_count", "read_member", "read_size"]

import math
import os
import re
import stat
import struct
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath

from .limits import DEFAULT_LIMITS, GradeLimits
from .lms import canvas_copy_of


@dataclass(frozen=True)
class Submission:
    student: str  # the student's ID (a safe file name)
    source: str  # where it came from, for messages
    text: str | None = None  # the trace; None when it cannot be graded
    reason: str = ""  # why not
    warnings: tuple[str, ...] = ()  # what was forgiven (bytes that are not UTF-8 in a comment)


def safe_id(name: str) -> str:
    """An ID that is a safe file name everywhere: letters, digits and ``._@+-``; no leading dot or dash
    (surrounding blanks dropped). ``pick_variant`` hashes this form, so ``toym grade``'s ID of a file
    ``Jean Dupont.asm`` and ``--student "Jean Dupont"`` get the same variant."""
    out = re.sub(r"[^A-Za-z0-9._@+-]", "_", name.strip())[:100].lstrip(".-") or "student"
    return out


def decode_trace(data: bytes, limits: GradeLimits = DEFAULT_LIMITS) -> tuple[str | None, str]:
    """(text, "") of a submitted file, or (None, why it cannot be graded)."""
    text, reason, _ = decode_submission(data, limits)
    return text, reason


def decode_submission(data: bytes, limits: GradeLimits = DEFAULT_LIMITS) -> tuple[str | None, str, tuple[str, ...]]:
    """(text, "", warnings) of a submitted file, or (None, why it cannot be graded, ()).

    Bytes that are not UTF-8 inside a comment (after ``;`` or ``#``: a Latin-1 ``é`` in a name)
    cost nothing: each becomes U+FFFD and a warning names its line. Anywhere else they make the
    file unreadable, with the line and column."""
    if len(data) > limits.max_bytes:
        return None, f"too large: more than {limits.max_bytes:,} bytes", ()
    if not data.strip():
        return None, "empty submission", ()
    if b"\0" in data:
        return None, "a binary file (it holds NUL bytes), not a text trace", ()
    warnings: tuple[str, ...] = ()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        cleaned, reason, warnings = _comment_bytes(data.removeprefix(b"\xef\xbb\xbf"))
        if cleaned is None:
            return None, reason, ()
        text = cleaned
    lines = text.count("\n") + 1
    if lines > limits.max_instructions:
        return None, f"too long: {lines:,} lines; the limit is {limits.max_instructions:,} instructions", ()
    return (text if text.endswith("\n") else text + "\n"), "", warnings


def _comment_bytes(data: bytes) -> tuple[str | None, str, tuple[str, ...]]:
    """Decode line by line: bad bytes after a line's comment marker are replaced (and warned of)."""
    out, warned = [], []
    for number, line in enumerate(data.split(b"\n"), 1):
        try:
            out.append(line.decode("utf-8"))
            continue
        except UnicodeDecodeError as exc:
            first = exc.start
        marks = [k for k in (line.find(b";"), line.find(b"#")) if k >= 0]
        if not marks or first < min(marks):
            return None, (f"not UTF-8 text: byte 0x{line[first]:02x} at line {number}, column {first + 1} (outside "
                          "a comment); save the trace as UTF-8"), ()
        out.append(line.decode("utf-8", "replace"))
        warned.append(number)
    shown = ", ".join(str(n) for n in warned[:8]) + (" …" if len(warned) > 8 else "")
    return "\n".join(out), "", (f"bytes that are not UTF-8 in the comments of line(s) {shown} were replaced by "
                                "\N{REPLACEMENT CHARACTER}; save the trace as UTF-8",)


def read_size(limit: float) -> int:
    """How many bytes to read to tell content over ``limit`` bytes from content at it (-1: all of it)."""
    return -1 if limit == math.inf else int(limit) + 1


def read_file(path: str, limits: GradeLimits) -> tuple[str | None, str, tuple[str, ...]]:
    """(text, reason, warnings) of a submitted file on disk (``decode_submission``)."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return None, "a symbolic link: not followed", ()
        if not stat.S_ISREG(st.st_mode):
            return None, "not a regular file", ()
        if st.st_size > limits.max_bytes:
            return None, f"too large: {st.st_size:,} bytes; the limit is {limits.max_bytes:,}", ()
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(read_size(limits.max_bytes))
    except OSError as exc:
        return None, f"cannot read: {exc.strerror}", ()
    return decode_submission(data, limits)


def _pick(files: list[str], wanted: str | None) -> tuple[str | None, str]:
    """The submitted file among a student's ``files`` (relative paths): the problem's name, else the one .asm."""
    if wanted:
        hits = ([f for f in files if f == wanted] or [f for f in files if PurePosixPath(f).name == wanted]
                or [f for f in files if canvas_copy_of(PurePosixPath(f).name, wanted)])
        if hits:
            return sorted(hits, key=len)[0], ""
        return None, f"no {wanted} in the submission (found: {', '.join(sorted(files)[:8]) or 'nothing'})"
    traces = [f for f in files if f.lower().endswith(".asm")]
    if len(traces) == 1:
        return traces[0], ""
    found = ", ".join(sorted(files)[:8]) or "nothing"
    return None, ("no .asm file in the submission" if not traces else "several .asm files and the problem names "
                  "none (add 'submission: FILE' to the problem)") + f" (found: {found})"


def read_student_folder(folder: str, wanted: str | None, limits: GradeLimits = DEFAULT_LIMITS,
                        student: str | None = None, prefix: str = "") -> Submission:
    """One student's folder (Gradescope's /autograder/submission): their trace, or why not.
    Messages name the file relative to the folder (behind ``prefix``), never the grader's paths."""
    student = safe_id(student or os.path.basename(os.path.normpath(folder)))
    if os.path.islink(folder):
        return Submission(student, prefix.rstrip("/") or student, None, "a symbolic link: not followed")
    files, budget = [], limits.max_files
    for root, dirs, names in os.walk(folder):  # os.walk never follows symbolic links to folders
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__MACOSX")
        for n in sorted(names):
            if not n.startswith("."):
                files.append(os.path.relpath(os.path.join(root, n), folder).replace(os.sep, "/"))
        budget -= len(names)
        if budget < 0:
            return Submission(student, prefix or student, None,
                              f"more than {limits.max_files:,} files in the submission")
    name, reason = _pick(files, wanted)
    if name is None:
        return Submission(student, prefix or student, None, reason)
    text, reason, warnings = read_file(os.path.join(folder, name), limits)
    return Submission(student, prefix + name, text, reason, warnings)


def _member_parts(name: str) -> list[str] | None:
    """The path of a zip member as parts, or None when it tries to leave the archive."""
    name = name.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    return None if ".." in parts else parts


def zip_entry_count(path: str) -> int | None:
    """The number of entries a zip's end-of-central-directory record (or its ZIP64 record) declares,
    read from the file's last 64 KiB: known before ``zipfile`` parses (and allocates) the directory.
    None when no record is found (``zipfile`` then refuses the file itself)."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        start = max(0, size - (22 + 65535))  # the record (22 bytes) and at most a 64 KiB comment
        fh.seek(start)
        tail = fh.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < 22:
            return None
        entries = struct.unpack_from("<H", tail, at + 10)[0]
        locator = at - 20  # the ZIP64 locator sits right before the record
        if locator >= 0 and tail[locator:locator + 4] == b"PK\x06\x07":
            offset = struct.unpack_from("<Q", tail, locator + 8)[0]
            if 0 <= offset <= size - 56:
                fh.seek(offset)
                record = fh.read(56)
                if record[:4] == b"PK\x06\x06":
                    entries = max(entries, struct.unpack_from("<Q", record, 32)[0])
        return entries


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: GradeLimits, budget: list) -> tuple[str | None, str, tuple[str, ...]]:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return None, "a symbolic link in the archive: not followed", ()
    if info.flag_bits & 0x1:
        return None, "an encrypted archive member", ()
    if info.file_size > limits.max_bytes:
        return None, f"too large: {info.file_size:,} bytes; the limit is {limits.max_bytes:,}", ()
    if info.compress_size and info.file_size > 65536 and info.file_size / info.compress_size > limits.max_ratio:
        return None, f"compressed {info.file_size / info.compress_size:.0f}:1 (a zip bomb?): not read", ()
    if budget[0] <= 0:
        return None, f"the archive's read budget ({limits.max_total_bytes:,} bytes) is spent", ()
    try:
        with archive.open(info) as fh:  # the header may lie: read at most max_bytes + 1
            data = fh.read(read_size(min(limits.max_bytes, budget[0])))
    except Exception as exc:  # zipfile, zlib and bz2 raise their own kinds for a damaged member
        return None, f"a damaged archive member: {exc}", ()
    budget[0] -= len(data)
    return decode_submission(data, limits)
