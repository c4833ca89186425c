"""The MAC-resident accumulator (seed 000, "Minimum registers and modern GPUs": the accumulator
inside the MAC unit "shrinks the register file back toward 2 registers"): `mac_accumulator: true`
machines, the ACC register, and the matmul generator that uses it."""

import numpy as np
import pytest

from toymachine import AsmError, MachineLimitError, load_machine, parse, resolve_machine, simulate
from toymachine.cost import matmul_cost, matmul_plan_cost, plan_matmul
from toymachine.errors import ConfigError
from toymachine.gen import matmul_program

C00 = """.data a = [[1, 2], [3, 4]]
.data b = [[5, 6], [7, 8]]
LOAD a[0][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, ACC
LOAD a[0][1], R0
LOAD b[1][0], R1
MAC R0, R1, ACC, ACC
STORE ACC, c[0][0]
"""


def test_two_registers_and_acc_compute_c00():
    r = simulate(parse(C00), resolve_machine("toy2acc"))
    assert r.memory["c"] == [[1 * 5 + 2 * 7]]
    assert r.cycles == 7 and r.registers_used == 2
    assert r.register_names == ("R0", "R1", "ACC")
    assert r.steps[-1].registers == (2.0, 7.0, 19.0)  # the register table shows ACC as its own column
    assert r.to_dict()["machine"]["mac_accumulator"] is True


def test_acc_needs_a_machine_that_has_it():
    with pytest.raises(MachineLimitError, match="this machine has none") as exc:
        simulate(parse(C00))
    assert "mac_accumulator: true" in exc.value.hint
    assert "mac_accumulator" not in simulate(parse(C00.replace("ACC", "R2"))).to_dict()["machine"]


@pytest.mark.parametrize("line", ["LOAD a[0][0], ACC", "ADD ACC, R0, R1", "MAC_Z ACC, R0, R1", "MAC R0, ACC, R1, R1",
                                  "EXP ACC, R0", "MOV R0, ACC"])
def test_acc_is_only_written_by_mac_and_read_by_mac_store_mov(line):
    program = parse(".data a = [[1]]\nLOAD a[0][0], R0\nLOAD a[0][0], R1\n" + line + "\n")
    with pytest.raises(AsmError, match="cannot use ACC") as exc:
        simulate(program, resolve_machine("toy2acc"))
    assert exc.value.loc.line == 4


def test_mov_reads_the_accumulator_out():
    r = simulate(parse(C00.replace("STORE ACC, c[0][0]", "MOV ACC, R0\nSTORE R0, c[0][0]")), resolve_machine("toy2acc"))
    assert r.memory["c"] == [[19.0]]


def test_machine_file_key_is_a_boolean(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("registers: 2\nmac_accumulator: yes please\n")
    with pytest.raises(ConfigError, match="true or false"):
        load_machine(path)
    path.write_text("registers: 2\nmac_accumulator: true\n")
    assert load_machine(path).mac_accumulator is True


@pytest.mark.parametrize("n,m,k", [(1, 1, 1), (2, 2, 2), (3, 2, 4), (4, 4, 4)])
@pytest.mark.parametrize("registers", [2, 3, 4, 6])
@pytest.mark.parametrize("schedule", ["inner", "outer", "best"])
def test_generated_matmul_with_acc_is_right_and_costs_its_formula(n, m, k, registers, schedule):
    try:
        program = matmul_program(n=n, m=m, k=k, registers=registers, schedule=schedule, mac_accumulator=True)
    except ConfigError:  # outer needs a Q slot, a P slot and an accumulator besides ACC's: not with 2
        assert schedule == "outer" and registers == 2
        return
    machine = resolve_machine("toy2acc").with_(registers=registers)
    r = simulate(program, machine)
    a, b = np.array(r.memory["a"]), np.array(r.memory["b"])
    np.testing.assert_array_equal(np.array(r.memory["c"]), a @ b)
    cost = matmul_cost(n=n, m=m, k=k, registers=registers, schedule=schedule, mac_accumulator=True)
    assert dict(r.ops) == dict(cost.ops) and r.cycles == cost.cycles()
    assert r.registers_used == cost.registers <= registers
    # ACC is one more fast word: the same LOADs as the plan for R + 1 registers without it (for
    # best, a searched schedule — toymachine.optimize — may beat the plan on either machine)
    plain = plan_matmul(n=n, m=m, k=k, registers=registers + 1, schedule=schedule)
    plain_reads = matmul_plan_cost(plain).reads
    assert cost.reads <= plain_reads if schedule == "best" else cost.reads == plain_reads
    assert plan_matmul(n=n, m=m, k=k, registers=registers, schedule=schedule, mac_accumulator=True).schedule == plain.schedule


def test_two_registers_need_the_accumulator():
    with pytest.raises(ConfigError, match="at least 3 registers"):
        matmul_program(n=2, registers=2)
    assert matmul_cost(n=2, registers=2, schedule="inner", mac_accumulator=True).cycles() == 25  # the seed's 3-register 25


def test_gen_matmul_cli_flag(toym):
    code, out, err = toym("gen", "matmul", "--n", "2", "--registers", "2", "--mac-accumulator")
    assert code == 0, err
    assert "ACC" in out and "--mac-accumulator" in out.splitlines()[1]
    code, out2, err = toym("run", "-", "--machine", "toy2acc", "-f", "json", input=out)
    assert code == 0, err

