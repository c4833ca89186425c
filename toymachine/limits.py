"""What each input channel may cost, declared once: every loader, generator, search and front
(the CLI, the web server, the grader) consults this table, so a refusal reads the same everywhere.

A ``Limit`` has a default no real use meets, the ``TOYM_…`` environment variable that lifts it
(and, where there is one, the command-line flag), and the check that refuses an input *up front*,
from a closed-form estimate, with the estimate and the way to lift it in the message::

    error: the trace's array 'junk' would hold 100,000,000,000,000 elements; the limit is 16,777,216
      = hint: set TOYM_MAX_ARRAY_ELEMENTS=100000000000000 if you mean it

``render_markdown()`` writes the reference table of ``docs/reference/limits.md``.
"""

from __future__ import annotations

__all__ = ["Limit", "LimitError", "LIMITS", "limit", "check", "render_markdown", "excerpt", "EXCERPT_CHARS"]

import math
import os
from dataclasses import dataclass

from .errors import EXCERPT_CHARS, Location, Namer, Opt, ToyMachineError, Words, excerpt


class LimitError(ToyMachineError):
    """An input would cost more than its channel's limit (refused before the work starts)."""

    kind = "limit"


@dataclass(frozen=True)
class Limit:
    """One channel's bound: ``name`` (the key), ``default``, ``unit`` (what is counted), ``what``
    (one line for the reference page), ``key`` (the parameter that lifts it, if any), ``front``
    (where it applies: every front, or only ``toym serve``'s requests or ``toym grade``'s submissions)."""

    name: str
    default: float
    unit: str
    what: str
    key: str | None = None
    integer: bool = True
    front: str = "all"

    @property
    def env(self) -> str:
        return "TOYM_MAX_" + self.name.upper()

    def value(self) -> float:
        """The limit in force: ``TOYM_MAX_<NAME>`` when set to a positive number, else the default."""
        raw = os.environ.get(self.env)
        if raw is None or not raw.strip():
            return self.default
        try:
            got = float(raw.strip().replace("_", ""))
        except ValueError:
            raise LimitError(f"{self.env}={raw[:40]!r} is not a number", hint=f"e.g. {self.env}={_fmt(self.default)}") from None
        if not got > 0 or math.isnan(got):
            raise LimitError(f"{self.env} must be positive, got {raw[:40]!r}", hint=f"e.g. {self.env}={_fmt(self.default)}")
        return int(got) if self.integer and got != math.inf else got

    def lift_hint(self, needed: float | None = None) -> Words:
        amount = _fmt(needed) if needed is not None and needed != math.inf else "N"
        lift = f"set {self.env}={amount} if you mean it"
        return (Opt(self.key, amount), " or " + lift) if self.key else lift

    def check(self, amount: float, what: Words, *, loc: Location | None = None, limit: float | None = None) -> None:
        """Refuse ``amount`` (of ``self.unit``) when it is over the limit (``limit``: a value a flag gave)."""
        cap = self.value() if limit is None else limit
        if amount > cap:
            raise LimitError((*((what,) if isinstance(what, str) else what),
                              f" would need {_fmt(amount)} {self.unit}; the limit is {_fmt(cap)}"),
                             loc=loc, hint=self.lift_hint(amount))


def _fmt(x: float) -> str:
    if isinstance(x, float) and not x.is_integer():
        return f"{x:g}"
    if x >= 10 ** 15:
        return f"{x:.3g}".replace("e+", "e")
    return f"{int(x):,}".replace(",", "_") if x >= 10 ** 4 else str(int(x))


_SERVE, _GRADE = "`toym serve` (each request)", "the grader (`toym grade`, Gradescope; each submission)"
FRONTS = {"all": "every front", _SERVE: _SERVE, _GRADE: _GRADE}

