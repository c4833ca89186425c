"""The grader's trust boundary: no name a lecturer or student chooses reaches a shell, and no path a
problem names leaves the problem's folder (``toymachine.named_paths``, ``check.autograder``)."""

import json
import os
import subprocess
import sys
import zipfile

import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine.check import load_problem
from toymachine.check.variants import pick_variant
from toymachine.named_paths import NamedPathError, resolve_named_file

PROBLEMS = ROOT / "examples" / "problems"
P1 = PROBLEMS / "p1_c00.yaml"
PROBLEM_TEXT = "inputs:\n  a: [1]\nexpect:\n  c: a\nmachine: {}\n"

# each would run `touch PWNED` if it were pasted into a bash line, quoted or not
HOSTILE_NAMES = [
    "p$(touch PWNED).yaml",
    "p`touch PWNED`.yaml",
    'q";touch PWNED;".yaml',
    "q';touch PWNED;'.yaml",
    "p;touch PWNED.yaml",
    "p with spaces & touch PWNED.yaml",
    "p\ntouch PWNED\n.yaml",
    "-p $HOME.yaml",
]


def c_trace(i: int, j: int) -> str:
    return (f"LOAD a[{i}][0], R0\nLOAD b[0][{j}], R1\nMAC_Z R0, R1, R2\nLOAD a[{i}][1], R0\n"
            f"LOAD b[1][{j}], R1\nMAC R0, R1, R2, R2\nSTORE R2, c[{i}][{j}]\n")


def _unpack(archive, root):
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(root / "source")
    for name in ("setup.sh", "run_autograder"):
        os.chmod(root / "source" / name, 0o755)
    (root / "run_autograder").write_bytes((root / "source" / "run_autograder").read_bytes())
    os.chmod(root / "run_autograder", 0o755)


@pytest.mark.slow
@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_hostile_problem_names_are_data_in_the_autograder(tmp_path, toym, name):
    folder = tmp_path / "course"
    folder.mkdir()
    problem = folder / name
    problem.write_bytes(P1.read_bytes())
    wheel = tmp_path / "toymachine-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"a stand-in: the tests run the source tree")
    archive = tmp_path / "autograder.zip"
    code, out, err = toym("autograder", problem, "-o", archive, "--wheel", wheel)
    assert code == 0, err
    root = tmp_path / "autograder"
    _unpack(archive, root)
    config = json.loads((root / "source" / "autograder.json").read_text())
    assert config["wheel"] == wheel.name and [p["problem"] for p in config["parts"]] == [name]
    for script in ("setup.sh", "run_autograder", "requirements.txt"):
        assert name not in (root / "source" / script).read_text()  # fixed text: names stay in the JSON

    # run_autograder grades the student's own variant (the problem's id picks it, not the file's name)
    k = pick_variant("alice@uni.edu", 4, "p1_c00")
    (root / "submission").mkdir()
    (root / "submission" / "c.asm").write_text(c_trace(*divmod(k, 2)))
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "alice@uni.edu"}]}))
    env = dict(os.environ, TOYM_AUTOGRADER_ROOT=str(root), TOYM_PYTHON=sys.executable,
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 11, results

    # setup.sh hands pip the pinned requirements file, the wheel's name a line of it (a stand-in pip3
    # records its argv)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pip3").write_text(f'#!{sys.executable}\nimport json, sys\n'
                                  f'open({str(tmp_path / "pip_args.json")!r}, "w").write(json.dumps(sys.argv[1:]))\n')
    os.chmod(bin_dir / "pip3", 0o755)
    env_setup = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(["bash", str(root / "source" / "setup.sh")], cwd=tmp_path, env=env_setup,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "pip_args.json").read_text()) == ["install", "-r", "requirements.txt"]
    assert (root / "source" / "requirements.txt").read_text().splitlines()[-1] == f"./{wheel.name}"
    assert not list(tmp_path.rglob("PWNED")) and not (ROOT / "PWNED").exists()


@pytest.mark.parametrize("wheel_name", ["x$(touch PWNED)-1-py3-none-any.whl", "a b-1-py3-none-any.whl",
                                        "toymachine.whl"])
def test_a_wheel_name_that_is_not_a_wheels_is_refused(tmp_path, toym, wheel_name):
    wheel = tmp_path / wheel_name
    wheel.write_bytes(b"x")
    code, _, err = toym("autograder", P1, "-o", tmp_path / "a.zip", "--wheel", wheel)
    assert code == 2 and "is not a wheel's file name" in err and "Traceback" not in err
    assert not (tmp_path / "a.zip").exists() and not list(tmp_path.rglob("PWNED"))


