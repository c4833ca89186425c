"""The compiled path's line pieces (sim.compiler.lines): lines mode's long segments run as compiled pieces. The oracle is the interpreter
loop itself (pieces switched off): every result, alarm, error and counter must be the same, on random
traces, on traces with a slow path somewhere (a division by zero, an overflow, an empty register,
a NaN input, a tile instruction) and on traces with one line broken."""

import importlib
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toymachine import AsmError, NumericsError, RuntimeFault, simulate
from toymachine.asm import source

compiled = importlib.import_module("toymachine.sim.compiled")
line_blocks = importlib.import_module("toymachine.sim.compiler.lines")
text_mode = importlib.import_module("toymachine.sim.text")
loop = importlib.import_module("toymachine.sim.loop")


def _outcome(text, **kw):
    """The result as JSON (no steps), or the error a run raised as text with its location."""
    try:
        d = simulate(io.StringIO(text), steps=False, **kw).to_dict(steps=False)
    except (AsmError, RuntimeFault, NumericsError) as err:
        return type(err).__name__, str(err), (err.loc.line, err.loc.col) if getattr(err, "loc", None) else None
    d["file"] = None
    return d


def _in_pieces(rec) -> int:
    """The lines of the recorded runs that compiled pieces ran (the door's record)."""
    return rec.stats.pieces + rec.stats.periodic


@pytest.fixture
def pieces(monkeypatch):
    """Lines mode only, small chunks, pieces of ``PIECE`` lines whenever a segment can take them;
    yields the door's record of the runs made in the test (``compiled.recording``)."""
    monkeypatch.setattr(source, "CHUNK_CHARS", 3000)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", 3000)
    monkeypatch.setattr(text_mode, "NEW_LINES_FOR_TEMPLATES", 2.0)  # never templates
    monkeypatch.setattr(line_blocks, "MIN_SEGMENT", 1)
    monkeypatch.setattr(compiled, "MIN_LINES", 1)
    monkeypatch.setattr(line_blocks, "MIN_REPEATS", 1)
    with compiled.recording() as rec:
        yield rec


def _both(monkeypatch, text, **kw):
    got = _outcome(text, **kw)
    with monkeypatch.context() as m:
        m.setattr(compiled, "ENABLED", False)  # the oracle: every segment in the loop
        want = _outcome(text, **kw)
    assert got == want
    return got


def _matmul(n: int, mac: str = "MAC") -> str:
    out = []
    for i in range(n):
        for j in range(n):
            out += [f"LOAD a[{i}][0], R0", f"LOAD b[0][{j}], R1", "MAC_Z R0, R1, R2"]
            for k in range(1, n):
                out += [f"LOAD a[{i}][{k}], R0", f"LOAD b[{k}][{j}], R1", f"{mac} R0, R1, R2, R2"]
            out.append(f"STORE R2, c[{i}][{j}]")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("piece", [1, 3, 24])
@pytest.mark.parametrize("dtype", ["fp64", "fp32", "bf16"])
def test_a_matmul_runs_in_pieces_as_in_the_loop(monkeypatch, pieces, piece, dtype):
    monkeypatch.setattr(line_blocks, "PIECE", piece)
    got = _both(monkeypatch, _matmul(7), dtype=dtype)
    assert got["instructions"] == 3 * 7 ** 3 + 7 ** 2
    assert _in_pieces(pieces) > 2 * 7 ** 3  # most of the trace ran in pieces


def _body_line(r: int, s: int, d: int, i: int, j: int, pick: int) -> str:
    return [f"LOAD x[{i}], R{r}", f"LOAD w[{i}][{j}], R{r}", f"STORE R{r}, z[{i}]", f"STORE R{r}, v[{j}][{i}]",
            f"LOAD z[{i}], R{r}", f"ADD R{r}, R{s}, R{d}", f"SUB R{r}, R{s}, R{d}", f"MUL R{r}, R{s}, R{d}",
            f"MAX R{r}, R{s}, R{d}", f"MOV R{r}, R{d}", f"DIV R{r}, R{s}, R{d}", f"EXP R{r}, R{d}",
            f"MAC R{r}, R{s}, R{d}, R{d}", f"MAC_Z R{r}, R{s}, R{d}", f"; x[{i}]", "",
            "LOAD Q[0:2, :], T0\nMUL T0, T0, T1\nSTORE T1, O[0:2, :]"][pick]


_HEAD = ".array Q[4][4]\n.array O[4][4]\nLOAD x[0], R0\nLOAD x[1], R1\nLOAD x[2], R2\nLOAD x[3], R3\n"
_PICKS = 17


