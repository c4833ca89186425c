"""Lines mode's fast paths against the plain code they replace, on random inputs: the
line cache that compiles new lines ahead as the chunk's lookup meets them (``sim.lines.LineCache``),
the lines compiled in trace order that stand compiled at their later places, the shapes a code
carries (``sim.lines``), codes template mode cached without one, and the one regular
expression that reads a canonical LOAD/STORE line. The oracle is the parsed ``Program`` (no text
mode at all) or the string-method reader."""

from __future__ import annotations

import importlib
import io

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from toymachine import AsmError, NumericsError, RuntimeFault, parse, simulate
from toymachine.asm import source

scalar = importlib.import_module("toymachine.sim.engines.scalar")
compiled = importlib.import_module("toymachine.sim.compiled")
line_blocks = importlib.import_module("toymachine.sim.compiler.lines")
line_cache = importlib.import_module("toymachine.sim.lines")
text_mode = importlib.import_module("toymachine.sim.text")


def _outcome(run):
    """The result as JSON (no file name, no steps), or the error a run raised, located."""
    try:
        d = run().to_dict(steps=False)
    except (AsmError, RuntimeFault, NumericsError) as err:
        return type(err).__name__, str(err), (err.loc.line, err.loc.col) if getattr(err, "loc", None) else None
    d["file"] = None
    return d


def _parsed_and_streamed(text, **kw):
    return (_outcome(lambda: simulate(parse(text), steps=False, **kw)),
            _outcome(lambda: simulate(io.StringIO(text), steps=False, **kw)))


# -- the canonical LOAD/STORE reader ---------------------------------------------------------
_parts = st.sampled_from
_names = st.one_of(_parts(["a", "x_1", "_", "if", "B2", "é", "1a", "a b", ""]),
                   st.text("abcXYZ_09é ", min_size=0, max_size=4))
_digits = st.one_of(st.integers(0, 10 ** 9).map(str), _parts(["", "007", "٣", "1 ", " 2", "-1", "1.5", "12345678"]))
_regs = st.one_of(_parts(["R0", "R7", "r3", "R007", "R123456789", "R12345678", "T0", "ACC", "R", "R-1", " R1"]),
                  st.text("Rr0123 ", min_size=0, max_size=5))


@st.composite
def memory_lines(draw):
    index = "".join(f"[{draw(_digits)}]" for _ in range(draw(st.integers(0, 3))))
    if draw(st.booleans()):
        index = index.replace("][", draw(_parts(["][", "] [", "]["])))
    name, reg = draw(_names), draw(_regs)
    op = draw(_parts(["LOAD", "STORE", "load", "store", "Load", "LOAD "]))
    comma = draw(_parts([", ", ",", " , ", ",  ", " "]))
    tail = draw(_parts(["", " ", " ; c", "\r", "]", ", R1"]))
    if op.upper().startswith("LOAD"):
        return f"{op} {name}{index}{comma}{reg}{tail}"
    return f"{op} {reg}{comma}{name}{index}{tail}"


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(line=memory_lines())
def test_the_canonical_reader_agrees_with_the_string_methods(line):
    assert scalar._memory_parts(line) == scalar._memory_parts_loose(line)


@pytest.mark.parametrize("line, parts", [
    ("LOAD a[12][34], R0", (False, "a", "R0", (12, 34))), ("STORE R007, c[1][92]", (True, "c", "R7", (1, 92))),
    ("LOAD x[1234567], R1", (False, "x", "R1", (1234567,))), ("LOAD x[12345678], R1", None),
    ("load x[1], r2", (False, "x", "R2", (1,)))])
def test_the_canonical_reader_on_known_lines(line, parts):
    assert scalar._memory_parts(line) == parts