def _problem(folder, machine: str):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "p.yaml"
    path.write_text(PROBLEM_TEXT.format(machine))
    return path


def test_a_machine_name_is_never_read_from_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evil.yaml").write_text((ROOT / "examples" / "machines" / "slow_exp.yaml").read_text())
    problem = _problem(tmp_path / "course" / "hw", "evil.yaml")
    with pytest.raises(NamedPathError) as err:
        load_problem(problem)
    assert err.value.reason == "missing" and err.value.loc.line == 5


@pytest.mark.parametrize("name", ["../../../../etc/passwd", "../../../../dev/stdin", "/etc/passwd", "../m.yaml"])
def test_a_machine_name_cannot_leave_the_problems_folder(tmp_path, name):
    (tmp_path / "course" / "m.yaml").parent.mkdir(parents=True)
    (tmp_path / "course" / "m.yaml").write_text((ROOT / "examples" / "machines" / "slow_exp.yaml").read_text())
    problem = _problem(tmp_path / "course" / "hw" / "deep", name)
    with pytest.raises(NamedPathError) as err:
        load_problem(problem)
    assert err.value.reason == "outside"


def test_a_symbolic_link_out_of_the_folder_is_outside(tmp_path):
    (tmp_path / "secret.yaml").write_text((ROOT / "examples" / "machines" / "slow_exp.yaml").read_text())
    problem = _problem(tmp_path / "hw", "m.yaml")
    (tmp_path / "hw" / "m.yaml").symlink_to(tmp_path / "secret.yaml")
    with pytest.raises(NamedPathError) as err:
        load_problem(problem)
    assert err.value.reason == "outside"


def test_a_pipe_or_folder_is_not_a_machine_file(tmp_path):
    problem = _problem(tmp_path / "hw", "fifo.yaml")
    os.mkfifo(tmp_path / "hw" / "fifo.yaml")  # opening it would block: it is never opened
    with pytest.raises(NamedPathError) as err:
        load_problem(problem)
    assert err.value.reason == "not-a-file"
    (tmp_path / "hw" / "dir.yaml").mkdir()
    with pytest.raises(NamedPathError) as err:
        resolve_named_file("dir.yaml", problem, what="machine file")
    assert err.value.reason == "not-a-file"


def test_a_machine_file_inside_the_folder_loads_and_is_bundled(tmp_path, toym):
    sub = tmp_path / "hw" / "machines"
    sub.mkdir(parents=True)
    (sub / "m.yaml").write_text((ROOT / "examples" / "machines" / "slow_exp.yaml").read_text())
    problem = _problem(tmp_path / "hw", "machines/../machines/m.yaml")
    assert load_problem(problem).machine.name == "slow-exp"
    wheel = tmp_path / "toymachine-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"x")
    code, _, err = toym("autograder", problem, "-o", tmp_path / "a.zip", "--wheel", wheel)
    assert code == 0, err
    with zipfile.ZipFile(tmp_path / "a.zip") as zf:
        assert "machines/m.yaml" in zf.namelist()


def test_grade_refuses_a_problem_whose_machine_escapes(tmp_path, toym, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evil.yaml").write_text((ROOT / "examples" / "machines" / "slow_exp.yaml").read_text())
    problem = _problem(tmp_path / "course", "evil.yaml")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.asm").write_text("LOAD a[0], R0\nSTORE R0, c[0]\n")
    code, _, err = toym("grade", subs, "-p", problem, "--out", tmp_path / "out", "-j", "1")
    assert code == 2 and "no machine file or preset named" not in err  # a .yaml name is a file, not a preset
    assert "no machine file 'evil.yaml'" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "gradebook.csv").exists()


