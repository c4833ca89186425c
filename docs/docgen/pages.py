"""The executable parts of a docs page, and how they run (tests/test_docs.py and docs/refresh_outputs.py).

* Every line of a ```` ```bash ```` fence that begins with ``toym `` is a command (text after `` # `` is a
  comment); `` | `` between ``toym`` stages pipes one stage's stdout into the next.
* ``<!-- toym-output: ARGS -->`` on the line directly above a ```` ```text ```` fence: the fence holds what
  ``toym ARGS`` prints on stdout (trailing whitespace stripped).
* ``<!-- toym-error: ARGS -->`` above a ```` ```text ```` fence: ``toym ARGS`` must fail with exit status 2
  and print the fence's text on stderr (an error a tutorial teaches to read). ``toym-output exit=1: ARGS``
  expects that exit status and stdout (a check that fails); ``toym-error exit=N`` likewise.
* ``<!-- toym-file: PATH -->`` above any fence: the fence's text is written to PATH in the page's folder
  (the trace a tutorial asks the reader to type), before the commands that follow it.

A page runs top to bottom in a folder of its own holding copies of ``programs/`` and ``examples/``, so a
later command may read an earlier one's ``-o`` file. Commands that need what is not installed are skipped:
``verify-gpu`` without torch and triton, ``--plot`` without matplotlib.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
LANGUAGES = ("zh", "ja")  # translations: page.zh.md, page.ja.md beside page.md
OUTPUT = re.compile(r"^<!-- toym-(output|error)(?: exit=(\d+))?: (.+?) -->\n```text\n(.*?)^```$", re.S | re.M)
FILE = re.compile(r"^<!-- toym-file: (.+?) -->\n```[a-z]*\n(.*?)^```$", re.S | re.M)
FENCE = re.compile(r"^```bash\n(.*?)^```$", re.S | re.M)


@dataclass(frozen=True)
class Step:
    kind: str  # "command", "output" (stdout, exit 0), "error" (stderr, exit 2) or "file" (text is its path)
    text: str  # the command line (after "toym ") or the output block's ARGS
    offset: int  # where in the page it starts (characters)
    expected: str | None = None  # an output block's text
    span: tuple[int, int] | None = None  # an output block's contents, as (start, end) in the page
    exit_status: int = 0  # what an output or error block's command must exit with


def generated_pages() -> set[Path]:
    """The pages docs/hooks.py writes at build time (not hand-written: no commands to run)."""
    if str(DOCS) not in sys.path:
        sys.path.insert(0, str(DOCS))
    from hooks import GENERATED

    return {DOCS / rel for rel in GENERATED}


def pages(languages: bool = True) -> list[Path]:
    """Every hand-written page (English, and the translations when ``languages``), sorted."""
    skip = generated_pages()
    found = []
    for path in sorted(DOCS.rglob("*.md")):
        if path in skip or "docgen" in path.parts:
            continue
        lang = path.suffixes[-2][1:] if len(path.suffixes) > 1 else None
        if lang in LANGUAGES and not languages:
            continue
        found.append(path)
    return found


def english_pages() -> list[Path]:
    return pages(languages=False)


def steps(text: str) -> list[Step]:
    """The page's commands and output blocks, in page order."""
    found = []
    for m in FENCE.finditer(text):
        pos = m.start(1)
        for line in m.group(1).splitlines(keepends=True):
            command = re.split(r"\s#\s", line.rstrip("\n"))[0].strip()
            if command.startswith("toym "):
                found.append(Step("command", command[len("toym "):], pos))
            pos += len(line)
    for m in OUTPUT.finditer(text):
        exit_status = int(m.group(2)) if m.group(2) else (0 if m.group(1) == "output" else 2)
        found.append(Step(m.group(1), m.group(3).strip(), m.start(), m.group(4), (m.start(4), m.end(4)), exit_status))
    for m in FILE.finditer(text):
        found.append(Step("file", m.group(1).strip(), m.start(), m.group(2)))
    return sorted(found, key=lambda s: s.offset)


def stages(command: str) -> list[list[str]]:
    """``gen matmul --n 2 | toym run -`` → [["gen", "matmul", "--n", "2"], ["run", "-"]]."""
    parts = command.split(" | ")
    out = [shlex.split(parts[0])]
    for part in parts[1:]:
        words = shlex.split(part)
        if not words or words[0] != "toym":
            raise ValueError(f"a pipe stage must be a toym command: {part!r} in {command!r}")
        out.append(words[1:])
    return out


def _importable(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def skip_reason(command: str) -> str | None:
    """Why a command cannot run here (None: it can)."""
    flat = [w for stage in stages(command) for w in stage]
    if flat and flat[0] == "verify-gpu" and not (_importable("torch") and _importable("triton")):
        return "verify-gpu needs torch and triton (the gpu extra)"
    if "--plot" in flat and not _importable("matplotlib"):
        return "--plot needs matplotlib (the plot extra)"
    return None


def toym_in_process():
    """``call(*args, input=None) -> (exit code, stdout, stderr)``: the CLI run in this process."""
    from typer.testing import CliRunner

    from toymachine.cli import app

    runner = CliRunner()

    def call(*args, input=None):
        res = runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)
        return res.exit_code, res.stdout, res.stderr

    return call


def run_command(toym, command: str) -> tuple[int, str, str]:
    data, code, err = None, 0, ""
    for stage in stages(command):
        code, data, err = toym(*stage, input=data)
        if code != 0:
            break
    return code, data, err


def normalise(text: str) -> str:
    """What an output block is compared on: each line's trailing whitespace, and trailing blank lines, gone."""
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


@contextmanager
def workdir():
    """A fresh folder holding copies of programs/ and examples/, made the current directory."""
    folder = Path(tempfile.mkdtemp(prefix="toym-docs-"))
    cwd = os.getcwd()
    try:
        for sub in ("programs", "examples"):
            shutil.copytree(ROOT / sub, folder / sub)
        os.chdir(folder)
        yield folder
    finally:
        os.chdir(cwd)
        shutil.rmtree(folder, ignore_errors=True)


def run_page(path: Path, toym) -> list[tuple[Step, int, str, str]]:
    """Run a page's steps in order in a fresh folder: (step, exit code, stdout, stderr) for each step run
    (skipped ones are left out)."""
    results = []
    with workdir():
        for step in steps(path.read_text(encoding="utf-8")):
            if step.kind == "file":
                Path(step.text).parent.mkdir(parents=True, exist_ok=True)
                Path(step.text).write_text(step.expected, encoding="utf-8")
                continue
            if skip_reason(step.text):
                continue
            results.append((step, *run_command(toym, step.text)))
    return results
