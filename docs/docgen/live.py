"""Live pages, made at build time: the step viewer of three seed walk-throughs (whole offline pages,
inline CSS and JS, embedded in the docs by an ``<iframe>``) and the sweep and memory plots (matplotlib;
without it the plots are left out and ``plot_note()`` says so on the pages that show them).

Every file is made by the ``toym`` command a reader would type (run in-process), so the page shows
exactly what the command writes.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

# docs path → the toym command that writes it (its output file is the last argument)
STEP_VIEWERS = {
    "live/matmul_outer_2x2.html": "run programs/matmul_outer_2x2.asm --format html -o OUT",
    "live/softmax_online.html": "run programs/softmax_online.asm --format html -o OUT",
    "live/fa1_n5_d3.html": "run programs/fa1_n5_d3.asm --machine toysram-paper --format html -o OUT",
}
PLOTS = {
    "live/sweep_matmul.png": "sweep matmul --n 4 --registers 3..8 --schedule inner,outer,best --y cycles --size slide --plot OUT",
    "live/memory_a100.png": "memory --machine a100 --n 1024..32768*2 --d 64 --batch 8 --heads 8 --algo standard,fa2 --plot OUT",
}


def have_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _toym(command: str, out: Path) -> bytes:
    from typer.testing import CliRunner

    from toymachine.cli import app

    args = [str(out) if a == "OUT" else a for a in command.split()]
    res = CliRunner().invoke(app, args, catch_exceptions=False)
    if res.exit_code != 0:
        raise RuntimeError(f"toym {command} exited {res.exit_code}: {res.stderr[-2000:]}")
    return out.read_bytes()


def files() -> dict[str, bytes]:
    """docs path → bytes of every live file (the plots only where matplotlib is installed)."""
    wanted = dict(STEP_VIEWERS)
    if have_matplotlib():
        wanted.update(PLOTS)
    from .pages import workdir

    made = {}
    with workdir() as folder:
        for path, command in wanted.items():
            made[path] = _toym(command, folder / Path(path).name)
    return made
