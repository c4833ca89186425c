"""A ``toym`` that runs many inputs in one process, for the fuzz suite: started once under the
memory cap (``runner.Worker``), it reads one JSON request per line — ``{"args": [...], "files":
{name: text | {"b64": ...}}, "stdin": str, "seconds": float}`` — runs ``toymachine.cli.app.main``
in a fresh temporary folder with stdout/stderr captured, and answers one JSON line: ``{"rc",
"stdout", "stderr", "seconds", "hang"}``. A run past its seconds is stopped by SIGALRM and
answered as a hang; a crash of the process itself (the memory cap) the parent sees as EOF.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import signal
import sys
import tempfile
import time


class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang()


def _run(request: dict) -> dict:
    from toymachine.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    rc, hang = 0, False
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="toym-fuzz-") as folder:
        for name, content in request.get("files", {}).items():
            path = os.path.join(folder, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if isinstance(content, dict):
                with open(path, "wb") as fh:
                    fh.write(base64.b64decode(content["b64"]))
            else:
                with open(path, "w", encoding="utf-8", errors="surrogatepass") as fh:
                    fh.write(content)
        os.chdir(folder)
        old_stdin = sys.stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(request.get("stdin", "").encode("utf-8", "surrogatepass")))
        signal.setitimer(signal.ITIMER_REAL, float(request.get("seconds", 10.0)))
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    main(list(request["args"]))
                except SystemExit as exc:
                    rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except _Hang:
            hang, rc = True, -9
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdin = old_stdin
            os.chdir(cwd)
    return {"rc": rc, "stdout": out.getvalue()[-200_000:], "stderr": err.getvalue()[-20_000:],
            "seconds": time.perf_counter() - t0, "hang": hang}


def serve() -> None:
    signal.signal(signal.SIGALRM, _alarm)
    import toymachine.cli.app  # noqa: F401 (imported once, before the first request's clock starts)

    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = _run(request)
        except BaseException as exc:  # noqa: BLE001 - reported, not raised: the worker keeps serving
            answer = {"rc": -1, "stdout": "", "stderr": f"worker: {type(exc).__name__}: {exc}", "seconds": 0.0,
                      "hang": False}
        sys.__stdout__.write(json.dumps(answer) + "\n")
        sys.__stdout__.flush()


if __name__ == "__main__":
    serve()
