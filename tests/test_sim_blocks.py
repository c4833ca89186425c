"""The compiled path's template blocks (sim.compiler.templates): template chunks and generated programs run as compiled blocks. The oracle is the
interpreter loop itself (blocks switched off): every result, alarm, error and counter must be the
same, on random traces and on every slow path a block hands back to the loop (bails)."""

import importlib
import io

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from toymachine import AsmError, NumericsError, RuntimeFault, parse, simulate
from toymachine.asm import source
from toymachine.errors import MachineLimitError
from toymachine.gen import matmul_program, softmax_program, variance_program

compiled = importlib.import_module("toymachine.sim.compiled")
blocks = importlib.import_module("toymachine.sim.compiler.templates")
tile_runs = importlib.import_module("toymachine.sim.compiler.tile_runs")
words = importlib.import_module("toymachine.sim.compiler.words")
text_mode = importlib.import_module("toymachine.sim.text")
sim = importlib.import_module("toymachine.sim.simulate")
# the functions spied on, as the modules define them (monkeypatch restores a patch after the test,
# not after each hypothesis example: a spy wrapping "the current one" would wrap the last example's)
_ORIGINAL = {"run_chunk": compiled.CompiledPath.run_chunk,
             "initial": importlib.import_module("toymachine.sim.memory").Array.initial}


def _outcome(run):
    """The result as JSON (no steps), or the error a run raised as text with its location."""
    try:
        d = run().to_dict(steps=False)
    except (AsmError, RuntimeFault, NumericsError, MachineLimitError) as err:
        return type(err).__name__, str(err), (err.loc.line, err.loc.col) if err.loc else None
    d["file"] = None
    return d


@pytest.fixture
def force(monkeypatch):
    """Small chunks that go to templates at once and take the block path whenever they can;
    returns the number of chunks the blocks ran."""
    monkeypatch.setattr(source, "CHUNK_CHARS", 2000)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", 2000)
    monkeypatch.setattr(text_mode, "MIN_CHUNK_FOR_TEMPLATES", 1)
    monkeypatch.setattr(text_mode, "NEW_LINES_FOR_TEMPLATES", 0.0)
    monkeypatch.setattr(text_mode, "REPEATING_FOR_LINES", 10.0)
    monkeypatch.setattr(blocks, "MIN_REPEATS", 1)
    monkeypatch.setattr(compiled, "MIN_LINES", 1)
    ran = []
    real = _ORIGINAL["run_chunk"]

    def counted(*a):
        ok = real(*a)
        ran.append(ok)
        return ok

    monkeypatch.setattr(compiled.CompiledPath, "run_chunk", counted)
    return ran


def _loop_only(monkeypatch, run):
    """The same run with the compiled path off (the oracle: the interpreter loop alone)."""
    with monkeypatch.context() as m:
        m.setattr(compiled, "ENABLED", False)
        return _outcome(run)


def _both(monkeypatch, force, text, **kw):
    got = _outcome(lambda: simulate(io.StringIO(text), steps=False, **kw))
    want = _loop_only(monkeypatch, lambda: simulate(io.StringIO(text), steps=False, **kw))
    assert got == want
    return got


