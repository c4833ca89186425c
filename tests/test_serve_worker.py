"""The playground's worker pool: its size, and what a request gets from a worker that never started.

The workers are stand-ins (no processes): what is tested is the pool's bookkeeping around them.
"""

from __future__ import annotations

import io
import json

import pytest

from toymachine.serve import worker
from toymachine.serve.limits import Limits


class _StandInWorker:
    """A worker that records what the pool does with it; ``ready`` is what ``wait_ready`` answers."""

    ready = True
    started: list[_StandInWorker] = []

    def __init__(self, limits: Limits):
        self.limits = limits
        self.killed = False
        self.proc = type("Proc", (), {"stdin": io.BytesIO()})()
        _StandInWorker.started.append(self)

    def wait_ready(self, timeout: float) -> bool:
        return self.ready

    def poll_ready(self) -> bool:
        return self.ready

    def receive(self, timeout: float):
        return [200, "{}", "application/json"]

    def kill(self) -> None:
        self.killed = True


@pytest.fixture
def stand_in(monkeypatch):
    _StandInWorker.started = []
    _StandInWorker.ready = True
    monkeypatch.setattr(worker, "_Worker", _StandInWorker)
    return _StandInWorker


def test_pool_without_limits_starts_the_tables_worker_count(stand_in):
    pool = worker.WorkerPool()
    expected = Limits.from_table()
    assert pool.limits == expected
    assert len(pool.all) == expected.workers == len(stand_in.started)
    assert all(w.limits == expected for w in stand_in.started)


def test_call_on_a_worker_that_never_became_ready_replaces_it_and_sends_nothing(stand_in):
    pool = worker.WorkerPool(Limits(workers=1))
    (first,) = pool.all
    stand_in.ready = False
    status, body, media = pool.call("run", {"trace": "LOAD x[0], R0\n"})
    assert (status, media) == (503, "application/json")
    assert json.loads(body)["error"]["hint"] == "try again in a moment; the server's log says more"
    assert first.killed and first.proc.stdin.getvalue() == b""  # no request was written to it
    assert first not in pool.all and len(pool.all) == 1  # a fresh one took its place


def test_call_on_a_ready_worker_returns_its_reply(stand_in):
    pool = worker.WorkerPool(Limits(workers=1))
    (first,) = pool.all
    assert pool.call("run", {"trace": "LOAD x[0], R0\n"}) == (200, "{}", "application/json")
    assert not first.killed and first.proc.stdin.getvalue() != b""
