"""One vocabulary of flags: the same name for the same thing on every command.

``VOCABULARY`` is the table (``toym flags``; docs/reference/vocabulary.md holds its ``-f markdown``):
each flag's spelling, short form (and, in ``short_on``, the commands that have it when not every
one does) and meaning. ``tests/test_vocabulary.py`` walks every command of the typer app — new
ones included, as they land — both ways: it fails on an option this table does not know, a short
form missing where the table lists it or present where it does not, a short form used for two
things, a command that prints a format without ``-o``, or a command that costs or sizes without
``--machine``. The sweep's generator parameters (``--n 2,4,8``, ``-r 3..6``) are checked against it
too. ``cli.usage`` names look-alikes from it (``-m`` is ``--machine``; ``--m`` the rows of A). Old
spellings live on as hidden aliases for one release (``HIDDEN_ALIASES``).
"""

from __future__ import annotations

__all__ = ["Flag", "VOCABULARY", "HIDDEN_ALIASES", "MACHINE_COMMANDS", "ORDER_SYNONYMS", "flag_of", "short_flag",
           "command_options", "flag_commands", "vocabulary_report", "FLAG_OF_KEY", "flag_words", "key_of"]

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Flag:
    name: str  # the long form; a boolean pair as "--causal/--no-causal"
    short: str | None
    meaning: str
    short_on: tuple[str, ...] = ()  # the commands whose option has the short form (empty: every one)

    def has_short_on(self, path: str) -> bool:
        """Whether ``toym PATH`` takes the short form (``sweep GEN``: the sweep's own parameters)."""
        return self.short is not None and (not self.short_on or path in self.short_on)