LIMITS: dict[str, Limit] = {lim.name: lim for lim in [
    Limit("file_bytes", 64 << 20, "bytes", "a machine, problem or YAML data file (read at most this much: "
          "/dev/zero is refused too); traces stream and use trace_bytes"),
    Limit("trace_bytes", 4 << 30, "bytes", "a trace file (streamed in chunks of about a million characters)"),
    Limit("npy_bytes", 1 << 30, "bytes", "the array data an .npy/.npz header declares (checked before allocating)"),
    Limit("array_elements", 1 << 24, "elements", "one array's elements: an implied shape grown by the trace's indices, "
          "a .array or .data shape, a data file's array, a tile (16 Mi float64 = 128 MiB)"),
    Limit("arrays", 4096, "arrays", "distinct array names in one run (each costs about 32 KiB of bookkeeping)"),
    Limit("yaml_nodes", 100_000, "nodes", "YAML nodes of one file, aliases expanded (an alias bomb is refused, never built)"),
    Limit("yaml_depth", 64, "levels", "nesting of YAML collections, of a .data literal"),
    Limit("literal_digits", 400, "digits", "digits of one number in a trace, a .data literal or YAML"),
    Limit("expr_chars", 10_000, "characters", "one expression of a problem file"),
    Limit("expr_depth", 100, "levels", "nesting of an expression (parentheses, calls, operators)"),
    Limit("trials", 1000, "trials", "random input draws of toym check (the problem's trials: or --trials)"),
    Limit("sweep_points", 10_000, "points", "points of one toym sweep (the product of its ranges' lengths)"),
    Limit("sweep_work", 10 ** 8, "instructions", "simulated instructions of one toym sweep (the sum of its points' "
          "closed-form counts, added up before any point runs) or of toym memory --check"),
    Limit("search_size", 10 ** 5, "candidates", "a toym optimize search's size, estimated before it starts: matmul's "
          "products m·n·k (its state has a bit per operand and product), attention-tile's (Br, Bc) pairs"),
    Limit("size", 1 << 26, "elements", "what an experiment builds before it simulates: toym systolic's matrices and "
          "its ticks × cells, toym numerics' inputs (batch · heads · n · d)"),
    Limit("instructions", 10 ** 9, "instructions", "a generated program, counted by its closed form before it is "
          "built (gen softmax streams its text as it generates)", key="max_instructions"),
    Limit("expr_elements", 1_000_000, "elements", "one input of a problem, or any value its expressions compute "
          "(every trial draws and evaluates them: tighter than array_elements)"),
    Limit("expr_work", 10 ** 9, "multiply-adds", "one @ of a problem's expression"),
    # toym serve: what one request may cost (serve.limits.Limits is the typed view of these rows)
    Limit("serve_body_bytes", 2_000_000, "bytes", "a request body (JSON); a 200-line trace is about 5 KB", front=_SERVE),
    Limit("serve_trace_lines", 20_000, "lines", "a trace sent to the playground (a 5,000-step viewer stays "
          "responsive)", front=_SERVE),
    Limit("serve_data_bytes", 200_000, "bytes", "the data panel's YAML", front=_SERVE),
    Limit("serve_machine_bytes", 20_000, "bytes", "a machine YAML typed into the machine panel", front=_SERVE),
    Limit("serve_run_seconds", 5.0, "seconds", "wall time of one request in its worker process, which is then killed "
          "and replaced", integer=False, front=_SERVE),
    Limit("serve_sweep_points", 64, "points", "points of one /api/sweep", front=_SERVE),
    Limit("serve_worker_memory_bytes", 3 << 30, "bytes", "a worker process's address space (RLIMIT_AS)", front=_SERVE),
    Limit("serve_queue_seconds", 10.0, "seconds", "how long a request waits for a worker before it is answered 503 "
          "with Retry-After", integer=False, front=_SERVE),
    Limit("serve_client_requests", 4, "requests", "requests one client (address) may have waiting or running; one "
          "more is answered 429 with Retry-After", front=_SERVE),
    # toym grade: what one submission may cost (check.limits.GradeLimits is the typed view of these rows)
    Limit("grade_bytes", 1_000_000, "bytes", "one submitted trace file", front=_GRADE),
    Limit("grade_instructions", 200_000, "lines", "lines of one submitted trace (each at most one instruction)",
          key="max_instructions", front=_GRADE),
    Limit("grade_seconds", 10.0, "seconds", "wall time to grade one submission, every trial", key="time_limit",
          integer=False, front=_GRADE),
    Limit("grade_files", 10_000, "files", "files in one student's submission (a folder, or a folder in a zip): more "
          "is that student's failing row", front=_GRADE),
    Limit("grade_class_entries", 100_000, "entries", "entries of a whole submissions zip (counted from its "
          "end-of-central-directory record before the directory is read) or of a submissions folder's top level",
          front=_GRADE),
    Limit("grade_archive_bytes", 200_000_000, "bytes", "uncompressed bytes read from a submissions zip, all members",
          front=_GRADE),
    Limit("grade_zip_ratio", 200, "ratio", "how much one zip member may inflate (more is a zip bomb: a failing row)",
          front=_GRADE),
]}


def limit(name: str) -> Limit:
    return LIMITS[name]


def check(name: str, amount: float, what: Words, *, loc: Location | None = None) -> None:
    """``LIMITS[name].check(amount, what)``: refuse ``amount`` up front when over the limit."""
    LIMITS[name].check(amount, what, loc=loc)


def render_markdown(name: Namer) -> str:
    """The reference table of every limit (``docs/reference/limits.md`` holds it verbatim, the
    parameter that lifts a limit said by ``name``: the CLI's ``flag_words``)."""
    rows = ["| limit | default | unit | environment variable | flag | applies to | what it bounds |",
            "| --- | ---: | --- | --- | --- | --- | --- |"]
    for lim in LIMITS.values():
        rows.append(f"| `{lim.name}` | {_fmt(lim.default)} | {lim.unit} | `{lim.env}` | "
                    f"{f'`{name(lim.key, None)}`' if lim.key else '—'} | {FRONTS[lim.front]} | {lim.what} |")
    return "\n".join(rows) + "\n"
