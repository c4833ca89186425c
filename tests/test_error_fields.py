"""Errors carry fields callers test and change — the option concerned, the value that fixes it, what
went wrong — and their text is worded from those fields in one place (``errors.option_name``)."""

import pickle

import pytest

from toymachine import parse, simulate
from toymachine.errors import ConfigError, MachineLimitError, option_name
from toymachine.experiments.parallel import run_points
from toymachine.machine import resolve_machine


def test_a_register_beyond_the_machine_names_the_option_and_the_count():
    with pytest.raises(MachineLimitError) as info:
        simulate(parse("LOAD x[0], R0\nLOAD x[1], R4\n"), resolve_machine("toy3"))
    err = info.value
    assert (err.key, err.suggestion) == ("registers", 5)
    assert err.hint == "use --registers 5 or a machine file with more registers"
    err.suggestion, err.hint = None, "reuse a register"  # a caller changes the fix, not the words
    assert err.hint == "reuse a register" and "reuse a register" in err.render()


def test_library_errors_about_an_option_carry_its_key():
    with pytest.raises(ConfigError) as info:
        run_points(print, [()], jobs=0)
    assert info.value.key == "jobs" and info.value.message == "--jobs must be at least 1, got 0"
    assert option_name("block_m") == "--block-m"


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
        "registers", 3, "use --registers 3 or a machine file with more registers", "c", "machine has 2 registers [x]")
