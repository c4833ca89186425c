"""Gradescope (check.gradescope, check.autograder): results.json holds the fields Gradescope's
autograder specification documents, and the autograder zip, unpacked into a temporary tree of
Gradescope's layout, grades good and bad submissions into a valid results.json."""

import json
import os
import subprocess
import sys
import zipfile

import pytest
from conftest import PROGRAMS, ROOT

from toymachine.check.variants import pick_variant

PROBLEMS = ROOT / "examples" / "problems"
P1 = PROBLEMS / "p1_c00.yaml"
P3 = PROBLEMS / "p3_matmul_outer.yaml"
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


def validate(results: dict) -> None:
    """Gradescope's results.json (gradescope-autograders.readthedocs.io, "Autograder Specifications"):
    a numeric score (top level or on every test), optional text fields, tests with a name, numeric
    score ≤ max_score, output text, a known visibility and status."""
    top = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
           "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
    assert set(results) <= top, set(results) - top
    assert isinstance(results["score"], (int, float)) and not isinstance(results["score"], bool)
    for key in ("output",):
        assert isinstance(results.get(key, ""), str)
    for key in ("visibility", "stdout_visibility"):
        assert results.get(key, "visible") in VISIBILITY
    assert results.get("output_format", "text") in {"text", "html", "simple_format", "md", "ansi"}
    fields = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
              "visibility", "extra_data"}
    total = 0
    for t in results["tests"]:
        assert set(t) <= fields and isinstance(t["name"], str) and t["name"]
        assert isinstance(t["score"], (int, float)) and isinstance(t["max_score"], (int, float))
        assert 0 <= t["score"] <= t["max_score"]
        assert isinstance(t["output"], str) and t["visibility"] in VISIBILITY and t["status"] in {"passed", "failed"}
        total += t["score"]
    assert results["score"] == total


def c_trace(i: int, j: int) -> str:
    return (f"LOAD a[{i}][0], R0\nLOAD b[0][{j}], R1\nMAC_Z R0, R1, R2\nLOAD a[{i}][1], R0\n"
            f"LOAD b[1][{j}], R1\nMAC R0, R1, R2, R2\nSTORE R2, c[{i}][{j}]\n")


def test_check_prints_gradescope_results(toym):
    code, out, _ = toym("check", PROGRAMS / "matmul_inner_2x2.asm", "-p", P3, "-f", "gradescope")
    d = json.loads(out)
    validate(d)
    assert code == 1 and d["score"] == 7 and [t["name"] for t in d["tests"]] == ["c", "cycles", "loads"]
    assert [(t["score"], t["max_score"]) for t in d["tests"]] == [(6, 6), (1, 3), (0, 1)]
    assert d["tests"][1]["output"] == "25 cycles: 3 over the budget of 22; 25 or fewer earns 1 of 3 points"


def test_hidden_checks_are_hidden_tests(toym, tmp_path):
    problem = tmp_path / "p.yaml"
    problem.write_text(P3.read_text().replace("max_loads: {limit: 10, points: 1}",
                                              "max_loads: {limit: 10, points: 1, hidden: true}"))
    code, out, _ = toym("check", PROGRAMS / "matmul_outer_2x2.asm", "-p", problem, "-f", "gradescope")
    d = json.loads(out)
    validate(d)
    assert code == 0 and d["score"] == 10
    assert [t["visibility"] for t in d["tests"]] == ["visible", "visible", "hidden"]
    assert "9 / 9 on the visible checks (1 points of hidden checks are released later)" in d["output"]


def test_a_trace_that_does_not_run_is_one_failing_test_worth_everything(toym):
    code, out, _ = toym("check", "-", "-p", P3, "-f", "gradescope", input="FROB R0\n")
    d = json.loads(out)
    validate(d)
    assert code == 1 and d["score"] == 0 and len(d["tests"]) == 1
    assert d["tests"][0]["max_score"] == 10 and "unknown instruction 'FROB'" in d["tests"][0]["output"]


