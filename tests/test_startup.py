"""Start-up: the command line imports only what a command uses.

Each check runs a fresh interpreter and reads its ``sys.modules``: ``import toymachine.cli``,
``toym --help`` and a small ``toym run`` must not pull in the heavy parts (renderers of other
formats, the optimizer, sweeps, plotting, the GPU side, rich, pydantic…). The lazy command
table's one-line help is held equal to each command's own docstring, and typer's value
conversion without pydantic (``cli.lazy``) is held equal to typer's own on random values.
Timings are not tested here: ``benchmarks/bench_startup.py`` measures them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import PROGRAMS, ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

DENY = ("rich", "matplotlib", "torch", "triton", "dask", "starlette", "uvicorn", "httpx", "pydantic", "yaml",
        "pygments", "IPython", "toymachine.optimize", "toymachine.experiments", "toymachine.check",
        "toymachine.gen", "toymachine.cost", "toymachine.notebook", "toymachine.render.terminal",
        "toymachine.render.latex", "toymachine.render.csvout", "toymachine.render.page",
        "toymachine.render.stepview", "toymachine.render.report", "toymachine.sim.systolic", "kernels_gpu")


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (its stdout/exit ignored)."""
    probe = ("import sys\ntry:\n" + "".join(f"    {line}\n" for line in code.splitlines()) +
             "except SystemExit:\n    pass\nsys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules)))\n")
    env = dict(os.environ, COLUMNS="80")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=120)
    tail = proc.stderr.rsplit("MODULES ", 1)
    assert len(tail) == 2, proc.stderr
    return set(tail[1].split())


def _denied(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == d or m.startswith(d + ".") for d in DENY))


def test_importing_the_cli_loads_nothing_heavy():
    mods = _modules_after("import toymachine.cli")
    assert _denied(mods) == []
    # the root group's usage errors (cli.usage) need the error classes: toymachine.errors, a few ms
    assert not any(m.startswith("toymachine.") and not m.startswith("toymachine.cli") and m != "toymachine.errors"
                   for m in mods), \
        sorted(m for m in mods if m.startswith("toymachine."))
    assert "numpy" not in mods and "toymachine.cli.run" not in mods


def test_help_lists_every_command_without_importing_one():
    mods = _modules_after("from toymachine.cli import main\nmain(['--help'])")
    assert _denied(mods) == [] and "numpy" not in mods
    assert not [m for m in mods if m.startswith("toymachine.cli.") and m not in ("toymachine.cli.app",
                                                                                 "toymachine.cli.lazy",
                                                                                 "toymachine.cli.usage",
                                                                                 "toymachine.cli.click_fields",
                                                                                 "toymachine.cli.vocabulary")]


@pytest.mark.parametrize("args", [
    ["run", str(PROGRAMS / "c00.asm"), "--no-steps", "-f", "json"],
    ["run", str(PROGRAMS / "c00.asm"), "-f", "json", "-o", os.devnull],
    ["run", str(PROGRAMS / "c00.asm"), "-f", "json", "--registers", "x"],  # a usage error under json
])
@pytest.mark.slow
def test_a_small_run_loads_only_the_run_path(args):
    mods = _modules_after(f"from toymachine.cli import main\nmain({args!r})")
    bad_value = "--registers" in args  # typer's own conversion words the error: pydantic may load for it
    assert [m for m in _denied(mods) if not (bad_value and m.split(".")[0] in ("pydantic", "pydantic_core"))] == []
    assert "toymachine.cli.run" in mods
    assert not [m for m in mods if m.startswith("toymachine.cli.") and
                m.split(".")[2] not in ("app", "lazy", "run", "common", "usage", "click_fields", "vocabulary")]


@pytest.mark.slow
def test_other_formats_load_their_renderer_only_when_used():
    mods = _modules_after(f"from toymachine.cli import main\nmain(['run', {str(PROGRAMS / 'c00.asm')!r}, '-f', 'csv'])")
    assert "toymachine.render.csvout" in mods and "toymachine.render.latex" not in mods and "rich" not in mods


def test_the_table_lists_every_command_with_its_own_help():
    """COMMANDS' one-line help is what the command itself says (click's short help, at any width)."""
    import typer
    from typer._click.utils import make_default_short_help

    from toymachine.cli.app import COMMANDS, app
    from toymachine.cli.lazy import load

    group = typer.main.get_command(app)
    assert group.list_commands(None)[:len(COMMANDS)] == list(COMMANDS)
    for name, entry in COMMANDS.items():
        cmd = load(name, entry)
        for limit in (30, 45, 60, 74, 200):
            assert make_default_short_help(entry.help, limit) == cmd.get_short_help_str(limit), (name, limit)


def test_help_output_is_the_eager_apps():
    """`toym --help` from the table equals the help of the same group with every command loaded."""
    import typer
    from typer._click import Context

    from toymachine.cli.app import app

    def help_text(group) -> str:
        return group.get_help(Context(group, info_name="toym", terminal_width=100, max_content_width=100))

    group = typer.main.get_command(app)
    lazy = help_text(group)
    assert not group.commands  # nothing loaded to print it
    for name in group.list_commands(None):
        group.get_command(None, name)  # loaded: its help now comes from the command itself
    assert help_text(group) == lazy and "\n  run " in lazy and "\n  optimize " in lazy


