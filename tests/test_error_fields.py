"""Errors carry fields callers test and change — the parameter concerned, the value that fixes it, what
went wrong — and their words name parameters as ``Opt`` parts, which the library says by their key and
the CLI by its flag (``cli.vocabulary.flag_words``, the one table from key to flag)."""

import ast
import functools
import pickle
import re
from pathlib import Path

import pytest

from toymachine import parse, simulate
from toymachine.cli.vocabulary import FLAG_OF_KEY, flag_words
from toymachine.errors import ConfigError, Location, MachineLimitError, Opt
from toymachine.experiments.parallel import run_points
from toymachine.limits import LIMITS
from toymachine.machine import resolve_machine


def test_a_register_beyond_the_machine_names_the_option_and_the_count():
    with pytest.raises(MachineLimitError) as info:
        simulate(parse("LOAD x[0], R0\nLOAD x[1], R4\n"), resolve_machine("toy3"))
    err = info.value
    assert (err.key, err.suggestion) == ("registers", 5)
    assert err.hint == "use registers = 5 or a machine file with more registers"
    assert err.hint_in(flag_words) == "use --registers 5 or a machine file with more registers"
    err.suggestion, err.hint = None, "reuse a register"  # a caller changes the fix, not the words
    assert err.hint == "reuse a register" and "reuse a register" in err.render()


def test_library_errors_about_an_option_carry_its_key():
    with pytest.raises(ConfigError) as info:
        run_points(print, [()], jobs=0)
    assert info.value.key == "jobs" and info.value.message == "jobs must be at least 1, got 0"
    assert info.value.text_in(flag_words) == "--jobs must be at least 1, got 0"


def test_the_cli_says_each_parameter_as_its_flag_and_the_library_as_its_key():
    err = ConfigError(("blocks need 90 words; ", Opt("sram"), " is 40"), key="sram", loc=Location.of_option("sram"),
                      hint=("use ", Opt("block_m", 3), " ", Opt("block_n", 4), ", ", Opt("causal", False), " or ",
                            Opt("sram", 90)))
    assert err.render() == ("error: blocks need 90 words; sram is 40\n  --> sram\n"
                            "  = hint: use block_m = 3 block_n = 4, causal = False or sram = 90")
    assert err.render(flag_words) == ("error: blocks need 90 words; --sram is 40\n  --> --sram\n"
                                      "  = hint: use --block-m 3 --block-n 4, --no-causal or --sram 90")
    assert err.to_dict(flag_words)["file"] == "--sram" and err.to_dict()["file"] == "sram"
    assert flag_words("causal", True) == "--causal" and flag_words("registers") == "--registers"


def test_a_run_documents_warnings_in_its_fronts_words(tmp_path, toym):
    """The JSON of a run whose array is never given: the CLI says the option as its flag, the
    library (and ``toym serve``) as its key; the rest of the document is the same."""
    import json

    from toymachine.api import RunOptions, render_run, run_path

    trace = tmp_path / "w.asm"
    trace.write_text("LOAD a[0], R0\nSTORE R0, c[0]\n")
    code, out, _ = toym("run", str(trace), "-f", "json")
    assert code == 0
    cli = json.loads(out)
    lib = json.loads(render_run(run_path(str(trace), RunOptions()), "json"))
    [cw], [lw] = cli.pop("warnings"), lib.pop("warnings")
    assert "--data" in cw["message"] and "--data FILE" in cw["hint"] and "--strict" in cw["hint"]
    assert "--" not in lw["message"] and "data = FILE" in lw["hint"]
    assert cw["message"] == lw["message"].replace("data or", "--data or") and cli == lib


