"""The ``toym`` command line: options → one library call → render.

Exit status: 0 success, 1 a requested check found a mismatch, 2 any error (usage,
assembly, machine limit, runtime fault). Errors print as ``file:line:col`` with the
offending line and a caret, never a traceback.
"""

from __future__ import annotations

__all__ = ["app", "main"]

import sys

import typer

from .. import __version__
from .autograder import autograder_command
from .check import check_command
from .flags import flags_command
from .gen import gen_app
from .grade import grade_command
from .memory import memory_command
from .numerics import numerics_command
from .optimize import analyze_command, optimize_app
from .problem import problem_app
from .run import isa_command, run_command
from .serve import serve_command
from .sweep import SWEEP_CONTEXT, sweep_command
from .systolic import systolic_command
from .tpu import tpu_table_command
from .usage import ToymGroup, ToymUsageError, wants_json
from .walk import walk_command
from .verify import verify_gpu_command

app = typer.Typer(
    name="toym",
    cls=ToymGroup,  # usage errors in toym's style, look-alike flags named (cli/usage.py)
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
                                       help="Show the version and exit.")) -> None:
    pass


app.command("run")(run_command)
app.command("isa")(isa_command)
app.command("verify-gpu")(verify_gpu_command)
app.add_typer(gen_app, name="gen")
app.command("sweep", context_settings=SWEEP_CONTEXT)(sweep_command)
app.command("numerics")(numerics_command)
app.command("memory")(memory_command)
app.command("systolic")(systolic_command)
app.command("tpu-table")(tpu_table_command)
app.command("walk")(walk_command)
app.command("flags")(flags_command)
app.command("check")(check_command)
app.add_typer(optimize_app, name="optimize")
app.command("analyze")(analyze_command)
app.command("grade")(grade_command)
app.add_typer(problem_app, name="problem")
app.command("autograder")(autograder_command)
app.command("serve")(serve_command)


def main(argv: list[str] | None = None) -> None:
    """The ``toym`` entry point. Usage errors (an unknown option, a value of the wrong type) exit 2
    in toym's error style (``cli.usage``); under ``-f json`` they also print the JSON error object on
    stdout."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        code = app(args, prog_name="toym", standalone_mode=False)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # click's usage errors (its exception classes are typer's private copy)
        if not (hasattr(exc, "show") and hasattr(exc, "exit_code")):
            raise
        exc.show()
        if exc.exit_code == 2 and wants_json(args) and not isinstance(exc, ToymUsageError):
            from ..errors import ConfigError
            from ..render.jsonout import error_json

            sys.stdout.write(error_json(ConfigError(exc.format_message(), hint="see toym --help")))
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