VOCABULARY: tuple[Flag, ...] = (
    Flag("--machine", "-m", "machine preset (toy, toy3, toy6, toysram, a100, h100 …) or YAML file; on every command "
                            "that costs (cycles, time) or sizes (registers, SRAM, blocks)"),
    Flag("--format", "-f", "output format: table, markdown, csv, json, latex, html (run: the step viewer page), "
                           "html-fragment (the tables alone)"),
    Flag("--output", "-o", "write to FILE instead of standard output (atomically, with the umask's mode)"),
    Flag("--seed", None, "seed of the deterministic random inputs"),
    Flag("--dtype", None, "number format: fp64, fp32, fp16, bf16 (numerics: a comma list; verify-gpu: the kernel's)"),
    Flag("--sim-dtype", None, "verify-gpu: the simulator's number format"),
    Flag("--n", None, "problem size: sequence length, elements, columns of B"),
    Flag("--d", None, "head dimension"),
    Flag("--m", None, "matmul: rows of A and C"),
    Flag("--k", None, "matmul: columns of A, rows of B"),
    Flag("--registers", "-r", "register count R"),
    Flag("--batch", None, "batch size"),
    Flag("--heads", None, "number of heads"),
    Flag("--causal/--no-causal", None, "causal mask (sweep: --causal true,false)"),
    Flag("--block-m", None, "query block rows Br"),
    Flag("--block-n", None, "key/value block rows Bc"),
    Flag("--sram", None, "SRAM size M in words: sizes the blocks"),
    Flag("--pass", None, "forward or backward"),
    Flag("--algo", None, "algorithm: softmax naive/safe/online; attention eager/standard/standard-3pass/fa1/fa2/fused"),
    Flag("--variant", None, "exact, no-max, no-rescale (seed 003's breaks; numerics: a comma list)"),
    Flag("--order", None, "loop order: inner (query loop outside) or outer (key/value loop outside) — row and col "
                          "are the same two; split: FA2's three backward kernels"),
    Flag("--level", None, "scalar (the register machine) or tile (the SRAM/HBM machine)"),
    Flag("--schedule", None, "matmul schedule: inner, outer, best"),
    Flag("--output-slots", None, "scalar attention, outer order: output rows kept in registers"),
    Flag("--precompute-d/--no-precompute-d", None, "tile backward: D = rowsum(dO∘O) first"),
    Flag("--nk", None, "tile attention: keys/values length Nk ≠ n (cross-attention; causal aligned bottom-right)"),
    Flag("--kv-heads", None, "tile attention: K/V heads (grouped-query: heads % kv_heads == 0; 1 = multi-query)"),
    Flag("--dropout", None, "tile attention: dropout probability p (Algorithm 2: the mask made on chip)"),
    Flag("--dropout-seed", None, "tile attention: seed of the dropout mask"),
    Flag("--sram-rule", None, "what --sram bounds: exact (every tile) or paper (only blocks of HBM matrices)"),
    Flag("--max-instructions", None, "gen: refuse a program of more instructions (default 10⁹; the count is the "
                                     "closed form, known before anything is written); grade: lines one trace may have"),
    Flag("--mac-accumulator", None, "matmul: the MAC unit keeps its own accumulator ACC (R registers + ACC)"),
    Flag("--scale", None, "softmax scale τ (default 1/√d)"),
    Flag("--time-limit", None, "optimize: seconds the search may take (then the best schedule found and the gap); "
                               "grade: seconds one submission may take"),
    Flag("--emit", None, "optimize, analyze: also write the schedule found (the winning tile program; the trace "
                         "re-allocated) as assembly to FILE"),
    Flag("--spills/--no-spills", None, "optimize matmul: also search schedules that spill partial sums"),
    Flag("--data/--no-data", "-d", "the inputs: run --data FILE: arrays from YAML, .npy or .npz; gen: --data writes "
                                   "them as .data, --no-data declares them (.array: the simulator's random values). "
                                   "-d on run only: beside --d (head dimension) it would be a look-alike",
         short_on=("run",)),
    Flag("--steps/--no-steps", None, "show the per-step register table"),
    Flag("--symbolic", None, "registers as expressions over the inputs"),
    Flag("--strict", None, "stop at what is otherwise reported and passed over: run — an array read but never given "
                           "(an error, not a warning); sweep — an infeasible point (an error, not a row saying why)"),
    Flag("--strict-numerics", None, "the first numerical alarm is an error"),
    Flag("--json-fields", None, "JSON: only these keys (dram.reads reaches inside)"),
    Flag("--no-memory", None, "JSON: leave out the arrays' contents"),
    Flag("--memory-max", None, "JSON: arrays with more elements are summarised (default 1024)"),
    Flag("--full-memory", None, "JSON: every array whole"),
    Flag("--progress/--no-progress", None, "progress bar on stderr (default: when it is a terminal)"),
    Flag("--columns", None, "only these columns, in this order: the JSON keys (dram_reads), headers or older names; "
                            "toym sweep --columns help lists them"),
    Flag("--jobs", "-j", "worker processes (default: every core); the output is the same for any number"),
    Flag("--executor", None, "where points run: local (worker processes) or dask (a cluster, with --scheduler)"),
    Flag("--scheduler", None, "a Dask scheduler's address, tcp://HOST:PORT"),
    Flag("--plot", None, "also draw the sweep to FILE.png or .svg"),
    Flag("--x", None, "plot: the parameter on the x axis"),
    Flag("--y", None, "plot: the metric on the y axis (a column's name, as --columns takes it)"),
    Flag("--size", None, "plot: slide (16:9, the default) or page"),
    Flag("--max-series", None, "plot: the most lines drawn (default 6)"),
    Flag("--latex-fit", None, "latex: scale each table to fit the line width and a beamer frame (graphicx)"),
    Flag("--list", None, "list the generators and their parameters"),
    Flag("--check/--no-check", None, "memory: simulate the smaller points and compare with the formula"),
    Flag("--a", None, "systolic: matrix A (YAML, .npy, .npz)"),
    Flag("--b", None, "systolic: matrix B (YAML, .npy, .npz)"),
    Flag("--table", None, "numerics: which table — break (seed 003's break-it) or bf16 (seed 002's bf16 errors)"),
    Flag("--trials", None, "numerics --table bf16: how many input seeds (the spread over them)"),
    Flag("--watch", None, "walk: the array shown after every STORE to it (seed 001 prints O after each visit)"),
    Flag("--dataflow", None, "systolic array dataflow: weight (stationary B, the TPU's MXU) or output (stationary C)"),
    Flag("--problem", "-p", "check, grade: the problem file (YAML) a trace is graded against (grade: or an "
                            "assignment file listing several); run: run on its machine with its inputs"),
    Flag("--roster", None, "grade: the class list (a Canvas or Moodle gradebook export, or a CSV with an id column), "
                           "joined on the LMS's id; the LMS import files are written from it"),
    Flag("--lms", None, "grade: read the export's names as this LMS writes them (canvas, moodle, blackboard, "
                        "brightspace, gradescope; default: detected from the names)"),
    Flag("--times", None, "grade: a CSV of submission times (student, submitted) for the late policy"),
    Flag("--similarity/--no-similarity", None, "grade: find clusters of similar traces (similarity.csv; scores are "
                                               "never changed)"),
    Flag("--student", None, "check, run, problem show: the student's ID, which picks their variant of a problem"),
    Flag("--out", None, "grade: the folder the gradebook, feedback pages and summary are written to"),
    Flag("--wheel", None, "autograder: the toymachine wheel to bundle (default: built from this source tree)"),
    Flag("--trials", None, "check: random input draws (a trace that hard-codes its answer fails)"),
    Flag("--port", None, "serve: the TCP port (default 8000; 0: any free port)"),
    Flag("--host", None, "serve: the address to bind (default 127.0.0.1; any other serves the network, with a warning)"),
    Flag("--open", None, "serve: open the page in the default web browser"),
    Flag("--version", "-V", "print the version"),
    Flag("--debug", None, "an internal error (exit 3) prints its Python traceback (root option: toym --debug run …)"),
    Flag("--allow-outside", None, "check: a problem's machine: file may lie outside the problem's folder"),
    Flag("--help", "-h", "show a command's options"),
    Flag("--install-completion", None, "install shell completion (bash, zsh, fish, PowerShell)"),
    Flag("--show-completion", None, "print the shell completion script"),
)

