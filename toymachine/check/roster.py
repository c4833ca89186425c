"""Rosters in, LMS gradebooks out.

``load_roster(FILE)`` reads the class list an LMS exports:

* **Canvas**'s gradebook export (``Student,ID,SIS User ID,SIS Login ID,Section,…``; its
  ``Points Possible`` and ``Manual Posting`` rows and ``Test Student`` skipped): keyed on
  ``ID``, Canvas's user id, which the submission export's names carry;
* **Moodle**'s grader report export (``First name``, ``Last name`` or ``Surname``, ``ID number``,
  ``Email address``…): keyed on the full name, which is what the submission export's folder
  names carry beside Moodle's participant number; or Moodle's grading worksheet
  (``Identifier``: ``Participant 12345``), keyed on the participant number;
* a **plain** CSV with an id column (``id``, ``student``, ``username``, ``login`` or ``email``,
  any case), and optionally ``name``, ``email``, ``login``, ``section``.

``join(roster, students)`` matches an export's students to the roster by key, then login, e-mail
or name (a name only where it is unique), and lists both sides' leftovers. ``variant_key`` is
what picks a student's variant: the roster's e-mail address (a Canvas SIS Login ID with an ``@``
is one), else its login, else the export's id, so that every LMS's export of one class — and
Gradescope's autograder, which keys on the e-mail — gives each student the same variant.

``canvas_import_csv`` and ``moodle_import_csv`` write the file each LMS imports (Canvas:
``Student,ID,SIS User ID,SIS Login ID,Section,<assignment>`` and a ``Points Possible`` row;
Moodle: the grader export's own identity columns and ``Assignment: <title>``, quoted as
Moodle's CSV writer quotes: a field with a space, comma, quote or line break). Text cells pass
``bookout.csv_cell``: no cell starts a spreadsheet formula.
"""

from __future__ import annotations

__all__ = ["Student", "Roster", "load_roster", "join", "variant_key", "canvas_import_csv", "moodle_import_csv",
           "Join", "CANVAS_COLUMNS"]

import csv
import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import ConfigError, Location

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
_MOODLE_NOT_IDENTITY = re.compile(r"^(Assignment|Quiz|Feedback|Course total|Category total|Last downloaded)",
                                  re.IGNORECASE)
_PLAIN_ID = ("id", "student", "student_id", "username", "login", "user", "email")
MAX_ROSTER_BYTES = 20_000_000


@dataclass(frozen=True)
class Student:
    key: str  # what the LMS's submission export names the student by
    name: str = ""
    sis_id: str = ""
    login: str = ""
    section: str = ""
    email: str = ""
    row: tuple[str, ...] = field(default=(), compare=False)  # the roster's row as read


@dataclass(frozen=True)
class Roster:
    path: str
    kind: str  # canvas | moodle | moodle-worksheet | plain
    header: tuple[str, ...]
    students: tuple[Student, ...]
    points_row: bool = False  # Canvas: the export had a Points Possible row


@dataclass(frozen=True)
class Join:
    matched: dict  # export student id → Student
    missing: tuple[Student, ...]  # roster students without a submission
    unknown: tuple[str, ...]  # export ids without a roster student


