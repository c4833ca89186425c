"""The regression corpus: every hostile case (``tests/fuzz_corpus/cases.py``),
run as ``toym`` in a subprocess under a 1 GiB address-space cap. Each must end with its documented
exit status (2 unless the case says otherwise), a short message on stderr and no traceback, within
its time budget; hostile text must stay inert in the format it reaches."""

from __future__ import annotations

import pytest
from fuzz_corpus.cases import CASES
from fuzz_corpus.runner import inert_problems, run_toym, write_files

pytestmark = pytest.mark.fuzz  # a fresh toym process a case


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_case(case, tmp_path):
    write_files(case.files, tmp_path)
    out = run_toym(case.args, tmp_path, stdin=case.stdin, timeout=case.seconds)
    problems = out.problems(set(case.rc))
    both = out.stdout + out.stderr
    problems += [f"found {a!r}" for a in case.absent if a in both]
    problems += [f"missing {a!r}" for a in case.in_output if a not in both]
    if case.inert and out.rc in (0, 1):
        problems += inert_problems(case.inert, out.stdout)
    if out.rc == 2:  # a refusal: located, short, with a hint
        assert out.stderr.startswith(("error:", "warning:", "Usage:")) or "\nerror:" in out.stderr, out.stderr[:500]
    assert not problems, f"{problems}\n--- stderr ---\n{out.stderr[-1500:]}"
