"""The matmul schedule search: brute-force oracle, simulator, numpy, the seed's figures, limits."""

import json
import random
from itertools import permutations

import numpy as np
import pytest
from optimize_oracle import brute_force_matmul

from toymachine import ConfigError, Machine, simulate
from toymachine.cost import matmul_cost
from toymachine.optimize import optimize_matmul
from toymachine.optimize.matmul_space import MatmulSpace
from toymachine.optimize.matmul_symmetry import Canonicalizer

WEIGHTED = Machine(name="weighted", cycles={"LOAD": 3, "STORE": 2, "MAC_Z": 1, "MAC": 5})
# the largest take the oracle seconds each: the slow tier; the rest keep it honest in the fast one
TINY = [(1, 1, 1, 3), (1, 1, 2, 3), (1, 2, 2, 3), (2, 1, 2, 3), (2, 2, 1, 3),
        pytest.param(2, 2, 2, 3, marks=pytest.mark.slow), pytest.param(1, 3, 2, 3, marks=pytest.mark.slow),
        (1, 2, 3, 3), pytest.param(2, 2, 1, 4, marks=pytest.mark.slow), (1, 2, 2, 4),
        pytest.param(2, 1, 3, 4, marks=pytest.mark.slow)]


def check_schedule(opt, machine=None):
    """The schedule runs within its registers, costs what it claims and computes numpy's A·B."""
    machine = (machine or Machine()).with_(registers=opt.registers)
    r = simulate(opt.program, machine, steps=False)
    assert r.cycles == opt.cycles and dict(r.ops) == opt.ops
    a = np.array(opt.program.arrays[0].values)
    b = np.array(opt.program.arrays[1].values)
    np.testing.assert_array_equal(np.array(r.memory["c"]), a @ b)
    return r


@pytest.mark.parametrize("m,n,k,R", TINY)
@pytest.mark.parametrize("machine", [Machine(), WEIGHTED], ids=["unit", "weighted"])
def test_optimum_equals_brute_force(m, n, k, R, machine):
    """An independent Dijkstra over concrete register files (tests/optimize_oracle.py)."""
    cyc = {op: machine.op_cycles(op) for op in ("LOAD", "STORE", "MAC_Z", "MAC")}
    oracle = brute_force_matmul(m, n, k, R, load=cyc["LOAD"], store=cyc["STORE"], mac_z=cyc["MAC_Z"], mac=cyc["MAC"])
    opt = optimize_matmul(n, R, m=m, k=k, machine=machine)
    assert opt.proven_optimal and opt.cycles == opt.lower_bound == oracle
    check_schedule(opt, machine)


@pytest.mark.slow
@pytest.mark.parametrize("m,n,k,R", [(1, 2, 2, 3), (2, 1, 2, 3), (1, 1, 3, 3)])
def test_spills_searched_equal_brute_force_with_spills(m, n, k, R):
    oracle = brute_force_matmul(m, n, k, R, load=3, store=2, mac_z=1, mac=5, spills=True)
    opt = optimize_matmul(n, R, m=m, k=k, machine=WEIGHTED, spills=True)
    assert opt.proven_optimal and opt.cycles == oracle and opt.spills
    check_schedule(opt, WEIGHTED)


@pytest.mark.slow
@pytest.mark.parametrize("m,n,k,R", [(1, 1, 2, 2), (1, 2, 2, 2), (2, 2, 1, 2), (2, 2, 2, 2), (1, 2, 2, 3),
                                     (2, 1, 2, 3), (2, 2, 1, 3)])
@pytest.mark.parametrize("machine", [Machine(), WEIGHTED], ids=["unit", "weighted"])
def test_accumulator_optimum_equals_brute_force(m, n, k, R, machine):
    """The MAC unit's ACC: one slot only partial sums use, in the oracle as in the search."""
    machine = machine.with_(mac_accumulator=True)
    cyc = {op: machine.op_cycles(op) for op in ("LOAD", "STORE", "MAC_Z", "MAC")}
    oracle = brute_force_matmul(m, n, k, R, load=cyc["LOAD"], store=cyc["STORE"], mac_z=cyc["MAC_Z"], mac=cyc["MAC"],
                                acc=True)
    opt = optimize_matmul(n, R, m=m, k=k, machine=machine)
    assert opt.mac_accumulator and opt.proven_optimal and opt.cycles == oracle
    r = check_schedule(opt, machine)
    assert r.registers_used <= R


def test_accumulator_is_worth_a_register_for_two_by_two():
    """2×2: R registers + ACC cost what R + 1 registers cost (25/22/21/20), each proven."""
    assert [optimize_matmul(2, R, mac_accumulator=True).cycles for R in (2, 3, 4, 5)] == [25, 22, 21, 20]


@pytest.mark.slow
def test_two_by_two_at_four_registers_equals_brute_force():
    """The issue's 22: exhaustive search over every register file of 4 registers agrees."""
    assert brute_force_matmul(2, 2, 2, 4) == optimize_matmul(2, 4).cycles == 22