@pytest.fixture
def autograder(tmp_path, toym):
    """The zip unpacked as Gradescope unpacks it: /autograder/source/…, run_autograder at the root."""
    wheel = tmp_path / "toymachine-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"a stand-in: the tests run the source tree")
    archive = tmp_path / "autograder.zip"
    code, out, err = toym("autograder", P1, "-o", archive, "--wheel", wheel)
    assert code == 0 and f"wrote {archive}" in out, err
    root = tmp_path / "autograder"
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        assert {"setup.sh", "run_autograder", "requirements.txt", "autograder.json", "p1_c00.yaml",
                wheel.name} == set(names)
        assert zf.getinfo("run_autograder").external_attr >> 16 & 0o111  # executable
        zf.extractall(root / "source")
    for name in ("setup.sh", "run_autograder"):
        os.chmod(root / "source" / name, 0o755)
    (root / "run_autograder").write_bytes((root / "source" / "run_autograder").read_bytes())
    os.chmod(root / "run_autograder", 0o755)
    assert "pip3 install -r requirements.txt" in (root / "source" / "setup.sh").read_text()
    assert (root / "source" / "requirements.txt").read_text().endswith("\n./toymachine-0.1.0-py3-none-any.whl\n")
    config = json.loads((root / "source" / "autograder.json").read_text())
    assert config["wheel"] == wheel.name
    assert [(p["problem"], p["submission"]) for p in config["parts"]] == [("p1_c00.yaml", None)]

    def submit(files: dict, email: str = "alice@uni.edu") -> dict:
        sub = root / "submission"
        if sub.exists():
            for f in sub.iterdir():
                f.unlink()
        sub.mkdir(exist_ok=True)
        for name, data in files.items():
            (sub / name).write_bytes(data.encode() if isinstance(data, str) else data)
        (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": email, "name": "A"}]}))
        results = root / "results" / "results.json"
        if results.exists():
            results.unlink()
        env = dict(os.environ, TOYM_AUTOGRADER_ROOT=str(root), TOYM_PYTHON=sys.executable,
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        d = json.loads(results.read_text())
        validate(d)
        return d

    return submit


@pytest.mark.slow
def test_the_autograder_grades_good_and_bad_submissions(autograder):
    k = pick_variant("alice@uni.edu", 4, "p1_c00")
    i, j = divmod(k, 2)  # the variants list (0,0), (0,1), (1,0), (1,1)
    good = autograder({"c.asm": c_trace(i, j)})
    assert good["score"] == 11 and all(t["status"] == "passed" for t in good["tests"])
    assert f"Your variant {k + 1} of 4 (i = {i}, j = {j})." in good["output"]
    other = autograder({"c.asm": c_trace(i, j)}, email="bob@uni.edu")  # someone else's variant
    assert pick_variant("bob@uni.edu", 4, "p1_c00") == k or other["score"] == 0
    wrong = autograder({"c.asm": c_trace(1 - i, j)})
    assert wrong["score"] == 0 and "was never stored" in wrong["tests"][0]["output"]
    binary = autograder({"c.asm": b"\x00\x01\x02"})
    assert binary["score"] == 0 and "binary" in binary["tests"][0]["output"]
    nothing = autograder({"notes.txt": "hello"})
    assert nothing["score"] == 0 and "no .asm file in the submission (found: notes.txt)" in nothing["tests"][0]["output"]
    broken = autograder({"c.asm": "LOAD a[0][0], R9\n"})
    assert broken["score"] == 0 and "machine has 3 registers" in broken["tests"][0]["output"]
    assert "--registers" not in broken["tests"][0]["output"]  # hints name what the exercise allows


@pytest.mark.slow
def test_autograder_bundles_a_real_wheel(tmp_path):
    from toymachine.check.autograder import autograder_zip, build_wheel

    name, data = build_wheel()
    assert name.startswith("toymachine-") and name.endswith(".whl")
    (tmp_path / name).write_bytes(data)
    with zipfile.ZipFile(tmp_path / name) as wheel:
        assert "toymachine/check/grader.py" in wheel.namelist()
    archive = autograder_zip(P1, (name, data))
    with zipfile.ZipFile(__import__("io").BytesIO(archive)) as zf:
        assert zf.read(name) == data
    assert autograder_zip(P1, (name, data)) == archive  # deterministic bytes
