"""One vocabulary of flags: every command's options, walked from the app itself (commands added later
are checked as they land), against the table in toymachine/cli/vocabulary.py and the README."""

import json
import re
import sys

import pytest
import typer
from conftest import ROOT

from toymachine.cli import app
from toymachine.cli.vocabulary import (
    HIDDEN_ALIASES,
    MACHINE_COMMANDS,
    VOCABULARY,
    command_options,
    flag_commands,
    flag_of,
    flag_words,
    short_flag,
    vocabulary_report,
)
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
        # both ways: the short form is there exactly where the table says it is
        assert bool(shorts) == f.has_short_on(path), \
            f"`toym {path}` {name}: the table says short form {f.short!r} " + \
            ("only on " + ", ".join(f.short_on) if f.short_on else "everywhere") + f", the command has {shorts}"


# a value each short form's option accepts, to parse it for real
_SAMPLE = {"-m": "toy", "-f": "json", "-o": "out.txt", "-r": "4", "-d": "data.yaml", "-j": "1", "-p": "p.yaml"}


def _commands_by_path():
    out = {}

    def walk(cmd, path):
        out[path] = cmd
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(ROOT_COMMAND, "")
    return out


COMMANDS = _commands_by_path()


def test_the_table_names_only_flags_that_exist():
    """Table → commands: every row's flag is taken by some command (or a sweep generator), and every
    command a row's short form is limited to takes that flag."""
    where = flag_commands(ROOT_COMMAND)
    for f in VOCABULARY:
        if f.name == "--help":
            continue
        assert where.get(f.name), f"{f.name} is in the vocabulary but no command takes it"
        assert set(f.short_on) <= set(where[f.name]), f"{f.name}: short form on {f.short_on}, flag on {where[f.name]}"


@pytest.mark.parametrize("path", sorted(p for p in COMMANDS if p))
def test_every_listed_short_form_parses(path):
    """Each short form the table gives a command is parsed by it, into the same option as the long form."""
    cmd = COMMANDS[path]
    for option in cmd.params:
        if getattr(option, "param_type_name", "") != "option" or option.hidden:
            continue
        f = flag_of(next(o for o in option.opts if o.startswith("--")))
        if f is None or not f.has_short_on(path) or f.short == "-h":
            continue
        value = _SAMPLE[f.short]
        ctx = cmd.make_context(path.split()[-1], [f.short, value], resilient_parsing=True)
        if ctx.params[option.name] is None and option.default is not None:  # its own choices (problem show)
            value = str(getattr(option.default, "value", option.default))
            ctx = cmd.make_context(path.split()[-1], [f.short, value], resilient_parsing=True)
        assert str(ctx.params[option.name]).endswith(value), f"toym {path} {f.short} {value}: {ctx.params}"


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_help_short_form_everywhere(toym, path):
    code, out, _ = toym(*path.split(), "-h")
    assert code == 0 and "Usage" in out, path


@pytest.mark.slow
def test_sweep_takes_its_parameters_short_forms(toym):
    """The table lists ``sweep matmul`` under --registers/-r: ``-r 3..6`` works there, as ``--registers 3..6``."""
    from toymachine.cli.sweep import _grid_from_args

    checked = 0
    for name in generator_names():
        spec = get_generator(name)
        for p in spec.params:
            f = flag_of(flag_words(p.name))
            if f is not None and f.has_short_on(f"sweep {name}"):
                assert _grid_from_args(spec, [f.short, "3..4"]) == {p.name: "3..4"}
                assert _grid_from_args(spec, [f.short + "5"]) == {p.name: "5"}
                checked += 1
    assert checked >= 2  # matmul's and attention's --registers
    long = toym("sweep", "matmul", "--n", "2", "--registers", "3..6", "-f", "csv")
    short = toym("sweep", "matmul", "--n", "2", "-r", "3..6", "-f", "csv")
    assert long[0] == 0 and short == long and len(long[1].splitlines()) == 1 + 4


@pytest.mark.slow
def test_sweep_short_forms_of_other_things_are_refused_with_the_meant_flag(toym):
    code, _, err = toym("sweep", "attention", "--n", "4", "-d", "2")
    assert code == 2 and "-d is --data" in err and "did you mean --d (head dimension)?" in err
    code, _, err = toym("sweep", "softmax", "--n", "4", "-r", "3")
    assert code == 2 and "-r is --registers, which sweep softmax does not take" in err and "--algo" in err
    assert short_flag("-r").name == "--registers" and short_flag("-x") is None
    code, _, err = toym("sweep", "matmul", "--n", "2", "--m", "toy3")
    assert code == 2 and "did you mean -m (--machine)?" in err and "write -m toy3" in err
    code, out, _ = toym("sweep", "matmul", "--n", "2", "--m", "none,3", "-f", "csv")
    assert code == 0 and len(out.splitlines()) == 3
    code, _, err = toym("sweep", "matmul", "-f", "csv", "--n", "2", "--n", "3")  # located on the command line
    assert code == 2 and "--n is given twice" in err and "toym sweep matmul -f csv --n 2 --n 3" in err
    assert err.splitlines()[4].index("^") == err.splitlines()[3].rindex("--n")


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
            assert flag_of(flag_words(p.name)) is not None, f"sweep {name} {flag_words(p.name)} is not in the vocabulary"


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


