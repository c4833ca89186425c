"""Submissions as a course hands them in: a folder of ``id.asm`` files, a folder of folders
(``id/<the problem's submission file>``), or a zip as an LMS exports either.

Nothing here trusts its input: a zip is read member by member in memory, never extracted
(no path leaves the archive: zip-slip cannot happen), each member read at most
``max_bytes + 1`` bytes whatever its header claims, members that inflate past ``max_ratio``
or past the archive's byte budget are refused, symbolic links are never followed, and a
file that is empty, binary, too big, too long or not UTF-8 becomes a ``Submission`` with
its ``reason`` — one failing row, never an aborted batch.
"""

from __future__ import annotations

__all__ = ["Submission", "collect_submissions", "read_student_folder", "read_file", "decode_trace", "safe_id",
           "zip_entry_count"]

import math
import os
import re
import stat
import struct
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..errors import ConfigError, Location
from ..limits import LIMITS as TABLE
from .limits import DEFAULT_LIMITS, GradeLimits


@dataclass(frozen=True)
class Submission:
    student: str  # the student's ID (a safe file name)
    source: str  # where it came from, for messages
    text: str | None = None  # the trace; None when it cannot be graded
    reason: str = ""  # why not


def safe_id(name: str) -> str:
    """An ID that is a safe file name everywhere: letters, digits and ``._@+-``; no leading dot or dash
    (surrounding blanks dropped). ``pick_variant`` hashes this form, so ``toym grade``'s ID of a file
    ``Jean Dupont.asm`` and ``--student "Jean Dupont"`` get the same variant."""
    out = re.sub(r"[^A-Za-z0-9._@+-]", "_", name.strip())[:100].lstrip(".-") or "student"
    return out


def decode_trace(data: bytes, limits: GradeLimits = DEFAULT_LIMITS) -> tuple[str | None, str]:
    """(text, "") of a submitted file, or (None, why it cannot be graded)."""
    if len(data) > limits.max_bytes:
        return None, f"too large: more than {limits.max_bytes:,} bytes"
    if not data.strip():
        return None, "empty submission"
    if b"\0" in data:
        return None, "a binary file (it holds NUL bytes), not a text trace"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}; save the trace as UTF-8"
    lines = text.count("\n") + 1
    if lines > limits.max_instructions:
        return None, f"too long: {lines:,} lines; the limit is {limits.max_instructions:,} instructions"
    return (text if text.endswith("\n") else text + "\n"), ""


def _read_size(limit: float) -> int:
    """How many bytes to read to tell content over ``limit`` bytes from content at it (-1: all of it)."""
    return -1 if limit == math.inf else int(limit) + 1


def read_file(path: str, limits: GradeLimits) -> tuple[str | None, str]:
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return None, "a symbolic link: not followed"
        if not stat.S_ISREG(st.st_mode):
            return None, "not a regular file"
        if st.st_size > limits.max_bytes:
            return None, f"too large: {st.st_size:,} bytes; the limit is {limits.max_bytes:,}"
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(_read_size(limits.max_bytes))
    except OSError as exc:
        return None, f"cannot read: {exc.strerror}"
    return decode_trace(data, limits)


def _pick(files: list[str], wanted: str | None) -> tuple[str | None, str]:
    """The submitted file among a student's ``files`` (relative paths): the problem's name, else the one .asm."""
    if wanted:
        hits = [f for f in files if f == wanted] or [f for f in files if PurePosixPath(f).name == wanted]
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
    text, reason = read_file(os.path.join(folder, name), limits)
    return Submission(student, prefix + name, text, reason)


def _unique(subs: list[Submission]) -> list[Submission]:
    seen: dict[str, int] = {}
    out = []
    for s in subs:
        key = s.student.lower()
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            why = f"a second submission for {s.student}" + (f" ({s.reason})" if s.reason else "")
            s = Submission(f"{s.student}~{seen[key]}", s.source, None, why)
        out.append(s)
    return out


def collect_submissions(path: str | os.PathLike, wanted: str | None = None,
                        limits: GradeLimits | None = None) -> list[Submission]:
    """Every student's submission under ``path`` (a folder or a zip), sorted by ID."""
    limits = GradeLimits.from_table() if limits is None else limits
    path = os.fspath(path)
    if os.path.isdir(path):
        subs = _from_folder(path, wanted, limits)
    elif os.path.isfile(path) and zipfile.is_zipfile(path):
        subs = _from_zip(path, wanted, limits)
    elif os.path.exists(path):
        raise ConfigError(f"{path} is neither a folder nor a zip archive", loc=Location(path),
                          hint="give a folder of id.asm files, a folder of folders, or an LMS zip export")
    else:
        raise ConfigError(f"no such folder or zip: {path}", loc=Location(path))
    # for one ID, a readable submission first: a junk or unsafe member (../alice.asm) never displaces it
    return _unique(sorted(subs, key=lambda s: (s.student.lower(), s.text is None, s.student)))


