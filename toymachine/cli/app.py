"""The ``toym`` command line: options → one library call → render.

Exit status: 0 success, 1 a requested check found a mismatch, 2 any error (usage,
assembly, machine limit, runtime fault, a resource limit), 3 an internal error (a bug in toym:
a one-line report and a bug-report hint; the traceback only under ``toym --debug``), 130
interrupted. Errors print as ``file:line:col`` with the offending line and a caret, never a
traceback.

Commands load lazily: ``COMMANDS`` names each one's module, function and one-line help, so
``toym --help`` lists them all without importing any, and ``toym run`` imports only what a run
needs (``cli.lazy``). To add a command, add one row to ``COMMANDS``.
"""

from __future__ import annotations

__all__ = ["app", "main", "COMMANDS"]

import os
import sys
from collections.abc import Callable
from typing import NoReturn, Protocol, runtime_checkable

import typer

from .. import __version__
from .lazy import Lazy, LazyCommands
from .usage import ToymGroup, ToymUsageError, wants_json

# name → Lazy("module:attribute" under toymachine.cli, the command's one-line help[, context settings]).
# A function becomes a command, a typer.Typer a group of them; help lists them in this order.
COMMANDS: dict[str, Lazy] = {
    "run": Lazy("run:run_command", "Run a trace and print its per-step register table and cost summary."),
    "isa": Lazy("run:isa_command", "Print the instruction-set reference (generated from the ISA table)."),
    "verify-gpu": Lazy("verify:verify_gpu_command", "Run the tile simulator and the bundled Triton kernel on the same "
                       "inputs and compare O, the log-sum-exp (and dQ, dK, dV): exit 0 when they agree, 1 when they "
                       "don't."),
    "gen": Lazy("gen:gen_app", "Write a generated program (assembly with a header giving its cost formula) to stdout "
                "or -o FILE. Pipe it into `toym run -`."),
    "sweep": Lazy("sweep:sweep_command", "Run a generator over its parameters' ranges: one cost row per point.",
                  context="SWEEP_CONTEXT"),
    "numerics": Lazy("numerics:numerics_command", "Seed 003's break-it experiments: variant × dtype → max error, "
                     "first alarm."),
    "memory": Lazy("memory:memory_command", "Peak memory of attention against n: seed 002's memory-scaling table and "
                   "seed 003's picture."),
    "systolic": Lazy("systolic:systolic_command", "C = A·B on a tick-level systolic array (seed 002): the "
                     "cycle-by-cycle table (M, K, N ≤ 16), cycles = M+K+N−2 against the emulator's ticks, MACs, "
                     "utilisation; C equals numpy's A @ B."),
    "tpu-table": Lazy("tpu:tpu_table_command", "Seed 002's TPU table (\"What the emulator revealed\") from simulated runs."),
    "paper": Lazy("paper:paper_command", "A paper's figure beside toym's: the published numbers, toym's, their ratio "
                  "and the command that prints each of toym's (toym paper --list shows the figures)."),
    "walk": Lazy("walk:walk_command", "A tiled run as seed 001's slides, and O after every (i, j) visit."),
    "flags": Lazy("flags:flags_command", "Print the flags every command shares: one name and one meaning each, and "
                  "which commands take it."),
    "check": Lazy("check:check_command", "Grade a trace: run it on the problem's machine with its inputs (several "
                  "random draws), compare every expected array and check every budget; print the score; exit 0 when all pass, 1 when "
                  "one fails."),
    "optimize": Lazy("optimize:optimize_app", "Provably optimal schedules and block sizes: the least-cycle matmul "
                     "schedule on R registers (A* search, proven optimal or best found with the gap), "
                     "FlashAttention's (Br, Bc) and loop order under an SRAM of M words beside the paper's rule."),
    "analyze": Lazy("optimize:analyze_command", "How far a trace is from an optimal register allocation of its own "
                    "order of computation: the fewest LOADs/STOREs any allocation of that order needs (Belady's MIN), "
                    "the bound for its outputs in any order, and which LOADs are redundant (\"line 9 reloads a[0][1], "
                    "which an optimal allocation would have kept in a register\")."),
    "problem": Lazy("problem:problem_app", "Problem files: handouts and problem sets."),
    "grade": Lazy("grade:grade_command", "Grade every submission in SUBMISSIONS against the problem: one row per "
                  "student in DIR/gradebook.csv, what each student sees in DIR/feedback/, the class at a glance in "
                  "DIR/summary.md."),
    "autograder": Lazy("autograder:autograder_command", "Build the Gradescope autograder zip: upload it as a "
                       "\"Zip file upload\" autograder."),
    "serve": Lazy("serve:serve_command", "Serve the live playground: edit a trace in the browser and watch its "
                  "registers, cycles and traffic change as you type (needs the 'serve' extra: pip install "
                  "'toymachine[serve]')."),
}


