"""Text mode's fast path for tile LOAD/STORE lines (sim.engines.tile_lines): every trace gives the
same result, alarms and errors (message, line, column) with the fast path as without it (the
general parser) and as the parsed Program — new tile addresses on every line, out-of-bounds and
empty slices, slices past a declared shape, SRAM overflow, alarms in tile ops, bf16/fp16."""

import io

import pytest
from conftest import run_outcome
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import AsmError, Machine, RuntimeFault, parse, simulate
from toymachine.asm import source
from toymachine.sim import text as text_mode
from toymachine.sim.engines import tile_lines

ROWS = 12
STATS: list = []




def _bound(draw):
    return draw(st.sampled_from(["", "", str(draw(st.integers(0, ROWS + 2)))]))


@st.composite
def tile_traces(draw):
    """Declared Q, O (ROWS×4) and K (4×4); tile LOADs/STOREs of random slices (most inside, some
    empty, past the edge or naming an array without a shape), tile arithmetic, scalar lines."""
    lines = [f".array Q[{ROWS}][4] = 1.5", f".array O[{ROWS}][4]", ".data K = " +
             str([[float(i * 4 + j) / 3 for j in range(4)] for i in range(4)]), "LOAD x[0], R0"]
    lines += [f"LOAD Q[{2 * t}:{2 * t + 2}, :], T{t}" for t in range(4)]
    canonical = True
    for _ in range(draw(st.integers(1, 30))):
        c = draw(st.integers(0, 7))
        r = draw(st.integers(0, ROWS - 2))
        a, b = (draw(st.integers(0, 3)) for _ in range(2))
        rs, cs, arr = f"{r}:{r + 2}", ":", "Q"
        odd = draw(st.integers(0, 40))
        if odd == 0:  # an odd slice: empty, past the edge, open ends
            rs = f"{_bound(draw)}:{_bound(draw)}"
        elif odd == 1:
            cs = draw(st.sampled_from(["0:4", "1:3", "2:", ":2", "0:5", "4:"]))
        elif odd == 2:
            arr = draw(st.sampled_from(["O", "K", "Z"]))
        elif odd == 3:
            c = draw(st.sampled_from([8, 9]))
        line = [f"LOAD {arr}[{rs}, {cs}], T{a}", f"STORE T{a}, O[{rs}, {cs}]", f"MUL T{a}, T{a}, T{b}",
                f"EXP T{a}, T{b}", f"ADD T{a}, T{b}, T{a}", f"STORE T{b}, O[{rs}, {cs}]",
                f"LOAD O[{rs}, {cs}], T{b}", "ADD R0, R0, R0", f"LOAD Q[{r}, {cs}], T{a}",
                f"LOAD K[{rs},{cs}], T{a}"][c]
        if draw(st.integers(0, 12)) == 0:  # not canonical: the general path must still take it
            line = draw(st.sampled_from([line.replace("LOAD", "load").replace("STORE", "store"),
                                         line + "  ; note Q[0:1, :]", "  " + line + " ",
                                         line.replace(", ", " , ", 1), line.replace("[", "[ ", 1)]))
            canonical = False
        lines.append(line)
    return "\n".join(lines) + "\n", canonical


MACHINES = [Machine(sram_words=4096), Machine(sram_words=33), Machine(sram_words=4096, dtype="bf16"),
            Machine(sram_words=4096, dtype="fp16")]


def _run(text, machine, steps=False):
    return lambda: simulate(io.StringIO(text), machine, steps=steps, file="t.asm")


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(trace=tile_traces(), m=st.integers(0, len(MACHINES) - 1), chunk=st.sampled_from([40, 200, 1 << 16]))
def test_fast_path_agrees_with_the_parser(trace, m, chunk):
    text, canonical = trace
    machine = MACHINES[m]
    old = (source.CHUNK_CHARS, source.FIRST_CHUNK_CHARS, text_mode.MIN_CHUNK_FOR_TEMPLATES,
           text_mode.compile_tile_line)
    source.CHUNK_CHARS = source.FIRST_CHUNK_CHARS = chunk
    text_mode.MIN_CHUNK_FOR_TEMPLATES = 1
    try:
        fast = run_outcome(_run(text, machine))
        fast_steps = run_outcome(_run(text, machine, steps=True))
        text_mode.compile_tile_line = lambda run, n, line: None  # the general parser only
        slow = run_outcome(_run(text, machine))
    finally:
        (source.CHUNK_CHARS, source.FIRST_CHUNK_CHARS, text_mode.MIN_CHUNK_FOR_TEMPLATES,
         text_mode.compile_tile_line) = old
    assert fast == slow
    STATS.append(isinstance(fast, dict) or fast[1].split("\n")[0][:40])
    assert fast_steps == fast
    if canonical and isinstance(fast, dict):  # (a Program compiles every line before it runs: its
        # compile-time errors come before an earlier line's run-time error; text mode streams)
        assert run_outcome(lambda: simulate(parse(text, file="t.asm"), machine, steps=False, file="t.asm")) == fast


