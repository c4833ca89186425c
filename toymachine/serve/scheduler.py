"""Who gets the next worker: the playground's admission control, on the server's event loop.

The worker pool has a few processes (``Limits.workers``); a class in lab mode can send far more
requests than that. Requests wait here, in the event loop (no thread is held while one waits, so
a flood cannot starve the server of threads), and a freed worker goes to:

1. an **interactive** request (``run``, ``live``, ``check``, ``meta``, ``example``) before a
   **sweep**, and sweeps never hold the last worker while interactive requests exist to use it
   (``interactive_reserve``): a one-line run is never stuck behind a wall of sweeps;
2. within a lane, the client with the fewest requests running, then with the fewest waiting, then
   the oldest request: a client that floods the queue is served after those that do not.

A client may have at most ``per_client`` requests waiting or running; one more is refused at once
(``Busy``, status 429). A request that waits ``queue_seconds`` without a worker is refused (503).
Both carry ``retry_after`` seconds for the ``Retry-After`` header.
"""

from __future__ import annotations

__all__ = ["Busy", "Scheduler", "lane_of"]

import asyncio
import itertools
import math
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

INTERACTIVE, SWEEP = "interactive", "sweep"


def lane_of(kind: str) -> str:
    """The lane of a request kind: sweeps run many points; every other request is one run or less."""
    return SWEEP if kind == "sweep" else INTERACTIVE


class Busy(Exception):
    """No worker for this request: ``status`` 429 (the client has too many in flight) or 503 (the
    queue's deadline passed); ``reason`` is ``"client-limit"`` or ``"queue-timeout"``."""

    def __init__(self, status: int, reason: str, message: str, retry_after: int):
        super().__init__(message)
        self.status, self.reason, self.message, self.retry_after = status, reason, message, retry_after


@dataclass(eq=False)
class _Ticket:
    lane: str
    client: str
    seq: int
    granted: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class Scheduler:
    """``capacity`` slots (one per worker process), handed out by lane and fairness (module doc)."""

    def __init__(self, capacity: int, *, queue_seconds: float, per_client: int, retry_after: float,
                 interactive_reserve: int = 1):
        if capacity < 1:
            raise ValueError("a scheduler needs at least one slot")
        self.capacity, self.queue_seconds, self.per_client = capacity, queue_seconds, per_client
        self.retry_after = max(1, math.ceil(retry_after))
        self.sweep_cap = max(1, capacity - interactive_reserve)  # slots sweeps may hold at once
        self.running: Counter[str] = Counter()  # client -> requests running
        self.running_lane: Counter[str] = Counter()  # lane -> requests running
        self.waiting: list[_Ticket] = []
        self.in_flight: Counter[str] = Counter()  # client -> waiting + running
        self._seq = itertools.count()

    @property
    def busy(self) -> int:
        return sum(self.running_lane.values())

    def _eligible(self, t: _Ticket) -> bool:
        if t.lane != SWEEP:
            return True
        if self.capacity > 1:  # the reserve stays free for an interactive request that may come
            return self.running_lane[SWEEP] < self.sweep_cap
        return not any(w.lane == INTERACTIVE for w in self.waiting)

    def _dispatch(self) -> None:
        """Grant free slots to the best waiting tickets."""
        while self.busy < self.capacity:
            ready = [t for t in self.waiting if self._eligible(t)]
            if not ready:
                return
            best = min(ready, key=lambda t: (t.lane != INTERACTIVE, self.running[t.client], self.in_flight[t.client],
                                             t.seq))
            self.waiting.remove(best)
            self.running[best.client] += 1
            self.running_lane[best.lane] += 1
            best.granted.set_result(None)

    def _release(self, t: _Ticket) -> None:
        self.running[t.client] -= 1
        self.running_lane[t.lane] -= 1
        self._forget(t)
        self._dispatch()

    def _withdraw(self, t: _Ticket) -> None:
        self.waiting.remove(t)
        self._forget(t)
        self._dispatch()

    def _forget(self, t: _Ticket) -> None:
        self.in_flight[t.client] -= 1
        if self.in_flight[t.client] <= 0:
            del self.in_flight[t.client]
        if self.running[t.client] <= 0:
            self.running.pop(t.client, None)

    @asynccontextmanager
    async def slot(self, lane: str, client: str) -> AsyncIterator[None]:
        """Hold one slot for the block; raises ``Busy`` when the client is over its share or the wait
        passes ``queue_seconds``."""
        if self.in_flight[client] >= self.per_client:
            raise Busy(429, "client-limit", f"this client already has {self.per_client} requests waiting or "
                       "running in the playground; wait for them to finish", self.retry_after)
        ticket = _Ticket(lane, client, next(self._seq))
        self.in_flight[client] += 1
        self.waiting.append(ticket)
        self._dispatch()
        try:
            await asyncio.wait({ticket.granted}, timeout=self.queue_seconds)  # never cancels the grant
        except asyncio.CancelledError:  # the client went away while waiting
            if ticket.granted.done():
                self._release(ticket)
            else:
                self._withdraw(ticket)
            raise
        if not ticket.granted.done():
            self._withdraw(ticket)
            raise Busy(503, "queue-timeout", f"the playground is busy: no worker was free within "
                       f"{self.queue_seconds:g} s", self.retry_after)
        try:
            yield
        finally:
            self._release(ticket)