def _read(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_ROSTER_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"no such roster: {path}", loc=Location(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the roster {path}: {exc.strerror}", loc=Location(path)) from None
    if len(data) > MAX_ROSTER_BYTES:
        raise ConfigError(f"the roster {path} is over {MAX_ROSTER_BYTES:,} bytes", loc=Location(path))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"the roster is not UTF-8 (byte 0x{data[exc.start]:02x})", loc=Location(path, line),
                          hint="export it again as CSV (UTF-8)") from None


def load_roster(path: str | os.PathLike) -> Roster:
    """A Canvas, Moodle or plain roster CSV (see the module's doc)."""
    path = os.fspath(path)
    text = _read(path)
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or not any(c.strip() for c in rows[0]):
        raise ConfigError("the roster is empty: it needs a header row", loc=Location(path, 1),
                          hint="a Canvas or Moodle gradebook export, or a CSV with an id column")
    header = tuple(c.strip() for c in rows[0])
    lower = [h.lower() for h in header]
    body = [(n, r) for n, r in enumerate(rows[1:], 2) if any(c.strip() for c in r)]

    def cell(r: list[str], name: str) -> str:
        k = lower.index(name.lower()) if name.lower() in lower else -1
        return r[k].strip() if 0 <= k < len(r) else ""

    students: list[Student] = []
    if all(c.lower() in lower for c in CANVAS_COLUMNS):
        points = False
        for _, r in body:
            who = cell(r, "Student")
            if who.strip().lower() == "points possible" or (not who and not cell(r, "ID")):
                points = points or who.strip().lower() == "points possible"
                continue
            if who == "Test Student" or not cell(r, "ID"):
                continue
            login = cell(r, "SIS Login ID")
            students.append(Student(cell(r, "ID"), who, cell(r, "SIS User ID"), login, cell(r, "Section"),
                                    login if "@" in login else "", tuple(r)))
        return Roster(path, "canvas", header, tuple(students), points)
    if "identifier" in lower and "full name" in lower:
        for n, r in body:
            m = re.search(r"(\d+)\s*$", cell(r, "Identifier"))
            if not m:
                raise ConfigError(f"row {n}: the Identifier {cell(r, 'Identifier')!r} is not 'Participant N'",
                                  loc=Location(path, n), hint="Moodle's grading worksheet names each row so")
            students.append(Student(m.group(1), cell(r, "Full name"), email=cell(r, "Email address"), row=tuple(r)))
        return Roster(path, "moodle-worksheet", header, tuple(students))
    if "first name" in lower and ("last name" in lower or "surname" in lower):
        last = "Last name" if "last name" in lower else "Surname"
        for _, r in body:
            name = f"{cell(r, 'First name')} {cell(r, last)}".strip()
            students.append(Student(name, name, cell(r, "ID number"), cell(r, "Username"), "",
                                    cell(r, "Email address"), tuple(r)))
        return Roster(path, "moodle", header, tuple(students))
    key = next((c for c in _PLAIN_ID if c in lower), None)
    if key is None:
        raise ConfigError("the roster has no id column", loc=Location(path, 1, 1, text.splitlines()[0], len(rows[0][0])),
                          hint="a Canvas gradebook export (Student, ID, SIS User ID, SIS Login ID, Section), Moodle's "
                               "grader report export, or a CSV with a column named " + ", ".join(_PLAIN_ID))
    for n, r in body:
        if not cell(r, key):
            raise ConfigError(f"row {n} has no {header[lower.index(key)]}", loc=Location(path, n))
        email = cell(r, "email") or (cell(r, key) if "@" in cell(r, key) else "")
        students.append(Student(cell(r, key), cell(r, "name"), cell(r, "sis_id"), cell(r, "login") or cell(r, "username"),
                                cell(r, "section"), email, tuple(r)))
    return Roster(path, "plain", header, tuple(students))


def join(roster: Roster, ids: list[tuple[str, str]]) -> Join:
    """Match the export's (id, display name) pairs to the roster: by key, then login, e-mail, or a
    unique name (case-folded)."""
    indexes: list[dict[str, list[Student]]] = [{}, {}, {}, {}]
    for s in roster.students:
        for k, value in enumerate((s.key, s.login, s.email, s.name)):
            if value:
                indexes[k].setdefault(value.casefold(), []).append(s)
    matched: dict[str, Student] = {}
    used: set[int] = set()
    unknown = []
    for sid, name in ids:
        hit = None
        for k, value in enumerate((sid, sid, sid, name or sid)):
            found = indexes[k].get(value.casefold(), []) if value else []
            found = [s for s in found if id(s) not in used]
            if len(found) == 1:
                hit = found[0]
                break
        if hit is None:
            unknown.append(sid)
        else:
            matched[sid] = hit
            used.add(id(hit))
    missing = tuple(s for s in roster.students if id(s) not in used)
    return Join(matched, missing, tuple(unknown))


def variant_key(student_id: str, roster_student: Student | None) -> str:
    """The key a student's variant hangs on (``check.variants``)."""
    if roster_student is not None:
        return roster_student.email or roster_student.login or student_id
    return student_id


def _cells(values: list) -> list:
    from .bookout import csv_cell

    return [csv_cell(v) for v in values]


def canvas_import_csv(roster: Roster | None, title: str, max_score: float, grades: Sequence[tuple[Student, object]]) -> str:
    """Canvas's gradebook import: the five identity columns, the assignment's column (the
    roster's own ``Title (id)`` header where it has one, so the import updates that assignment)
    and a ``Points Possible`` row; a blank grade changes nothing."""
    column = title
    if roster is not None:
        column = next((h for h in roster.header[len(CANVAS_COLUMNS):] if re.fullmatch(
            re.escape(title) + r" \(\d+\)", h)), title)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(_cells(list(CANVAS_COLUMNS) + [column]))
    w.writerow(["    Points Possible", "", "", "", ""] + _cells([max_score]))
    for s, grade in grades:
        w.writerow(_cells([s.name, s.key, s.sis_id, s.login, s.section, grade]))
    return buf.getvalue()


def _moodle_field(value) -> str:
    """A field as Moodle's CSV writer (PHP's fputcsv) writes it: quoted when it holds a space,
    comma, quote, backslash, tab or line break."""
    text = str(value)
    if re.search(r"[ ,\"\\\t\r\n]", text):
        return '"' + text.replace('"', '""') + '"'
    return text


def moodle_import_csv(roster: Roster | None, title: str, grades: Sequence[tuple[Student, object]]) -> str:
    """Moodle's grade import (the grader report export's format): its identity columns as the
    roster has them (``First name``, ``Last name``, ``ID number``, ``Institution``, ``Department``,
    ``Email address`` without one) and ``Assignment: <title>``; map ``Email address`` to the
    user's e-mail when importing."""
    from .bookout import csv_cell

    if roster is not None and roster.kind == "moodle":
        keep = [k for k, h in enumerate(roster.header) if h and not _MOODLE_NOT_IDENTITY.match(h)]
        header = [roster.header[k] for k in keep]
    else:
        keep, header = [], ["First name", "Last name", "ID number", "Institution", "Department", "Email address"]
    lines = [",".join(_moodle_field(csv_cell(h)) for h in header + [f"Assignment: {title}"])]
    for s, grade in grades:
        if keep:
            identity = [s.row[k] if k < len(s.row) else "" for k in keep]
        else:
            first, _, last = s.name.partition(" ")
            identity = [first, last, s.sis_id, "", "", s.email]
        lines.append(",".join(_moodle_field(csv_cell(v)) for v in identity + [grade]))
    return "\n".join(lines) + "\n"
