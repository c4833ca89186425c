"""``toym flags``: the one vocabulary of flags (``cli.vocabulary``) and the commands taking each —
docs/reference/vocabulary.md's flag table is this command's ``-f markdown``."""

from __future__ import annotations

__all__ = ["flags_command"]


import typer

from ..render import render_report
from ..render.terminal import terminal_width
from .common import Format, format_option, guard, output_option, write_output
from .vocabulary import vocabulary_report


def flags_command(ctx: typer.Context, fmt: Format = format_option(), output: str | None = output_option()) -> None:
    """Print the flags every command shares: one name and one meaning each, and which commands take it."""
    with guard(fmt):
        report = vocabulary_report(ctx.find_root().command)
        write_output(render_report(report, fmt.value, width=terminal_width() if output in (None, "-") else None),
                     output)
