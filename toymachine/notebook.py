"""Jupyter display: rich reprs for results and tables, and ``view`` for the step viewer.

In a notebook a ``Result``, a ``Report`` (``sweep_report(...)``, ``isa_report()``, the
numerics table …) or a grader's ``CheckReport`` as the last expression of a cell shows as
tables (``_repr_html_``; ``_repr_markdown_`` for front ends that prefer Markdown), and

    >>> import toymachine
    >>> toymachine.view("programs/c00.asm")            # doctest: +SKIP

shows the interactive step viewer inline (the ``--format html`` page in an ``<iframe
srcdoc>``, so its script and style stay apart from the notebook's). Without IPython,
``view`` returns the page's HTML text.
"""

from __future__ import annotations

__all__ = ["view", "viewer_html", "result_html", "result_markdown", "report_html", "report_markdown"]

import html
import os
from typing import Any

from .program import Program
from .render import render, render_report
from .render.formats import summary_html
from .render.report import Report
from .result import DISPLAY, Result


def result_html(result: Result) -> str:
    """A run's tables (steps when recorded, summary, instructions, memory) as HTML."""
    return render(result, "html-fragment")


def result_markdown(result: Result) -> str:
    return render(result, "markdown")


def report_html(report: Report) -> str:
    return render_report(report, "html-fragment")


def report_markdown(report: Report) -> str:
    return render_report(report, "markdown")


def viewer_html(page: str, *, height: int = 720) -> str:
    """The step viewer page framed for a notebook cell (``<iframe srcdoc>``)."""
    return (f'<div class="toym-view"><iframe srcdoc="{html.escape(page, quote=True)}" style="width:100%;'
            f'height:{int(height)}px;border:1px solid #c9cfdb;border-radius:6px" title="toym step viewer"></iframe></div>')


def view(obj: Result | Program | str | os.PathLike, *, height: int = 720, max_steps: int | None = None,
         **run_options: Any):
    """Show the step viewer for a run.

    ``obj`` is a ``Result`` (run with ``steps=True`` to step through it), a ``Program``, or
    the path of a trace, which is run here with every step recorded (``run_options`` go
    to ``simulate``: ``machine`` — a ``Machine`` or a preset/file name —, ``registers``,
    ``data``, ``seed``, ``symbolic``, ``dtype``). Returns an ``IPython.display.HTML`` when
    IPython is installed (a notebook shows it inline), else the page's HTML text."""
    from .asm import parse_file
    from .machine import resolve_machine
    from .render.page import page_html
    from .render.stepview import MAX_STEPS
    from .sim import simulate

    program = None
    if isinstance(obj, Result):
        if run_options:
            raise TypeError(f"view(result) takes no run options (got {', '.join(sorted(run_options))})")
        result = obj
    else:
        program = obj if isinstance(obj, Program) else parse_file(os.fspath(obj))
        machine = run_options.pop("machine", None)
        if machine is None or isinstance(machine, str):
            machine = resolve_machine(machine)
        result = simulate(program, machine, run_options.pop("data", None), steps=True, **run_options)
    page = page_html(result, program=program, max_steps=max_steps or MAX_STEPS, summary=summary_html(result))
    try:
        from IPython.display import HTML
    except ImportError:
        return page
    return HTML(viewer_html(page, height=height))


DISPLAY.update({"text/html": result_html, "text/markdown": result_markdown})  # Result's Jupyter reprs
