"""The names a learning-management system gives the files of its submission export.

Each LMS writes its own student id, the student's name and sometimes the time or a late flag
into the names of the files (or folders) of its "download all submissions" archive:

=================  ==========================================================================
``canvas``         ``lastnamefirstname_12345_67890_hw3.asm``: Canvas user id 12345, submission
                   67890, the student's file ``hw3.asm``; ``lastnamefirstname_LATE_12345_…``
                   (``_late_`` in some exports) marks late work. A resubmitted file of the same
                   name ends ``-1``, ``-2``… before its extension.
``moodle``         a folder per student, ``Full Name_12345_assignsubmission_file_/hw3.asm``, or
                   one flat folder, ``Full Name_12345_assignsubmission_file_hw3.asm``: 12345 is
                   Moodle's participant id (the grading worksheet's ``Participant 12345``).
``blackboard``     ``HW3_jdoe_attempt_2026-12-01-23-59-59_hw3.asm`` (and a receipt
                   ``HW3_jdoe_attempt_2026-12-01-23-59-59.txt``): user name ``jdoe``, the time of
                   the attempt; of several attempts the latest counts.
``brightspace``    ``123-456 - Jane Doe - Dec 1, 2026 1159 PM - hw3.asm`` and an ``index.html``:
                   the display name (the export has no user name) and the time.
``gradescope``     Gradescope's "Export Submissions": ``submission_metadata.yml`` and a folder
                   ``submission_123456/`` per submission; the metadata names each submitter
                   (``:sid:``, ``:email:``, ``:name:``) and the time (``:created_at:``).
=================  ==========================================================================

``detect`` picks the layout that reads the most top-level names of an export (``--lms`` forces
one); a name the layout does not read keeps the plain rule (its stem is the student id) and is
listed, so a TA sees what was not recognised.
"""

from __future__ import annotations

__all__ = ["LMS_NAMES", "Owner", "parse_name", "detect", "blackboard_prefix", "gradescope_owners", "SIDE_FILES"]

import re
from dataclasses import dataclass
from datetime import datetime

LMS_NAMES = ("canvas", "moodle", "blackboard", "brightspace", "gradescope")

# files an export writes beside the submissions: never a student's
SIDE_FILES = {"index.html", "submission_metadata.yml", "submission_metadata.json"}


@dataclass(frozen=True)
class Owner:
    """What a top-level name of an export says about its student."""

    student: str  # the LMS's id of the student
    name: str = ""  # display name
    file: str | None = None  # the submitted file's own name (None: the entry is a folder of files)
    late: bool = False  # the LMS marked it late
    submitted: datetime | None = None  # when it was handed in (naive: the export's local time)
    attempt: str = ""  # sorts a student's attempts: the latest counts
    receipt: bool = False  # an LMS receipt, not a submitted file


_CANVAS = re.compile(r"^(?P<name>[^_/]+?)(?P<late>_late)?_(?P<id>\d+)_(?P<sub>\d+)_(?P<file>.+)$", re.IGNORECASE)
_MOODLE = re.compile(r"^(?P<name>.+)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_(?P<file>.*)$")
_BLACKBOARD = re.compile(r"^(?P<head>.+)_attempt_(?P<time>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})(?:_(?P<file>.+)|"
                         r"(?P<receipt>\.txt))$")
_BRIGHTSPACE = re.compile(r"^(?P<a>\d+)-(?P<b>\d+) - (?P<name>.+?) - (?P<date>[A-Z][a-z]{2} \d{1,2}, \d{4} "
                          r"\d{3,4} [AP]M) - (?P<file>.+)$")
_GRADESCOPE = re.compile(r"^submission_(?P<id>\d+)$")
_CANVAS_COPY = re.compile(r"^(?P<stem>.+)-\d+(?P<ext>\.[^.]*)?$")


def blackboard_prefix(names: list[str]) -> str:
    """The assignment part of Blackboard names (``HW3_``): the longest ``_``-ended prefix that every
    name's ``NAME_USER_attempt`` head shares, so that a user name with ``_`` in it stays whole."""
    heads = [m.group("head") for n in names if (m := _BLACKBOARD.match(n))]
    if len(set(heads)) < 2:
        return ""
    common = heads[0]
    for h in heads[1:]:
        k = 0
        while k < min(len(common), len(h)) and common[k] == h[k]:
            k += 1
        common = common[:k]
    cut = common.rfind("_")
    return common[:cut + 1] if cut >= 0 else ""