def _from_folder(path: str, wanted: str | None, limits: GradeLimits) -> list[Submission]:
    try:
        entries = sorted((e for e in os.scandir(path) if not e.name.startswith(".") and e.name != "__MACOSX"),
                         key=lambda e: e.name)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}", loc=Location(path)) from None
    if len(entries) > limits.max_entries:
        raise ConfigError(f"{path} holds {len(entries):,} entries; the limit is {limits.max_entries:,}",
                          loc=Location(path), hint=f"set {TABLE['grade_class_entries'].env} to lift it")
    out = []
    for e in entries:
        full = os.path.join(path, e.name)
        if e.is_dir(follow_symlinks=False):
            out.append(read_student_folder(full, wanted, limits, e.name, prefix=e.name + "/"))
        else:
            text, reason = read_file(full, limits)
            out.append(Submission(safe_id(os.path.splitext(e.name)[0]), e.name, text, reason))
    return out


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


def _from_zip(path: str, wanted: str | None, limits: GradeLimits) -> list[Submission]:
    try:
        entries = zip_entry_count(path)
    except OSError as exc:
        raise ConfigError(f"cannot read the zip {path}: {exc.strerror}", loc=Location(path)) from None
    if entries is not None and entries > limits.max_entries:
        raise ConfigError(f"{path} declares {entries:,} entries; the limit is {limits.max_entries:,}",
                          loc=Location(path), hint=f"set {TABLE['grade_class_entries'].env} to lift it")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ConfigError(f"cannot read the zip {path}: {exc}", loc=Location(path)) from None
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        if len(infos) > limits.max_entries:  # a directory longer than its record said
            raise ConfigError(f"{path} holds {len(infos):,} files; the limit is {limits.max_entries:,}",
                              loc=Location(path), hint=f"set {TABLE['grade_class_entries'].env} to lift it")
        members, out = [], []
        for info in infos:
            parts = _member_parts(info.filename)
            if parts is None:
                stem = PurePosixPath(info.filename.replace("\\", "/")).stem
                out.append(Submission(safe_id(stem), info.filename, None,
                                      "an unsafe path in the archive (absolute or with ..): not read"))
            elif parts and not any(p.startswith(".") or p == "__MACOSX" for p in parts):
                members.append((parts, info))
        tops = {parts[0] for parts, _ in members}
        one_student = wanted is not None and any(parts[1:] == [wanted] for parts, _ in members)
        if len(tops) == 1 and all(len(parts) > 1 for parts, _ in members) and not one_student:  # a wrapper folder
            members = [(parts[1:], info) for parts, info in members]
        budget = [limits.max_total_bytes]
        folders: dict[str, list] = {}
        for parts, info in members:
            if len(parts) == 1:
                text, reason = _read_member(archive, info, limits, budget)
                out.append(Submission(safe_id(PurePosixPath(parts[0]).stem), info.filename, text, reason))
            else:
                folders.setdefault(parts[0], []).append(("/".join(parts[1:]), info))
        for student, files in folders.items():
            if len(files) > limits.max_files:  # one student's junk is their failing row, not the class's
                out.append(Submission(safe_id(student), f"{student}/", None,
                                      f"more than {limits.max_files:,} files in the submission"))
                continue
            name, reason = _pick([f for f, _ in files], wanted)
            if name is None:
                out.append(Submission(safe_id(student), f"{student}/", None, reason))
                continue
            info = dict(files)[name]
            text, reason = _read_member(archive, info, limits, budget)
            out.append(Submission(safe_id(student), info.filename, text, reason))
    return out


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: GradeLimits, budget: list) -> tuple:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return None, "a symbolic link in the archive: not followed"
    if info.flag_bits & 0x1:
        return None, "an encrypted archive member"
    if info.file_size > limits.max_bytes:
        return None, f"too large: {info.file_size:,} bytes; the limit is {limits.max_bytes:,}"
    if info.compress_size and info.file_size > 65536 and info.file_size / info.compress_size > limits.max_ratio:
        return None, f"compressed {info.file_size / info.compress_size:.0f}:1 (a zip bomb?): not read"
    if budget[0] <= 0:
        return None, f"the archive's read budget ({limits.max_total_bytes:,} bytes) is spent"
    try:
        with archive.open(info) as fh:  # the header may lie: read at most max_bytes + 1
            data = fh.read(_read_size(min(limits.max_bytes, budget[0])))
    except Exception as exc:  # zipfile, zlib and bz2 raise their own kinds for a damaged member
        return None, f"a damaged archive member: {exc}"
    budget[0] -= len(data)
    return decode_trace(data, limits)