def test_a_yaml_syntax_error_says_so_in_a_field(tmp_path):
    from toymachine.check import load_problem

    bad = tmp_path / "p.yaml"
    bad.write_text("title: t\nexpect:\n  out: a: b\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_problem(bad)
    assert info.value.code == "yaml-syntax" and info.value.hint.startswith("quote an expression")


def test_context_is_shown_after_the_message_and_kept_apart():
    err = ConfigError("no such array 'q'", context="variant 2 of 3")
    assert err.message == "no such array 'q'" and err.text == "no such array 'q' [variant 2 of 3]"
    assert err.render().startswith("error: no such array 'q' [variant 2 of 3]")
    assert err.to_dict()["message"] == err.text


def test_the_fields_survive_a_worker_process():
    err = MachineLimitError("machine has 2 registers", key="registers", suggestion=3,
                            alternative="a machine file with more registers", code="c", context="x")
    back = pickle.loads(pickle.dumps(err))
    assert (back.key, back.suggestion, back.hint, back.code, back.text) == (
        "registers", 3, "use registers = 3 or a machine file with more registers", "c", "machine has 2 registers [x]")
    words = ConfigError((Opt("n", 3), " is too big"), key="n")
    assert pickle.loads(pickle.dumps(words)).text_in(flag_words) == "--n 3 is too big"


# -- library errors say parameters in the library's words ------------------------------------------
PACKAGE = Path(__file__).resolve().parent.parent / "toymachine"
FLAG_TEXT = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
QUOTED = re.compile(r"`[^`]*`")  # another tool's command line, quoted (`pip wheel --no-deps …`)


@functools.cache
def _parsed(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"))


def _library_modules(holding: str) -> list[tuple[Path, ast.AST]]:
    """Every module outside the CLI whose text matches ``holding`` (a pattern), parsed (once for both scans)."""
    return [(path, _parsed(path)) for path in sorted(PACKAGE.rglob("*.py"))
            if path.relative_to(PACKAGE).parts[0] != "cli" and re.search(holding, path.read_text(encoding="utf-8"))]


def _error_expressions(tree: ast.AST) -> list[ast.AST]:
    """Every raised expression, every construction of an error (``DataError(…)`` kept as a warning) and
    every limit check (``LIMITS["sweep_work"].check(work, WHAT)``: its words are the error's)."""
    found: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            found.setdefault(id(node.exc), node.exc)
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            limit_check = name == "check" and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Subscript) and getattr(node.func.value.value, "id", "") == "LIMITS"
            if name.endswith(("Error", "Fault")) or name == "of_option" or limit_check:
                found.setdefault(id(node), node)
    return list(found.values())


@pytest.mark.slow  # parses every library module: about 2 s here
def test_no_library_error_spells_a_flag():
    offenders = []
    seen: set[int] = set()
    for path, tree in _library_modules("--"):
        for expr in _error_expressions(tree):
            for node in ast.walk(expr):
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                        FLAG_TEXT.search(QUOTED.sub("", node.value)):
                    offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value[:60]!r}")
    assert not offenders, "library errors name parameters as Opt(key), never as a flag:\n" + "\n".join(offenders)


def test_the_scan_finds_a_flag_in_a_raise():
    tree = ast.parse('raise ConfigError("--jobs must be at least 1", hint=f"use --jobs {n}")\n'
                     'LIMITS["sweep_work"].check(work, "the --check simulations")')
    texts = {n.value for e in _error_expressions(tree) for n in ast.walk(e)
             if isinstance(n, ast.Constant) and isinstance(n.value, str) and FLAG_TEXT.search(n.value)}
    assert texts == {"--jobs must be at least 1", "use --jobs ", "the --check simulations"}


@pytest.mark.slow  # parses the modules that name parameters
def test_every_parameter_the_library_names_has_a_flag():
    """Errors' parameters (Opt, of_option, key=) and the command lines the library writes (command_line,
    cli_line) use only keys the CLI's vocabulary spells."""
    keys = {lim.key for lim in LIMITS.values() if lim.key}
    for _, tree in _library_modules(r"Opt\(|of_option|key=|command_line\(|cli_line\("):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("command_line", "cli_line"):
                for kw in node.keywords:
                    if kw.arg is None and isinstance(kw.value, ast.Dict):
                        keys |= {k.value for k in kw.value.keys if isinstance(k, ast.Constant)}
                    elif kw.arg not in (None, "with_data"):
                        keys.add(kw.arg)
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in \
                    ("Opt", "of_option") and node.args and isinstance(node.args[0], ast.Constant):
                keys.add(node.args[0].value)
            for kw in getattr(node, "keywords", ()):
                if kw.arg == "key" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    keys.add(kw.value.value)
    assert keys and not sorted(keys - set(FLAG_OF_KEY))