# -- lines mode against the parsed program ---------------------------------------------------
def _line(pick: int, r: int, s: int, d: int, i: int, j: int) -> str:
    return [f"LOAD x[{i}], R{r}", f"LOAD w[{i}][{j}], R{r}", f"STORE R{r}, z[{i}]", f"STORE R{r}, v[{j}][{i}]",
            f"ADD R{r}, R{s}, R{d}", f"MUL R{r}, R{s}, R{d}", f"MAC R{r}, R{s}, R{d}, R{d}", f"MOV R{r}, R{d}",
            f"DIV R{r}, R{s}, R{d}", f"EXP R{r}, R{d}", f"; x[{i}]", "", f"LOAD n{i}[{j}], R{r}",
            "LOAD Q[0:2, :], T0\nSTORE T0, O[0:2, :]", f"LOAD Q[{i % 4}][{j % 4}], R{r}", ".data late = [1]",
            f"STORE R{r}, g{j}[{i}][{i}]"][pick]


_PICKS = 17


@st.composite
def repeated_traces(draw):
    """A body that comes back many times (the cache takes over) whose lines, the first time, mostly
    compile in trace order (registers and arrays not seen yet), then new arrays and a directive
    later on; now and then a tile block that turns Q dense, or a broken line."""
    head = ".array Q[4][4]\n.array O[4][4]\nLOAD x[0], R0\n"  # an instruction: a trace of directives only is refused
    body = [_line(draw(st.integers(0, _PICKS - 1)), *(draw(st.integers(0, 3)) for _ in range(3)),
                  draw(st.integers(0, 5)), draw(st.integers(0, 2))) for _ in range(draw(st.integers(1, 10)))]
    lines = (body * draw(st.integers(2, 60)))
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(_parts(
            ["ADD R0, R1", "LOAD x[-1], R0", "FOO R1", "MOV R9, R0", "LOAD Q[9][9], R0", "DIV R0, R0, R0"])))
    if draw(st.booleans()):  # registers filled first: most traces run to the end
        head += "LOAD x[1], R1\nLOAD x[2], R2\nLOAD x[3], R3\n"
    return head + "\n".join(lines) + "\n"


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=repeated_traces(), chunk=st.integers(20, 3000), piece=st.sampled_from([1, 3, 24]),
       dtype=st.sampled_from(["fp64", "bf16"]))
def test_lines_mode_agrees_with_the_parsed_program(monkeypatch, text, chunk, piece, dtype):
    monkeypatch.setattr(source, "CHUNK_CHARS", chunk)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", chunk)
    monkeypatch.setattr(text_mode, "NEW_LINES_FOR_TEMPLATES", 2.0)  # lines mode only
    monkeypatch.setattr(line_blocks, "MIN_SEGMENT", 1)
    monkeypatch.setattr(compiled, "MIN_LINES", 1)
    monkeypatch.setattr(line_blocks, "MIN_REPEATS", 1)
    monkeypatch.setattr(line_blocks, "PIECE", piece)
    parsed, streamed = _parsed_and_streamed(text, dtype=dtype)
    with monkeypatch.context() as m:  # the oracle: a chunk per line (no later places), no pieces
        m.setattr(source, "CHUNK_CHARS", 1)
        m.setattr(source, "FIRST_CHUNK_CHARS", 1)
        m.setattr(line_blocks, "MIN_SEGMENT", 10 ** 12)
        one_by_one = _outcome(lambda: simulate(io.StringIO(text), steps=False, dtype=dtype))
    assert streamed == one_by_one
    if ".data late" not in text and (isinstance(parsed, dict) or isinstance(streamed, dict)):
        assert streamed == parsed  # (a parsed program meets a broken line before it runs: another error may come first)


def test_a_line_compiled_in_order_runs_in_pieces_at_its_later_places(monkeypatch):
    """The first chunk: every line new, none compiled ahead (the registers and arrays do not exist
    yet). Each compiles where it first stands; its later places take its code, and the chunk's
    pieces run them (one chunk holds the whole trace)."""
    monkeypatch.setattr(line_blocks, "MIN_SEGMENT", 1)
    monkeypatch.setattr(compiled, "MIN_LINES", 1)
    monkeypatch.setattr(line_blocks, "MIN_REPEATS", 1)
    body = "LOAD x[0], R0\nLOAD y[1][2], R1\nMUL R0, R1, R2\nSTORE R2, z[0]\n"
    text = body * 240
    with compiled.recording() as rec:
        parsed, streamed = _parsed_and_streamed(text)
    assert streamed == parsed
    assert rec.stats.pieces + rec.stats.periodic > 0.9 * 4 * 240 and not rec.stats.bails


