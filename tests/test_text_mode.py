"""Text mode (sim.text): traces streamed in chunks, LOAD/STORE lines run as templates whose index
comes from the chunk's index stream. Every way of running a trace gives the same result: the
parsed Program, the streamed text in chunks of any size, with and without step rows."""

import io
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import AsmError, RuntimeFault, parse, simulate
from toymachine.asm import source
from toymachine.asm.source import Chunks, binary_chunks
from toymachine.sim import text as text_mode


def _same(a, b):
    da, db = a.to_dict(steps=False), b.to_dict(steps=False)
    da["file"] = db["file"] = None
    assert da == db


def _tiny_chunks(monkeypatch, size):
    monkeypatch.setattr(source, "CHUNK_CHARS", size)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", size)
    monkeypatch.setattr(text_mode, "MIN_CHUNK_FOR_TEMPLATES", 1)  # tiny chunks may switch too


def _modes(monkeypatch):
    """Record which mode ran each chunk: 'L' (lines) or 'T' (templates)."""
    log = []
    exact, templates = text_mode._run_exact, text_mode._run_templates

    def run_exact(*a):
        log.append("L")
        return exact(*a)

    def run_templates(*a):
        log.append("T")
        return templates(*a)

    monkeypatch.setattr(text_mode, "_run_exact", run_exact)
    monkeypatch.setattr(text_mode, "_run_templates", run_templates)
    return log


@st.composite
def traces(draw):
    """Small traces mixing word LOAD/STORE (1-D and 2-D), ALU ops, comments with indices, blank
    lines and directives."""
    lines = [".data w = [[1.5, -2], [0.25, 3]]", ".array y[6] = 0.5", "LOAD x[0], R0", "LOAD x[1], R1"]
    for _ in range(draw(st.integers(1, 40))):
        choice = draw(st.integers(0, 8))
        i, j = draw(st.integers(0, 5)), draw(st.integers(0, 1))
        r, s, d = (draw(st.integers(0, 3)) for _ in range(3))
        lines.append([
            f"LOAD x[{i}], R{r}", f"STORE R{r}, z[{i}]", f"LOAD w[{j}][{i % 2}], R{r}", f"LOAD y[{i}], R{r}",
            f"ADD R{r}, R{s}, R{d}", f"MUL R{r}, R{s}, R{d}", f"MAX R{r}, R{s}, R{d}", f"MOV R{r}, R{d}",
            f"; a comment naming x[{i}] and w[{j}][1]",
        ][choice] if choice < 9 else "")
        if draw(st.booleans()):
            lines.append("")
    lines += ["STORE R0, z[5]", "STORE R1, v[0][1]"]
    return "\n".join(lines) + "\n"


def _outcome(run):
    """The result as JSON (no file name, no steps), or the error a run raised as text."""
    try:
        d = run().to_dict(steps=False)
    except (AsmError, RuntimeFault) as err:
        return type(err).__name__ + ": " + str(err)
    d["file"] = None
    return d


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(text=traces(), chunk=st.integers(8, 200), fill=st.booleans())
def test_every_path_agrees(text, chunk, fill):
    if fill:  # most traces run to the end; the others read a register never written (an error)
        text = text.replace("LOAD x[1], R1\n", "LOAD x[1], R1\nLOAD x[2], R2\nLOAD x[3], R3\n", 1)
    program = _outcome(lambda: simulate(parse(text), steps=False))
    old = (source.CHUNK_CHARS, source.FIRST_CHUNK_CHARS, text_mode.MIN_CHUNK_FOR_TEMPLATES)
    source.CHUNK_CHARS = source.FIRST_CHUNK_CHARS = chunk
    text_mode.MIN_CHUNK_FOR_TEMPLATES = 1
    try:
        others = [_outcome(lambda: simulate(io.StringIO(text), steps=False)),
                  _outcome(lambda: simulate(io.StringIO(text), steps=True)),
                  _outcome(lambda: simulate(Chunks(binary_chunks(io.BytesIO(text.encode()), "<input>")), steps=False)),
                  _outcome(lambda: simulate(iter(text.splitlines()), steps=False))]
    finally:
        source.CHUNK_CHARS, source.FIRST_CHUNK_CHARS, text_mode.MIN_CHUNK_FOR_TEMPLATES = old
    assert others == [program] * 4
    if fill:
        assert isinstance(program, dict), program
        recorded = simulate(io.StringIO(text), steps=True)
        assert [s.step for s in recorded.steps] == list(range(1, recorded.instructions + 1))