@st.composite
def traces(draw):
    """A repeated body of word instructions with indices that grow, so templates and blocks take
    over: LOADs and STOREs of 1-D and 2-D arrays, every ALU op, MAC, comments with indices."""
    body = []
    for _ in range(draw(st.integers(1, 10))):
        r, s, d = (draw(st.integers(0, 3)) for _ in range(3))
        body.append(draw(st.sampled_from([
            f"LOAD x[{{i}}], R{r}", f"LOAD w[{{j}}][{{k}}], R{r}", f"STORE R{r}, z[{{i}}]",
            f"STORE R{r}, v[{{k}}][{{j}}]", f"ADD R{r}, R{s}, R{d}", f"SUB R{r}, R{s}, R{d}",
            f"MUL R{r}, R{s}, R{d}", f"MAX R{r}, R{s}, R{d}", f"MOV R{r}, R{d}", f"DIV R{r}, R{s}, R{d}",
            f"EXP R{r}, R{d}", f"MAC R{r}, R{s}, R{d}, R{d}", f"MAC_Z R{r}, R{s}, R{d}",
            "; x[{i}] and w[{j}][{k}]", ""])))
    reps = draw(st.integers(20, 150))
    head = "".join(f"LOAD h[{i}], R{i}\n" for i in range(4)) if draw(st.integers(0, 9)) else ""  # mostly
    lines = [head] + ["\n".join(body).format(i=i, j=i % 3, k=i // 3) + "\n" for i in range(reps)]
    return "".join(lines)


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=traces(), dtype=st.sampled_from(["fp64", "fp16"]))
def test_blocks_agree_with_the_loop(monkeypatch, force, text, dtype):
    """(The fixtures only set constants: sharing them across examples is what is wanted.)"""
    got = _both(monkeypatch, force, text, dtype=dtype)
    if isinstance(got, dict):  # and with the parsed program
        program = simulate(parse(text), steps=False, dtype=dtype).to_dict(steps=False)
        program["file"] = None
        assert got == program


def _softmaxish(n: int, extra: str = "") -> str:
    return f".array x[{n}]\nLOAD x[0], R1\nMOV R1, R3\n" + "".join(
        f"LOAD x[{i}], R0\nMAX R1, R0, R1\nSUB R0, R1, R2\nEXP R2, R2\nADD R3, R2, R3\n{extra}" for i in range(n))


def test_the_block_path_runs(monkeypatch, force):
    _both(monkeypatch, force, _softmaxish(300))
    assert any(force), force


def test_nan_inputs_from_a_block(monkeypatch, force):
    """An array filled with NaN: every new cell a block reads bails, the loop raises the alarm
    (the same alarms, lines and counts as the loop alone)."""
    got = _both(monkeypatch, force, _softmaxish(300).replace(".array x[300]", ".array x[300] = nan"))
    assert any(force)
    assert (got["alarms"][0]["kind"], got["alarms"][0]["line"]) == ("nan", 2)


def test_division_by_zero_and_underflow_in_a_block(monkeypatch, force):
    text = "".join(f"LOAD x[{i}], R0\nLOAD y[{i}], R1\nDIV R0, R1, R2\nEXP R0, R3\nSTORE R2, z[{i}]\n"
                   f"STORE R3, e[{i}]\n" for i in range(200))
    x = [1.0] * 200
    y = [2.0] * 200
    y[150] = 0.0  # 1 / 0: an alarm
    x[60] = -800.0  # exp(-800) underflows to 0
    got = _both(monkeypatch, force, text, data={"x": x, "y": y})
    assert any(force)
    kinds = [(a["kind"], a["line"]) for a in got["alarms"]]
    assert ("div-by-zero", 150 * 6 + 3) in kinds
    assert got["underflows"] >= 1


def test_empty_register_and_fixed_shape_errors_from_a_block(monkeypatch, force):
    body = "".join(f"LOAD x[{i}], R0\nADD R0, R0, R1\nSTORE R1, y[{i}]\n" for i in range(150))
    got = _both(monkeypatch, force, body + "LOAD x[3], R0\nADD R0, R2, R1\n")
    assert got[0] == "RuntimeFault" and "R2" in got[1] and got[2][0] == 452
    got = _both(monkeypatch, force, ".array y[100]\n" + body)
    assert got[0] == "RuntimeFault" and "index 100 is outside 'y'" in got[1] and got[2] == (2 + 3 * 100 + 2, 11)


def test_store_then_load_of_one_array_stays_in_the_loop(monkeypatch, force):
    """A block that stores to an array and then loads from it is not compiled (a re-run after a
    bail would read its own store)."""
    text = "LOAD a[0], R0\n" + "".join(f"STORE R0, a[{i + 1}]\nLOAD a[{i}], R1\nADD R0, R1, R0\n" for i in range(200))
    _both(monkeypatch, force, text)


def test_many_bails_hand_the_chunk_to_the_loop(monkeypatch, force):
    """Zero products bail every time (a zero may be an underflow): after MAX_BAILS the loop runs
    the rest of the chunk, and that block stays in the loop from then on."""
    monkeypatch.setattr(blocks, "MAX_BAILS", 3)
    handed = []
    real = blocks.execute
    for module in (blocks, words):  # a block that bailed runs again in the loop (words.rerun), the rest after
        monkeypatch.setattr(module, "execute", lambda run, codes, first: handed.append(len(codes)) or real(run, codes, first))
    text = "".join(f"LOAD x[{i}], R0\nMUL R0, R0, R1\nSTORE R1, y[{i}]\n" for i in range(400))
    got = _both(monkeypatch, force, text, data={"x": [0.0] * 400})
    assert got["memory"]["y"] == [0.0] * 400 and got["dram"]["writes"] == 400
    # in the one chunk that ran as blocks: three bails and a fourth, then the rest of the chunk in one
    # go (and, where the chunk ends inside a 3-line unit, that cut unit: the loop runs it, after them);
    # the later chunks hold the block that bailed, so they run in the loop
    assert force.count(True) == 1 and len(handed) in (5, 6) and handed[4] > max(handed[:4])
    assert len(handed) == 5 or handed[5] < 3


@pytest.mark.parametrize("make", [
    lambda: softmax_program(n=3000, algo="online", with_data=False),
    lambda: softmax_program(n=2000, algo="safe", with_data=False),
    lambda: matmul_program(n=12, registers=3, schedule="inner"),
    lambda: matmul_program(n=12, registers=5, schedule="outer"),
    lambda: variance_program(n=3000),
])
@pytest.mark.parametrize("dtype", ["fp64", "bf16"])
def test_generated_programs_run_as_blocks(monkeypatch, make, dtype):
    """simulate(program) through the compiled path equals the loop and the program's text streamed."""
    monkeypatch.setattr(sim, "PROGRAM_CHUNK", 4096)
    ran = []
    real = compiled.CompiledPath.run_program_chunk
    monkeypatch.setattr(compiled.CompiledPath, "run_program_chunk", lambda *a: ran.append(real(*a)) or ran[-1])
    program = make()
    got = _outcome(lambda: simulate(program, steps=False, dtype=dtype))
    assert any(ran)
    assert got == _loop_only(monkeypatch, lambda: simulate(program, steps=False, dtype=dtype))
    assert got == _outcome(lambda: simulate(io.StringIO(program.to_text()), steps=False, dtype=dtype))


@st.composite
def mixed_traces(draw):
    """Word instructions with a tile block now and then (LOAD, an op, STORE of 1..2-row tiles):
    the loop runs the tile blocks where they stand, among compiled word blocks — sometimes a
    tile block faults (a row past the declared shape) or reads an array the word lines use."""
    body = ["LOAD x[{i}], R0", "MAX R1, R0, R1", "SUB R0, R1, R2", "EXP R2, R2", "ADD R3, R2, R3"]
    rows = draw(st.integers(2, 6))
    tile = ["LOAD Q[{r}:{r2}, :], T0", draw(st.sampled_from(["ADD T0, T0, T1", "MUL T0, T0, T1", "EXP T0, T1"])),
            "STORE T1, O[{r}:{r2}, :]"]
    every = draw(st.integers(1, 5))
    fault_at = draw(st.one_of(st.none(), st.integers(0, 120)))
    reps = draw(st.integers(30, 140))
    out = [f".array Q[{rows}][3]\n.array O[{rows}][3]\nLOAD x[0], R1\nMOV R1, R3\n"]
    for i in range(reps):
        out.append("\n".join(body).format(i=i) + "\n")
        if i % every == 0:
            r = i % (rows - 1)
            r2 = r + 1 if i != fault_at else rows + 1  # past the declared rows: the loop's error
            out.append("\n".join(tile).format(r=r, r2=r2) + "\n")
    return "".join(out)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=mixed_traces(), dtype=st.sampled_from(["fp64", "fp32"]))