def _zip(path, members: dict) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def test_one_students_junk_in_a_zip_is_their_failing_row(tmp_path):
    from toymachine.check.limits import GradeLimits
    from toymachine.check.submissions import collect_submissions

    members = {"class/alice/c.asm": "LOAD a[0], R0\n", "class/bob/c.asm": "LOAD a[0], R0\n"}
    members.update({f"class/mallory/junk{k}.txt": "x" for k in range(12)})
    _zip(tmp_path / "class.zip", members)
    subs = {s.student: s for s in collect_submissions(tmp_path / "class.zip", limits=GradeLimits(max_files=10))}
    assert subs["alice"].text and subs["bob"].text
    assert subs["mallory"].text is None and "more than 10 files" in subs["mallory"].reason
    # the same tree as a folder gives the same rows
    for name, data in members.items():
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / name).write_text(data)
    folder = {s.student: s for s in collect_submissions(tmp_path / "tree" / "class", limits=GradeLimits(max_files=10))}
    assert folder["mallory"].reason == subs["mallory"].reason and folder["alice"].text == subs["alice"].text


@pytest.mark.slow
def test_grade_gives_the_junk_student_a_row_and_writes_the_gradebook(tmp_path, toym, monkeypatch):
    monkeypatch.setenv("TOYM_MAX_GRADE_FILES", "10")
    members = {"alice/c.asm": c_trace(0, 0)}
    members.update({f"mallory/junk{k}.txt": "x" for k in range(12)})
    _zip(tmp_path / "class.zip", members)
    code, _, err = toym("grade", tmp_path / "class.zip", "-p", P1, "--out", tmp_path / "out", "-j", "1")
    assert code in (0, 1), err
    book = (tmp_path / "out" / "gradebook.csv").read_text()
    assert "mallory" in book and "alice" in book


def _forge_entry_count(path, entries: int, zip64: bool) -> None:
    """Rewrite a small zip's end record to declare ``entries`` (and, for ``zip64``, add a ZIP64
    record and locator that declare it): the directory itself stays three entries long."""
    import struct

    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x05\x06")
    cd_size, cd_offset = struct.unpack_from("<II", data, at + 12)
    if not zip64:
        struct.pack_into("<HH", data, at + 8, entries, entries)
        path.write_bytes(bytes(data))
        return
    record = struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, cd_size, cd_offset)
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, at, 1)
    end = bytearray(data[at:])
    struct.pack_into("<HH", end, 8, 0xFFFF, 0xFFFF)
    path.write_bytes(bytes(data[:at]) + record + locator + bytes(end))


@pytest.mark.parametrize("zip64,entries", [(False, 65_535), (True, 3_500_000)])
def test_a_zips_entry_count_is_judged_from_its_end_record(tmp_path, toym, monkeypatch, zip64, entries):
    from toymachine.check import submissions

    _zip(tmp_path / "class.zip", {f"s{k}.asm": "LOAD a[0], R0\n" for k in range(3)})
    _forge_entry_count(tmp_path / "class.zip", entries, zip64)
    assert submissions.zip_entry_count(str(tmp_path / "class.zip")) == entries

    def never(*args, **kwargs):
        raise AssertionError("the central directory was parsed before the entry count was judged")

    monkeypatch.setattr(submissions.zipfile, "ZipFile", never)
    monkeypatch.setenv("TOYM_MAX_GRADE_CLASS_ENTRIES", "1000")
    code, _, err = toym("grade", tmp_path / "class.zip", "-p", P1, "--out", tmp_path / "out", "-j", "1")
    assert code == 2 and f"declares {entries:,} entries; the limit is 1,000" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


SHELL_PIECES = ["$(", ")", "`", "'", '"', ";", "&", "|", "\n", " ", "$HOME", "\\", "*", "!", "#", "-", "<", ">", "é"]


@pytest.mark.slow
@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(pieces=st.lists(st.sampled_from(SHELL_PIECES) | st.text(max_size=4), max_size=8))
def test_any_problem_name_reaches_the_zip_as_data(tmp_path_factory, pieces):
    import io

    from toymachine.check.autograder import CONFIG_NAME, RUN_AUTOGRADER, SETUP_SH, autograder_zip

    name = "".join(pieces).replace("/", "_").replace("\0", "_") + ".yaml"
    folder = tmp_path_factory.mktemp("p")
    try:
        (folder / name).write_bytes(P1.read_bytes())
    except (OSError, UnicodeEncodeError):  # a name this file system refuses is no one's problem file
        return
    archive = autograder_zip(folder / name, ("toymachine-0.1.0-py3-none-any.whl", b"x"))
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        assert zf.read("setup.sh").decode() == SETUP_SH and zf.read("run_autograder").decode() == RUN_AUTOGRADER
        assert [p["problem"] for p in json.loads(zf.read(CONFIG_NAME))["parts"]] == [name]
        assert zf.read(name) == P1.read_bytes()