def test_templates_take_their_own_index(monkeypatch):
    _tiny_chunks(monkeypatch, 64)
    modes = _modes(monkeypatch)
    n = 500
    text = "".join(f"LOAD x[{i}], R0\nADD R0, R0, R1\nSTORE R1, y[{i}]\n; y[{i}] = 2·x[{i}]\n" for i in range(n))
    r = simulate(io.StringIO(text), steps=False)
    assert r.memory["y"] == [2 * v for v in r.memory["x"]]
    assert (r.dram_reads, r.dram_writes, r.instructions) == (n, n, 3 * n)
    assert modes.count("T") > modes.count("L")  # every address new: templates ran most chunks


def _matmul_text(n):
    out = []
    for i in range(n):
        for j in range(n):
            out += [f"LOAD a[{i}][0], R0", f"LOAD b[0][{j}], R1", "MAC_Z R0, R1, R2"]
            for k in range(1, n):
                out += [f"LOAD a[{i}][{k}], R0", f"LOAD b[{k}][{j}], R1", "MAC R0, R1, R2, R2"]
            out.append(f"STORE R2, c[{i}][{j}]")
    return "\n".join(out) + "\n"


def test_repeating_addresses_stay_on_lines(monkeypatch):
    """A matmul's first rows are all new lines, but they come back: lines mode keeps them (the
    choice only changes speed; the result is the same either way)."""
    monkeypatch.setattr(source, "CHUNK_CHARS", 16384)  # a chunk holds a few rows (n = 12: 444 lines)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", 4096)
    monkeypatch.setattr(text_mode, "MIN_CHUNK_FOR_TEMPLATES", 64)
    modes = _modes(monkeypatch)
    text = _matmul_text(12)
    r = simulate(io.StringIO(text), steps=False)
    assert set(modes) == {"L"}, modes
    monkeypatch.setattr(text_mode, "REPEATING_FOR_LINES", 2.0)  # templates wherever lines are new
    del modes[:]
    t = simulate(io.StringIO(text), steps=False)
    assert "T" in modes
    _same(r, t)


def test_step_rows_quote_each_line_after_templates_take_over():
    text = "".join(f"LOAD x[{i}], R0\nSTORE R0, y[{i}]\n" for i in range(300))
    r = simulate(io.StringIO(text), steps=True)
    assert r.steps[-1].instruction == "STORE R0, y[299]" and r.steps[-1].step == 600
    _same(r, simulate(io.StringIO(text)))  # default: rows dropped after 200 steps, same counts


def test_a_template_index_outside_a_declared_array_is_located(monkeypatch):
    _tiny_chunks(monkeypatch, 32)
    text = ".array x[4]\n" + "".join(f"LOAD x[{i}], R0\n" for i in range(4)) + "; fine so far\nLOAD x[4], R0\n"
    with pytest.raises(RuntimeFault) as exc:
        simulate(io.StringIO(text), steps=False)
    assert exc.value.loc.line == 7 and exc.value.loc.col == 6 and "index 4 is outside 'x'" in str(exc.value)


def test_an_error_after_many_good_lines_names_its_line(monkeypatch):
    _tiny_chunks(monkeypatch, 50)
    text = "".join(f"LOAD x[{i}], R0\n" for i in range(100)) + "STORE R3, y[0]\n"
    with pytest.raises(RuntimeFault, match="R3 is read before") as exc:
        simulate(io.StringIO(text), steps=False)
    assert exc.value.loc.line == 101 and exc.value.loc.source_line == "STORE R3, y[0]"
    with pytest.raises(AsmError) as exc:
        simulate(io.StringIO(text.replace("STORE R3, y[0]", "LOAD x[3] R0")), steps=False)
    assert exc.value.loc.line == 101