def test_tile_blocks_among_word_blocks_agree_with_the_loop(monkeypatch, force, text, dtype):
    _both(monkeypatch, force, text, dtype=dtype)


def test_tile_blocks_run_in_the_loop_among_compiled_blocks(monkeypatch, force):
    """A mixed chunk takes the block path; a tile block the compiler does not take (a MASK) runs in
    the loop where it stands."""
    text = ".array Q[4][3]\n.array O[4][3]\nLOAD x[0], R1\nMOV R1, R3\n" + "".join(
        f"LOAD x[{i}], R0\nMAX R1, R0, R1\nSUB R0, R1, R2\nEXP R2, R2\nADD R3, R2, R3\n"
        + (f"LOAD Q[{i % 3}:{i % 3 + 1}, :], T0\nMASK T0, 1, 0, T1\nSTORE T1, O[{i % 3}:{i % 3 + 1}, :]\n"
           if i % 4 == 0 else "") for i in range(400))
    looped = []
    stand_in = blocks._looped

    def counted(*args):
        fn = stand_in(*args)

        def call(nxt):
            looped.append(1)
            fn(nxt)
        return call

    monkeypatch.setattr(blocks, "_looped", counted)  # a block the loop runs is called where it stands
    got = _both(monkeypatch, force, text)
    assert any(force) and got["ops"]["ADD"] == 400
    assert len(looped) > 20


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(zeros=st.lists(st.integers(0, 299), max_size=6), nan_at=st.one_of(st.none(), st.integers(0, 299)),
       dtype=st.sampled_from(["fp64", "bf16"]))
@pytest.mark.slow
def test_runs_of_one_block_bail_mid_run_as_the_loop_does(monkeypatch, force, zeros, nan_at, dtype):
    """Long runs of one block are one call each (``multi``): a pass that bails anywhere in a run
    leaves the registers the passes before it wrote, and the run goes on after it."""
    x = [1.0 + i / 300 for i in range(300)]
    for z in zeros:
        x[z] = 0.0  # 1 / 0: an alarm from the loop
    if nan_at is not None:
        x[nan_at] = float("nan")
    text = "LOAD s[0], R3\nLOAD s[1], R1\n" + "".join(f"LOAD x[{i}], R0\nDIV R1, R0, R2\nADD R3, R2, R3\n"
                                                     f"STORE R3, z[{i}]\n" for i in range(300))
    with compiled.recording() as rec:
        got = _both(monkeypatch, force, text, data={"x": x, "s": [0.5, 2.0]}, dtype=dtype)
    assert rec.stats.runs, "the chunk ran as runs of one block"
    assert isinstance(got, dict) and len(got["memory"]["z"]) == 300


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hot=st.integers(0, 15), zeros=st.lists(st.integers(0, 199), max_size=4),
       op=st.sampled_from(["EXP T0, T1", "MUL T0, T0, T1"]), dtype=st.sampled_from(["fp64", "fp16"]))
