"""The executable parts of a docs page, and how they run (tests/test_docs.py, tests/test_readme.py and
docs/refresh_outputs.py).

What a reader sees is what runs: a page shows every command it runs and every file those commands read.

* Every line of a ```` ```bash ```` fence that begins with ``toym `` is a command (text after `` # `` is a
  comment); `` | `` between ``toym`` stages pipes one stage's stdout into the next.
* ``<!-- toym-output -->`` on the line directly above a ```` ```text ```` fence: the fence holds what the
  **last command of the** ```` ```bash ```` **fence directly above the marker** prints on stdout (blank lines
  may separate them, prose may not). ``<!-- toym-error -->``: that command must fail with exit status 2
  and print the fence's text on stderr (an error a tutorial teaches to read). ``toym-output exit=1``
  expects that exit status and stdout (a check that fails); ``toym-error exit=N`` likewise. A marker
  never names a command: the command is the one the reader sees.
* A fence with a ``title="PATH"`` (rendered as the file's name above it) is a file: its text is written
  to PATH in the page's folder before the commands that follow it. A titled fence holding only
  ``--8<-- "PATH"`` shows a bundled file, already in the folder.
* A command with an output block reads only files the page shows: a titled fence, a ``--8<--`` include,
  or a file an earlier command wrote with ``-o``/``--out`` (:func:`unshown_files`).

A page runs top to bottom in a folder of its own holding copies of ``programs/`` and ``examples/``, so a
later command may read an earlier one's ``-o`` file. Commands that need what is not installed are skipped:
``verify-gpu`` without torch and triton, ``--plot`` without matplotlib. Output blocks are compared with each
line's trailing whitespace and the trailing blank lines removed (:func:`normalise`).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
LANGUAGES = ("zh", "ja")  # translations: page.zh.md, page.ja.md beside page.md
MARKER = re.compile(r"^<!-- toym-(output|error)(?: exit=(\d+))? -->$")
FENCE_OPEN = re.compile(r"^( *)(`{3,}|~{3,})([\w+-]*)(.*)$")
TITLE = re.compile(r'\btitle="([^"]+)"')
SNIPPET = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$', re.M)
OUTPUT_FLAGS = ("-o", "--out", "--output", "--plot")  # their value is a file the command writes


class PageError(ValueError):
    """A page breaks the convention (a marker naming a command, an output block under no command)."""


@dataclass(frozen=True)
class Step:
    kind: str  # "command" (exit 0), "output" (stdout), "error" (stderr, exit 2) or "file" (text is its path)
    text: str  # the command line (after "toym "), or the file's path
    offset: int  # where in the page it starts (characters)
    expected: str | None = None  # an output block's text, or a file's
    span: tuple[int, int] | None = None  # an output block's contents, as (start, end) in the page
    exit_status: int = 0  # what an output or error block's command must exit with
    line: int = 0  # the page line (1-based) of the command or the file's fence


@dataclass(frozen=True)
class _Fence:
    lang: str
    info: str
    body: str
    start: int  # the opening line's index
    end: int  # the closing line's index
    offset: int  # the opening line's first character
    body_span: tuple[int, int]  # the contents, as (start, end) in the page
    line_offsets: tuple[int, ...]  # each body line's first character


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


def _fences(text: str) -> tuple[list[_Fence], list[str], list[int]]:
    lines = text.splitlines(keepends=True)
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line)
    starts.append(pos)
    fences, i = [], 0
    while i < len(lines):
        m = FENCE_OPEN.match(lines[i].rstrip("\n"))
        if not m:
            i += 1
            continue
        indent, ticks = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != indent + ticks:
            j += 1
        if j == len(lines):
            raise PageError(f"line {i + 1}: a fence that is never closed")
        body = "".join(line[len(indent):] if line.startswith(indent) else line.lstrip(" ") for line in lines[i + 1:j])
        fences.append(_Fence(m.group(3), m.group(4), body, i, j, starts[i], (starts[i + 1], starts[j]),
                             tuple(starts[k] + len(indent) for k in range(i + 1, j))))
        i = j + 1
    return fences, lines, starts


def _commands(fence: _Fence) -> list[tuple[str, int, int]]:
    """A bash fence's toym commands: (command after "toym ", offset, line index)."""
    found = []
    for k, line in enumerate(fence.body.splitlines()):
        command = re.split(r"\s#\s", line)[0].strip()
        if command.startswith("toym "):
            found.append((command[len("toym "):], fence.line_offsets[k], fence.start + 1 + k))
    return found


