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

__all__ = ["Submission", "Handin", "ClassExport", "collect_submissions", "collect_class", "read_student_folder",
           "read_file", "decode_trace", "decode_submission", "safe_id", "zip_entry_count"]

import os
import re
import stat
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath

from ..errors import ConfigError, Location
from ..limits import LIMITS as TABLE
from .limits import DEFAULT_LIMITS, GradeLimits
from .lms import LMS_NAMES, SIDE_FILES, Owner, blackboard_prefix, canvas_copy_of, detect, gradescope_owners, parse_name


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
        text, reason, warnings = _comment_bytes(data.removeprefix(b"\xef\xbb\xbf"))
        if text is None:
            return None, reason, ()
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
            data = fh.read(limits.max_bytes + 1)
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


@dataclass(frozen=True)
class Handin:
    """One student's hand-in in an export: who the LMS says they are, and their files."""

    student: str  # the LMS's id (a safe file name), else the file's stem or the folder's name
    source: str  # the export entry, for messages
    name: str = ""  # display name, where the LMS gives one
    late: bool = False  # the LMS marked it late
    submitted: datetime | None = None
    lms: str = ""  # the layout its name was read as ("": the plain rule)
    files: tuple = ()  # (path inside the hand-in, handle to read it)
    reason: str = ""  # why nothing of it can be read
    flat: bool = False  # one file handed in as itself (plain id.asm, or an LMS-named file)


@dataclass(frozen=True)
class ClassExport:
    """Every hand-in of an export (sorted by student id, ids unique) and, per wanted file name,
    each hand-in's ``Submission`` (in the same order)."""

    path: str
    lms: str  # the layout detected or forced ("": plain names)
    handins: tuple[Handin, ...]
    submissions: dict  # wanted file name (or None) → tuple[Submission, ...]
    unrecognised: tuple[str, ...] = ()  # top-level names the layout could not read (their stem is the id)


def collect_submissions(path: str | os.PathLike, wanted: str | None = None,
                        limits: GradeLimits | None = None, lms: str | None = None) -> list[Submission]:
    """Every student's submission under ``path`` (a folder or a zip), sorted by ID."""
    return list(collect_class(path, [wanted], limits, lms).submissions[wanted])


def collect_class(path: str | os.PathLike, wanted: list[str | None] | tuple = (None,),
                  limits: GradeLimits | None = None, lms: str | None = None) -> ClassExport:
    """Every hand-in under ``path`` (a folder or a zip, plain or as an LMS exports it: ``lms``
    forces a layout of ``check.lms``, else it is detected from the names), and for each file
    name of ``wanted`` (None: the one ``.asm``) each student's ``Submission``."""
    limits = GradeLimits.from_table() if limits is None else limits
    path = os.fspath(path)
    if lms is not None and lms not in LMS_NAMES:
        raise ConfigError(f"unknown LMS {lms!r}", hint=f"choose one of {', '.join(LMS_NAMES)}")
    if os.path.isdir(path):
        inner = [e for e in os.listdir(path) if not e.startswith(".") and e != "__MACOSX"]
        if len(inner) == 1 and os.path.isfile(os.path.join(path, inner[0], "submission_metadata.yml")) \
                and not os.path.islink(os.path.join(path, inner[0])):  # Gradescope's export, unzipped
            path = os.path.join(path, inner[0])
        return _group(path, _folder_tops(path, limits), wanted, lms, lambda h: read_file(h, limits),
                      lambda h: _read_bytes(h, limits))
    if os.path.isfile(path) and zipfile.is_zipfile(path):
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
            budget = [limits.max_total_bytes]
            tops, bad = _zip_tops(archive, path, wanted, limits)
            return _group(path, tops, wanted, lms, lambda h: _read_member(archive, h, limits, budget),
                          lambda h: _member_bytes(archive, h, limits, budget), bad)
    if os.path.exists(path):
        raise ConfigError(f"{path} is neither a folder nor a zip archive", loc=Location(path),
                          hint="give a folder of id.asm files, a folder of folders, or an LMS zip export")
    raise ConfigError(f"no such folder or zip: {path}", loc=Location(path))


def _sorted(subs: list[Submission]) -> tuple[Submission, ...]:
    # for one ID, a readable submission first: a junk or unsafe member (../alice.asm) never displaces it
    return tuple(_unique(sorted(subs, key=lambda s: (s.student.lower(), s.text is None, s.student))))