def test_a_lazy_command_runs_as_before(toym):
    code, out, _ = toym("run", PROGRAMS / "c00.asm", "--no-steps", "-f", "json")
    assert code == 0 and json.loads(out)["cycles"] == 7
    code, out, _ = toym("gen", "softmax", "--n", "3")
    assert code == 0 and "LOAD" in out


# -- typer's values without pydantic: the same value, or typer's own path (and its message) ----------
def _descriptor(annotation, **info):
    import typer
    from typer._coercion import resolve_type_descriptor

    return resolve_type_descriptor(annotation, typer.Option(None, **info))


def _typer_value(desc, value):
    from typer._coercion import build_runtime_param

    try:
        return ("ok", build_runtime_param(desc)._coerce_value(value, param=None, ctx=None))
    except Exception as exc:  # noqa: BLE001 - the failure itself is compared
        return ("error", type(exc).__name__)


TEXTS = st.one_of(st.text(max_size=8), st.from_regex(r"-?[0-9]{1,20}(\.[0-9]*)?([eE][-+]?[0-9]{1,4})?", fullmatch=True),
                  st.sampled_from(["0", "-0", "007", "1_000", " 1", "1 ", "+1", "1e3", ".5", "5.", "inf", "nan", "١٢",
                                   "json", "JSON", "fp16", "table", "", "-", "--", "1e400", "99999999999999999999"]))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(value=TEXTS, which=st.sampled_from(["str", "int", "int_min1", "int_range", "float", "float_min0", "enum"]))
def test_fast_conversion_equals_typers(value, which):
    from toymachine.cli.common import Format
    from toymachine.cli.lazy import _SLOW, _convert, leaf

    annotation, info = {"str": (str, {}), "int": (int, {}), "int_min1": (int, {"min": 1}),
                        "int_range": (int, {"min": 0, "max": 100}), "float": (float, {}),
                        "float_min0": (float, {"min": 0.0}), "enum": (Format, {})}[which]
    desc = _descriptor(annotation, **info)
    fast = _convert(leaf(desc.annotation), desc.parameter_info, value, None)
    if fast is _SLOW:
        return  # typer's own path: identical by construction
    kind, slow = _typer_value(desc, value)
    assert kind == "ok" and slow == fast and type(slow) is type(fast), (value, which, slow, fast)


@pytest.mark.parametrize("annotation,info,value", [
    (str, {}, "programs/c00.asm"), (int, {}, "12"), (int, {"min": 1}, "3"), (int, {}, "-7"), (int, {}, 5),
    (float, {}, "0.25"), (float, {}, "1e3"), (float, {}, 2), ("enum", {}, "json"), (bool, {}, True)])
def test_the_common_values_take_the_fast_path(annotation, info, value):
    from toymachine.cli.common import Format
    from toymachine.cli.lazy import _SLOW, _convert

    annotation = Format if annotation == "enum" else annotation
    desc = _descriptor(annotation, **info)
    fast = _convert(annotation, desc.parameter_info, value, None)
    assert fast is not _SLOW and _typer_value(desc, value) == ("ok", fast)


@pytest.mark.slow
def test_shell_completion_still_lists_commands_and_options():
    def complete(words: str) -> str:
        env = dict(os.environ, _TOYM_COMPLETE="complete_zsh", _TYPER_COMPLETE_ARGS=words)
        return subprocess.run([sys.executable, "-c", "from toymachine.cli import main; main()"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120).stdout

    assert '"gen":' in complete("toym g") and '"run":' not in complete("toym g")
    assert '"--registers":' in complete("toym run --reg")


@pytest.mark.slow
@pytest.mark.parametrize("given_env, want", [(None, "1"), ("3", "3")])
def test_the_toym_process_runs_one_blas_thread_unless_told(given_env, want):
    """numpy's BLAS pool threads spin and burn a core on every ``toym`` run: the command (not the
    library, not ``main(args)`` called in a user's process) asks for one, unless the user chose."""
    probe = ("import importlib, os, sys\na = importlib.import_module('toymachine.cli.app')\n"
             "a._leave = lambda code: (print('BLAS', os.environ.get('OPENBLAS_NUM_THREADS')), sys.exit(code))\n"
             f"sys.argv = ['toym', 'run', {os.path.join(PROGRAMS, 'c00.asm')!r}, '--no-steps', '-f', 'json']\n"
             "a.main()\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given_env is not None:
        env["OPENBLAS_NUM_THREADS"] = given_env
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().splitlines()[-1] == f"BLAS {want}"
    inproc = ("import os, sys\nfrom toymachine.cli import main\n"
              f"try:\n    main(['run', {os.path.join(PROGRAMS, 'c00.asm')!r}, '--no-steps', '-f', 'json'])\n"
              "except SystemExit:\n    pass\nprint('BLAS', os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    proc = subprocess.run([sys.executable, "-c", inproc], cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.stdout.rstrip().splitlines()[-1] == f"BLAS {given_env}"  # main(args): the caller's process, untouched