def steps(text: str) -> list[Step]:
    """The page's commands, output blocks and files, in page order (PageError: the page breaks the convention)."""
    fences, lines, _ = _fences(text)
    inside = {k for f in fences for k in range(f.start, f.end + 1)}
    by_end = {f.end: f for f in fences}
    by_start = {f.start: f for f in fences}
    owned: dict[int, tuple[str, int, Step]] = {}  # bash fence start → its last command's output step
    for k, line in enumerate(lines):
        if k in inside or "toym-" not in line or "<!--" not in line:
            continue
        m = MARKER.match(line.rstrip("\n"))
        if not m:
            raise PageError(f"line {k + 1}: {line.strip()!r} is not a marker: a marker is <!-- toym-output --> or "
                            "<!-- toym-error --> (with an optional exit=N) and names no command — the command is "
                            "the last one of the bash fence directly above it")
        above = k - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        fence = by_end.get(above)
        if fence is None or fence.lang != "bash" or not _commands(fence):
            raise PageError(f"line {k + 1}: {line.strip()} is not directly under a bash fence showing its toym command")
        block = by_start.get(k + 1)
        if block is None or block.lang != "text":
            raise PageError(f"line {k + 1}: {line.strip()} is not directly above a text fence")
        if fence.start in owned:
            raise PageError(f"line {k + 1}: a second output block for the command of line {owned[fence.start][1] + 1}")
        command, offset, at = _commands(fence)[-1]
        kind = m.group(1)
        exit_status = int(m.group(2)) if m.group(2) else (0 if kind == "output" else 2)
        owned[fence.start] = (command, at, Step(kind, command, offset, block.body, block.body_span, exit_status, at + 1))
    found = []
    for fence in fences:
        if fence.lang == "bash":
            commands = _commands(fence)
            if fence.start in owned:
                found.append(owned[fence.start][2])
                commands = commands[:-1]
            found += [Step("command", c, off, line=at + 1) for c, off, at in commands]
        title = TITLE.search(fence.info)
        if title and not SNIPPET.fullmatch(fence.body.strip()):
            found.append(Step("file", title.group(1), fence.offset, fence.body, line=fence.start + 1))
    return sorted(found, key=lambda s: s.offset)


def shown_files(text: str) -> set[str]:
    """The files a page shows: titled fences and ``--8<--`` includes."""
    fences, _, _ = _fences(text)
    shown = {m.group(1) for f in fences if (m := TITLE.search(f.info))}
    return shown | {m.group(1) for m in SNIPPET.finditer(text)}


def stale_files(text: str) -> list[str]:
    """The titled fences that show a bundled file (one in programs/ or examples/) with other text than
    the file's: what the reader sees must be what the command reads."""
    return [s.text for s in steps(text) if s.kind == "file" and (ROOT / s.text).is_file()
            and normalise((ROOT / s.text).read_text(encoding="utf-8")) != normalise(s.expected or "")]


def unshown_files(text: str) -> list[tuple[Step, str]]:
    """(step, path) for each bundled file an output or error block's command reads that the page does not
    show (a file an earlier command writes with ``-o`` counts as shown: the reader made it)."""
    shown = shown_files(text)
    missing = []
    for step in steps(text):
        words = [w for stage in stages(step.text) for w in stage] if step.kind != "file" else []
        written = {b for a, b in itertools.pairwise(words) if a in OUTPUT_FLAGS}
        written |= {w.split("=", 1)[1] for w in words if w.startswith(tuple(f + "=" for f in OUTPUT_FLAGS))}
        if step.kind in ("output", "error"):
            for w in words:
                if not w.startswith("-") and w not in shown and w not in written and (ROOT / w).is_file():
                    missing.append((step, w))
                    shown.add(w)  # said once
        shown |= written
    return missing


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


def run_stages(toym, pipeline: list[list[str]]) -> tuple[int, str, str]:
    """Run a pipeline's stages in order, each fed the one before's stdout; stop at the first that fails."""
    data, code, err = None, 0, ""
    for stage in pipeline:
        code, data, err = toym(*stage, input=data)
        if code != 0:
            break
    return code, data, err


def run_command(toym, command: str) -> tuple[int, str, str]:
    return run_stages(toym, stages(command))


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


def iter_page(path: Path, toym) -> Iterator[tuple[int, Step, int, str, str]]:
    """Run a page's steps in order in a fresh folder (the current directory while the caller holds a
    step): (the step's index among the page's steps, step, exit code, stdout, stderr) for each step
    run; file steps are written, skipped ones left out."""
    with workdir():
        for at, step in enumerate(steps(path.read_text(encoding="utf-8"))):
            if step.kind == "file":
                Path(step.text).parent.mkdir(parents=True, exist_ok=True)
                Path(step.text).write_text(step.expected, encoding="utf-8")
                continue
            if skip_reason(step.text):
                continue
            yield (at, step, *run_command(toym, step.text))


def run_page(path: Path, toym) -> list[tuple[Step, int, str, str]]:
    """Run a page's steps in order in a fresh folder: (step, exit code, stdout, stderr) for each step run
    (skipped ones are left out)."""
    return [(step, code, out, err) for _, step, code, out, err in iter_page(path, toym)]
