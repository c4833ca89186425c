"""What one submission may cost the grader, declared in one place (``GradeLimits``).

A batch never aborts for one student: a submission past a limit is a failing row that says
which limit and by how much. The defaults fit every seed-size trace a hundred times over.
(When the project's central limits module lands, these defaults move there.)
"""

from __future__ import annotations

__all__ = ["GradeLimits", "DEFAULT_LIMITS", "time_limit", "TimeLimitExceeded"]

import contextlib
import signal
import threading
from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class GradeLimits:
    max_bytes: int = 1_000_000  # one submitted trace file
    max_instructions: int = 200_000  # lines of a trace (each line at most one instruction)
    seconds: float = 10.0  # wall time to grade one submission (every trial)
    max_files: int = 10_000  # entries of a submissions folder or zip
    max_total_bytes: int = 200_000_000  # uncompressed bytes read from a zip, all members
    max_ratio: int = 200  # a zip member that inflates more than this is a bomb


DEFAULT_LIMITS = GradeLimits()


class TimeLimitExceeded(BaseException):
    """Raised by the timer wherever the grader is: a BaseException (like KeyboardInterrupt), so
    that no ``except Exception`` on the way turns it into another error."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise ``TimeLimitExceeded`` in the block after ``seconds`` of wall time (a SIGALRM
    timer: only in a process's main thread, elsewhere the block runs unbounded)."""
    usable = seconds and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise TimeLimitExceeded(f"time limit of {seconds:g} s exceeded")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