def _folder_tops(path: str, limits: GradeLimits) -> list[tuple[str, bool, list, str]]:
    """(name, is a folder, [(path inside, file path)], reason) of each top-level entry of a folder."""
    try:
        entries = sorted((e for e in os.scandir(path) if not e.name.startswith(".") and e.name != "__MACOSX"),
                         key=lambda e: e.name)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}", loc=Location(path)) from None
    if len(entries) > limits.max_entries:
        raise ConfigError(f"{path} holds {len(entries):,} entries; the limit is {limits.max_entries:,}",
                          loc=Location(path), hint=f"set {TABLE['grade_class_entries'].env} to lift it")
    tops = []
    for e in entries:
        full = os.path.join(path, e.name)
        if not e.is_dir(follow_symlinks=False):
            tops.append((e.name, False, [(e.name, full)], ""))
            continue
        files, budget, reason = [], limits.max_files, ""
        for root, dirs, names in os.walk(full):  # os.walk never follows symbolic links to folders
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__MACOSX")
            for n in sorted(names):
                if not n.startswith("."):
                    rel = os.path.relpath(os.path.join(root, n), full).replace(os.sep, "/")
                    files.append((rel, os.path.join(root, n)))
            budget -= len(names)
            if budget < 0:
                reason = f"more than {limits.max_files:,} files in the submission"
                break
        tops.append((e.name, True, files, reason))
    return tops


def _zip_tops(archive: zipfile.ZipFile, path: str, wanted, limits: GradeLimits) -> tuple[list, list[Submission]]:
    infos = [i for i in archive.infolist() if not i.is_dir()]
    if len(infos) > limits.max_entries:  # a directory longer than its record said
        raise ConfigError(f"{path} holds {len(infos):,} files; the limit is {limits.max_entries:,}",
                          loc=Location(path), hint=f"set {TABLE['grade_class_entries'].env} to lift it")
    members, bad = [], []
    for info in infos:
        parts = _member_parts(info.filename)
        if parts is None:
            stem = PurePosixPath(info.filename.replace("\\", "/")).stem
            bad.append(Submission(safe_id(stem), info.filename, None,
                                  "an unsafe path in the archive (absolute or with ..): not read"))
        elif parts and not any(p.startswith(".") or p == "__MACOSX" for p in parts):
            members.append((parts, info))
    tops_names = {parts[0] for parts, _ in members}
    one_student = any(w is not None and parts[1:] == [w] for w in wanted for parts, _ in members)
    if len(tops_names) == 1 and all(len(parts) > 1 for parts, _ in members) and not one_student:  # a wrapper folder
        members = [(parts[1:], info) for parts, info in members]
    tops: dict[str, tuple] = {}
    for parts, info in members:
        if len(parts) == 1:
            tops[parts[0] + "\0file"] = (parts[0], False, [(parts[0], info)], "")
        else:
            tops.setdefault(parts[0] + "\0dir", (parts[0], True, [], ""))[2].append(("/".join(parts[1:]), info))
    for k, (name, is_dir, files, _) in tops.items():
        if len(files) > limits.max_files:  # one student's junk is their failing row, not the class's
            tops[k] = (name, is_dir, [], f"more than {limits.max_files:,} files in the submission")
    return [tops[k] for k in sorted(tops)], bad


def _read_bytes(path: str, limits: GradeLimits) -> bytes | None:
    """A side file of an export (Gradescope's metadata), at most the archive budget."""
    try:
        if os.path.islink(path) or not os.path.isfile(path):
            return None
        with open(path, "rb") as fh:
            data = fh.read(limits.max_total_bytes + 1)
    except OSError:
        return None
    return data if len(data) <= limits.max_total_bytes else None


def _member_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: GradeLimits, budget: list) -> bytes | None:
    if info.file_size > budget[0] or stat.S_ISLNK(info.external_attr >> 16) or info.flag_bits & 0x1:
        return None
    try:
        with archive.open(info) as fh:
            data = fh.read(budget[0] + 1)
    except Exception:  # zipfile, zlib and bz2 raise their own kinds for a damaged member
        return None
    budget[0] -= len(data)
    return data if budget[0] >= 0 else None