def parse_name(lms: str, entry: str, is_dir: bool, *, prefix: str = "") -> Owner | None:
    """The owner of the top-level export entry ``entry`` under ``lms``'s naming, or None."""
    if lms == "canvas" and not is_dir:
        m = _CANVAS.match(entry)
        if m:
            return Owner(m.group("id"), m.group("name"), m.group("file"), bool(m.group("late")),
                         attempt=m.group("sub").zfill(20))
    elif lms == "moodle":
        m = _MOODLE.match(entry)
        if m and (is_dir == (m.group("file") == "")):
            return Owner(m.group("id"), m.group("name"), None if is_dir else m.group("file"))
    elif lms == "blackboard" and not is_dir:
        m = _BLACKBOARD.match(entry)
        if m:
            head = m.group("head")
            user = head[len(prefix):] if prefix and head.startswith(prefix) and len(head) > len(prefix) \
                else head.rsplit("_", 1)[-1]
            when = datetime.strptime(m.group("time"), "%Y-%m-%d-%H-%M-%S")
            return Owner(user, "", m.group("file"), submitted=when, attempt=m.group("time"),
                         receipt=bool(m.group("receipt")))
    elif lms == "brightspace" and not is_dir:
        m = _BRIGHTSPACE.match(entry)
        if m:
            try:
                when = datetime.strptime(m.group("date"), "%b %d, %Y %I%M %p")
            except ValueError:
                when = None
            return Owner(m.group("name"), m.group("name"), m.group("file"), submitted=when,
                         attempt=when.isoformat() if when else "")
    elif lms == "gradescope" and is_dir:
        m = _GRADESCOPE.match(entry)
        if m:
            return Owner(m.group("id"), "", None)
    return None


def canvas_copy_of(file: str, wanted: str) -> bool:
    """``hw3-1.asm`` is Canvas's name for a resubmitted ``hw3.asm``."""
    m = _CANVAS_COPY.match(file)
    return m is not None and (m.group("stem") + (m.group("ext") or "")) == wanted


def detect(entries: list[tuple[str, bool]]) -> str | None:
    """The layout that reads the most of ``entries`` ((name, is a folder) at the export's top), or None."""
    names = [n for n, _ in entries]
    if "submission_metadata.yml" in names:
        return "gradescope"
    prefix = blackboard_prefix(names)
    best, count = None, 0
    for lms in LMS_NAMES:
        n = sum(1 for name, is_dir in entries if parse_name(lms, name, is_dir, prefix=prefix) is not None)
        if n > count:
            best, count = lms, n
    return best


def _when(value) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        return None
    text = re.sub(r"(\.\d{6})\d+", r"\1", value.strip())  # Gradescope writes nanoseconds
    text = re.sub(r" ([+-]\d{2}):?(\d{2})$", r"\1:\2", text)
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def gradescope_owners(text: str, path: str) -> dict[str, Owner]:
    """``submission_123456`` → its first submitter, from Gradescope's ``submission_metadata.yml``
    (Ruby-style ``:key:`` names: ``:submitters:`` with ``:name:``, ``:sid:``, ``:email:``; ``:created_at:``)."""
    from .. import yamlsafe

    data = yamlsafe.load(text, path, "Gradescope submission metadata")
    out: dict[str, Owner] = {}
    if not isinstance(data, dict):
        return out
    for key, entry in data.items():
        if not isinstance(entry, dict):
            continue
        get = {str(k).strip(":"): v for k, v in entry.items()}.get
        people = get("submitters") or []
        first = {str(k).strip(":"): v for k, v in people[0].items()} if people and isinstance(people[0], dict) else {}
        sid = str(first.get("sid") or first.get("email") or key)
        when = _when(get("created_at"))
        out[str(key)] = Owner(sid, str(first.get("name") or ""), None, submitted=when,
                              attempt=when.isoformat() if when else "")
    return out