@st.composite
def traces(draw):
    """A body of word instructions with a few fixed addresses, repeated: lines come back, so the
    line cache holds them and the pieces take over. Every ALU op, MAC, MOV, comments, blank lines,
    now and then a tile instruction, an empty register, a division that may be by zero."""
    body = [_body_line(*(draw(st.integers(0, 3)) for _ in range(4)), draw(st.integers(0, 2)),
                       draw(st.integers(0, _PICKS - 1))) for _ in range(draw(st.integers(1, 12)))]
    return _HEAD + ("\n".join(body) + "\n") * draw(st.integers(20, 200))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=traces(), dtype=st.sampled_from(["fp64", "fp32", "bf16"]), piece=st.sampled_from([2, 5, 24]))
def test_random_traces_agree_with_the_loop(monkeypatch, pieces, text, dtype, piece):
    monkeypatch.setattr(line_blocks, "PIECE", piece)
    _both(monkeypatch, text, dtype=dtype)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=traces(), at=st.floats(0, 1), bad=st.sampled_from([
    "ADD R0, R1", "LOAD x[-1], R0", "FOO R1, R2, R3", "LOAD Q[9][9], R0", "EXP R9, R0", "STORE R0, x[1.5]",
    "DIV R0, R0, R0", ".data x = [nan, 1, 2, 3]", "MOV R0, R7", "LOAD O[0][0], R1"]))
@pytest.mark.slow
def test_mutated_traces_fail_or_alarm_at_the_same_line(monkeypatch, pieces, text, at, bad):
    """One line replaced by a broken or slow-path line: the same error, at the same line, or the
    same alarms."""
    lines = text.split("\n")
    k = 6 + int(at * (len(lines) - 8))
    lines[k] = bad
    _both(monkeypatch, "\n".join(lines))


def test_a_slow_path_in_a_piece_runs_in_the_loop(monkeypatch, pieces):
    """A division by zero late in a long run of pieces: the piece bails and the loop raises the
    error with its line (strict) or the alarm (not strict), the counters up to it equal."""
    body = "LOAD x[0], R0\nLOAD x[1], R1\nADD R0, R1, R2\nDIV R2, R1, R3\nSTORE R3, y[0]\n"
    text = body * 300 + "SUB R0, R0, R4\nSTORE R4, x[1]\n" + body * 20
    got = _both(monkeypatch, text)
    assert got["alarms"] and pieces.stats.bails and _in_pieces(pieces) > 0.9 * len(text.splitlines())  # most lines in pieces
    strict = _both(monkeypatch, text, strict_numerics=True)
    assert strict[0] == "NumericsError" and strict[2][0] == 5 * 300 + 2 + 4


def test_steps_and_symbolic_runs_never_take_pieces(monkeypatch, pieces):
    text = _matmul(4)
    simulate(io.StringIO(text), steps=True)
    simulate(io.StringIO(text), steps=False, symbolic=True)
    assert _in_pieces(pieces) == 0 and not pieces.stats.bails



@pytest.mark.slow
def test_random_traces_mostly_take_pieces(monkeypatch, pieces):
    """Traces drawn as above (a seeded generator) do exercise the pieces, not only the loop."""
    import random
    rng = random.Random(0)
    taken = []
    for _ in range(30):
        body = [_body_line(*(rng.randrange(4) for _ in range(4)), rng.randrange(3), rng.randrange(_PICKS))
                for _ in range(rng.randrange(1, 13))]
        pieces.paths.clear()
        _both(monkeypatch, _HEAD + ("\n".join(body) + "\n") * 50)
        taken.append(_in_pieces(pieces) > 0)
    assert sum(taken) * 2 > len(taken), taken


def test_a_probe_does_not_count_cached_tile_lines(monkeypatch):
    """A softmax over new addresses with a tile block that comes back (the benchmark's mixed trace):
    once in template mode, its probe chunks stay there — the tile lines are in the line cache, and
    only new addressed lines that come back speak for lines mode (as after a lines chunk)."""
    monkeypatch.setattr(source, "CHUNK_CHARS", 20_000)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", 20_000)
    monkeypatch.setattr(text_mode, "PROBE_EVERY", 1)
    out = [".array Q[32][4]\n.array O[32][4]\nLOAD x[0], R1\nMOV R1, R3\n"]
    for i in range(1, 6000):
        out.append(f"LOAD x[{i}], R0\nMAX R1, R0, R1\nSUB R0, R1, R2\nEXP R2, R2\nADD R3, R2, R3\n")
        if i % 3 == 0:
            r = i // 3 % 16 * 2
            out.append(f"LOAD Q[{r}:{r + 2}, :], T0\nMUL T0, T0, T1\nSTORE T1, O[{r}:{r + 2}, :]\n")
    text = "".join(out)
    lines_chunks = []
    real = text_mode._run_exact

    def counted(run, lines, *a):
        lines_chunks.append(len(lines))
        return real(run, lines, *a)

    monkeypatch.setattr(text_mode, "_run_exact", counted)
    got = _outcome(text)
    assert got["instructions"] == 2 + 5 * 5999 + 3 * 1999
    chunks = len(text) // 20_000
    assert chunks > 10 and len(lines_chunks) <= 3, lines_chunks