def _group(path: str, tops: list, wanted, lms: str | None, read: Callable, read_bytes: Callable,
           bad: list[Submission] | tuple = ()) -> ClassExport:
    """Top-level entries → hand-ins (by the LMS's names), then each wanted file of each hand-in read."""
    names = [(name, is_dir) for name, is_dir, _, _ in tops if name not in SIDE_FILES]
    layout = lms or detect(names + [(n, d) for n, d, _, _ in tops if n == "submission_metadata.yml"]) or ""
    prefix = blackboard_prefix([n for n, _ in names]) if layout == "blackboard" else ""
    owners: dict[str, Owner] = {}
    if layout == "gradescope":
        meta = next((files[0][1] for n, d, files, _ in tops if n == "submission_metadata.yml" and not d), None)
        data = read_bytes(meta) if meta is not None else None
        if data is not None:
            owners = gradescope_owners(data.decode("utf-8", "replace"), f"{path}/submission_metadata.yml")
    plain: list[Handin] = []
    unrecognised: list[str] = []
    by_student: dict[str, list[tuple[Owner, str, bool, list, str]]] = {}
    for name, is_dir, files, reason in tops:
        if layout and name in SIDE_FILES:
            continue
        owner = parse_name(layout, name, is_dir, prefix=prefix) if layout else None
        if owner is not None and layout == "gradescope":
            owner = owners.get(name, owner)
        if owner is None:
            if layout:
                unrecognised.append(name)
            student = safe_id(name if is_dir else PurePosixPath(name).stem)
            plain.append(Handin(student, name + ("/" if is_dir else ""), files=tuple(files), reason=reason,
                                flat=not is_dir))
            continue
        if owner.receipt:
            continue
        key = safe_id(owner.student).lower()
        by_student.setdefault(key, []).append((owner, name, is_dir, files, reason))
    handins = list(plain)
    for parts in by_student.values():
        latest = max(o.attempt for o, *_ in parts)
        if layout in ("blackboard", "brightspace"):  # several attempts: the latest counts
            parts = [p for p in parts if p[0].attempt == latest]
        first = parts[0][0]
        files = []
        for owner, name, is_dir, entry_files, _ in parts:
            files += entry_files if is_dir else [(owner.file or name, h) for _, h in entry_files]
        times = [o.submitted for o, *_ in parts if o.submitted is not None]
        reason = next((r for *_, r in parts if r), "")
        source = parts[0][1] + ("/" if parts[0][2] else "")
        handins.append(Handin(safe_id(first.student), source, first.name, any(o.late for o, *_ in parts),
                              max(times) if times else None, layout, tuple(files), reason,
                              flat=len(parts) == 1 and not parts[0][2]))
    handins.sort(key=lambda h: (h.student.lower(), h.student))
    subs = {w: _sorted([_submission(h, w, read) for h in handins] + list(bad)) for w in wanted}
    kept = {h.student: h for h in handins}
    ordered = []
    for s in subs[wanted[0]]:
        base = kept.get(s.student)
        ordered.append(base if base is not None else Handin(s.student, s.source, reason=s.reason))
    return ClassExport(path, layout, tuple(ordered), subs, tuple(unrecognised))


def _submission(h: Handin, wanted: str | None, read) -> Submission:
    if h.reason:
        return Submission(h.student, h.source, None, h.reason)
    if h.flat and not h.lms:  # a plain id.asm: the file itself, whatever its name
        rel, handle = h.files[0]
        text, reason, warnings = read(handle)
        return Submission(h.student, h.source, text, reason, warnings)
    name, reason = _pick([f for f, _ in h.files], wanted)
    if name is None:
        return Submission(h.student, h.source, None, reason)
    handle = dict(h.files)[name]
    text, reason, warnings = read(handle)
    where = getattr(handle, "filename", None) or (h.source + name if h.source.endswith("/") else h.source)
    return Submission(h.student, where, text, reason, warnings)


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


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: GradeLimits, budget: list) -> tuple[str | None, str, tuple[str, ...]]:
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
            data = fh.read(min(limits.max_bytes, budget[0]) + 1)
    except Exception as exc:  # zipfile, zlib and bz2 raise their own kinds for a damaged member
        return None, f"a damaged archive member: {exc}", ()
    budget[0] -= len(data)
    return decode_submission(data, limits)
