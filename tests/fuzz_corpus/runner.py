"""Run ``toym`` in a subprocess under a memory cap and a time budget, and judge the outcome the
way every hostile input must be handled: an exit status in the documented set, no traceback, bounded stderr."""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MEMORY_CAP_BYTES = 1 << 30      # 1 GiB of address space
STDERR_MAX_CHARS = 4000         # an error message is a few lines, never the input echoed
DOCUMENTED_EXIT = {0, 1, 2, 3}  # 3: internal error (a bug report, never a traceback without --debug)
TRACEBACK = "Traceback (most recent call last)"

REPO = Path(__file__).resolve().parents[2]


def _cap() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))


@dataclass
class Outcome:
    rc: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    def problems(self, allowed=DOCUMENTED_EXIT) -> list[str]:
        out = []
        if self.timed_out:
            out.append(f"did not finish in its budget ({self.seconds:.1f} s)")
        if self.rc not in allowed:
            out.append(f"exit {self.rc} not in {sorted(allowed)}")
        if TRACEBACK in self.stderr or TRACEBACK in self.stdout:
            out.append("traceback in output")
        if len(self.stderr) > STDERR_MAX_CHARS:
            out.append(f"stderr of {len(self.stderr)} characters")
        return out


def run_toym(args, cwd, stdin: str | None = None, timeout: float = 20.0, env_extra: dict | None = None) -> Outcome:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="100", NO_COLOR="1", PYTHONHASHSEED="0")
    env.update(env_extra or {})
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "toymachine", *args], cwd=cwd, input=stdin,
                              capture_output=True, text=True, errors="replace", timeout=timeout,
                              preexec_fn=_cap, env=env)
    except subprocess.TimeoutExpired as exc:
        def s(b):
            return b.decode("utf-8", "replace") if isinstance(b, bytes) else (b or "")
        return Outcome(-9, s(exc.stdout), s(exc.stderr), time.perf_counter() - t0, timed_out=True)
    return Outcome(proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - t0)


def write_files(files: dict, folder: Path) -> None:
    for name, content in files.items():
        if callable(content):
            content = content()
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


# -- hostile text stays inert: one check per output format -------------------------------------------
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def inert_problems(fmt: str, text: str) -> list[str]:
    """What in ``text`` (output of ``--format fmt``) a reader would run: raw markup from an input
    in HTML or markdown, a TeX command outside a comment, a CSV cell a spreadsheet evaluates."""
    out = []
    if fmt in ("html", "html-fragment", "markdown"):
        for marker in ("<!--", "<script>alert", "<img", "<svg", "<iframe"):
            if marker in text:
                out.append(f"{fmt}: raw {marker!r}")
    elif fmt == "latex":
        for n, line in enumerate(text.splitlines(), 1):
            if line.startswith("%"):
                continue
            for command in ("\\input", "\\write18", "\\include", "\\openout", "\\immediate", "\\catcode", "\\def"):
                if command in line:
                    out.append(f"latex line {n}: {command} outside a comment")
    elif fmt == "csv":
        import csv
        import io

        for row in csv.reader(io.StringIO(text)):
            for cell in row:
                if cell.startswith(_FORMULA):
                    try:
                        float(cell)
                    except ValueError:
                        out.append(f"csv: formula cell {cell[:40]!r}")
    elif fmt == "json":
        import json

        try:
            json.loads(text)
        except ValueError as exc:
            out.append(f"json: not valid ({exc})")
    return out


class Worker:
    """One ``fuzz_corpus.worker`` process under the memory cap, running requests in turn; if the
    process dies (the cap, a segfault) the request reports rc -11 ("crash") and a fresh one starts."""

    def __init__(self):
        self.proc = None

    def _start(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + str(REPO / "tests"), COLUMNS="100",
                   NO_COLOR="1", PYTHONHASHSEED="0")
        self.proc = subprocess.Popen([sys.executable, "-m", "fuzz_corpus.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     encoding="utf-8", errors="surrogatepass", preexec_fn=_cap, env=env,
                                     cwd=str(REPO))

    def run(self, args, files: dict | None = None, stdin: str = "", seconds: float = 10.0) -> Outcome:
        import base64
        import json

        if self.proc is None or self.proc.poll() is not None:
            self._start()
        body = {k: ({"b64": base64.b64encode(v).decode()} if isinstance(v, bytes) else v)
                for k, v in (files or {}).items()}
        request = json.dumps({"args": list(args), "files": body, "stdin": stdin, "seconds": seconds})
        import select

        try:
            self.proc.stdin.write(request + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], seconds + 30)  # the worker's own alarm failed
            line = self.proc.stdout.readline() if ready else None
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            self.close()
            if line is None:
                return Outcome(-9, "", "worker stopped answering (a hang its alarm did not end)", seconds + 30, True)
            return Outcome(-11, "", "worker crashed (memory cap or signal)", 0.0)
        answer = json.loads(line)
        return Outcome(answer["rc"], answer["stdout"], answer["stderr"], answer["seconds"], answer["hang"])

    def close(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(Exception):
                self.proc.stdin.close()
            with contextlib.suppress(Exception):
                self.proc.kill()
            self.proc.wait()
            self.proc = None
