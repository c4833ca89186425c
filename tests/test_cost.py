"""Closed-form costs against the simulator on non-default machines; lower bounds."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine import Machine, simulate
from toymachine.cost import Bound, Cost, matmul_bound, softmax_cost
from toymachine.gen.registry import generator_names, get_generator

SCALAR_GENERATORS = ("matmul", "softmax", "attention", "variance")

machines = st.builds(
    lambda load, store, exp, mac, div: Machine(name="costly", cycles={"LOAD": load, "STORE": store, "EXP": exp,
                                                                     "MAC": mac, "DIV": div}),
    st.integers(0, 100), st.integers(0, 100), st.integers(0, 20), st.sampled_from([1, 2, 0.5]), st.integers(1, 30))


def small_point(spec, draw):
    """Random small parameters for any registered generator."""
    params = {}
    for p in spec.params:
        if p.choices:
            params[p.name] = draw(st.sampled_from(p.choices))
        elif p.name in ("m", "k", "output_slots", "registers") and spec.name == "attention":
            params[p.name] = None
        elif p.kind is int:
            low = p.minimum or 1
            params[p.name] = draw(st.one_of(st.none(), st.integers(low, low + 4))) if p.default is None else \
                draw(st.integers(low, low + 4))
        elif p.kind is bool:
            params[p.name] = draw(st.booleans())
    if spec.name == "matmul" and params["registers"] < 3:
        params["mac_accumulator"] = True  # 2 registers compute a matmul only with the MAC unit's ACC
    return params


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(SCALAR_GENERATORS), machine=machines, data=st.data())
def test_cycles_on_any_machine_equal_the_formula(name, machine, data):
    """Cycles are Σ count × per-op cycles: the formula's counts hold on every machine."""
    spec = get_generator(name)
    params = small_point(spec, data.draw)
    program = spec.build(**params, with_data=False, seed=0)
    point_machine = spec.machine(params, machine) if spec.machine else machine
    r = simulate(program, point_machine, steps=False)
    cost = spec.cost(**params)
    assert r.cycles == pytest.approx(cost.cycles(point_machine))
    assert (r.dram_reads, r.dram_writes, r.instructions) == (cost.reads, cost.writes, cost.instructions)


def test_cost_cycles_weights_each_opcode():
    c = Cost({"LOAD": 3, "EXP": 2, "STORE": 1}, registers=2)
    assert c.cycles() == 6 and c.instructions == 6
    assert c.cycles(Machine(cycles={"LOAD": 10, "EXP": 4})) == 3 * 10 + 2 * 4 + 1
    assert list(c.ops) == ["LOAD", "STORE", "EXP"]  # ISA order


def test_softmax_formulas_match_the_seed_table():
    n = 100
    assert (softmax_cost(n, "safe").reads, softmax_cost(n, "safe").writes) == (3 * n, n)
    assert (softmax_cost(n, "online").reads, softmax_cost(n, "online").writes) == (2 * n, n)


@pytest.mark.parametrize("m,n,k,registers", [(2, 2, 2, 3), (16, 16, 16, 3), (64, 64, 64, 6), (8, 4, 32, 16)])
def test_matmul_bound_is_the_larger_of_compulsory_and_hong_kung(m, n, k, registers):
    b = matmul_bound(n, registers, m=m, k=k)
    compulsory = m * k + k * n + m * n
    pebble = math.ceil(m * n * k / (2 * math.sqrt(2) * math.sqrt(registers)) - registers)
    assert (b.reads, b.writes) == (m * k + k * n, m * n)
    assert b.traffic == max(compulsory, pebble)
    assert ("Hong" in b.source) == (pebble > compulsory)


def test_every_registered_generator_has_cost_and_bound():
    for name in SCALAR_GENERATORS:
        spec = get_generator(name)
        assert spec.cost is not None and spec.bound is not None
        assert isinstance(spec.bound(**spec.defaults()), Bound)
    assert set(SCALAR_GENERATORS) <= set(generator_names())
