"""One vocabulary of flags: every command's options, walked from the app itself (commands added later
are checked as they land), against the table in toymachine/cli/vocabulary.py and the README."""

import re

import pytest
import typer

from conftest import ROOT
from toymachine.cli import app
from toymachine.cli.vocabulary import (HIDDEN_ALIASES, MACHINE_COMMANDS, VOCABULARY, command_options, flag_of,
                                       vocabulary_report)
from toymachine.gen.registry import generator_names, get_generator

ROOT_COMMAND = typer.main.get_command(app)
OPTIONS = list(command_options(ROOT_COMMAND))


def _commands() -> set[str]:
    return {path for path, _ in OPTIONS}


def test_the_walk_sees_every_command():
    assert {"run", "isa", "sweep", "numerics", "verify-gpu", "gen matmul", "gen softmax", "gen variance",
            "gen attention", "gen attention-tile", "flags"} <= _commands()


@pytest.mark.parametrize("path,option", OPTIONS, ids=[f"{p or 'toym'}:{o.opts[0]}" for p, o in OPTIONS])
def test_every_option_is_in_the_vocabulary(path, option):
    """Known name, the vocabulary's short form (no other), and a boolean pair spelled as the table does."""
    longs = [o for o in option.opts if o.startswith("--")]
    shorts = [o for o in option.opts if not o.startswith("--")]
    if option.hidden:
        assert set(longs) <= set(HIDDEN_ALIASES), f"{path}: hidden {longs} is not a listed old spelling"
        return
    for name in longs + list(option.secondary_opts):
        f = flag_of(name)
        assert f is not None, f"`toym {path} {name}` is not in the vocabulary (toymachine/cli/vocabulary.py): " \
                              "use the name the table gives that thing, or add a row for a new one"
        if option.secondary_opts:
            assert f.name == f"{longs[0]}/{option.secondary_opts[0]}", f"{path}: {name} is spelled {f.name}"
        assert all(s == f.short for s in shorts), f"{path}: {name} takes {shorts}, the vocabulary says {f.short}"


def test_short_forms_mean_one_thing():
    seen: dict[str, str] = {}
    for path, option in OPTIONS:
        for s in (o for o in option.opts if not o.startswith("--")):
            long = next(o for o in option.opts if o.startswith("--"))
            assert seen.setdefault(s, long) == long, f"{s} is {seen[s]} and {long} ({path})"
    assert len({f.short for f in VOCABULARY if f.short}) == len([f for f in VOCABULARY if f.short])


def test_sweep_parameters_are_in_the_vocabulary():
    for name in generator_names():
        for p in get_generator(name).params:
            assert flag_of(p.flag) is not None, f"sweep {name} {p.flag} is not in the vocabulary"


def test_every_command_that_prints_a_format_can_write_a_file():
    by_command: dict[str, set[str]] = {}
    for path, option in OPTIONS:
        by_command.setdefault(path, set()).update(option.opts)
    for path, opts in by_command.items():
        if "--format" in opts:
            assert {"-o", "--output", "-f"} <= opts, path


def test_commands_that_cost_or_size_take_machine():
    by_command: dict[str, set[str]] = {}
    for path, option in OPTIONS:
        by_command.setdefault(path, set()).update(option.opts)
    present = [c for c in MACHINE_COMMANDS if c in by_command]
    assert {"run", "sweep", "gen matmul", "gen attention", "gen attention-tile"} <= set(present)
    for c in present:
        assert {"--machine", "-m"} <= by_command[c], f"toym {c} costs or sizes: it needs --machine/-m"


def test_version_and_completion(toym):
    for flag in ("-V", "--version"):
        code, out, _ = toym(flag)
        assert code == 0 and re.fullmatch(r"toym \d+\.\d+\.\d+\S*\n", out)
    root = {o for _, opt in OPTIONS if _ == "" for o in opt.opts}
    assert {"--install-completion", "--show-completion"} <= root


def test_docs_flag_table_is_the_vocabulary():
    """The docs' flags page (docs/reference/flags.md, made at build time by docs/hooks.py) is `toym flags`."""
    import sys

    from toymachine.render import render_report

    sys.path.insert(0, str(ROOT / "docs"))
    from docgen.reference import flags_page

    want = render_report(vocabulary_report(ROOT_COMMAND), "markdown").strip()
    assert want.split("\n", 1)[1].strip() in flags_page()


def test_old_spellings_are_hidden_and_listed():
    hidden = {o for _, opt in OPTIONS if opt.hidden for o in opt.opts}
    assert hidden == set(HIDDEN_ALIASES)
    assert all(flag_of(new) is not None for new in HIDDEN_ALIASES.values())
