"""A mutation-fuzzing campaign over the bundled programs, with a fixed budget.

Each mutant is a bundled program (``programs/*.asm``) with 1–4 mutations — a byte flipped, a
token deleted, duplicated or swapped, a number made long (5,000 digits, 10³⁰, a Unicode digit),
a ``.data`` literal nested deep, an address made far, a line repeated many times — run by ``toym
run`` (a random output format) in one worker process under a 1 GiB address-space cap and a time
budget per mutant (10 s and 5 µs a character of the mutant; ``tests/fuzz_corpus/worker.py``). It counts the outcomes the issue asks about:

* tracebacks — an exit 3 (internal error) or any ``Traceback (most recent call last)``;
* hangs — a mutant past its time budget;
* memory crashes — the capped process killed (or an "out of memory" internal error);

and writes the first few of each kind (the mutant's text) to ``--out``. Deterministic: the same
``--seed`` and ``--mutants`` give the same mutants.

    PYTHONPATH=$PWD python benchmarks/fuzz_campaign.py --mutants 1500 --seed 0 --out /tmp/fuzz
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fuzz_corpus.runner import TRACEBACK, Worker  # noqa: E402

FORMATS = ("table", "json", "csv", "markdown", "latex", "html", "html-fragment")
STRANGE_NUMBERS = ("9" * 5000, "1" + "0" * 30, "99999999999999", "²", "\u0663", "-1", "1e400", "nan", "0x1f",
                   "18446744073709551616", "16777215", "4294967296")
HOSTILE = ("<!--<script>", "</script>", "\\input{x}", "\n", "\r", "\t", "\x00", "=1+1", "\u2028", "`", "|", "[", "]",
           ",", ";", "R", "T", ".T", ":", "ACC")


def mutate(text: str, rng: random.Random) -> str:
    """One mutation of a program's text."""
    how = rng.randrange(8)
    if how == 0 and text:  # a byte flipped
        raw = bytearray(text.encode("utf-8"))
        i = rng.randrange(len(raw))
        raw[i] ^= 1 << rng.randrange(8)
        return raw.decode("utf-8", "replace")
    tokens = re.split(r"(\s+|[\[\],;])", text)
    if how == 1 and tokens:  # a token deleted
        del tokens[rng.randrange(len(tokens))]
        return "".join(tokens)
    if how == 2 and tokens:  # a token duplicated, or two swapped
        i, j = rng.randrange(len(tokens)), rng.randrange(len(tokens))
        if rng.random() < 0.5:
            tokens.insert(i, tokens[j])
        else:
            tokens[i], tokens[j] = tokens[j], tokens[i]
        return "".join(tokens)
    if how == 3:  # a number made long or strange
        numbers = list(re.finditer(r"\d+", text))
        if numbers:
            m = rng.choice(numbers)
            return text[:m.start()] + rng.choice(STRANGE_NUMBERS) + text[m.end():]
    if how == 4:  # a .data literal nested deep
        depth = rng.choice((63, 64, 65, 100, 1000))
        return f".data deep = {'[' * depth}1{']' * depth}\n" + text
    if how == 5:  # a far address
        lines = text.splitlines()
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i] + [f"STORE R0, far[{rng.choice(STRANGE_NUMBERS)}]"] + lines[i:]) + "\n"
    if how == 6:  # a line repeated many times
        lines = text.splitlines() or [""]
        line = rng.choice(lines)
        return text + (line + "\n") * rng.choice((100, 10_000, 100_000))
    at = rng.randrange(len(text) + 1)  # a hostile fragment inserted
    return text[:at] + rng.choice(HOSTILE) + text[at:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=10.0, help="time budget per mutant (plus 5 µs a character)")
    ap.add_argument("--out", default=None, help="folder for the failing mutants (a few of each kind)")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    programs = sorted((ROOT / "programs").glob("*.asm"))
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    counts: Counter = Counter()
    worker = Worker()
    t0 = time.perf_counter()
    try:
        for _ in range(args.mutants):
            program = rng.choice(programs)
            text = program.read_text(encoding="utf-8")
            for _ in range(rng.randint(1, 4)):
                text = mutate(text, rng)
            fmt = rng.choice(FORMATS)
            machine = "toysram-paper" if program.name.startswith("fa") else rng.choice(("toy", "toy6"))
            budget = args.seconds + len(text) / 200_000  # and 5 µs a character: a long trace may take its time
            result = worker.run(["run", "m.asm", "-m", machine, "-f", fmt], {"m.asm": text}, seconds=budget)
            both = result.stdout + result.stderr
            if result.timed_out:
                kind = "hang"
            elif result.rc == -11 or "out of memory" in result.stderr:
                kind = "memory crash"
            elif result.rc == 3 or TRACEBACK in both:
                kind = "traceback"
            elif result.rc in (0, 1, 2):
                kind = f"exit {result.rc}"
            else:
                kind = f"exit {result.rc}"
            counts[kind] += 1
            if out and not kind.startswith("exit") and counts[kind] <= 5:
                stem = f"{kind.replace(' ', '_')}_{counts[kind]}"
                (out / f"{stem}.asm").write_text(text, encoding="utf-8", errors="replace")
                (out / f"{stem}.txt").write_text(f"{program.name} -m {machine} -f {fmt}\n{result.stderr[-3000:]}",
                                                 encoding="utf-8")
    finally:
        worker.close()
    seconds = time.perf_counter() - t0
    bad = counts["traceback"] + counts["hang"] + counts["memory crash"]
    print(f"fuzz campaign: {args.mutants} mutants of {len(programs)} programs (seed {args.seed}) in {seconds:.0f} s")
    for kind in ("exit 0", "exit 1", "exit 2", "traceback", "hang", "memory crash"):
        print(f"  {kind:13s} {counts.get(kind, 0)}")
    for kind, n in sorted(counts.items()):
        if kind not in ("exit 0", "exit 1", "exit 2", "traceback", "hang", "memory crash"):
            print(f"  {kind:13s} {n}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