def test_an_alarm_in_a_stand_in_quotes_the_step_the_loop_quotes(monkeypatch, force, hot, zeros, op, dtype):
    """A tile block the loop runs among compiled blocks counts only the steps before it (its
    alarm quotes the step); the other counters wait for the chunk's end. A tile op that overflows
    at one row, and word blocks that bail (1 / 0), give the loop's alarms, steps and counters."""
    rows = 8
    q = [[1.0, 2.0] for _ in range(rows)]
    q[hot % rows][hot // rows] = 1e3 if dtype == "fp16" else 1e200  # exp, square: overflow, an alarm with its step
    x = [1.0 + i / 200 for i in range(200)]
    for z in zeros:
        x[z] = 0.0
    text = [f"LOAD s[0], R3\n.array O[{rows}][2]\nLOAD s[0], R1\n"]
    for i in range(200):
        text.append(f"LOAD x[{i}], R0\nDIV R1, R0, R2\nMAX R2, R0, R0\nSUB R0, R1, R0\nADD R3, R2, R3\n")
        if i % 4 == 0:  # a tile block on row i / 4 (mod rows): the few templates come back
            r = i // 4 % rows
            text.append(f"LOAD Q[{r}:{r + 1}, :], T0\n{op}\nSTORE T1, O[{r}:{r + 1}, :]\n")
    text = "".join(text)
    got = _both(monkeypatch, force, text, data={"x": x, "s": [1.0], "Q": q}, dtype=dtype)
    assert any(force)
    if isinstance(got, dict):
        assert any(a["kind"] == "overflow" for a in got["alarms"])


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(starts=st.lists(st.integers(0, 400), min_size=1, max_size=5),
       dtype=st.sampled_from(["fp64", "fp32", "fp16", "bf16"]))
def test_first_reads_from_the_list_of_initial_values(monkeypatch, force, starts, dtype):
    """A block reads a 1-D array's first reads from the array's runs of initial values (a read
    outside the runs made so far is a call, which makes its run): the same values, rounded as the
    loop rounds them, in any order of indices, in every dtype."""
    memory = importlib.import_module("toymachine.sim.memory")
    monkeypatch.setattr(memory, "_CHUNK", 16)  # runs of 16
    calls = []
    real = _ORIGINAL["initial"]  # the module's own: monkeypatch restores after the test, not each example
    sys = importlib.import_module("sys")

    def spy(self, idx):  # the calls a block makes (``init``): the reads outside the runs
        if sys._getframe(1).f_code.co_name == "init":
            calls.append(idx)
        return real(self, idx)

    monkeypatch.setattr(memory.Array, "initial", spy)
    text = "LOAD h[0], R1\n" + "".join(f"LOAD x[{s + i}], R0\nADD R0, R1, R1\nSTORE R1, y[{s + i}]\n"
                                       for s in starts for i in range(150))
    got = _outcome(lambda: simulate(io.StringIO(text), steps=False, dtype=dtype))
    block_calls = len(calls)
    assert got == _loop_only(monkeypatch, lambda: simulate(io.StringIO(text), steps=False, dtype=dtype))
    assert any(force)
    reads = len({s + i for s in starts for i in range(150)})
    want = [memory.random_value(0, "x", (i,)) for i in range(len(got["memory"]["x"]))]
    if dtype == "fp64":
        assert got["memory"]["x"] == want  # the cells read hold their initial values (the others too)
    assert 0 < block_calls <= reads / 16 + 2 * len(starts)  # a call from a block makes a run of 16


def test_initial_values_do_not_depend_on_the_order_of_reads():
    """``Array.initial`` of a 1-D array (from its runs of initial values) is ``random_value``
    whatever the order of the reads."""
    memory = importlib.import_module("toymachine.sim.memory")
    a = memory.Array("x", seed=7)
    for i in [5, 4095, 4096, 100_000, 70_000, 3, 200_000, 10**7, 8191, 65_537]:
        assert a.initial((i,)) == memory.random_value(7, "x", (i,))
    runs, size = a.initial_runs()
    assert sorted(runs) == sorted({i // size for i in [5, 4096, 100_000, 70_000, 200_000, 10**7, 65_537]})
    assert memory.Array("f", (4,), fill=1.5).initial_runs() is None


@st.composite
def apart_traces(draw):
    """Softmax steps (a LOAD and eight word instructions) with a tile block after every few of them
    (LOAD a row block of Q, an op, STORE it to O): the word blocks run as runs and the tile blocks
    apart (``tile_runs.run_apart``). Zeros in x make word blocks bail (1 / 0), a huge Q element makes
    a tile op overflow, a row past O's declared shape is the loop's error — all in trace order."""
    rows = draw(st.integers(2, 6))
    op = draw(st.sampled_from(["MUL T0, T0, T1", "EXP T0, T1", "ADD T0, T0, T1", "ROWMAX T0, T1"]))
    every = draw(st.integers(1, 4))
    reps = draw(st.integers(60, 200))
    fault_at = draw(st.one_of(st.none(), st.integers(0, 250)))
    scaled = draw(st.booleans())  # some tile blocks scale by R2 (a word read): nothing is set apart
    out = [f".array Q[{rows}][3]\n.array O[{rows}][3]\n.array M[{rows}][1]\nLOAD s[0], R1\nLOAD s[1], R2\n"]
    for i in range(reps):
        out.append(f"LOAD x[{i}], R0\nDIV R1, R0, R3\nMAX R1, R0, R1\nSUB R3, R1, R3\nSUB R0, R1, R0\nEXP R3, R3\n"
                   f"EXP R0, R0\nMUL R2, R3, R2\nADD R2, R0, R2\n")
        if i % every == 0:
            r = i // every % rows
            r2 = r + 1 if i != fault_at else rows + 1
            target = "M" if op.startswith("ROWMAX") else "O"
            out.append(f"LOAD Q[{r}:{r2}, :], T0\n{op}\nSTORE T1, {target}[{r}:{r2}, :]\n")
            if scaled and i % 3 == 1:  # stores to the rows a block set apart would store to, in trace order
                out.append(f"LOAD Q[{r}:{r2}, :], T2\nMUL T2, R2, T3\nSTORE T3, O[{r}:{r2}, :]\n")
    return "".join(out), reps, rows, scaled


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trace=apart_traces(), zeros=st.lists(st.integers(0, 199), max_size=4), hot=st.one_of(st.none(), st.integers(0, 17)),
       dtype=st.sampled_from(["fp64", "fp32", "bf16"]), strict=st.booleans())
@pytest.mark.slow
def test_tile_blocks_apart_from_word_runs_agree_with_the_loop(monkeypatch, force, trace, zeros, hot, dtype, strict):
    text, reps, rows, scaled = trace
    x = [0.5 + i / 200 for i in range(reps)]
    for z in zeros:
        if z < reps:
            x[z] = 0.0
    q = [[1.0, -2.0, 0.5] for _ in range(rows)]
    if hot is not None:
        q[hot // 3 % rows][hot % 3] = 1e3 if dtype == "bf16" else 1e200  # exp, square: overflow at that element
    with compiled.recording() as rec:
        got = _both(monkeypatch, force, text, data={"x": x, "s": [0.25, 1.0], "Q": q}, dtype=dtype,
                    strict_numerics=strict)
    if isinstance(got, dict) and any(force):
        assert rec.stats.apart or scaled, "the chunks ran word runs and tile blocks apart"
        assert got["instructions"] == text.count("\n") - 3


@st.composite
def repeated_tile_blocks(draw):
    """Word runs with tile blocks on a few row blocks, again and again: later runs of one tile block
    are counted, not run, only where they cannot differ from its first (``tile_runs.separate``) —
    row blocks that overlap from one tile block to another (``h`` rows, one apart), a block that
    loads the array the tile blocks store to, or tile blocks of two shapes keep every run."""
    h = draw(st.integers(1, 2))
    same = draw(st.booleans())  # LOAD from O, the array the blocks STORE to
    vary = draw(st.booleans())  # odd blocks one row high: two signatures
    op = draw(st.sampled_from(["MUL T0, T0, T1", "EXP T0, T1", "SUB T0, T0, T1", "MAX T0, T0, T1"]))
    rows, reps, every = 6, draw(st.integers(80, 220)), draw(st.integers(1, 3))
    out = [f".array Q[{rows}][3]\n.array O[{rows}][3]\nLOAD s[0], R1\nLOAD s[1], R2\n"]
    for i in range(reps):
        out.append(f"LOAD x[{i}], R0\nDIV R1, R0, R3\nMAX R1, R0, R1\nSUB R3, R1, R3\nSUB R0, R1, R0\nEXP R3, R3\n"
                   f"EXP R0, R0\nMUL R2, R3, R2\nADD R2, R0, R2\n")
        if i % every == 0:
            n = i // every
            hh = 1 if vary and n % 2 else h
            r, lr = n % (rows - hh + 1), 2 * n % (rows - hh + 1)  # store to row block r, load row block lr
            src = "O" if same else "Q"
            out.append(f"LOAD {src}[{lr}:{lr + hh}, :], T0\n{op}\nSTORE T1, O[{r}:{r + hh}, :]\n")
    return "".join(out), reps, rows, (h == 1 and not same and not vary, same)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trace=repeated_tile_blocks(), tiny=st.one_of(st.none(), st.integers(0, 17)),
       zeros=st.lists(st.integers(0, 219), max_size=3), dtype=st.sampled_from(["fp64", "fp16", "bf16"]),
       cap=st.sampled_from([None, 9, 12]))
def test_repeated_tile_blocks_counted_not_run_agree_with_the_loop(monkeypatch, force, trace, tiny, zeros, dtype, cap):
    """Underflows (an element that squares, or rounds, to zero) count at every run of the block that
    makes them; SRAM past a small capacity is the loop's error at the first block that holds it."""
    from toymachine import Machine
    text, reps, rows, (separable, same) = trace
    q = [[1.0 + r, -2.0, 0.5] for r in range(rows)]
    if tiny is not None:
        q[tiny // 3 % rows][tiny % 3] = 1e-5 if dtype != "fp64" else 1e-200  # squares (or rounds) to zero
    x = [0.5 + i / 300 for i in range(reps)]
    for z in zeros:
        if z < reps:
            x[z] = 0.0
    machine = None if cap is None else Machine(sram_words=cap + 4)  # the R registers hold 4 words
    o = [[0.5 + r / 10, 0.25, -1.5] for r in range(rows)]
    with compiled.recording() as rec:
        got = _both(monkeypatch, force, text, data={"x": x, "s": [0.25, 1.0], "Q": q, "O": o},
                    dtype=dtype, machine=machine)
    if isinstance(got, dict) and any(force) and separable:
        assert rec.stats.tiles_counted
    if same:  # a chunk's tile blocks load what they store (overlapping blocks may still fall apart in one chunk)
        assert not rec.stats.tiles_counted


def test_a_tile_block_that_reads_a_word_keeps_every_tile_block_in_trace_order(monkeypatch, force):
    """A tile block that scales by R2 runs among the word blocks; the tile blocks that read no word
    then cannot run apart after them — both write the same rows of O, the later one wins."""
    rows, every, reps = 4, 4, 200
    out = [f".array Q[{rows}][3]\n.array O[{rows}][3]\nLOAD s[0], R1\nLOAD s[1], R2\n"]
    for i in range(reps):
        out.append(f"LOAD x[{i}], R0\nDIV R1, R0, R3\nMAX R1, R0, R1\nSUB R3, R1, R3\nSUB R0, R1, R0\nEXP R3, R3\n"
                   f"EXP R0, R0\nMUL R2, R3, R2\nADD R2, R0, R2\n")
        if i % every == 0:
            r = i // every % rows
            out.append(f"LOAD Q[{r}:{r + 1}, :], T0\nMUL T0, T0, T1\nSTORE T1, O[{r}:{r + 1}, :]\n")
            if i % 3 == 1:
                out.append(f"LOAD Q[{r}:{r + 1}, :], T2\nMUL T2, R2, T3\nSTORE T3, O[{r}:{r + 1}, :]\n")
    data = {"x": [0.5 + i / 300 for i in range(reps)], "s": [0.25, 1.0], "Q": [[1.0, -2.0, 0.5]] * rows}
    monkeypatch.setattr(source, "CHUNK_CHARS", 8000)  # chunks of word runs a scaling block breaks now and then
    got = _both(monkeypatch, force, "".join(out), data=data)
    assert any(force) and isinstance(got, dict)


@pytest.mark.parametrize("blocks_on", [True, False])
def test_stored_regions_grow_with_distinct_store_lines_not_with_the_trace(monkeypatch, force, blocks_on):
    """An output array's written blocks (``Array.regions``, which keep never-written cells null) hold
    each STORE line's block once, however often it runs — in the loop and in compiled tile blocks."""
    memory = importlib.import_module("toymachine.sim.memory")
    sizes = []
    real = memory.Array.written_mask
    monkeypatch.setattr(memory.Array, "written_mask", lambda self: sizes.append(len(self.regions or ())) or real(self))
    text = ".array Q[8][2]\n.array O[8][2]\n" + "".join(
        f"LOAD x[{i}], R0\nADD R0, R0, R1\nMUL R1, R0, R1\nSUB R1, R0, R2\nEXP R2, R2\n"
        f"LOAD Q[{i % 3}:{i % 3 + 1}, :], T0\nADD T0, T0, T1\nSTORE T1, O[{i % 3}:{i % 3 + 1}, :]\n" for i in range(600))
    if not blocks_on:
        monkeypatch.setattr(compiled.CompiledPath, "run_chunk", lambda *a: False)
    got = _outcome(lambda: simulate(io.StringIO(text), steps=False))
    assert got["memory"]["O"][3:] == [[None, None]] * 5 and got["memory"]["O"][0][0] is not None
    assert sizes and max(sizes) <= 3


def test_short_word_units_are_not_grouped_with_tile_units(monkeypatch, force):
    """Short word units (five lines) are grouped into blocks of several — but not in a chunk that
    holds tile units: those stay blocks of their own, run apart from the word runs."""
    monkeypatch.setattr(source, "CHUNK_CHARS", 6000)
    text = ".array Q[8][4]\n.array O[8][4]\nLOAD x[0], R1\nMOV R1, R3\n" + "".join(
        f"LOAD x[{i}], R0\nMAX R1, R0, R1\nSUB R0, R1, R2\nEXP R2, R2\nADD R3, R2, R3\n"
        + (f"LOAD Q[{i // 4 % 4 * 2}:{i // 4 % 4 * 2 + 2}, :], T0\nMUL T0, T0, T1\n"
           f"STORE T1, O[{i // 4 % 4 * 2}:{i // 4 % 4 * 2 + 2}, :]\n" if i % 4 == 0 else "") for i in range(800))
    x = [0.5 + i / 1000 for i in range(800)]
    x[333] = float("inf")  # an input that makes a word block bail mid-chunk (an overflow alarm)
    with compiled.recording() as rec:
        got = _both(monkeypatch, force, text, data={"x": x})
    assert any(force) and rec.stats.apart and isinstance(got, dict) and got["instructions"] == 800 * 5 + 200 * 3 + 2


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(new_every=st.integers(20, 120), zeros=st.lists(st.integers(0, 599), max_size=3),
       hot=st.one_of(st.none(), st.integers(0, 40)), dtype=st.sampled_from(["fp64", "fp16"]))
def test_a_chunk_with_new_tile_lines_runs_them_in_the_loop_and_the_rest_as_blocks(monkeypatch, force, new_every, zeros,
                                                                                 hot, dtype):
    """Tile lines the loop compiles where they stand (a new row block every ``new_every`` steps): the
    loop runs a chunk up to the last new one, the blocks the rest — alarms, errors and counters as
    the loop's, word blocks that bail on either side of the cut."""
    monkeypatch.setattr(source, "CHUNK_CHARS", 6000)
    chunk_starts, rests = [], []
    real_t, real_b = text_mode._run_templates, compiled.CompiledPath.run_chunk
    monkeypatch.setattr(text_mode, "_run_templates", lambda run, text, ktext, first, *a: chunk_starts.append(first)
                        or real_t(run, text, ktext, first, *a))

    def spy(door, ktext, first, *a):
        ok = real_b(door, ktext, first, *a)
        if ok and first not in chunk_starts:
            rests.append(first)
        return ok

    monkeypatch.setattr(compiled.CompiledPath, "run_chunk", spy)
    rows = 48
    text = f".array Q[{rows}][2]\n.array O[{rows}][2]\nLOAD x[0], R1\nMOV R1, R3\n" + "".join(
        f"LOAD x[{i}], R0\nMAX R1, R0, R1\nSUB R0, R1, R2\nEXP R2, R2\nADD R3, R2, R3\nMUL R3, R2, R3\n"
        + (f"LOAD Q[{i // new_every % rows}:{i // new_every % rows + 1}, :], T0\nEXP T0, T1\n"
           f"STORE T1, O[{i // new_every % rows}:{i // new_every % rows + 1}, :]\n" if i % 3 == 0 else "")
        for i in range(600))
    x = [0.5 + i / 1000 for i in range(600)]
    for z in zeros:
        x[z] = float("inf")
    q = [[0.5, -1.0] for _ in range(rows)]
    if hot is not None:
        q[hot % rows][hot % 2] = 800.0  # exp overflows: an alarm from a tile block
    got = _both(monkeypatch, force, text, data={"x": x, "Q": q}, dtype=dtype)
    if isinstance(got, dict) and new_every >= 40:
        assert rests, "a chunk ran its rest as blocks after the loop compiled its new tile lines"


def test_word_stores_into_a_block_array_remember_each_line_once(monkeypatch):
    """A word STORE into an array the program also moves in blocks (held dense, cells unwritten)
    records its cell once per compiled line, however often the line runs; the never-written cells
    stay null and the written ones hold the stored values."""
    memory = importlib.import_module("toymachine.sim.memory")
    sizes = []
    real = memory.Array.written_mask
    monkeypatch.setattr(memory.Array, "written_mask", lambda self: sizes.append(len(self.regions or ())) or real(self))
    text = ".array Q[8][2]\n.array O[8][2]\nLOAD Q[0:1, :], T0\nSTORE T0, O[0:1, :]\n" + "".join(
        f"LOAD x[{i}], R0\nSTORE R0, O[{2 + i % 2}][1]\n" for i in range(500))
    got = _outcome(lambda: simulate(io.StringIO(text), steps=False, data={"x": [float(i) for i in range(500)]}))
    assert got["memory"]["O"][2] == [None, 498.0] and got["memory"]["O"][3] == [None, 499.0]
    assert got["memory"]["O"][4:] == [[None, None]] * 4 and got["memory"]["O"][0][0] is not None
    assert sizes and max(sizes) <= 3


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(chunk=400, zeros=[21], bad=None, dtype="fp64")  # the first division by zero in a chunk's cut last unit
@example(chunk=400, zeros=[102], bad=None, dtype="fp64")  # … in a chunk's cut first unit
@example(chunk=400, zeros=[], bad=48, dtype="bf16")  # an index past x's given shape in a cut unit
@given(chunk=st.integers(400, 3000), zeros=st.lists(st.integers(0, 299), max_size=4),
       bad=st.one_of(st.none(), st.integers(0, 299)), dtype=st.sampled_from(["fp64", "bf16"]))
def test_the_units_a_chunk_cuts_run_in_the_loop_as_the_loop_runs_them(monkeypatch, force, chunk, zeros, bad, dtype):
    """A chunk that starts or ends inside a unit (the lines from one LOAD to the next) runs those cut
    units in the loop, before and after its blocks (``templates.cut_edges``): an alarm or an error in
    them has the loop's line and step, the stream's indices stay in order, and no block is
    compiled for them."""
    monkeypatch.setattr(source, "CHUNK_CHARS", chunk)
    monkeypatch.setattr(source, "FIRST_CHUNK_CHARS", chunk)
    made = []
    real = blocks._compile
    monkeypatch.setattr(blocks, "_compile", lambda run, codes, *a: made.append(len(codes)) or real(run, codes, *a))
    x = [1.0 + i / 300 for i in range(300)]
    for z in zeros:
        x[z] = 0.0  # 1 / 0: the div-by-zero alarm, from the loop
    body = [f"LOAD x[{i}], R0\nDIV R1, R0, R2\nADD R3, R2, R3\nMUL R3, R1, R3\nSTORE R3, z[{i}]\n" for i in range(300)]
    if bad is not None:
        body[bad] = body[bad].replace(f"x[{bad}]", f"x[{300 + bad}]")  # past x's given shape: a fault at its line
    text = "LOAD s[0], R3\nLOAD s[1], R1\n" + "".join(body)
    _both(monkeypatch, force, text, data={"x": x, "s": [0.5, 2.0]}, dtype=dtype)
    assert len(made) <= 4  # the unit and its pairs, whole; not one per chunk for its cut ends (10 before)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(head=st.text("LOAD x[]\n, ", max_size=12), unit=st.text("LOAD x[]\n, R0", min_size=1, max_size=14),
       m=st.integers(0, 40), rest=st.text("LOAD x[]\n, ", max_size=14))
def test_units_split_as_str_split(head, unit, m, rest):
    """``templates.units`` gives ``ktext.split("\\nLOAD ")``, item for item, on texts that repeat a unit
    (and on any others)."""
    for ktext in (head + ("\nLOAD " + unit) * m + rest, head + unit * m + rest):
        assert blocks.units(ktext) == ktext.split("\nLOAD "), ktext


def test_the_door_closed_runs_every_instruction_in_the_loop(monkeypatch, force):
    """``sim.compiled.ENABLED = False`` is the loop-only simulator: no block runs, and the result is
    the compiled path's."""
    text = "".join(f"LOAD x[{i}], R0\nMUL R0, R0, R1\nSTORE R1, y[{i}]\n" for i in range(400))
    fast = _outcome(lambda: simulate(io.StringIO(text), steps=False))
    assert any(force)
    force.clear()
    monkeypatch.setattr(compiled, "ENABLED", False)
    assert _outcome(lambda: simulate(io.StringIO(text), steps=False)) == fast and not any(force)


def test_the_door_records_the_routes_a_run_took(monkeypatch):
    """``recording()`` collects each run's ``PathStats``: a long softmax ran as runs of one block;
    with the compiled path off the door refused every chunk and no route ran; a run outside the
    block is not recorded. ``Tally`` (the counters) and ``PathStats`` (their view) have one set of fields."""
    import dataclasses
    assert [f.name for f in dataclasses.fields(compiled.Tally)] == [f.name for f in dataclasses.fields(compiled.PathStats)]
    program = softmax_program(5000)
    with compiled.recording() as rec:
        simulate(program)
    assert len(rec.paths) == 1 and rec.stats.runs > 4000 and not rec.stats.bails
    simulate(program)
    assert len(rec.paths) == 1
    monkeypatch.setattr(compiled, "ENABLED", False)
    with compiled.recording() as off:
        simulate(program)
    routes = dataclasses.replace(off.stats, refused=0)
    assert off.stats.refused > 0 and routes == compiled.PathStats()