def _generated_block(path, name: str) -> str:
    text = path.read_text(encoding="utf-8")
    start = text.index(f"<!-- {name}:begin -->") + len(f"<!-- {name}:begin -->")
    return text[start:text.index(f"<!-- {name}:end -->")].strip()


def test_docs_flag_table_is_the_vocabulary():
    """docs/reference/vocabulary.md holds `toym flags -f markdown` (the README's table moved there)."""
    from toymachine.render import render_report

    want = render_report(vocabulary_report(ROOT_COMMAND), "markdown").strip()
    assert _generated_block(ROOT / "docs" / "reference" / "vocabulary.md", "flags") == want, \
        "regenerate with `toym flags --format markdown`"


def test_old_spellings_are_hidden_and_listed():
    hidden = {o for _, opt in OPTIONS if opt.hidden for o in opt.opts}
    assert hidden == set(HIDDEN_ALIASES)
    assert all(flag_of(new) is not None for new in HIDDEN_ALIASES.values())


# -- look-alikes and unknown options: toym's error style, a hint from the vocabulary ------------------------
def _main(capsys, *args):
    """The installed entry point (``toym``): exit status, stdout, stderr."""
    from toymachine.cli import main

    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def _caret_under(err: str, word: str) -> bool:
    """The error shows the command line and a caret under ``word``."""
    lines = err.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith(" 1 | toym "):
            col = lines[i + 1].index("^")
            return line[col:col + len(word)] == word and lines[i + 1].count("^") == len(word)
    return False


@pytest.mark.parametrize("args,says,under", [
    (("gen", "matmul", "-m", "4", "--n", "2"), "-m is --machine; did you mean --m (matmul: rows of A and C)?", "-m"),
    (("optimize", "matmul", "-m", "3", "--n", "2"), "-m is --machine; did you mean --m", "-m"),
    (("sweep", "matmul", "-m", "2,4", "--n", "2"), "-m is --machine; did you mean --m", "-m"),
    (("gen", "attention", "--n", "4", "-d", "2"), "-d is --data on run only; did you mean --d (head dimension)?",
     "-d"),
    (("gen", "softmax", "--n", "4", "-d"), "toym gen softmax has no option -d: -d is --data on run only", "-d"),
    (("run", "programs/c00.asm", "--m", "toy3"), "toym run has no option --m; did you mean -m (--machine)?", "--m"),
    (("run", "programs/c00.asm", "--regsters", "3"), "toym run has no option --regsters; did you mean --registers?",
     "--regsters"),
    (("systolic", "-m", "4"), "-m is --machine, which toym systolic does not take; did you mean --m", "-m"),
    (("rnu",), "no such command 'rnu'; did you mean 'run'?", "rnu"),
])
def test_lookalikes_are_named(capsys, toym, args, says, under):
    """Through the entry point and through the app itself (typer's standalone mode) alike."""
    for code, out, err in (_main(capsys, *args), toym(*args)):
        assert code == 2 and says in err and "Traceback" not in err and "No such option" not in err, err
        assert err.startswith("error: ") and "  --> command line:1:" in err and "= hint: " in err
        assert _caret_under(err, under), err
        assert out == ""


def test_a_lookalike_names_the_value_it_meant(capsys):
    code, _, err = _main(capsys, "gen", "matmul", "--m", "toy3", "--n", "2")
    assert code == 2 and "did you mean -m toy3?" in err and _caret_under(err, "toy3")
    code, _, err = _main(capsys, "gen", "matmul", "-m", "4", "--n", "2")
    assert "hint: write --m 4; -m is --machine" in err


def test_a_bad_choice_gets_the_closest(capsys):
    code, out, err = _main(capsys, "run", "programs/c00.asm", "-f", "jsn")
    assert code == 2 and "'jsn' is not one of" in err and "hint: did you mean 'json'?" in err
    assert "Value error" not in err and _caret_under(err, "jsn")
    code, _, err = _main(capsys, "sweep", "matmul", "--executor=dsk")
    assert code == 2 and "did you mean 'dask'?" in err


