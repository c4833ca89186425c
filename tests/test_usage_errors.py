"""Usage errors are worded from the fields click's exceptions carry — the parameter, the option's
name, the kind of parameter, the context — and from the command line, never from click's message:
each test hands ``usage_error`` an exception whose message is nonsense and reads the error it makes."""

from __future__ import annotations

import json

import pytest
import typer

from toymachine.cli import app
from toymachine.cli.usage import _subcommand, usage_error

try:
    from typer._click import Context
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - an older typer on the real click
    from click import Context
    from click import exceptions as click_errors

NONSENSE = "zzz: not click's words"


@pytest.fixture(scope="module")
def root():
    return typer.main.get_command(app)


def _setup(root, args: list[str]):
    cmd, path, _ = _subcommand(root, args)
    return cmd, Context(cmd, info_name=path)


def _param(cmd, flag: str):
    return next(p for p in cmd.params if flag in getattr(p, "opts", ()))


def test_a_bad_choice_reads_the_parameter_and_its_choices(root):
    args = ["run", "programs/c00.asm", "-f", "jsn"]
    cmd, ctx = _setup(root, args)
    err = usage_error(args, click_errors.BadParameter(NONSENSE, ctx=ctx, param=_param(cmd, "--format")), root).error
    assert err.message == ("invalid value for '--format' / '-f': 'jsn' is not one of 'table', 'markdown', 'csv', "
                           "'json', 'latex', 'html', 'html-fragment'")
    assert (err.key, err.suggestion, err.hint) == ("format", "json", "did you mean 'json'?")
    assert (err.loc.line, err.loc.col) == (1, len("toym run programs/c00.asm -f ") + 1)


def test_a_number_out_of_range_reads_the_parameters_bounds(root):
    args = ["run", "programs/c00.asm", "--registers", "0"]
    cmd, ctx = _setup(root, args)
    err = usage_error(args, click_errors.BadParameter(NONSENSE, ctx=ctx, param=_param(cmd, "--registers")), root).error
    assert err.message == "invalid value for '--registers' / '-r': must be at least 1, got 0"
    assert err.key == "registers" and NONSENSE not in err.render()
    args[-1] = "x"
    err = usage_error(args, click_errors.BadParameter(NONSENSE, ctx=ctx, param=_param(cmd, "--registers")), root).error
    assert err.message == "invalid value for '--registers' / '-r': 'x' is not a whole number"


def test_an_unknown_option_reads_its_name(root):
    args = ["run", "programs/c00.asm", "--regs", "3"]
    _, ctx = _setup(root, args)
    exc = click_errors.NoSuchOption("--regs", message=NONSENSE, possibilities=["--registers"], ctx=ctx)
    err = usage_error(args, exc, root).error
    assert err.message == "toym run has no option --regs; did you mean --registers?"
    assert err.loc.col == len("toym run programs/c00.asm ") + 1


def test_a_missing_parameter_reads_its_kind_and_name(root):
    args = ["run", "--seed", "1"]
    cmd, ctx = _setup(root, args)
    file = next(p for p in cmd.params if p.name == "file")
    err = usage_error(args, click_errors.MissingParameter(NONSENSE, ctx=ctx, param=file), root).error
    assert (err.message, err.key) == ("missing argument 'file'", "file")
    exc = click_errors.MissingParameter(NONSENSE, ctx=ctx, param=_param(cmd, "--problem"), param_type="option")
    err = usage_error(args, exc, root).error
    assert (err.message, err.key) == ("missing option '--problem' / '-p'", "problem")
    assert err.hint.startswith("--problem (check, grade: the problem file")


@pytest.mark.parametrize("flag,says", [("--registers", "requires an argument"), ("--symbolic", "does not take a value")])
def test_a_misused_option_reads_its_name_and_whether_it_takes_a_value(root, flag, says):
    args = ["run", "programs/c00.asm", flag + ("=3" if flag == "--symbolic" else "")]
    _, ctx = _setup(root, args)
    err = usage_error(args, click_errors.BadOptionUsage(flag, NONSENSE, ctx=ctx), root).error
    assert err.message == f"option '{flag}' {says}" and err.key == flag[2:]
    assert err.loc.col == len("toym run programs/c00.asm ") + 1


def test_an_unknown_command_is_found_on_the_command_line(root):
    args = ["rn", "programs/c00.asm"]
    err = usage_error(args, click_errors.UsageError(NONSENSE, ctx=Context(root, info_name="toym")), root).error
    assert err.message == "no such command 'rn'; did you mean 'run'?" and err.hint == "`toym -h` lists its commands"
    assert err.render().count("^") == len("rn")


def test_extra_arguments_are_what_the_parser_leaves(root):
    args = ["run", "programs/c00.asm", "extra1", "extra2"]
    _, ctx = _setup(root, args)
    err = usage_error(args, click_errors.UsageError(NONSENSE, ctx=ctx), root).error
    assert err.message == "got unexpected extra arguments (extra1 extra2)"
    assert err.loc.col == len("toym run programs/c00.asm ") + 1


def test_a_usage_error_of_no_named_kind_is_shown_as_click_wrote_it(root):
    args = ["run", "programs/c00.asm"]
    _, ctx = _setup(root, args)
    err = usage_error(args, click_errors.UsageError("something else went wrong", ctx=ctx), root).error
    assert err.message == "something else went wrong" and err.loc is None


def test_the_json_error_object_carries_the_key_and_the_suggestion(toym):
    code, out, err = toym("run", "programs/c00.asm", "--dtype", "fp8", "-f", "json")
    body = json.loads(out)["error"]
    assert code == 2 and (body["key"], body["suggestion"], body["code"]) == ("dtype", "fp64", None)
    assert body["message"] == "invalid value for '--dtype': 'fp8' is not one of 'fp64', 'fp32', 'fp16', 'bf16'"
