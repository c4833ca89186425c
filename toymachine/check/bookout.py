"""The lecturer's outputs of a ``Gradebook``: ``gradebook.csv`` (every check, hidden ones
included), ``summary.md`` (score histogram, the most-failed checks, the cost of the runs)
and ``summary.png`` (where matplotlib is installed).

The CSV is safe to open in a spreadsheet: a text cell that starts with ``= + - @``, a tab or a
carriage return gets a leading ``'`` so that no cell is read as a formula (OWASP's CSV
injection advice); numbers are written as numbers.
"""

from __future__ import annotations

__all__ = ["gradebook_csv", "summary_markdown", "summary_png", "csv_cell", "status_of"]

import csv
import io
import math
import statistics

from .feedback import md_escape
from .gradebook import Entry, Gradebook

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value) -> str | int | float:
    """One cell: numbers as they are, text neutralised when a spreadsheet would run it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float):
            if not math.isfinite(value):
                return "inf" if value > 0 else ("nan" if math.isnan(value) else "'-inf")
            return int(value) if value.is_integer() else float(f"{value:.10g}")
        return value
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def status_of(entry: Entry) -> str:
    if entry.reason:
        return "not graded"
    return "passed" if entry.report.passed else "failed"


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def gradebook_csv(book: Gradebook) -> str:
    """One row per student: id, variant, score, max, status, reason, each check's points and figure."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = ["student", "variant", "parameters", "score", "max_score", "status", "reason"]
    for name in book.columns:
        header += [f"{name}: points", f"{name}: figure"]
    w.writerow([csv_cell(h) for h in header])
    for e in book.entries:
        reason = e.reason or next((_first_line(c.message) for c in e.report.checks if c.kind == "run"), "")
        row = [e.student, "" if e.variant is None else e.variant + 1,
               book.parameters[e.variant] if e.variant is not None and book.parameters else "",
               e.report.score, e.report.max_score,
               status_of(e), reason]
        for c in book.cells(e):
            row += [c.points if c else 0, c.figure if c else None]
        w.writerow([csv_cell(v) for v in row])
    return buf.getvalue()


def _num(x) -> str:
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def _histogram(book: Gradebook) -> list[tuple[str, int]]:
    scores = [e.report.score for e in book.entries]
    top = book.max_score or 1
    if top <= 20 and float(top).is_integer() and all(float(s).is_integer() for s in scores):
        return [(str(k), sum(1 for s in scores if s == k)) for k in range(int(top) + 1)]
    bins = []
    for k in range(10):
        lo, hi = top * k / 10, top * (k + 1) / 10
        n = sum(1 for s in scores if lo <= s < hi or (k == 9 and s == hi))
        bins.append((f"{_num(lo)}–{_num(hi)}", n))
    return bins


def _spread(values: list[float]) -> tuple[str, ...]:
    if not values:
        return ("–",) * 5
    qs = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
    return tuple(_num(v) for v in (min(values), qs[0], qs[1], qs[2], max(values)))


def summary_markdown(book: Gradebook, plot: str | None = None) -> str:
    """The class at a glance (``plot``: the file name of the summary image, linked when given)."""
    entries = book.entries
    graded = [e for e in entries if not e.reason]
    scores = [e.report.score for e in entries]
    out = [f"# Gradebook: {md_escape(book.title)}", "",
           f"{len(entries)} submission(s) against `{book.problem_file}`: {sum(e.report.passed for e in entries)} "
           f"passed every check, {sum(not e.report.passed and not e.reason for e in entries)} failed one or more, "
           f"{len(entries) - len(graded)} not graded."]
    if book.variant_count:
        counts = [sum(1 for e in entries if e.variant == k) for k in range(book.variant_count)]
        out.append(f"Variants: {book.variant_count} ({', '.join(f'{k + 1}: {n}' for k, n in enumerate(counts))}).")
    if scores:
        out.append(f"Score out of {_num(book.max_score)}: mean {_num(statistics.fmean(scores))}, "
                   f"median {_num(statistics.median(scores))}.")
    out += ["", "## Scores", "", "| score | students | |", "|---:|---:|---|"]
    for label, n in _histogram(book):
        out.append(f"| {label} | {n} | {'█' * n} |")
    out += ["", "## Most-failed checks", "", "| check | failed | of | hidden |", "|---|---:|---:|---|"]
    fails = []
    for k, name in enumerate(book.columns):
        tried = [book.cells(e)[k] for e in entries]
        tried = [c for c in tried if c is not None]
        fails.append((sum(1 for c in tried if not c.passed), name, len(tried)))
    runs = [c for e in entries for c in e.report.checks if c.kind == "run"]
    fails.append((len(runs), "run (the trace ran)", len(entries)))
    fails = [f for f in fails if f[0]]
    for n_failed, name, n_tried in sorted(fails, key=lambda f: (-f[0], f[1])):
        out.append(f"| {md_escape(name)} | {n_failed} | {n_tried} | {'yes' if name in book.hidden else ''} |")
    if not fails:
        out.append("| (none) | 0 | | |")
    out += ["", "## Cost of the runs", "", "| figure | min | 25% | median | 75% | max |", "|---|---:|---:|---:|---:|---:|"]
    for key, label in (("cycles", "cycles"), ("dram_reads", "DRAM reads"), ("dram_writes", "DRAM writes")):
        values = [e.report.metrics[key] for e in entries if key in e.report.metrics]
        out.append(f"| {label} ({len(values)} runs) | " + " | ".join(_spread(values)) + " |")
    missing = [e for e in entries if e.reason]
    if missing:
        out += ["", "## Not graded", "", "| student | reason |", "|---|---|"]
        out += [f"| {md_escape(e.student)} | {md_escape(_first_line(e.reason))} |" for e in missing]
    if plot:
        out += ["", f"![scores and cycles]({plot})"]
    return "\n".join(out) + "\n"


def summary_png(book: Gradebook) -> bytes | None:
    """Score and cycle histograms as a PNG (None without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure
    except ImportError:
        return None
    fig = Figure(figsize=(9, 3.2))
    ax1, ax2 = fig.subplots(1, 2)
    labels, counts = zip(*_histogram(book)) if book.entries else ((), ())
    ax1.bar(range(len(counts)), counts, color="#4c72b0")
    ax1.set_xticks(range(len(labels)), labels, rotation=45 if len(labels) > 12 else 0, fontsize=7)
    ax1.set_xlabel(f"score (of {_num(book.max_score)})")
    ax1.set_ylabel("students")
    cycles = [e.report.metrics["cycles"] for e in book.entries if "cycles" in e.report.metrics]
    ax2.hist(cycles or [0], bins=min(20, max(1, len(set(cycles)))), color="#dd8452")
    ax2.set_xlabel("cycles (runs that ran)")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()