@pytest.mark.slow
def test_lines_after_templates_take_the_codes_template_mode_cached(monkeypatch):
    """Template mode caches a word access to an array held dense (no template: the tile engine's
    element access) in the line cache without a shape; when lines mode comes back (a probe finds
    lines that repeat) it gives that code its shape and runs it — the same result as parsed."""
    monkeypatch.setattr(source, "CHUNK_CHARS", 2000)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", 2000)
    monkeypatch.setattr(text_mode, "PROBE_EVERY", 1)
    monkeypatch.setattr(text_mode, "MIN_CHUNK_FOR_TEMPLATES", 16)
    monkeypatch.setattr(line_blocks, "MIN_SEGMENT", 1)
    monkeypatch.setattr(compiled, "MIN_LINES", 1)
    monkeypatch.setattr(line_blocks, "MIN_REPEATS", 1)
    shaped = []
    real = line_cache.noted

    def counted(code):
        shaped.append(code)
        return real(code)

    monkeypatch.setattr(line_cache, "noted", counted)
    modes = []
    for name in ("_run_exact", "_run_templates"):
        fn = getattr(text_mode, name)
        monkeypatch.setattr(text_mode, name, lambda *a, fn=fn, name=name: (modes.append(name[5]), fn(*a))[1])
    out = [".array Q[32][4]\n.array O[4][4]\nLOAD Q[0:2, :], T0\nSTORE T0, O[0:2, :]\nLOAD x[0], R1\n"]
    for i in range(1, 1200):  # new addresses: templates; a word of Q in each
        out.append(f"LOAD x[{i}], R0\nADD R1, R0, R1\nLOAD Q[{i // 4 % 32}][{i % 4}], R2\nADD R1, R2, R1\n")
    for _ in range(40):  # a matmul-like tail: lines that repeat, with words of Q first met in template mode
        for k in range(16):
            out.append(f"LOAD a[{k}], R0\nLOAD Q[{16 + k // 4}][{k % 4}], R2\nMAC R0, R2, R1, R1\n")
    text = "".join(out)
    parsed, streamed = _parsed_and_streamed(text)
    assert streamed == parsed and isinstance(parsed, dict)
    assert "t" in modes and modes[-1] == "e", modes  # templates, then lines again
    assert shaped, "lines mode met a code template mode cached without a shape"


@pytest.mark.parametrize("fill", ["nan", "0.5", "inf"])
@pytest.mark.parametrize("dtype", ["fp64", "bf16"])
def test_a_first_read_in_a_piece_takes_the_input_or_raises_the_nan_alarm(monkeypatch, fill, dtype):
    """Cells never written, read in pieces: the input value (filled or random, rounded to the dtype)
    kept in the cell, as the loop keeps it; a NaN input bails, and the loop raises its alarm at its
    line — the same alarms, counters and memory as one line at a time."""
    monkeypatch.setattr(line_blocks, "MIN_SEGMENT", 1)
    monkeypatch.setattr(compiled, "MIN_LINES", 1)
    monkeypatch.setattr(line_blocks, "MIN_REPEATS", 1)
    monkeypatch.setattr(source, "CHUNK_CHARS", 400)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", 400)
    body = "".join(f"LOAD r[{i % 7}], R0\nLOAD f[{i % 8}], R1\nLOAD u[{i % 5}][{i % 3}], R2\nADD R0, R2, R3\n"
                   f"MUL R1, R1, R1\nSTORE R3, s[{i % 4}]\n" for i in range(60))
    text = f".array f[8] = {fill}\nLOAD r[0], R0\nLOAD u[0][0], R2\n" + body * 4
    parsed, streamed = _parsed_and_streamed(text, dtype=dtype)
    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_CHARS", 1)
        m.setattr(source, "FIRST_CHUNK_CHARS", 1)
        m.setattr(line_blocks, "MIN_SEGMENT", 10 ** 12)
        one_by_one = _outcome(lambda: simulate(io.StringIO(text), steps=False, dtype=dtype))
    assert streamed == one_by_one == parsed
    assert isinstance(streamed, dict) and bool(streamed["alarms"]) == (fill == "nan")  # (inf in, inf out: no alarm)


