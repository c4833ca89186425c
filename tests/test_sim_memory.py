"""The simulator's memory: an array's final contents without a Python step per cell (``Array.to_array``)
equal the per-cell path on random inputs, and a run leaves the garbage collector as it found it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine.sim.memory import Array


def _plain(arr: Array) -> np.ndarray:
    return np.array(arr.to_nested(), dtype=np.float64)  # the per-cell path


values = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(shape=st.one_of(st.tuples(st.integers(1, 40)), st.tuples(st.integers(1, 7), st.integers(1, 7))),
       data=st.data(), read=st.booleans(), fill=st.one_of(st.none(), st.floats(-3, 3)), seed=st.integers(0, 3))
def test_cells_array_equals_the_nested_lists(shape, data, read, fill, seed):
    arr = Array("x", None, fill=fill, seed=seed)
    idx = st.tuples(*[st.integers(0, n - 1) for n in shape])
    for key, v in data.draw(st.dictionaries(idx, values, max_size=30)).items():
        arr.check_index(key)
        arr.cells[key] = v
    arr.read = read
    if arr.shape is None:
        return
    twin = Array("x", None, fill=fill, seed=seed)
    twin.shape, twin.cells, twin.read = list(arr.shape), dict(arr.cells), read
    fast = arr.to_array()
    plain = _plain(twin)
    assert fast.shape == plain.shape and fast.dtype == plain.dtype
    assert np.array_equal(fast, plain, equal_nan=True)
    assert arr.randomised == twin.randomised


def test_symbolic_cells_take_the_plain_path():
    arr = Array("x", None)
    arr.check_index((0,))
    arr.cells[(0,)] = "a₀"
    assert arr._cells_array() is None


@pytest.mark.slow
def test_a_run_leaves_the_collector_on_and_its_objects_out_of_the_young_generations():
    """``sim.simulate`` pauses the cyclic collector while it runs; what the run made goes to the oldest
    generation before it is enabled again (no young collection walks the run's compiled lines)."""
    import gc
    import io

    from toymachine import simulate

    n = 20
    trace = "".join(f"LOAD a[{i}][{k}], R0\nLOAD b[{k}][{j}], R1\n" + ("MAC_Z R0, R1, R2\n" if k == 0 else
                    "MAC R0, R1, R2, R2\n") for i in range(n) for j in range(n) for k in range(n))
    assert gc.isenabled()
    gc.collect()
    assert simulate(io.StringIO(trace), steps=False).instructions == 3 * n ** 3
    assert gc.isenabled()
    assert len(gc.get_objects(0)) + len(gc.get_objects(1)) < 50  # (without the move: gen 1 holds over 100 of the run's)
    gc.disable()
    try:
        simulate(io.StringIO(trace), steps=False)
        assert not gc.isenabled()  # a collector the caller paused stays paused
    finally:
        gc.enable()
    kept = [[i] for i in range(1000)]  # a host that froze its objects (a pre-forking server) keeps them frozen
    gc.freeze()
    try:
        simulate(io.StringIO(trace), steps=False)
        assert gc.get_freeze_count() > len(kept) and gc.isenabled()  # (unfrozen, it would be 0)
    finally:
        gc.unfreeze()
    del kept
