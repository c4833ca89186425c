"""The keys a problem file may hold, declared once: the loader (``check.problem``) refuses any other,
the grader and the handout word the budgets from here, and the generated reference page documents
each key from ``KEY_DOCS`` and the budget tables."""

from __future__ import annotations

__all__ = ["BUDGETS", "ARRAY_BUDGETS", "KEYS", "KEY_DOCS"]

# budget key → (what it limits, unit)
BUDGETS: dict[str, str] = {
    "max_cycles": "cycles",
    "max_loads": "LOAD instructions",
    "max_stores": "STORE instructions",
    "max_registers": "registers used",
    "max_dram_reads": "DRAM words read",
    "max_dram_writes": "DRAM words written",
    "max_sram": "SRAM peak (words)",
}
ARRAY_BUDGETS: dict[str, str] = {"max_reads": "words read from", "max_writes": "words written to"}
KEYS = ("title", "description", "statement", "inputs", "expect", "registers", "machine", "tolerance", "trials",
        "seed", "reference", "submission", "allowed_ops", "variants", "id", "due", "late") + tuple(BUDGETS) \
    + tuple(ARRAY_BUDGETS)
# what the course keys mean (the generated reference reads this)
KEY_DOCS = {"statement": "the handout's text, Markdown (`toym problem show`); default: description",
            "submission": "the file each student hands in, in a folder per student (`toym grade`, Gradescope)",
            "allowed_ops": "the only instructions the trace may use: a list, or `{ops: [...], points, hidden}`",
            "variants": "parameter sets, one per variant, used as `{name}` anywhere in the file; `--student ID` picks one",
            "id": "the problem's own id: with the student's, it picks the variant (default: the title as written); "
                  "renaming the file changes no variant",
            "due": "the due date, ISO 8601 (without a zone: UTC); `toym grade` computes the late penalty",
            "late": "the late policy: `{grace: 15m, per_day: 10, cutoff: 3d}` (or `per_hour`), percent of the score"}
