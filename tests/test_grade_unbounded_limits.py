"""Grading limits lifted to no limit (``TOYM_MAX_GRADE_…=inf``): submissions are read whole."""

from __future__ import annotations

import math
import zipfile

from toymachine.check.limits import GradeLimits
from toymachine.check.submissions import collect_submissions


def test_unbounded_byte_limits_read_folder_and_zip_submissions_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("TOYM_MAX_GRADE_BYTES", "inf")
    monkeypatch.setenv("TOYM_MAX_GRADE_ARCHIVE_BYTES", "inf")
    limits = GradeLimits.from_table()
    assert limits.max_bytes == limits.max_total_bytes == math.inf
    text = "LOAD x[0], R0\nSTORE R0, y[0]\n" * 50
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "alice.asm").write_text(text, encoding="utf-8")
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("bob.asm", text)
    for path, student in ((folder, "alice"), (archive, "bob")):
        (sub,) = collect_submissions(path, limits=limits)
        assert (sub.student, sub.text, sub.reason) == (student, text, "")


def test_unbounded_time_limit_runs_the_block_without_a_timer():
    from toymachine.check.limits import time_limit

    with time_limit(math.inf):
        done = sum(range(1000))
    assert done == 499500