def test_a_file_named_like_a_number_is_still_a_machine(tmp_path, monkeypatch, toym):
    """-m 4 is a look-alike only when no file 4 exists: a machine file may be named anything."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "4").write_text("registers: 6\n", encoding="utf-8")
    code, out, err = toym("gen", "matmul", "--n", "2", "-m", "4", "-o", "mm.asm")
    assert "did you mean --m" not in err and (code == 0 or "machine" in err)


def test_unknown_options_name_the_commands_that_take_them(capsys):
    code, _, err = _main(capsys, "gen", "softmax", "--n", "4", "--d", "2")
    assert code == 2 and "toym gen softmax has no option --d" in err
    assert "--d (head dimension) is an option of" in err and "gen attention" in err
    code, _, err = _main(capsys, "gen", "softmax", "--n", "4", "-r", "2")
    assert "-r is --registers (register count R), an option of run" in err


def test_usage_errors_print_the_json_error_object(capsys, toym):
    for code, out, err in (_main(capsys, "gen", "matmul", "-m", "4", "--n", "2", "-o", "x.asm", "-f", "json"),
                           _main(capsys, "run", "programs/c00.asm", "--regsters", "3", "-f", "json")):
        obj = json.loads(out)["error"]
        assert code == 2 and obj["kind"] == "config" and obj["file"] == "command line" and obj["hint"]
        assert obj["message"] in err


def test_a_hostile_command_line_is_shown_bounded_and_escaped(capsys):
    huge = "x" * 100_000
    code, _, err = _main(capsys, "run", "programs/c00.asm", *(["--registers", "3"] * 50), "--bogus\n" + huge, "-f")
    assert code == 2 and len(err) < 2000 and "\n" + huge[:50] not in err and "…" in err


# -- hints name flags the command that prints them has ------------------------------------------------------
def _flags_of(path: str) -> set[str]:
    """Every spelling ``toym PATH`` takes (``sweep GEN``: the sweep's and the generator's)."""
    head, _, gen = path.partition(" ")
    cmd = COMMANDS["sweep" if head == "sweep" else path]
    out = {o for p in cmd.params if getattr(p, "param_type_name", "") == "option"
           for o in list(p.opts) + list(p.secondary_opts)}
    if head == "sweep" and gen:
        out |= {flag_words(p.name) for p in get_generator(gen).params}
    return out


def _hints(text: str) -> list[str]:
    """Every ``= hint: …`` in a command's output (its error, or a grade's run check), joined across the
    grade table's wrapped lines."""
    return [m.strip() for m in re.findall(r"= hint: (.*)", text)]


_QUALIFIED = re.compile(r"`?toym [a-z][a-z-]*(?: [a-z][a-z-]*)?[^;()`]*`?")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]*[a-z]|(?<![\w-])--[a-z]\b")


def flags_named(text: str | None) -> list[str]:
    """The ``--flags`` a hint tells the user to give *to the command that printed it*: those not in
    a ``toym COMMAND …`` of their own (``use --registers 6`` names one; ``toym gen matmul --n 4``
    none). Each command's hints may name only its own."""
    if not text:
        return []
    return _FLAG.findall(_QUALIFIED.sub(" ", text))


def test_the_flags_a_hint_names():
    assert flags_named("use --registers 6 or a machine file with more registers") == ["--registers"]
    assert flags_named("e.g. toym sweep matmul --registers 3..6") == []
    assert flags_named("use smaller blocks (toym gen attention-tile --block-m/--block-n, or --sram 5)") == []
    assert flags_named("--m, --d and --no-causal; not a--b") == ["--m", "--d", "--no-causal"]


@pytest.fixture
def traces(tmp_path):
    (tmp_path / "r5.asm").write_text("LOAD x[0], R5\nSTORE R5, out[0]\n", encoding="utf-8")
    (tmp_path / "two.asm").write_text("LOAD x[0], R0\nLOAD x[1], R1\nADD R0, R1, R2\nSTORE R2, out[0]\n",
                                      encoding="utf-8")
    (tmp_path / "p.yaml").write_text("title: t\ninputs:\n  x: {shape: [1]}\nexpect:\n  out: x\nregisters: 4\n",
                                     encoding="utf-8")
    return tmp_path


# (the command, its arguments, what its error says): each raises an error (or grades a run) whose hint
# names flags
_KNOWN = [
    ("check", ["{t}/r5.asm", "-p", "{t}/p.yaml"], "machine has 4 registers"),  # check has no --registers
    ("run", ["{t}/r5.asm", "-r", "4"], "machine has 4 registers"),
    ("analyze", ["{t}/two.asm", "-r", "1"], "cannot hold them"),
    ("run", [str(ROOT / "programs" / "fa1_n5_d3.asm"), "-m", "toysram"], "SRAM overflow"),  # gen's flags, as gen's
    ("check", [str(ROOT / "programs" / "fa1_n5_d3.asm"), "-p", str(ROOT / "examples" / "problems" / "fa1_tile.yaml"),
               "-m", "toysram"], "SRAM overflow"),
    ("sweep softmax", ["--n"], "--n needs values"),
    ("gen attention", ["--n", "4", "--d", "2", "--registers", "3"], "needs"),
    ("sweep attention", ["--n", "4", "--d", "2", "--registers", "3", "--strict"], "needs"),
    ("optimize matmul", ["--n", "2", "--registers", "1"], "register"),
]


