"""The ``toym`` command line: options → one library call → render.

Exit status: 0 success, 1 a requested check found a mismatch, 2 any error (usage,
assembly, machine limit, runtime fault, a resource limit), 3 an internal error (a bug in toym:
a one-line report and a bug-report hint; the traceback only under ``toym --debug``), 130
interrupted. Errors print as ``file:line:col`` with the offending line and a caret, never a
traceback.
"""

from __future__ import annotations

__all__ = ["app", "main"]

import sys

import typer

from .. import __version__
from .check import check_command
from .flags import flags_command
from .gen import gen_app
from .memory import memory_command
from .numerics import numerics_command
from .optimize import analyze_command, optimize_app
from .run import isa_command, run_command
from .sweep import SWEEP_CONTEXT, sweep_command
from .systolic import systolic_command
from .verify import verify_gpu_command

app = typer.Typer(
    name="toym",
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


app.command("run")(run_command)
app.command("isa")(isa_command)
app.command("verify-gpu")(verify_gpu_command)
app.add_typer(gen_app, name="gen")
app.command("sweep", context_settings=SWEEP_CONTEXT)(sweep_command)
app.command("numerics")(numerics_command)
app.command("memory")(memory_command)
app.command("systolic")(systolic_command)
app.command("flags")(flags_command)
app.command("check")(check_command)
app.add_typer(optimize_app, name="optimize")
app.command("analyze")(analyze_command)


def main(argv: list[str] | None = None) -> None:
    """The ``toym`` entry point. Usage errors (an unknown option, a value of the wrong type) exit 2
    as click prints them; under ``-f json`` they also print the JSON error object on stdout."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        code = app(args, prog_name="toym", standalone_mode=False)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # click's usage errors (its exception classes are typer's private copy)
        if not (hasattr(exc, "show") and hasattr(exc, "exit_code")):
            _internal_error(exc, args)
        exc.show()
        if exc.exit_code == 2 and _wants_json(args):
            from ..errors import ConfigError
            from ..render.jsonout import error_json

            sys.stdout.write(error_json(ConfigError(exc.format_message(), hint="see toym --help")))
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _internal_error(exc: BaseException, args: list[str]) -> None:
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


def _wants_json(args: list[str]) -> bool:
    pairs = zip(args, args[1:])
    return any(a in ("-f", "--format") and b == "json" for a, b in pairs) or \
        any(a in ("--format=json", "-fjson") for a in args)


if __name__ == "__main__":  # pragma: no cover
    main()
