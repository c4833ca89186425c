"""A generated class for Problem 1 (``examples/problems/p1_c00.yaml``), and the exports an LMS
would make of it: ``bench_grade.py`` grades it, ``tests/test_course.py`` checks that every
LMS's export of it gives the same grades.

Each student has a name, a Canvas user id, a Moodle participant number, a user name and an
e-mail address (their variant key, as a roster gives it). What they hand in follows their
index: most solve their own variant (in one of several equivalent orders and register
allocations), some solve another student's variant, some are slow, some do not assemble, some
copy a classmate's trace with the registers renamed, and some carry a Latin-1 byte in a comment.
"""

from __future__ import annotations

import csv
import io
import random
import zipfile
from dataclasses import dataclass
from datetime import datetime, timedelta

from toymachine.check.variants import pick_variant

PROBLEM_ID = "p1_c00"
VARIANTS = [(0, 0), (0, 1), (1, 0), (1, 1)]  # p1_c00.yaml's (i, j), in order
FIRST = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "John", "Radia", "Ken", "Margaret", "Tony"]
LAST = ["Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Backus", "Perlman", "Thompson",
        "Hamilton", "Hoare"]
DUE = datetime(2026, 12, 1, 23, 59, 0)


@dataclass(frozen=True)
class Student:
    first: str
    last: str
    canvas_id: str
    moodle_id: str
    username: str
    email: str
    sis_id: str
    trace: bytes
    submitted: datetime
    kind: str  # good | other | slow | broken | copy | latin1

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


def c_trace(i: int, j: int, order: int = 0, regs: tuple[str, str, str] = ("R0", "R1", "R2")) -> str:
    a, b, c = regs
    loads = [f"LOAD a[{i}][0], {a}", f"LOAD b[0][{j}], {b}"]
    if order % 2:
        loads.reverse()
    second = [f"LOAD a[{i}][1], {a}", f"LOAD b[1][{j}], {b}"]
    if order // 2 % 2:
        second.reverse()
    return "\n".join([f"; c{i}{j}", *loads, f"MAC_Z {a}, {b}, {c}", *second, f"MAC {a}, {b}, {c}, {c}",
                      f"STORE {c}, c[{i}][{j}]"]) + "\n"


def slow_trace(i: int, j: int) -> str:
    return "\n".join([f"LOAD a[{i}][0], R0", f"LOAD b[0][{j}], R1", "MAC_Z R0, R1, R2", f"STORE R2, c[{i}][{j}]",
                      f"LOAD a[{i}][1], R0", f"LOAD b[1][{j}], R1", f"LOAD c[{i}][{j}], R2", "MAC R0, R1, R2, R2",
                      f"STORE R2, c[{i}][{j}]"]) + "\n"


def make_class(n: int, seed: int = 1) -> list[Student]:
    rng = random.Random(seed)
    out: list[Student] = []
    for k in range(n):
        first, last = FIRST[k % len(FIRST)], f"{LAST[(k // len(FIRST)) % len(LAST)]}{k}"
        username = f"{first[0].lower()}{last.lower()}"
        email = f"{username}@uni.edu"
        i, j = VARIANTS[pick_variant(email, len(VARIANTS), PROBLEM_ID)]
        kind = ("other" if k % 11 == 3 else "slow" if k % 13 == 5 else "broken" if k % 17 == 7
                else "copy" if k % 19 == 9 and out else "latin1" if k % 23 == 11 else "good")
        regs = tuple(rng.sample(["R0", "R1", "R2"], 3))
        if kind == "other":
            text = c_trace(1 - i, j).encode()
        elif kind == "slow":
            text = slow_trace(i, j).encode()
        elif kind == "broken":
            text = f"LOAD a[{i}][0] R0\n".encode()
        elif kind == "copy":
            src = out[-1].trace.decode("utf-8", "replace")
            text = src.replace("R0", "Rx").replace("R2", "R0").replace("Rx", "R2").encode()
        elif kind == "latin1":
            text = ("; écrit par " + first + "\n" + c_trace(i, j, rng.randrange(4), regs)).encode("latin-1")
        else:
            text = c_trace(i, j, rng.randrange(4), regs).encode()
        late = timedelta(hours=rng.choice([-30, -2, -1, 0, 5, 30, 80])) if k % 7 == 2 else timedelta(hours=-3)
        out.append(Student(first, last, str(10000 + k), str(500 + 3 * k), username, email, f"S{900000 + k}", text,
                           DUE + late, kind))
    return out


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            zf.writestr(zipfile.ZipInfo(name, (2026, 12, 2, 0, 0, 0)), files[name])
    return buf.getvalue()