@pytest.mark.parametrize("path,args,says", _KNOWN, ids=[f"{p}:{i}" for i, (p, _, _) in enumerate(_KNOWN)])
def test_known_hints_name_the_commands_own_flags(toym, traces, path, args, says):
    code, out, err = toym(*path.split(), *(a.format(t=traces) for a in args))
    hints = _hints(out + err)
    assert code != 0 and hints and says in out + err, (out, err)
    for hint in hints:
        foreign = set(flags_named(hint)) - _flags_of(path)
        assert not foreign, f"`toym {path}` prints a hint naming {sorted(foreign)}, which it does not take: {hint}"


def test_check_says_what_fixes_the_trace(toym, traces):
    code, out, _ = toym("check", traces / "r5.asm", "-p", traces / "p.yaml")
    assert code == 1 and "the exercise's machine has 4 registers (R0–R3)" in " ".join(out.split())


def test_command_modules_hints_name_their_commands_flags():
    """Statically: every hint string written in a command's module names only flags of the commands that
    module defines (a dynamic part, a flag computed from the generator, is not seen here)."""
    import ast
    import inspect

    by_module: dict[str, set[str]] = {}
    for path, cmd in COMMANDS.items():
        callback = getattr(cmd, "callback", None)
        if path and callback is not None and not getattr(cmd, "commands", None):
            flags = _flags_of(path)
            if path == "sweep":
                flags |= {flag_words(p.name) for g in generator_names() for p in get_generator(g).params}
            by_module.setdefault(inspect.getmodule(callback).__file__, set()).update(flags)
    assert len(by_module) >= 8
    for file, flags in by_module.items():
        tree = ast.parse(open(file, encoding="utf-8").read())
        for node in ast.walk(tree):
            for kw in getattr(node, "keywords", []) if isinstance(node, ast.Call) else []:
                if kw.arg != "hint":
                    continue
                text = " ".join(n.value for n in ast.walk(kw.value) if isinstance(n, ast.Constant)
                                and isinstance(n.value, str))
                foreign = set(flags_named(text)) - flags
                assert not foreign, f"{file}:{node.lineno}: a hint names {sorted(foreign)}: {text}"


def test_docs_error_examples_are_what_toym_prints(capsys, monkeypatch):
    """docs/reference/vocabulary.md's `<!-- toym-error -->` blocks are their commands' stderr (exit 2)."""
    import shlex

    sys.path.insert(0, str(ROOT / "docs"))
    from docgen.pages import steps

    monkeypatch.chdir(ROOT)
    page = (ROOT / "docs" / "reference" / "vocabulary.md").read_text(encoding="utf-8")
    blocks = [(s.text, s.expected) for s in steps(page) if s.kind == "error"]
    assert len(blocks) >= 3
    for args, shown in blocks:
        code, _, err = _main(capsys, *shlex.split(args))
        assert code == 2 and err.rstrip() == shown.rstrip(), f"toym {args}"


@pytest.mark.slow
def test_no_command_line_gets_clicks_raw_message():
    """Any mix of look-alikes, unknown options and odd values: exit 0, 1 or 2, and an error is toym's —
    never click's "Usage: … Try 'toym -h'", never a traceback."""
    import contextlib
    import io
    import os
    import tempfile

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from toymachine.cli import main

    heads = st.sampled_from([["gen", "softmax", "--n", "3"], ["run", str(ROOT / "programs" / "c00.asm")],
                             ["sweep", "softmax", "--n", "3"], ["gen", "matmul", "--n", "2"], ["flags"], []])
    words = st.sampled_from(["-m", "-d", "-r", "-x", "-Z", "--d", "--m", "--bogus", "--regsters", "--n", "-f",
                             "json", "4", "toy3", "x", "é", "a\nb", "--", "-", "-r3", "--n=2", "rnu"])

    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
    @given(heads, st.lists(words, max_size=3))
    def check(head, tail):
        out, err = io.StringIO(), io.StringIO()
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cwd = os.getcwd()
            os.chdir(d)
            try:
                with pytest.raises(SystemExit) as exc:
                    main(head + tail)
            finally:
                os.chdir(cwd)
        code, text = exc.value.code, err.getvalue()
        assert code in (0, 1, 2), (head + tail, code, text)
        assert "Traceback" not in text and "Try 'toym" not in text and "No such option" not in text, (head + tail, text)
        if code == 2 and (head + tail):
            assert "error: " in text, (head + tail, text)

    check()
