"""The playground's admission control (``serve.scheduler``): interactive requests before sweeps,
a reserved worker sweeps never take, fairness between clients, a per-client cap (429) and a
queue deadline (503) — checked by the order of grants, never by timing."""

import asyncio

import pytest

from toymachine.serve.scheduler import INTERACTIVE, SWEEP, Busy, Scheduler


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


async def settle():
    """Let every ready task run until it blocks."""
    for _ in range(20):
        await asyncio.sleep(0)


async def _hold(sched, lane, client, log, name, release):
    async with sched.slot(lane, client):
        log.append(name)
        await release.wait()


def test_an_interactive_request_passes_a_wall_of_sweeps():
    async def main():
        sched = Scheduler(2, queue_seconds=60, per_client=100, retry_after=5)
        log, release = [], asyncio.Event()
        sweeps = [asyncio.create_task(_hold(sched, SWEEP, f"s{k}", log, f"sweep{k}", release)) for k in range(10)]
        await settle()
        assert log == ["sweep0"]  # sweeps never take the reserved worker
        quick = asyncio.create_task(_hold(sched, INTERACTIVE, "student", log, "run", asyncio.Event()))
        await settle()
        assert log == ["sweep0", "run"]  # the reserved worker serves the run at once
        quick.cancel()
        release.set()
        await asyncio.gather(*sweeps)
        assert log.count("run") == 1 and sorted(log[2:]) == sorted(f"sweep{k}" for k in range(1, 10))

    run(main())


def test_a_freed_worker_goes_to_the_client_with_fewest_running():
    async def main():
        sched = Scheduler(1, queue_seconds=60, per_client=100, retry_after=5)
        log = []
        gates = {}

        def start(client, name):
            gates[name] = asyncio.Event()
            return asyncio.create_task(_hold(sched, INTERACTIVE, client, log, name, gates[name]))

        first = start("mallory", "m0")
        await settle()
        tasks = [start("mallory", f"m{k}") for k in range(1, 4)] + [start("alice", "a0")]
        await settle()
        assert log == ["m0"]
        gates["m0"].set()
        await first
        await settle()
        assert log == ["m0", "a0"]  # alice runs nothing, mallory's queue is older: alice first
        for g in gates.values():
            g.set()
        await asyncio.gather(*tasks)

    run(main())


def test_one_client_over_its_share_is_refused_with_429():
    async def main():
        sched = Scheduler(1, queue_seconds=60, per_client=2, retry_after=4.2)
        release = asyncio.Event()
        held = [asyncio.create_task(_hold(sched, SWEEP, "mallory", [], "x", release)) for _ in range(2)]
        await settle()
        with pytest.raises(Busy) as busy:
            async with sched.slot(SWEEP, "mallory"):
                pass
        assert busy.value.status == 429 and busy.value.reason == "client-limit" and busy.value.retry_after == 5
        assert sched.in_flight["mallory"] == 2  # a refused request leaves no trace
        release.set()
        await asyncio.gather(*held)
        assert not sched.in_flight and not sched.waiting and sched.busy == 0

    run(main())


def test_a_request_that_waits_past_the_deadline_gets_503_and_leaves_the_queue():
    async def main():
        sched = Scheduler(1, queue_seconds=0.05, per_client=10, retry_after=5)
        release = asyncio.Event()
        holder = asyncio.create_task(_hold(sched, INTERACTIVE, "a", [], "x", release))
        await settle()
        with pytest.raises(Busy) as busy:
            async with sched.slot(INTERACTIVE, "b"):
                pass
        assert busy.value.status == 503 and busy.value.reason == "queue-timeout"
        assert [t.client for t in sched.waiting] == [] and "b" not in sched.in_flight
        release.set()
        await holder
        async with sched.slot(INTERACTIVE, "b"):  # the freed worker serves the next request
            assert sched.busy == 1

    run(main())


def test_a_cancelled_waiter_frees_its_place():
    async def main():
        sched = Scheduler(1, queue_seconds=60, per_client=10, retry_after=5)
        release = asyncio.Event()
        holder = asyncio.create_task(_hold(sched, INTERACTIVE, "a", [], "x", release))
        await settle()
        waiter = asyncio.create_task(_hold(sched, INTERACTIVE, "b", [], "y", asyncio.Event()))
        await settle()
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert not sched.waiting and "b" not in sched.in_flight
        release.set()
        await holder
        assert sched.busy == 0 and not sched.in_flight

    run(main())


# The app: the scheduler's refusals are answers with Retry-After; a dropped upload is one log line.

starlette = pytest.importorskip("starlette")
import threading  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402

from starlette.testclient import TestClient  # noqa: E402

from toymachine.serve.app import create_app  # noqa: E402
from toymachine.serve.limits import LIMITS  # noqa: E402

SLOW_SWEEP = {"generator": "matmul", "params": {"n": "24", "registers": "3..66", "schedule": "inner"}}


def _while_a_sweep_runs(limits, then):
    """Start a sweep that runs until its worker is killed, wait until it holds the only worker, call
    ``then(client)``."""
    with TestClient(create_app(limits), base_url="http://127.0.0.1") as c:
        done = []
        t = threading.Thread(target=lambda: done.append(c.post("/api/sweep", json=SLOW_SWEEP)), daemon=True)
        t.start()
        sched = c.app.state.scheduler
        for _ in range(600):
            if sched.busy:
                break
            time.sleep(0.05)
        assert sched.busy == 1
        try:
            return then(c)
        finally:
            t.join(60)
            assert done and done[0].status_code == 422  # the sweep itself was stopped by the deadline


@pytest.mark.slow
def test_a_client_over_its_share_is_answered_429_with_retry_after():
    limits = replace(LIMITS, workers=1, run_seconds=3.0, client_requests=1, queue_seconds=30.0)
    r = _while_a_sweep_runs(limits, lambda c: c.post("/api/run", json={"trace": "LOAD x[0], R0\n"}))
    assert r.status_code == 429 and r.headers["Retry-After"] == "3"
    assert "already has 1 requests waiting or running" in r.json()["error"]["message"]


@pytest.mark.slow
def test_a_request_that_finds_no_worker_in_time_is_answered_503_with_retry_after():
    limits = replace(LIMITS, workers=1, run_seconds=3.0, client_requests=10, queue_seconds=0.3)
    r = _while_a_sweep_runs(limits, lambda c: c.get("/api/meta"))
    assert r.status_code == 503 and r.headers["Retry-After"] == "3"


def test_a_client_that_disconnects_mid_body_is_one_log_line(caplog):
    app = create_app()
    sent, messages = [], iter([{"type": "http.request", "body": b'{"trace": "LO', "more_body": True},
                               {"type": "http.disconnect"}])
    scope = {"type": "http", "method": "POST", "path": "/api/run", "raw_path": b"/api/run", "query_string": b"",
             "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")], "scheme": "http",
             "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5555), "http_version": "1.1", "root_path": ""}

    async def receive():
        return next(messages)

    async def send(message):
        sent.append(message)

    with caplog.at_level("INFO", logger="toymachine.serve"):
        asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 400
    records = [r for r in caplog.records if r.name.startswith("toymachine")]
    assert len(records) == 1 and "disconnected" in records[0].getMessage() and not records[0].exc_info