def _matmul(n: int, i_bad: int, j_bad: int, bad: str) -> str:
    out = []
    for i in range(n):
        for j in range(n):
            out += [f"LOAD a[{i}][0], R0", f"LOAD b[0][{j}], R1", "MAC_Z R0, R1, R2"]
            for k in range(1, n):
                out += [f"LOAD a[{i}][{k}], R0", f"LOAD b[{k}][{j}], R1", "MAC R0, R1, R2, R2"]
            if (i, j) == (i_bad, j_bad):
                out.append(bad)
            out.append(f"STORE R2, c[{i}][{j}]")
    return "\n".join(out) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(n=6, chunk=2000, at=(0, 0), bad="DIV R2, R3, R2", strict=False)  # stops in its first block
@example(n=6, chunk=2000, at=(1, 0), bad="DIV R2, R3, R2", strict=False)  # … in its seventh
@example(n=6, chunk=2000, at=(2, 3), bad="; a comment", strict=False)  # runs to its end, in pieces
@given(n=st.integers(3, 9), chunk=st.integers(60, 4000), at=st.tuples(st.integers(0, 8), st.integers(0, 8)),
       bad=st.sampled_from(["MOV R2, R2", "DIV R2, R3, R2", "MUL R2, R2, R2", "SUB R2, R2, R2", "LOAD c[0][0], R2", "ADD R0, R1",
                            "STORE R2, a[0][1]", "EXP R9, R2", "; a comment"]),
       strict=st.booleans())
@pytest.mark.slow
def test_pieces_of_whole_periods_agree_with_one_line_at_a_time(monkeypatch, n, chunk, at, bad, strict):
    """A matmul's shapes repeat with its block (3n + 1 lines; the STORE stands once in each): pieces
    of whole periods, the same for every chunk whatever line it starts at. One block broken or slow
    (a division by zero, an empty register, a zero, a STORE into a, a syntax error): the same
    result, alarm or error at the same line as one line at a time."""
    monkeypatch.setattr(source, "CHUNK_CHARS", chunk)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", chunk)
    monkeypatch.setattr(text_mode, "NEW_LINES_FOR_TEMPLATES", 2.0)
    monkeypatch.setattr(line_blocks, "MIN_SEGMENT", 1)
    monkeypatch.setattr(compiled, "MIN_LINES", 1)
    monkeypatch.setattr(line_blocks, "MIN_REPEATS", 2)
    monkeypatch.setattr(line_blocks, "PERIOD_REPEATS", 2)
    text = _matmul(n, at[0] % n, at[1] % n, bad)
    with compiled.recording() as rec:
        streamed = _outcome(lambda: simulate(io.StringIO(text), steps=False, strict_numerics=strict))
    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_CHARS", 1)
        m.setattr(source, "FIRST_CHUNK_CHARS", 1)
        m.setattr(line_blocks, "MIN_SEGMENT", 10 ** 12)
        one_by_one = _outcome(lambda: simulate(io.StringIO(text), steps=False, strict_numerics=strict))
    assert streamed == one_by_one
    # chunks of 2000 characters hold many of a 6×6 matmul's blocks — where the run goes to its end
    # (an error stops it, in an early block before any segment of whole periods)
    assert rec.stats.pieces or rec.stats.periodic or chunk < 2000 or n < 6 or not isinstance(streamed, dict)