# old spelling → new (hidden, with a note on stderr; they go in the next release)
HIDDEN_ALIASES = {"--dtypes": "--dtype", "--variants": "--variant"}

# commands that cost or size: each must take --machine (those that exist: others are checked on arrival)
MACHINE_COMMANDS = ("run", "sweep", "gen matmul", "gen attention", "gen attention-tile", "optimize matmul",
                    "optimize attention-tile", "analyze", "check", "memory", "tpu-table", "walk")

# --order's values are one vocabulary: inner ≡ row (query loop outside), outer ≡ col (key/value loop outside)
ORDER_SYNONYMS = {"tile": {"inner": "row", "outer": "col"}, "scalar": {"row": "inner", "col": "outer"}}


def _key(flag: Flag) -> str:
    """The parameter a flag sets, as the library names it: ``--block-m`` → ``block_m``."""
    return flag.name.split("/")[0][2:].replace("-", "_")


# parameter key → its flag: how the CLI says the parameters a library error names (errors.Opt)
FLAG_OF_KEY: dict[str, Flag] = {}
for _flag in VOCABULARY:
    FLAG_OF_KEY.setdefault(_key(_flag), _flag)


def flag_words(key: str, value: object = None) -> str:
    """The CLI's words for parameter ``key`` (given ``value``): ``--registers 6``; a boolean pair's
    half (``--no-causal`` for False); a key no flag sets, as the library says it."""
    flag = FLAG_OF_KEY.get(key)
    if flag is None:
        from ..errors import field_words

        return field_words(key, value)
    spellings = flag.name.split("/")
    if isinstance(value, bool) and (len(spellings) == 2 or value):
        return spellings[0] if value else spellings[1]
    return spellings[0] if value is None else f"{spellings[0]} {value}"


def key_of(name: str) -> str | None:
    """The parameter a long option sets (``--block-m``, ``--no-causal`` → ``block_m``, ``causal``)."""
    flag = flag_of(name)
    return _key(flag) if flag is not None else None


def flag_of(name: str) -> Flag | None:
    """The vocabulary entry for a long option (either half of a boolean pair)."""
    for f in VOCABULARY:
        if name in f.name.split("/"):
            return f
    return None


def short_flag(short: str) -> Flag | None:
    """The vocabulary entry whose short form is ``short`` (``-r`` → ``--registers``)."""
    return next((f for f in VOCABULARY if f.short == short), None)


def command_options(root) -> Iterator[tuple[str, Any]]:
    """(command path, parameter) for every option of every command under ``root`` (the app's click
    group: ``typer.main.get_command(app)``), the root's own included."""

    def walk(cmd, path: str):
        for p in cmd.params:
            if getattr(p, "param_type_name", "") == "option":
                yield path, p
        names = cmd.list_commands(None) if hasattr(cmd, "list_commands") else ()
        for name in names:  # a lazy group (cli.lazy) imports each command as it is asked for
            yield from walk(cmd.get_command(None, name), f"{path} {name}".strip())

    yield from walk(root, "")


def flag_commands(root) -> dict[str, list[str]]:
    """Flag name (as the table spells it) → the commands that take it, in the app's order: every
    visible option of every command, and the sweep's generator parameters (``sweep matmul``)."""
    from ..gen.registry import generator_names, get_generator

    where: dict[str, list[str]] = {}
    for path, p in command_options(root):
        if getattr(p, "hidden", False):
            continue
        for opt in list(p.opts) + list(p.secondary_opts):
            f = flag_of(opt)
            if f is not None and (path or "toym") not in where.setdefault(f.name, []):
                where[f.name].append(path or "toym")
    for name in generator_names():
        for param in get_generator(name).params:
            f = flag_of(flag_words(param.name))
            if f is not None and f"sweep {name}" not in where.setdefault(f.name, []):
                where[f.name].append(f"sweep {name}")
    return where


def vocabulary_report(root):
    """The vocabulary as a report: flag, short form (and where it is one, if not everywhere),
    meaning, and the commands that take it — ``toym flags`` and the docs' reference page print it."""
    from ..render.cells import Code
    from ..render.report import Report, Section

    where = flag_commands(root)
    where["--help"] = ["every command"]
    rows = tuple((Code(f.name, md=True), Code((f.short or "") + (f" ({_commands(list(f.short_on))} only)"
                                                                  if f.short_on else ""), md=True),
                  f.meaning, _commands(where.get(f.name, []))) for f in VOCABULARY)
    return Report("flags", (Section("Flags", ("flag", "short", "meaning", "commands"), rows),))


def _commands(paths: list[str]) -> str:
    """``gen attention, gen matmul, sweep matmul, sweep softmax`` → ``gen attention/matmul, sweep matmul/softmax``."""
    groups: dict[str, list[str]] = {}
    for p in paths:
        head, _, tail = p.partition(" ")
        groups.setdefault(head, []).append(tail)
    out = []
    for head, tails in groups.items():
        named = [t for t in tails if t]
        if len(named) > 3 and head == "sweep":
            out.append("sweep (generators)")
        else:
            out.append(head + (" " + "/".join(named) if named else ""))
    return ", ".join(out)
