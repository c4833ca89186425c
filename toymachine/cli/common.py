"""What every command shares: the format and dtype choices, the options of the one flag
vocabulary (``cli.vocabulary``), ``guard`` (errors → exit 2 with the located message, never a
traceback; under ``-f json`` also a JSON error object on stdout), ``warn`` (a run's warnings on
stderr) and ``write_output`` (stdout, or a file written atomically with the umask's mode)."""

from __future__ import annotations

__all__ = ["Format", "DType", "guard", "write_output", "fail", "warn", "alias", "progress_bar",
           "machine_option", "format_option", "output_option", "progress_option"]

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any

import typer

from ..dtypes import DTYPES
from ..errors import ConfigError, ToyMachineError
from ..render import FORMATS
from .vocabulary import flag_words

# Typer's choices are str Enums made from the one declaration of each list (FORMATS, DTYPES); mypy
# cannot list members made at run time, hence `type: ignore[misc]` on each such Enum in the CLI.
Format = Enum("Format", {f: f for f in FORMATS}, type=str)  # type: ignore[misc]
DType = Enum("DType", {d: d for d in DTYPES}, type=str)  # type: ignore[misc]


# -- the shared options (one name, one meaning: see cli.vocabulary) ------------------------------
def machine_option(help: str = "Machine YAML file or preset name (toy, toy3, toy4, toy6, toysram, a100, h100 …).") -> Any:
    return typer.Option(None, "--machine", "-m", help=help)


def format_option(default: str = "table") -> Any:
    return typer.Option(default, "--format", "-f", help=f"Output format: {', '.join(FORMATS)}.")


def output_option(help: str = "Write to FILE instead of standard output.") -> Any:
    return typer.Option(None, "--output", "-o", help=help)


def progress_option() -> Any:
    return typer.Option(None, "--progress/--no-progress", help="Progress bar on stderr (default: when stderr is a "
                                                               "terminal).")


def fail(err: ToyMachineError, json_error: bool = False) -> None:
    """Show ``err`` (its parameters said as flags) on stderr, and under ``-f json`` its error object on
    stdout; exit status 2."""
    typer.echo(err.render(flag_words), err=True)
    if json_error:
        from ..render.jsonout import error_json

        sys.stdout.write(error_json(err, flag_words))
        sys.stdout.flush()
    raise typer.Exit(2)


@contextlib.contextmanager
def guard(fmt: Any = None) -> Iterator[None]:
    """Map every user-caused error to its rendered message and exit status 2 (with ``fmt``
    json, also ``{"error": {…}}`` on stdout, for scripts that parse it)."""
    json_error = getattr(fmt, "value", fmt) == "json"
    try:
        yield
    except ToyMachineError as err:
        fail(err, json_error)
    except BrokenPipeError:  # `toym run … | head`
        with contextlib.suppress(Exception):
            sys.stdout = open(os.devnull, "w")
        raise typer.Exit(0) from None


def warn(warnings) -> None:
    """A run's warnings (located ``ToyMachineError``s) on stderr, as ``warning: …``."""
    for w in warnings:
        text = w.render(flag_words)
        typer.echo("warning: " + text[len("error: "):] if text.startswith("error: ") else text, err=True)


def alias(new: str, old: str, new_value: Any, old_value: Any, default: Any = None) -> Any:
    """An old spelling kept as a hidden alias for one release: its value (with a note on stderr),
    unless the new spelling was given too (an error)."""
    if old_value is None or old_value == default:
        return new_value
    if new_value is not None and new_value != default:
        raise ConfigError(f"{old} and {new} are the same option; give one", hint=f"use {new}")
    typer.echo(f"note: {old} is now spelled {new}; the old spelling goes in the next release", err=True)
    return old_value


@contextlib.contextmanager
def progress_bar(label: str, show: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A transient progress bar on stderr (``show``: it is a terminal, or --progress); yields the
    ``update(done, total)`` callback to hand to a library call, or None."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total or None)

        yield update


def show_progress(flag: bool | None) -> bool:
    if flag is not None:
        return flag
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _new_file_mode() -> int:
    """The mode a new file gets from open(): 0666 less the umask (0644 under umask 022)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_output(text: str | Callable[[Callable[[str], object]], None], path: str | None) -> None:
    """Print, or write ``path`` atomically (no half-written file on error) with the mode a
    plain ``open`` would give it (an existing file keeps its mode). ``text`` may be a function
    that streams: it is called with the ``write`` to hand each block of text to."""
    produce = text if callable(text) else (lambda write: write(text))
    if path is None or path == "-":
        produce(sys.stdout.write)
        sys.stdout.flush()
        return
    if not path.strip() or "\0" in path:
        raise ConfigError(f"-o {path!r} is not a file name", hint="give a file path, or leave -o out for standard output")
    if os.path.exists(path) and not os.path.isfile(path):  # /dev/null, /dev/stdout, a FIFO: write into it
        try:  # (replacing it would put a regular file where the device was)
            with open(path, "w", encoding="utf-8", newline="") as fh:
                produce(fh.write)
        except OSError as exc:
            raise ConfigError(f"cannot write {path}: {exc.strerror}", hint="give a file path, or leave -o out") from None
        return
    directory = os.path.dirname(os.path.abspath(path)) or "."
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = _new_file_mode()
    try:
        fd, tmp = tempfile.mkstemp(prefix=".toym-", dir=directory)
    except OSError as exc:
        from ..errors import Location

        why = exc.strerror if not os.path.isdir(directory) else f"cannot create a file in {directory} ({exc.strerror})"
        raise ConfigError(f"cannot write {path}: {why}", loc=Location(path),
                          hint="check that the directory exists and is writable") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            produce(fh.write)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