class ToymCommands(LazyCommands, ToymGroup):
    """The root group: commands from ``COMMANDS``, loaded on demand (``cli.lazy``); usage errors in
    toym's style, look-alike flags named from the vocabulary (``cli.usage``)."""

    table = COMMANDS


app = typer.Typer(
    name="toym",
    cls=ToymCommands,
    help="toymachine: an instruction-set simulator and cost model for the toy machine that teaches "
         "FlashAttention. Run traces, count cycles and DRAM traffic, print the seed's tables.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text as written, re-wrapped to the terminal (no rich markup)
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"toym {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                       help="Show the version and exit."),
          debug: bool = typer.Option(False, "--debug", help="On an internal error (exit 3), print the Python "
                                                            "traceback too.")) -> None:
    pass


INTERNAL_ERROR = 3  # a bug in toym, not in the input: reported in one line, the traceback under --debug
BUG_HINT = "this is a bug in toym: please report it with the command and its input files (toym --debug … shows the traceback)"



def main(argv: list[str] | None = None) -> None:
    """The ``toym`` entry point. Usage errors (an unknown option, a value of the wrong type) exit 2
    in toym's error style (``cli.usage``); under ``-f json`` they also print the JSON error object on
    stdout."""
    args = sys.argv[1:] if argv is None else list(argv)
    if argv is None and "numpy" not in sys.modules:  # the toym process: one BLAS thread (toym's tiles are
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small; idle pool threads spin and burn a core)
    leave: Callable[[int], None] = _leave
    if argv is not None:  # called in-process (tests): a plain SystemExit
        leave = sys.exit
    try:
        code = app(args, prog_name="toym", standalone_mode=False)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # click's usage errors (its exception classes are typer's private copy)
        if not isinstance(exc, _ClickError):
            _internal_error(exc, args)
        exc.show()
        if exc.exit_code == 2 and wants_json(args) and not isinstance(exc, ToymUsageError):
            from ..errors import ConfigError
            from ..render.jsonout import error_json

            sys.stdout.write(error_json(ConfigError(exc.format_message(), hint="see toym --help")))
        leave(exc.exit_code)
    leave(code if isinstance(code, int) else 0)


def _leave(code: int) -> None:
    """Exit the ``toym`` process without tearing the interpreter down object by object: a long
    run leaves millions of small objects (compiled lines, memory cells) whose freeing would cost
    a tenth of the run. ``atexit`` handlers still run and both streams are flushed first; where
    flushing fails (a closed pipe) the ordinary exit handles it."""
    import atexit
    import os

    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - let the ordinary exit report it as it would
        sys.exit(code)
    os._exit(code)


@runtime_checkable
class _ClickError(Protocol):
    """What click's exceptions offer, whichever copy of click raised them."""

    exit_code: int

    def show(self) -> None: ...

    def format_message(self) -> str: ...


def _internal_error(exc: BaseException, args: list[str]) -> NoReturn:
    """An exception no guard mapped: one line and the bug-report hint (exit 3), never a traceback
    unless ``--debug`` (or ``TOYM_DEBUG=1``) asks for it."""
    import os

    if "--debug" in args[:args.index("--") if "--" in args else len(args)] or os.environ.get("TOYM_DEBUG") == "1":
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    what = "out of memory" if isinstance(exc, MemoryError) else f"{type(exc).__name__}: {exc}"
    from ..errors import EXCERPT_CHARS

    typer.echo(f"internal error: {what[:EXCERPT_CHARS]}", err=True)
    typer.echo(f"  = hint: {BUG_HINT}", err=True)
    sys.exit(INTERNAL_ERROR)



if __name__ == "__main__":  # pragma: no cover
    main()