@pytest.mark.parametrize("R,cycles,loads", [(3, 25, 13), (4, 22, 10), (5, 21, 9), (6, 20, 8), (7, 20, 8), (8, 20, 8)])
def test_two_by_two_targets_proven(R, cycles, loads):
    """25/22/21/20 cycles at 3/4/5/6 registers, proven in well under a second each."""
    opt = optimize_matmul(2, R)
    assert (opt.cycles, opt.loads, opt.proven_optimal) == (cycles, loads, True)
    assert opt.seconds < 5
    check_schedule(opt)


@pytest.mark.slow
@pytest.mark.parametrize("R", [3, 4])
def test_three_by_three_small_register_files_proven(R):
    """n = 3 at R = 3 (the inner product's 82) and R = 4 (71, five LOADs fewer than the constructions)."""
    opt = optimize_matmul(3, R, time_limit=120)
    assert opt.proven_optimal and opt.cycles == {3: 82, 4: 71}[R]
    assert opt.cycles <= matmul_cost(3, R, "inner").cycles()
    check_schedule(opt)


@pytest.mark.slow
def test_time_limit_returns_best_found_with_a_gap():
    opt = optimize_matmul(4, 6, time_limit=0.5, beam_width=0)
    assert not opt.proven_optimal and opt.lower_bound < opt.cycles and opt.gap == opt.cycles - opt.lower_bound
    assert opt.lower_bound >= opt.static_bound
    constructive = min(matmul_cost(4, 6, s).cycles() for s in ("inner", "outer"))
    assert opt.cycles <= constructive
    check_schedule(opt)


@pytest.mark.slow
def test_symmetry_reduction_keeps_the_optimum_and_explores_fewer_states():
    plain = optimize_matmul(3, 4, m=2, k=3, symmetry=False, beam_width=0)
    reduced = optimize_matmul(3, 4, m=2, k=3, symmetry=True, beam_width=0)
    assert reduced.cycles == plain.cycles and reduced.proven_optimal and plain.proven_optimal
    assert reduced.states_stored < plain.states_stored


def _act(space, key, rows, cols, ls, transpose):
    """A renaming of rows, columns, l (and a transpose) applied to a state, written out by hand."""
    m, n, k = space.m, space.n, space.k
    res, codes = space.unpack(key)
    A = [[res >> (i * k + l) & 1 for l in range(k)] for i in range(m)]
    B = [[res >> (space.na + j * k + l) & 1 for l in range(k)] for j in range(n)]
    D = [[codes[i * n + j] for j in range(n)] for i in range(m)]
    if transpose:
        A, B, D = B, A, [list(c) for c in zip(*D)]
    res2, codes2 = 0, []
    for i2, i in enumerate(rows):
        for l2, l in enumerate(ls):
            res2 |= A[i][l] << (i2 * k + l2)
    for j2, j in enumerate(cols):
        for l2, l in enumerate(ls):
            res2 |= B[j][l] << (space.na + j2 * k + l2)
    for i in rows:
        for j in cols:
            c = D[i][j]
            codes2.append(sum(1 << l2 for l2, l in enumerate(ls) if c >> l & 1) | (c & space.inreg))
    return space.pack(res2, codes2)


@pytest.mark.slow
@pytest.mark.parametrize("m,n,k,R", [(2, 2, 2, 4), (2, 3, 3, 6), (3, 3, 3, 5)])
def test_canonical_form_is_one_representative_per_orbit(m, n, k, R):
    """Every renaming of a state has the same canonical key, and that key is one of the renamings."""
    space = MatmulSpace(m, n, k, R)
    canon = Canonicalizer(space).canonical
    rng = random.Random(m * 100 + n * 10 + k)
    key = space.root()
    for _ in range(150):
        moves = list(space.moves(key))
        if not moves:
            key = space.root()
            continue
        key = rng.choice(moves)[1]
        orbit = {_act(space, key, rows, cols, ls, t)
                 for t in ([False, True] if m == n else [False])
                 for rows in permutations(range(n if t else m)) for cols in permutations(range(m if t else n))
                 for ls in permutations(range(k))}
        keys = {canon(x) for x in rng.sample(sorted(orbit), min(6, len(orbit)))}
        assert len(keys) == 1 and keys.pop() in orbit


def test_json_dict_has_the_contract_keys():
    d = optimize_matmul(2, 4).to_dict()
    for key in ("cycles", "lower_bound", "proven_optimal", "program", "states_explored", "seconds"):
        assert key in d
    assert isinstance(d["proven_optimal"], bool)
    assert sum(line.startswith("MAC") for line in d["program"].splitlines()) == 8
    json.dumps(d)


def test_output_is_deterministic():
    a, b = optimize_matmul(2, 5), optimize_matmul(2, 5)
    assert a.program.to_text() == b.program.to_text()


@pytest.mark.parametrize("kwargs,key,needle", [({"n": 2, "registers": 2}, "registers", "at least 3 registers"),
                                               ({"n": 0, "registers": 3}, "n", "at least 1"),
                                               ({"n": 2, "registers": 3, "time_limit": 0}, "time_limit", "positive")])
def test_bad_parameters_are_config_errors(kwargs, key, needle):
    with pytest.raises(ConfigError) as exc:
        optimize_matmul(**kwargs)
    assert needle in exc.value.message and exc.value.key == key