@pytest.mark.slow  # reads what the (slow) property test above counted
def test_most_random_traces_run_to_the_end():
    if not STATS:
        pytest.skip("the property test above ran in another process (or not at all)")
    print("runs to the end:", STATS.count(True), "of", len(STATS), sorted(set(map(str, STATS))))
    assert STATS.count(True) > len(STATS) // 3, (STATS.count(True), len(STATS))  # the errors are not all


def _counting(monkeypatch):
    hits = []

    def counted(run, n, line):
        code = tile_lines.compile_tile_line(run, n, line)
        hits.append(code is not None)
        return code

    monkeypatch.setattr(text_mode, "compile_tile_line", counted)
    return hits


def test_new_tile_lines_take_the_fast_path(monkeypatch):
    hits = _counting(monkeypatch)
    rows = 300
    body = "".join(f"LOAD Q[{r}:{r + 2}, :], T0\nMUL T0, T0, T1\nSTORE T1, O[{r}:{r + 2}, 0:4]\n"
                   for r in range(0, rows - 1, 2))
    text = f".array Q[{rows}][4] = 2\n.array O[{rows}][4]\n" + body
    r = simulate(io.StringIO(text), Machine(sram_words=64), steps=False)
    assert r.memory["O"] == [[4.0] * 4] * rows
    # every tile LOAD/STORE line compiled is compiled by the fast path; the chunk's new blocks after the
    # first of each key run as templates (sim.cut): fewer lines compiled than there are
    assert hits and all(hits) and len(hits) < rows
    assert r.dram_reads == r.dram_writes == rows * 4


@pytest.mark.parametrize("line, col", [("LOAD Q[0:2, 0:9], T0", 6), ("STORE T1, Q[3:3, :]", 11),
                                       ("LOAD Z[0:2, :], T0", 6), ("STORE T1, Q[0:2, :, 1:2]", 11)])
def test_errors_point_where_the_parser_points(monkeypatch, line, col):
    text = ".array Q[4][4] = 1\nLOAD Q[0:2, :], T1\n" + line + "\n"
    hits = _counting(monkeypatch)
    fast = run_outcome(_run(text, Machine(sram_words=64)))
    monkeypatch.setattr(text_mode, "compile_tile_line", lambda run, n, line: None)
    assert fast == run_outcome(_run(text, Machine(sram_words=64)))
    assert fast[3][:2] == (3, col) and hits[-1] is not None
    with pytest.raises((AsmError, RuntimeFault)):
        simulate(io.StringIO(text), Machine(sram_words=64), steps=False)


def test_sram_overflow_on_a_new_tile_line(monkeypatch):
    text = ".array Q[8][4] = 1\n" + "".join(f"LOAD Q[{2 * t}:{2 * t + 2}, :], T{t}\n" for t in range(4))
    hits = _counting(monkeypatch)
    fast = run_outcome(_run(text, Machine(sram_words=30)))
    assert hits == [True] * 4 and fast[1].startswith("error: SRAM overflow") and fast[3][0] == 5
    monkeypatch.setattr(text_mode, "compile_tile_line", lambda run, n, line: None)
    assert fast == run_outcome(_run(text, Machine(sram_words=30)))


def test_indices_past_the_limit_take_the_general_path(monkeypatch):
    hits = _counting(monkeypatch)
    text = ".array Q[4][4] = 1\nLOAD Q[0:99999999, :], T1\n"
    out = run_outcome(_run(text, Machine(sram_words=64)))
    assert out[0] == "LimitError" and out[3][0] == 2 and hits == [False]


def test_a_lowered_index_limit_holds_on_the_fast_path(monkeypatch):
    monkeypatch.setenv("TOYM_MAX_ARRAY_ELEMENTS", "10")
    text = ".array Q[2][4] = 1\nLOAD Q[0:2, :], T1\nLOAD Q[0:12, :], T1\n"
    fast = run_outcome(_run(text, Machine(sram_words=64)))
    monkeypatch.setattr(text_mode, "compile_tile_line", lambda run, n, line: None)
    assert fast == run_outcome(_run(text, Machine(sram_words=64)))
    assert fast[0] == "LimitError" and fast[3][0] == 3