def canvas_export(students: list[Student], file: str = "c00.asm") -> bytes:
    """Canvas's "Download Submissions": lastnamefirstname[_LATE]_userid_attachmentid_file."""
    files = {}
    for k, s in enumerate(students):
        late = "_LATE" if s.submitted > DUE else ""
        stem, ext = file.rsplit(".", 1)
        name = f"{stem}-1.{ext}" if k % 5 == 4 else file  # a resubmitted file of the same name
        files[f"{(s.last + s.first).lower()}{late}_{s.canvas_id}_{70000 + k}_{name}"] = s.trace
    return _zip(files)


def moodle_export(students: list[Student], file: str = "c00.asm", folders: bool = True) -> bytes:
    """Moodle's "Download all submissions", in a folder per student or flat."""
    files = {}
    for s in students:
        prefix = f"{s.name}_{s.moodle_id}_assignsubmission_file_"
        files[f"{prefix}/{file}" if folders else f"{prefix}{file}"] = s.trace
    return _zip(files)


def blackboard_export(students: list[Student], file: str = "c00.asm", assignment: str = "HW1") -> bytes:
    """Blackboard's "Download Assignment": a file and a receipt per attempt (an earlier attempt too)."""
    files = {}
    for k, s in enumerate(students):
        stamp = s.submitted.strftime("%Y-%m-%d-%H-%M-%S")
        files[f"{assignment}_{s.username}_attempt_{stamp}_{file}"] = s.trace
        files[f"{assignment}_{s.username}_attempt_{stamp}.txt"] = f"Name: {s.name}\n".encode()
        if k % 6 == 1:  # an earlier, broken attempt: the latest counts
            early = (s.submitted - timedelta(days=1)).strftime("%Y-%m-%d-%H-%M-%S")
            files[f"{assignment}_{s.username}_attempt_{early}_{file}"] = b"nonsense\n"
    return _zip(files)


def canvas_roster(students: list[Student], assignment: str = "HW1 (777)") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment])
    w.writerow(["    Points Possible", "", "", "", "", "11"])
    for s in students:
        w.writerow([f"{s.last}, {s.first}", s.canvas_id, s.sis_id, s.email, "CS101-01", ""])
    w.writerow(["Test Student", "99999", "", "testlogin", "CS101-01", ""])
    return buf.getvalue()


def moodle_roster(students: list[Student]) -> str:
    lines = ['"First name","Last name","ID number",Institution,Department,"Email address",'
             '"Assignment: HW1 (Real)","Last downloaded from this course"']
    for s in students:
        lines.append(f'{s.first},{s.last},{s.sis_id},"Uni",CS,{s.email},-,1764633600')
    return "\n".join(lines) + "\n"


def plain_roster(students: list[Student]) -> str:
    return "username,name,email\n" + "".join(f"{s.username},{s.name},{s.email}\n" for s in students)


def times_csv(students: list[Student]) -> str:
    """``--times``: when each student handed in, by e-mail address (Canvas's and Moodle's names carry no time)."""
    return "student,submitted\n" + "".join(f"{s.email},{s.submitted.isoformat()}+00:00\n" for s in students)