def test_a_period_is_found_where_a_shape_stands_once_in_it():
    whole = 4 * -(-line_blocks.PIECE // 4)  # whole periods, at least PIECE lines
    assert line_blocks._period("xAAB" * 50) in [(0, whole), (3, whole)]  # at an x or a B
    assert line_blocks._period("ab" + "xAAB" * 50) in [(2, whole), (5, whole)]
    assert line_blocks._period("xAAB" * 50 + "A") is None  # not periodic to its end
    assert line_blocks._period("AABB" * 60) is None  # no shape stands once a period


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(["a\n", "bb\n", "\n", "ccc", "d\r\n", "e\r", "LOAD x[1], R0\n" * 5]), max_size=60),
       first=st.integers(1, 20), size=st.integers(1, 40))
@pytest.mark.slow
def test_text_chunks_end_at_line_ends_and_hold_the_whole_text(monkeypatch, parts, first, size):
    """A block read and the rest of its last line (``readline``): the same text as cutting each
    block at its last newline, every chunk but the last ends with one, none is empty."""
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", first)
    monkeypatch.setattr(source, "CHUNK_CHARS", size)
    text = "".join(parts)
    chunks = list(source.text_chunks(io.StringIO(text, newline=None)))
    cut = list(source._text_chunks_cut(io.StringIO(text, newline=None)))
    assert "".join(chunks) == "".join(cut) == io.StringIO(text, newline=None).read()
    assert all(chunks) and all(c.endswith("\n") for c in chunks[:-1])


def test_a_matmul_runs_in_pieces_of_its_blocks(monkeypatch):
    """Pieces of whole periods do run (a 9×9 matmul: blocks of 28 lines, one piece for them all),
    with the same result as one line at a time."""
    monkeypatch.setattr(source, "CHUNK_CHARS", 4000)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", 4000)
    monkeypatch.setattr(text_mode, "NEW_LINES_FOR_TEMPLATES", 2.0)
    monkeypatch.setattr(line_blocks, "MIN_SEGMENT", 1)
    monkeypatch.setattr(compiled, "MIN_LINES", 1)
    monkeypatch.setattr(line_blocks, "MIN_REPEATS", 2)
    monkeypatch.setattr(line_blocks, "PERIOD_REPEATS", 2)
    sizes = []
    real = line_blocks._compile
    monkeypatch.setattr(line_blocks, "_compile", lambda run, codes, **kw: (sizes.append(len(codes)), real(run, codes, **kw))[1])
    text = _matmul(9, 0, 0, "; nothing")
    streamed = _outcome(lambda: simulate(io.StringIO(text), steps=False))
    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_CHARS", 1)
        m.setattr(source, "FIRST_CHUNK_CHARS", 1)
        m.setattr(line_blocks, "MIN_SEGMENT", 10 ** 12)
        assert streamed == _outcome(lambda: simulate(io.StringIO(text), steps=False))
    assert 28 in sizes and sizes.count(28) == 1, sizes  # compiled once, for every chunk


# -- the line cache's fast path for new canonical LOAD/STORE lines ---------------------------------


