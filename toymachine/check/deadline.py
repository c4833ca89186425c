"""A due date and a late policy, from a problem or an assignment file::

    due: 2026-12-01T23:59:00-05:00   # ISO 8601; without a zone, UTC
    late:
      grace: 15m                     # late by at most this: no penalty (s, m, h, d)
      per_day: 10                    # percent of the score per started day late (or per_hour)
      cutoff: 3d                     # later than this after the due date: the whole score

``penalty(deadline, submitted, flagged)`` gives the percent of the score a hand-in loses: late by
``t`` past the grace period, ``ceil(t / period) × rate`` percent (at most 100), 100 past the
cut-off. A time without a zone (Blackboard's, Brightspace's) is read in the due date's zone. A
hand-in the LMS flagged late (Canvas's ``_LATE_``) without a time loses one period's rate, and
the note says so (``--times FILE`` gives the times).
"""

from __future__ import annotations

__all__ = ["Deadline", "parse_deadline", "penalty", "parse_time", "Lateness"]

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from .yamlsrc import Source, value_of

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|min|hours?|days?)?\s*$")
_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400,
          "days": 86400}
LATE_KEYS = ("grace", "per_day", "per_hour", "cutoff")


@dataclass(frozen=True)
class Deadline:
    due: datetime  # aware
    grace: timedelta = timedelta(0)
    period: timedelta | None = None  # per_day → 1 day, per_hour → 1 hour; None: no penalty before the cut-off
    rate: float = 0.0  # percent per period
    cutoff: timedelta | None = None

    def describe(self) -> str:
        parts = [f"due {self.due.isoformat()}"]
        if self.grace:
            parts.append(f"grace {_span(self.grace)}")
        if self.period is not None:
            parts.append(f"{self.rate:g}% per {'day' if self.period.days else 'hour'} late")
        if self.cutoff is not None:
            parts.append(f"not accepted {_span(self.cutoff)} after the due date")
        return ", ".join(parts)


@dataclass(frozen=True)
class Lateness:
    seconds: float | None  # how late (None: unknown; negative: early)
    percent: float  # of the score lost
    note: str = ""


def _span(d: timedelta) -> str:
    s = d.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size and s % size == 0:
            return f"{int(s // size)}{unit}"
    return f"{int(s)}s"


def parse_time(text: str, zone: timezone | None = None) -> datetime | None:
    """An ISO 8601 time (``Z`` allowed); a time without a zone is read in ``zone`` (UTC by default)."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=zone or timezone.utc)


def _duration(src: Source, node, key: str) -> timedelta:
    value = value_of(node)
    m = _DURATION.match(str(value)) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
    if not m:
        raise src.error(f"'{key}' must be a duration such as 15m, 2h or 3d, got {value!r}", node,
                        hint="a number and a unit: s, m, h or d")
    return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2) or "s"])


def parse_deadline(src: Source, due_node, late_node) -> Deadline | None:
    """The ``due:`` and ``late:`` keys of a problem or assignment file (None without ``due``)."""
    if due_node is None:
        if late_node is not None:
            raise src.error("'late' needs a 'due' date", late_node, hint="add due: 2026-12-01T23:59:00+00:00")
        return None
    value = value_of(due_node)
    due = parse_time(str(value)) if isinstance(value, str) else None
    if due is None:
        raise src.error(f"'due' must be an ISO 8601 time, got {value!r}", due_node,
                        hint="e.g. due: 2026-12-01T23:59:00-05:00 (without a zone: UTC)")
    if late_node is None:
        return Deadline(due)
    import yaml

    if not isinstance(late_node, yaml.MappingNode):
        raise src.error("'late' must be a mapping: grace, per_day or per_hour, cutoff", late_node)
    opts = {}
    for k, v in late_node.value:
        if k.value not in LATE_KEYS:
            raise src.error(f"unknown key '{k.value}' in 'late'", k, hint=f"keys are: {', '.join(LATE_KEYS)}")
        if k.value in opts:
            raise src.error(f"'{k.value}' is given twice", k)
        opts[k.value] = v
    if "per_day" in opts and "per_hour" in opts:
        raise src.error("'late' takes per_day or per_hour, not both", opts["per_hour"])
    period, rate = None, 0.0
    for key, size in (("per_day", timedelta(days=1)), ("per_hour", timedelta(hours=1))):
        if key in opts:
            rate_value = value_of(opts[key])
            if isinstance(rate_value, bool) or not isinstance(rate_value, (int, float)) or not 0 <= rate_value <= 100:
                raise src.error(f"'{key}' must be a percent from 0 to 100, got {rate_value!r}", opts[key])
            period, rate = size, float(rate_value)
    return Deadline(due, _duration(src, opts["grace"], "grace") if "grace" in opts else timedelta(0), period, rate,
                    _duration(src, opts["cutoff"], "cutoff") if "cutoff" in opts else None)


def penalty(deadline: Deadline | None, submitted: datetime | None, flagged: bool = False) -> Lateness:
    """How late a hand-in is and the percent of its score it loses."""
    if deadline is None:
        return Lateness(None, 0.0, "late (as the LMS says)" if flagged else "")
    if submitted is None:
        if not flagged:
            return Lateness(None, 0.0)
        pct = min(100.0, deadline.rate) if deadline.period is not None else 0.0
        return Lateness(None, pct, "late as the LMS says, at an unknown time: one period's penalty (--times gives "
                                   "the time)")
    if submitted.tzinfo is None:
        submitted = submitted.replace(tzinfo=deadline.due.tzinfo)
    late = (submitted - deadline.due).total_seconds()
    if late <= deadline.grace.total_seconds():
        return Lateness(late, 0.0)
    if deadline.cutoff is not None and late > deadline.cutoff.total_seconds():
        return Lateness(late, 100.0, f"after the cut-off ({_span(deadline.cutoff)} after the due date)")
    if deadline.period is None:
        return Lateness(late, 0.0, "late")
    periods = math.ceil(late / deadline.period.total_seconds())
    unit = "day" if deadline.period.days else "hour"
    pct = min(100.0, periods * deadline.rate)
    return Lateness(late, pct, f"late by {periods} started {unit}(s): {pct:g}%")
