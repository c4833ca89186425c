"""What one submission may cost the grader, declared in one place (``GradeLimits``).

A batch never aborts for one student: a submission past a limit is a failing row that says
which limit and by how much. The defaults fit every seed-size trace a hundred times over.
Each field is a ``grade_*`` row of the project-wide table (``toymachine/limits.py``: default,
the ``TOYM_MAX_GRADE_…`` variable that lifts it, its line on the reference page); ``GradeLimits``
is their typed view and ``GradeLimits.from_table()`` reads the values in force.
"""

from __future__ import annotations

__all__ = ["GradeLimits", "DEFAULT_LIMITS", "time_limit", "TimeLimitExceeded"]

import contextlib
import math
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, fields

from ..limits import LIMITS as TABLE

ROWS = {"max_bytes": "grade_bytes", "max_instructions": "grade_instructions", "seconds": "grade_seconds",
        "max_files": "grade_files", "max_entries": "grade_class_entries", "max_total_bytes": "grade_archive_bytes", "max_ratio": "grade_zip_ratio"}
"""Each field of ``GradeLimits`` → its row of the central table."""


@dataclass(frozen=True)
class GradeLimits:
    """The rows' defaults; ``from_table()`` for the values in force (a count, or ``math.inf`` where
    its ``TOYM_MAX_GRADE_…`` variable lifts it to no limit)."""

    max_bytes: float = TABLE[ROWS["max_bytes"]].default  # one submitted trace file
    max_instructions: float = TABLE[ROWS["max_instructions"]].default  # lines of a trace (at most one instruction each)
    seconds: float = TABLE[ROWS["seconds"]].default  # wall time to grade one submission (every trial)
    max_files: float = TABLE[ROWS["max_files"]].default  # files of one student's submission
    max_entries: float = TABLE[ROWS["max_entries"]].default  # entries of a whole zip, or of a folder's top level
    max_total_bytes: float = TABLE[ROWS["max_total_bytes"]].default  # uncompressed bytes read from a zip, all members
    max_ratio: float = TABLE[ROWS["max_ratio"]].default  # a zip member that inflates more than this is a bomb

    @classmethod
    def from_table(cls, **overrides) -> GradeLimits:
        """The limits in force: each row's ``TOYM_MAX_GRADE_…`` value, else its default; then ``overrides``."""
        return cls(**{**{f.name: TABLE[ROWS[f.name]].value() for f in fields(cls)}, **overrides})


DEFAULT_LIMITS = GradeLimits()


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # toymachine/


class TimeLimitExceeded(BaseException):
    """Raised by the timer wherever the grader is: a BaseException (like KeyboardInterrupt), so
    that no ``except Exception`` on the way turns it into another error."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise ``TimeLimitExceeded`` in the block after ``seconds`` of wall time (a SIGALRM
    timer: only in a process's main thread, elsewhere the block runs unbounded)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not seconds or seconds == math.inf or not usable:  # no limit, or no timer here
        yield
        return

    def expire(signum, frame):
        # only where toym's own code (or a block it generated) was interrupted: raised inside the
        # interpreter's own work — a finalizer, the hook that formats an unraisable exception — it
        # would be swallowed, or escape from there; the timer fires again 50 ms later
        where = frame.f_code.co_filename if frame is not None else ""
        if where.startswith(_PACKAGE) or where.startswith("<toym"):
            raise TimeLimitExceeded(f"time limit of {seconds:g} s exceeded")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
