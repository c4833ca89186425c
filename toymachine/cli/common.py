"""What every command shares: the format and dtype choices, ``guard`` (errors → exit 2 with
the located message, never a traceback) and ``write_output`` (stdout, or a file written
atomically: no half-written file on error)."""

from __future__ import annotations

__all__ = ["Format", "DType", "guard", "write_output", "fail"]

import contextlib
import os
import sys
import tempfile
from enum import Enum
from typing import Iterator, Optional

import typer

from ..errors import ToyMachineError
from ..render import FORMATS

Format = Enum("Format", {f: f for f in FORMATS}, type=str)


class DType(str, Enum):
    fp64 = "fp64"
    fp32 = "fp32"
    fp16 = "fp16"
    bf16 = "bf16"


def fail(err: ToyMachineError) -> None:
    typer.echo(err.render(), err=True)
    raise typer.Exit(2)


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Map every user-caused error to its rendered message and exit status 2."""
    try:
        yield
    except ToyMachineError as err:
        fail(err)
    except BrokenPipeError:  # `toym run … | head`
        with contextlib.suppress(Exception):
            sys.stdout = open(os.devnull, "w")
        raise typer.Exit(0)


def write_output(text: str, path: Optional[str]) -> None:
    """Print, or write ``path`` atomically (no half-written file on error)."""
    if path is None or path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    directory = os.path.dirname(os.path.abspath(path)) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=".toym-", dir=directory)
    except OSError as exc:
        from ..errors import ConfigError, Location

        raise ConfigError(f"cannot write {path}: {exc.strerror}", loc=Location(path),
                          hint="check that the directory exists and is writable") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