def test_an_alarm_from_a_template_quotes_its_own_line():
    text = ".array x[3] = nan\n" + "".join(f"LOAD x[{i}], R0 ; the {i}th\n" for i in range(3))
    r = simulate(io.StringIO(text), steps=False)  # a NaN fill: the first read raises the NaN alarm
    assert [(a.kind, a.step, a.line, a.instruction) for a in r.alarms] == [("nan", 1, 2, "LOAD x[0], R0")]
    text = "".join(f"LOAD x[{i}], R{i}\n" for i in range(2)) + "LOAD y[7], R2\nDIV R0, R2, R3\nSTORE R3, z[3]\n"
    r = simulate(io.StringIO(text.replace("LOAD y[7], R2", "SUB R1, R1, R2")), steps=False)
    assert [(a.kind, a.line, a.instruction) for a in r.alarms] == [("div-by-zero", 4, "DIV R0, R2, R3")]


def test_word_then_block_access_in_one_stream(monkeypatch):
    """A block access turns an array dense mid-stream: word accesses before and after agree."""
    _tiny_chunks(monkeypatch, 40)
    text = (".array p[2][2]\n.array q[2][2]\n"
            + "".join(f"LOAD a[{i}], R0\nSTORE R0, q[{i // 2}][{i % 2}]\n" for i in range(4))
            + "LOAD q[0:2, :], T0\nSTORE T0, p[0:2, :]\nLOAD q[1][1], R1\nSTORE R1, s[0]\n")
    program = simulate(parse(text), steps=False)
    streamed = simulate(io.StringIO(text), steps=False)
    _same(program, streamed)
    assert streamed.memory["s"] == [streamed.memory["a"][3]]
    assert math.isclose(streamed.memory["p"][1][1], streamed.memory["a"][3])


def test_stdin_errors_are_located():
    with pytest.raises(AsmError, match="NUL") as exc:
        simulate(Chunks(binary_chunks(io.BytesIO(b"LOAD x[0], R0\nLOAD x\x00[1], R0\n"))), steps=False)
    assert (exc.value.loc.line, exc.value.loc.col) == (2, 7)
    with pytest.raises(AsmError, match="not valid UTF-8") as exc:
        simulate(Chunks(binary_chunks(io.BytesIO(b"LOAD x[0], R0\nMOV R0, R1 ; caf\xe9\n"))), steps=False)
    assert (exc.value.loc.line, exc.value.loc.col) == (2, 17)


@pytest.mark.parametrize("name", ["fa2_n5_d3.asm", "fa1_n5_d3.asm"])
def test_paper_rule_counts_the_same_streamed_or_parsed(name):
    """Under sram_rule paper a register counts if any LOAD/STORE of a 2-D block names it — also when
    it is FILLed before that line streams past (O_i in FA2)."""
    from conftest import PROGRAMS

    from toymachine import resolve_machine

    machine = resolve_machine("toysram-paper")
    text = (PROGRAMS / name).read_text()
    _same(simulate(parse(text), machine, steps=False), simulate(io.StringIO(text), machine, steps=False))


@pytest.mark.parametrize("text", [
    ".data x = [1, 2]\nLOAD x[0], R0\n.data x = [3, 4]\nSTORE R0, y[0]\n",   # again after code
    ".data x = [1, 2]\n.array x[4]\nLOAD x[0], R0\n",                        # twice before code
    ".data x = [1, 2]\n  .data x = [3]\n",                                    # directives only
    ".array w[2][2]\n; between\n.array w[2][2]\nLOAD w[1][1], R0\n",
])
def test_an_array_declared_twice_is_the_same_error_streamed_and_parsed(monkeypatch, text):
    """A second .data/.array for one array: the parser's error (line, message) whether the trace is
    parsed whole or streamed, in chunks of any size."""
    def located(run):
        try:
            run()
        except AsmError as err:
            return str(err), err.loc.line, err.loc.col
        return None

    parsed = located(lambda: simulate(parse(text), steps=False))
    assert parsed is not None and "declared twice" in parsed[0]
    for chunk in (None, 1, 7):
        if chunk:
            _tiny_chunks(monkeypatch, chunk)
        assert located(lambda: simulate(io.StringIO(text), steps=False)) == parsed
