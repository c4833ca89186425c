"""Submissions as a course hands them in: a folder of ``id.asm`` files, a folder of folders
(``id/<the problem's submission file>``), or an LMS's export of either (a zip or the folder it
unpacks to), named as that LMS names it (``check.lms``). ``collect_class`` groups the export's
top-level entries into ``Handin``s (a student's id, name, late flag, time and files) and reads
each wanted file of each into a ``Submission`` (``check.readers``: every read bounded, every bad
file one failing row, never an aborted batch; a zip is read in memory, never extracted).
"""

from __future__ import annotations

__all__ = ["Handin", "ClassExport", "collect_class", "collect_submissions", "Submission", "safe_id", "read_file",
           "read_student_folder", "decode_trace", "decode_submission", "zip_entry_count"]

import os
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath

from ..errors import ConfigError, Location
from ..limits import LIMITS as TABLE
from .limits import GradeLimits
from .lms import (
    LMS_NAMES,
    SIDE_FILES,
    Owner,
    blackboard_prefix,
    detect,
    gradescope_owners,
    parse_name,
)
from .readers import (
    Submission,
    _member_parts,
    _pick,
    decode_submission,
    decode_trace,
    read_file,
    read_member,
    read_size,
    read_student_folder,
    safe_id,
    zip_entry_count,
)


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
    """Every student's submission under ``path`` (a folder or a zip, named plainly or as an LMS
    exports it), sorted by ID."""
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
            return _group(path, tops, wanted, lms, lambda h: read_member(archive, h, limits, budget),
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
            data = fh.read(read_size(limits.max_total_bytes))
    except OSError:
        return None
    return data if len(data) <= limits.max_total_bytes else None


def _member_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: GradeLimits, budget: list) -> bytes | None:
    if info.file_size > budget[0] or stat.S_ISLNK(info.external_attr >> 16) or info.flag_bits & 0x1:
        return None
    try:
        with archive.open(info) as fh:
            data = fh.read(read_size(budget[0]))
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
        _, handle = h.files[0]
        text, reason, warnings = read(handle)
        return Submission(h.student, h.source, text, reason, warnings)
    name, reason = _pick([f for f, _ in h.files], wanted)
    if name is None:
        return Submission(h.student, h.source, None, reason)
    handle = dict(h.files)[name]
    text, reason, warnings = read(handle)
    where = getattr(handle, "filename", None) or (h.source + name if h.source.endswith("/") else h.source)
    return Submission(h.student, where, text, reason, warnings)