@st.composite
def new_address_traces(draw):
    """Canonical LOAD/STOREs of a few (array, register) pairs at many addresses (most lines new: the
    fast path's), arithmetic between them, a declared array an index may fall outside of, an
    implied one that grows, a register used before anything wrote it, now and then a tile access
    that turns an array dense."""
    head = ".array F[6][6]\n.array Q[4][4]\nLOAD x[0], R0\nLOAD x[1], R1\n"
    forms = ["LOAD x[{i}], R{r}", "LOAD w[{i}][{j}], R{r}", "STORE R{r}, z[{i}]", "STORE R{r}, v[{j}][{i}]",
             "LOAD F[{i}][{j}], R{r}", "STORE R{r}, F[{j}][{i}]", "ADD R{r}, R0, R1", "MAC R0, R1, R{r}, R{r}",
             "LOAD x[{i}],R{r}", "LOAD Q[{i}][{j}], R{r}"]
    lines = []
    for _ in range(draw(st.integers(1, 120))):
        form = draw(st.sampled_from(forms))
        lines.append(form.format(i=draw(st.integers(0, 9)), j=draw(st.integers(0, 9)), r=draw(st.integers(0, 3))))
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), "LOAD Q[0:2, :], T0")
    return head + "\n".join(lines * draw(st.integers(1, 3))) + "\n"


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=new_address_traces(), chunk=st.integers(20, 2000), dtype=st.sampled_from(["fp64", "bf16"]))
def test_the_fast_path_for_new_lines_agrees_with_compile_ahead(monkeypatch, text, chunk, dtype):
    monkeypatch.setattr(source, "CHUNK_CHARS", chunk)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", chunk)
    monkeypatch.setattr(text_mode, "NEW_LINES_FOR_TEMPLATES", 2.0)  # lines mode only
    monkeypatch.setattr(line_blocks, "MIN_SEGMENT", 1)
    monkeypatch.setattr(compiled, "MIN_LINES", 1)
    monkeypatch.setattr(line_blocks, "MIN_REPEATS", 1)
    fast = _outcome(lambda: simulate(io.StringIO(text), steps=False, dtype=dtype))
    with monkeypatch.context() as m:  # the oracle: every new line through scalar.compile_ahead
        m.setattr(line_cache, "_CANONICAL", lambda line: None)
        general = _outcome(lambda: simulate(io.StringIO(text), steps=False, dtype=dtype))
    assert fast == general
    parsed = _outcome(lambda: simulate(parse(text), steps=False, dtype=dtype))
    if isinstance(parsed, dict) or isinstance(fast, dict):
        assert fast == parsed


def test_the_fast_path_gives_the_code_compile_ahead_gives(monkeypatch):
    """Item for item, after one line of the (kind, array, register) went the general way."""
    runs = []
    real = text_mode._run_exact
    monkeypatch.setattr(text_mode, "_run_exact", lambda run, *a: (runs.append(run), real(run, *a))[1])
    simulate(io.StringIO(".array F[6][6]\nLOAD x[0], R0\nLOAD F[0][0], R1\nSTORE R1, z[0]\n"), steps=False)
    run = runs[0]
    cache = line_cache.LineCache()
    cache.begin(run)
    for line in ["LOAD x[1], R0", "LOAD x[7], R0", "LOAD F[1][2], R1", "LOAD F[5][5], R1", "STORE R1, z[3]",
                 "STORE R1, z[40]"]:
        code = cache[line]
        assert cache.parts, line
        assert code == cache.note(scalar.compile_ahead(run, line)), line
    assert cache["LOAD F[6][0], R1"] is line_cache.MISS_CODE  # outside the declared shape: compiled in order
    assert scalar.compile_ahead(run, "LOAD F[6][0], R1") is None


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(6, 8), chunk=st.integers(5000, 12000), odd=st.sets(st.integers(0, 35), max_size=12),
       swap=st.sampled_from(["MAC R1, R0, R2, R2", "MUL R0, R1, R0", "LOAD a[0][0], R1", "MAC_Z R0, R1, R2"]),
       bails=st.sampled_from([1, 3, 64]))
def test_a_verifying_piece_bails_on_a_period_of_other_shapes(monkeypatch, n, chunk, odd, swap, bails):
    """Where a chunk's head shows a period, its piece checks every code's shape (``periodic``); a
    period whose lines have other shapes (one line swapped for another, the same number of lines)
    runs in the loop, and past ``MAX_BAILS`` such periods the rest of the chunk goes the way of
    the shapes of its lines: the same result as one line at a time."""
    _verifying_run(monkeypatch, n, chunk, odd, swap, bails)


