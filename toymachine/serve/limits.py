"""What one request to ``toym serve`` may cost: declared once, read by the app and the worker.

Each limit names what it bounds, in its unit, and the message that refuses it. The server is
local (127.0.0.1) by default, but a browser tab can paste anything: a 10-million-line trace
must get a clear error in well under a second, never a hung server. (The project-wide
``toymachine/limits.py`` will take these over; the names say what they bound.)

The run-time deadline is enforced by running every request in a worker *process* that is
killed and replaced when it overruns (a thread cannot be stopped), so the deadline holds
whatever the simulator is doing.
"""

from __future__ import annotations

__all__ = ["Limits", "LIMITS"]

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    body_bytes: int = 2_000_000  # a request body (JSON); a 200-line trace is ~5 KB
    trace_lines: int = 20_000  # lines of a trace (a 5,000-step step viewer stays responsive)
    data_bytes: int = 200_000  # the data panel's YAML
    machine_bytes: int = 20_000  # a machine YAML typed into the machine panel
    run_seconds: float = 5.0  # wall time of one request in the worker, then it is killed
    sweep_points: int = 64  # points of one /api/sweep
    workers: int = 2  # worker processes (the requests they serve run one at a time each)
    worker_memory_bytes: int = 3 << 30  # a worker's address space (numpy's arrays and all)

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
