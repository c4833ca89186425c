"""Requests run in worker processes, each under a deadline: an overrunning one is killed and replaced.

A thread cannot be stopped from outside, so a pasted trace that would simulate for minutes (or
allocate gigabytes) would hold the server; a process can be. ``WorkerPool.call(kind, body)``
hands the raw request body (bytes: the worker decodes the JSON too, so a hostile body costs the
worker, not the server) to an idle worker and waits at most ``LIMITS.run_seconds``; past that
the worker is killed, a fresh one started, and the caller gets the JSON error object (422).
Each worker caps its address space (``LIMITS.worker_memory_bytes``) and runs one request at a
time; the pool holds ``LIMITS.workers`` of them. Workers are fresh interpreters (``python -m
toymachine.serve.worker``: nothing forked from the server's threads) that import the simulator
once, at start, and talk over their stdin/stdout (length-prefixed JSON).
"""

from __future__ import annotations

__all__ = ["WorkerPool"]

import contextlib
import dataclasses
import json
import os
import queue
import struct
import subprocess
import sys
import threading

from .limits import Limits

Reply = tuple[int, str, str]
_HEADER = struct.Struct(">I")  # each message: its length, then JSON


def _write(fh, obj) -> None:
    data = json.dumps(obj, ensure_ascii=False).encode()
    fh.write(_HEADER.pack(len(data)) + data)
    fh.flush()


def _read(fh):
    head = fh.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError("worker pipe closed")
    (n,) = _HEADER.unpack(head)
    data = fh.read(n)
    if len(data) < n:
        raise EOFError("worker pipe closed")
    return json.loads(data)


def main() -> None:  # pragma: no cover - the worker process (python -m toymachine.serve.worker)
    """Serve requests from stdin to stdout, one at a time, until stdin closes."""
    from . import limits

    if len(sys.argv) > 1:  # the server's limits (a test's smaller ones), before the handlers read them
        limits.LIMITS = Limits(**json.loads(sys.argv[1]))
    memory_bytes = limits.LIMITS.worker_memory_bytes
    with contextlib.suppress(Exception):
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    from .handlers import handle

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the reply pipe
    handle("run", {"trace": "LOAD x[0], R0\n", "options": {"format": "html"}})  # warm the imports
    _write(stdout, ["ready"])
    while True:
        try:
            kind, body = _read(stdin)
        except (EOFError, OSError):
            return
        try:
            payload = json.loads(body) if isinstance(body, str) else body
            json.dumps(payload, ensure_ascii=False).encode("utf-8")  # "\ud800" escapes are not text
        except (ValueError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
            from ..errors import ConfigError
            from ..render.jsonout import error_json

            _write(stdout, [400, error_json(ConfigError(f"the request body is not JSON: {exc}")), "application/json"])
            continue
        _write(stdout, list(handle(kind, payload)))


class _Worker:
    def __init__(self, limits: Limits):
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen([sys.executable, "-m", "toymachine.serve.worker",
                                      json.dumps(dataclasses.asdict(limits))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.ready = False
        self.replies: queue.Queue = queue.Queue()  # a reader thread: no select() on pipes (Windows has none)
        threading.Thread(target=self._reader, daemon=True, name="toym-serve-reader").start()

    def _reader(self) -> None:
        try:
            while True:
                self.replies.put(_read(self.proc.stdout))
        except Exception:  # EOF: the worker exited or was killed
            self.replies.put(None)

    def receive(self, timeout: float):
        """The worker's next message; ``TimeoutError`` if none within ``timeout`` seconds,
        ``EOFError`` if it died."""
        try:
            msg = self.replies.get(timeout=max(0.0, timeout))
        except queue.Empty:
            raise TimeoutError from None
        if msg is None:
            raise EOFError("the worker exited")
        return msg

    def poll_ready(self) -> bool:
        """Whether the worker has said it is ready, without waiting."""
        try:
            return self.wait_ready(0)
        except EOFError:
            return False

    def wait_ready(self, timeout: float) -> bool:
        if not self.ready:
            try:
                self.ready = self.receive(timeout) == ["ready"]
            except TimeoutError:
                return False
        return self.ready

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.kill()
            self.proc.wait(5)
        for fh in (self.proc.stdin, self.proc.stdout):
            if fh is not None:
                with contextlib.suppress(Exception):
                    fh.close()


class WorkerPool:
    """``LIMITS.workers`` worker processes; ``call`` blocks until one is idle, then for at most
    the deadline. The app admits at most ``workers`` calls at once (``serve.scheduler``), so a call
    finds an idle worker at once."""

    def __init__(self, limits: Limits | None = None):
        self.limits = Limits.from_table() if limits is None else limits
        self.idle: list[_Worker] = []
        self.all: list[_Worker] = []
        self.lock = threading.Lock()
        self.freed = threading.Condition(self.lock)
        for _ in range(self.limits.workers):
            self._add()

    def _add(self) -> None:
        w = _Worker(self.limits)
        with self.lock:
            self.all.append(w)
        self._give_back(w)

    def _give_back(self, w: _Worker) -> None:
        with self.freed:
            self.idle.append(w)
            self.freed.notify()

    def _take(self) -> _Worker:
        """An idle worker, one that has finished starting if there is one (a replacement for a
        killed worker may still be importing)."""
        with self.freed:
            while not self.idle:
                self.freed.wait()
            ready = [w for w in self.idle if w.ready or w.poll_ready()]
            w = (ready or self.idle)[0]
            self.idle.remove(w)
            return w

    def call(self, kind: str, body: bytes | dict) -> Reply:
        from ..errors import ConfigError
        from ..render.jsonout import error_json

        w = self._take()
        try:
            if not w.wait_ready(60):  # a fresh worker is still importing: its start-up is not the request's time
                self._replace(w)
                return 503, error_json(ConfigError("the playground's worker process did not start in time",
                                                   hint="try again in a moment; the server's log says more")), \
                    "application/json"
            text = body.decode("utf-8", "replace") if isinstance(body, bytes) else json.dumps(body)
            _write(w.proc.stdin, [kind, text])
            status, reply, media = w.receive(self.limits.run_seconds)
            self._give_back(w)
            return status, reply, media
        except TimeoutError:
            pass
        except (EOFError, OSError, ValueError):  # it died (out of memory, killed)
            self._replace(w)
            return 422, error_json(ConfigError("the run stopped: its worker process exited (more memory than the "
                                               "playground allows, or it could not start: see the server's log)",
                                               hint="run it with toym run FILE")), "application/json"
        self._replace(w)
        return 422, error_json(ConfigError(self.limits.refuse_time(), hint="the limits are in "
                                           "toymachine/limits.py (TOYM_MAX_SERVE_RUN_SECONDS)")), "application/json"

    def _replace(self, w: _Worker) -> None:
        w.kill()
        with self.lock:
            if w in self.all:
                self.all.remove(w)
        self._add()

    def close(self) -> None:
        with self.lock:
            workers, self.all = self.all, []
        for w in workers:
            w.kill()


if __name__ == "__main__":  # pragma: no cover
    main()
