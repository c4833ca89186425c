"""Rewrite every ``<!-- toym-output -->`` (and ``toym-error``) block of the docs pages and the README from a real run
of the command shown above it (the last ``toym`` line of the bash fence directly above the marker).

    python docs/refresh_outputs.py              # every page (English and translations) and README.md
    python docs/refresh_outputs.py docs/seeds.md

Each page runs top to bottom in a fresh folder with copies of programs/ and examples/, exactly as
tests/test_docs.py runs it, so a refreshed page passes the test. Review the diff before committing.
"""

from __future__ import annotations

import sys
from pathlib import Path

# this tree's toymachine (not an installed copy elsewhere), and docs/ for docgen
sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]

from docgen.pages import ROOT, normalise, pages, run_page, toym_in_process  # noqa: E402


def refresh(path: Path, toym) -> int:
    text = path.read_text(encoding="utf-8")
    changed = 0
    edits = []
    for step, code, out, err in run_page(path, toym):
        if step.kind in ("output", "error") and code != step.exit_status:
            raise SystemExit(f"{path}: toym {step.text} was to exit {step.exit_status}, exited {code}:\n{err}")
        if step.kind == "error":
            out = err
        elif step.kind == "command" and code != 0:
            raise SystemExit(f"{path}: toym {step.text} exited {code}:\n{err}")
        if step.kind in ("output", "error"):
            new = normalise(out) + "\n"
            if new != step.expected:
                edits.append((step.span, new))
    for (start, end), new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
        changed += 1
    if changed:
        path.write_text(text, encoding="utf-8")
    return changed


def main(argv: list[str]) -> None:
    toym = toym_in_process()
    targets = [Path(a).resolve() for a in argv] or [ROOT / "README.md", *pages()]
    for path in targets:
        n = refresh(path, toym)
        if n:
            print(f"{path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}: {n} block(s) rewritten")


if __name__ == "__main__":
    main(sys.argv[1:])
