"""What one request to ``toym serve`` may cost: declared once, read by the app and the worker.

Each limit names what it bounds, in its unit, and the message that refuses it. The server is
local (127.0.0.1) by default, but a browser tab can paste anything: a 10-million-line trace
must get a clear error in well under a second, never a hung server. The limits are rows
``serve_*`` of the project-wide table (``toymachine/limits.py``: default, the ``TOYM_MAX_SERVE_…``
variable that lifts it, its line on the reference page); ``Limits`` is their typed view, and
``Limits.from_table()`` reads the values in force.

The run-time deadline is enforced by running every request in a worker *process* that is
killed and replaced when it overruns (a thread cannot be stopped), so the deadline holds
whatever the simulator is doing.
"""

from __future__ import annotations

__all__ = ["Limits", "LIMITS"]

from dataclasses import dataclass, fields

from ..limits import LIMITS as TABLE


def _row(field: str):
    return TABLE["serve_" + field].default


@dataclass(frozen=True)
class Limits:
    """Each field but ``workers`` is the table's row ``serve_<field>`` (these are its defaults)."""

    body_bytes: int = _row("body_bytes")
    trace_lines: int = _row("trace_lines")
    data_bytes: int = _row("data_bytes")
    machine_bytes: int = _row("machine_bytes")
    run_seconds: float = _row("run_seconds")
    sweep_points: int = _row("sweep_points")
    workers: int = 2  # worker processes (the requests they serve run one at a time each): a size, not a limit
    worker_memory_bytes: int = _row("worker_memory_bytes")
    queue_seconds: float = _row("queue_seconds")
    client_requests: int = _row("client_requests")

    @classmethod
    def from_table(cls, **overrides) -> Limits:
        """The limits in force: each row's value (its ``TOYM_MAX_SERVE_…`` variable, else its default)."""
        values = {f.name: TABLE["serve_" + f.name].value() for f in fields(cls) if "serve_" + f.name in TABLE}
        return cls(**{**values, **overrides})

    def refuse_body(self, size: int) -> str:
        return (f"request body of {size:,} bytes is over the playground's limit of {self.body_bytes:,} bytes; "
                "run big traces with toym run FILE")

    def refuse_lines(self, lines: int) -> str:
        return (f"trace of {lines:,} lines is over the playground's limit of {self.trace_lines:,} lines; "
                "run it with toym run FILE")

    def refuse_time(self) -> str:
        return (f"the run took longer than the playground's limit of {self.run_seconds:g} s and was stopped; "
                "run it with toym run FILE")


LIMITS = Limits()
"""The defaults; ``create_app`` and the worker pool use ``Limits.from_table()`` unless given limits."""
