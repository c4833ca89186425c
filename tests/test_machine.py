"""Machine files: YAML in one place, unknown keys are errors, presets load by name."""

import pytest

from toymachine import ConfigError, load_machine, resolve_machine, simulate
from toymachine.machine import preset_names


def write(tmp_path, text):
    p = tmp_path / "m.yaml"
    p.write_text(text)
    return str(p)


def test_load_machine_file(tmp_path):
    m = load_machine(write(tmp_path, "name: slow\nregisters: 4\nword_bytes: 2\ncycles: {EXP: 4, load: 10}\n"))
    assert (m.name, m.registers, m.word_bytes) == ("slow", 4, 2)
    assert m.op_cycles("EXP") == 4 and m.op_cycles("LOAD") == 10 and m.op_cycles("ADD") == 1
    r = simulate("LOAD x[0], R0\nEXP R0, R1\n", m)
    assert r.cycles == 14 and r.read_bytes == 2


def test_unknown_key_names_file_line_and_key(tmp_path):
    path = write(tmp_path, "name: x\nregister: 3\n")
    with pytest.raises(ConfigError) as e:
        load_machine(path)
    assert "unknown key 'register'" in e.value.message and e.value.loc.line == 2 and e.value.loc.file == path
    assert "did you mean 'registers'" in e.value.hint


@pytest.mark.parametrize("text,needle", [
    ("registers: three\n", "positive integer"),
    ("registers: 0\n", "positive integer"),
    ("dtype: fp8\n", "unknown dtype"),
    ("cycles: {FOO: 1}\n", "unknown instruction 'FOO'"),
    ("cycles: {LOAD: -1}\n", "non-negative"),
    ("- a\n- b\n", "mapping"),
    ("name: [unclosed\n", "not valid YAML"),
])
def test_bad_values(tmp_path, text, needle):
    with pytest.raises(ConfigError) as e:
        load_machine(write(tmp_path, text))
    assert needle in e.value.message


def test_presets():
    assert {"toy", "toy3", "toy4", "toy6"} <= set(preset_names())
    assert resolve_machine("toy3").registers == 3 and resolve_machine(None).registers is None
    with pytest.raises(ConfigError):
        resolve_machine("nosuch")