def _verifying_run(monkeypatch, n, chunk, odd, swap, bails):
    monkeypatch.setattr(source, "CHUNK_CHARS", chunk)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", chunk)
    monkeypatch.setattr(text_mode, "NEW_LINES_FOR_TEMPLATES", 2.0)
    monkeypatch.setattr(line_blocks, "MIN_SEGMENT", 1)
    monkeypatch.setattr(compiled, "MIN_LINES", 1)
    monkeypatch.setattr(line_blocks, "MIN_REPEATS", 2)
    monkeypatch.setattr(line_blocks, "PERIOD_REPEATS", 2)
    monkeypatch.setattr(line_blocks, "MAX_BAILS", bails)
    monkeypatch.setattr(line_blocks, "MAX_PERIOD", 32)  # a short head: the periods after it are checked by the piece
    lines = _matmul(n, -1, -1, "").splitlines()
    for b in odd:  # blocks (of 3n + 1 lines) whose first MAC is another instruction
        assert lines[b * (3 * n + 1) + 5].startswith("MAC ")
        lines[b * (3 * n + 1) + 5] = swap
    text = "\n".join(lines) + "\n"
    with compiled.recording() as rec:
        streamed = _outcome(lambda: simulate(io.StringIO(text), steps=False))
    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_CHARS", 1)
        m.setattr(source, "FIRST_CHUNK_CHARS", 1)
        m.setattr(line_blocks, "MIN_SEGMENT", 10 ** 12)
        assert streamed == _outcome(lambda: simulate(io.StringIO(text), steps=False))
    return rec.stats


def test_a_verifying_piece_runs_and_bails(monkeypatch):
    """The pieces of ``periodic`` do run, and the periods of other shapes after the chunk's head bail."""
    for bails in (1, 64):
        stats = _verifying_run(monkeypatch, n=8, chunk=8000, odd={30, 40, 41, 50, 60, 61, 62}, swap="MUL R0, R1, R0",
                               bails=bails)
        assert stats.periodic and stats.bails


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=repeated_traces(), chunk=st.integers(200, 4000), head=st.integers(1, 12),
       swaps=st.lists(st.integers(0, 10 ** 6), max_size=6), dtype=st.sampled_from(["fp64", "bf16"]))
def test_verifying_pieces_on_random_traces_agree_with_one_line_at_a_time(monkeypatch, text, chunk, head, swaps, dtype):
    """``periodic`` with a head of a few lines (the period the head shows is checked by the piece in
    every other period): random repeated bodies, a broken or slow line somewhere, tile lines, and
    lines of the later periods swapped for an instruction of another shape."""
    lines = text.splitlines()
    for k in swaps:  # (R0 holds a value from the trace's first line on)
        lines[len(lines) // 3 + k % (len(lines) - len(lines) // 3)] = "MOV R0, R0"
    text = "\n".join(lines) + "\n"
    monkeypatch.setattr(source, "CHUNK_CHARS", chunk)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", chunk)
    monkeypatch.setattr(text_mode, "NEW_LINES_FOR_TEMPLATES", 2.0)  # lines mode only
    monkeypatch.setattr(line_blocks, "MIN_SEGMENT", 1)
    monkeypatch.setattr(compiled, "MIN_LINES", 1)
    monkeypatch.setattr(line_blocks, "MIN_REPEATS", 1)
    monkeypatch.setattr(line_blocks, "PIECE", 2)
    monkeypatch.setattr(line_blocks, "PERIOD_REPEATS", 2)
    monkeypatch.setattr(line_blocks, "MAX_PERIOD", head)
    monkeypatch.setattr(line_blocks, "MAX_BAILS", 2)
    streamed = _outcome(lambda: simulate(io.StringIO(text), steps=False, dtype=dtype))
    with monkeypatch.context() as m:  # the oracle: a chunk per line, no pieces
        m.setattr(source, "CHUNK_CHARS", 1)
        m.setattr(source, "FIRST_CHUNK_CHARS", 1)
        m.setattr(line_blocks, "MIN_SEGMENT", 10 ** 12)
        assert streamed == _outcome(lambda: simulate(io.StringIO(text), steps=False, dtype=dtype))
