"""Regressions from the acceptance review of issues 22 and 24 (each failed before its fix)."""

import zipfile

from conftest import ROOT
from toymachine.check import load_problem
from toymachine.check.gradebook import grade_submissions
from toymachine.check.submissions import collect_submissions

PROBLEMS = ROOT / "examples" / "problems"
P1 = PROBLEMS / "p1_c00.yaml"
ALICE = (ROOT / "examples" / "submissions" / "p1_c00" / "alice.asm").read_text(encoding="utf-8")


def test_grade_and_student_option_give_the_same_variant_for_any_name(tmp_path):
    """toym grade names a file 'Jean Dupont.asm' Jean_Dupont; `--student "Jean Dupont"` (problem
    show, check, Gradescope) must pick the variant the gradebook grades against."""
    names = ["Jean Dupont", "o'brien@uni.edu", "Zoë Müller", " li wei "] + [f"student {k}" for k in range(12)]
    for name in names:
        (tmp_path / f"{name.strip()}.asm").write_text(ALICE, encoding="utf-8")
    book = grade_submissions(tmp_path, P1)
    assert len(book.entries) == len(names)
    by_file = {e.source: e.variant for e in book.entries}
    for name in names:
        assert by_file[f"{name.strip()}.asm"] == load_problem(P1, student=name).variant_index, name


def test_an_unsafe_zip_member_does_not_knock_out_the_real_submission(tmp_path):
    """A zip holding alice.asm and ../alice.asm: alice's real trace is graded; the unsafe member is
    the second row, with its own reason."""
    z = tmp_path / "class.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("alice.asm", ALICE)
        zf.writestr("../alice.asm", "junk")
    subs = collect_submissions(z)
    assert [s.student for s in subs] == ["alice", "alice~2"]
    assert subs[0].text == ALICE and subs[0].reason == ""
    assert subs[1].text is None and "unsafe path" in subs[1].reason and "second submission" in subs[1].reason
