"""Seed 002's own cycle accounting as a machine's pricing (``accounting: seed-002``, preset
``tpu-v5e-seed``): the tile engine asks ``units.pricer``, which hands machines with this accounting
to ``seed_pricer`` here. The ops, their names and which instruction carries each are
``toymachine.cost.tpu_seed``'s (its ``SEED_OPS``; ``seed_vpu_ops`` is their closed form).

What differs from toym's own pricing (``units.pricer``), as the seed's ``TPUCycleSimulator`` counts:

* MXU — every matmul is one pass of M + K + N − 2 cycles, whatever its K and N (no split into
  weight blocks: the seed's formula), MACs M·K·N.
* Masking — a flash program (one that FILLs a running max with −inf) pays ``where(valid)`` on every
  computed Q_i·K_jᵀ tile (the seed's ``k_body`` is one traced body: every tile is masked); its MASK
  instructions cost nothing more. A standard program's MASK is the seed's mask built
  (``triu(ones)``) and applied (``where``), one cycle per vector each.
* Not charged: the 1×1 τ tile (a host scalar in the seed's code), the accumulator's zero FILL, the
  log-sum-exp L (a LOG and the ADD that follows it; the seed's code returns O only).
* Charged without an instruction of their own: the (Br,) rows ``q_idx`` and ``q_mask`` with each
  running max FILL (the seed's ``one_q_block`` setup), and the call's four index vectors with the
  first one (toym's MASK takes the offsets as operands).
* Partial tiles — the seed pads Q, K and V to whole blocks (``n_pad``, ``k_safe``): in a flash
  program every matmul and every op is charged at the first tile's (Br, Bc), as the seed's fixed
  shapes are (a block larger than n, which toym clamps to n, is not padded back).
Every op costs ⌈elements / lanes⌉ × the machine's cycles per vector of the instruction it runs as.
"""

from __future__ import annotations

__all__ = ["seed_setup", "seed_pricer"]

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...cost import tpu_seed as S
from ...program import operands_of

if TYPE_CHECKING:
    from ..run import Run

MXU_CYCLES, MACS, PASSES, VPU_CYCLES = range(4)  # as units.py


def seed_setup(run: Run) -> None:
    """Per-run state: ``flash`` (a running max has been filled), ``called`` (the call's index
    vectors charged), ``after_log`` (the instruction just priced was a LOG)."""
    run.seed_state = {"flash": False, "called": False, "after_log": False, "br": 0, "bc": 0, "tau": None,
                      "scores": None, "acc": None}


def seed_pricer(run: Run, op: str, srcs: tuple, ins) -> Callable:
    """The closure that charges one execution of ``op`` under the seed's accounting."""
    vpu, acc, by_op, st = run.machine.vpu, run.units, run.vpu_by_op, run.seed_state
    lanes = vpu.lanes

    def charge(name: str, elements: int, mnemonic: str, shape=None, score=False) -> None:
        if shape is not None and st["flash"]:  # the seed pads a partial tile to the full block
            elements = max(shape[0], st["br"]) * (max(shape[1], st["bc"]) if score else shape[1])
        c = -(-elements // lanes) * vpu.per_vector(mnemonic)
        acc[VPU_CYCLES] += c
        by_op[name] += c

    def note(name: str) -> None:  # listed in by_op at 0 cycles: the seed does not charge it
        by_op[name] += 0

    dst = getattr(ins.args[-1], "name", None) if ins is not None else None
    names = {getattr(a, "name", None) for a in ins.args[:-1]} if ins is not None else set()
    if op in ("MAC_Z", "MAC"):
        sa, ta, _ = srcs[0]
        kt = srcs[1][1]  # Q_i·K_jᵀ: the second operand transposed

        def price_matmul(regs, r):
            st["after_log"] = False
            m, n = r.shape
            k = regs[sa].shape[0 if ta else 1]
            if st["flash"]:  # the seed pads partial tiles: every matmul has the first tile's blocks
                if kt and not st["br"]:
                    st["br"], st["bc"] = m, n
                m, n, k = max(m, st["br"]), (max(n, st["bc"]) if kt else n), (k if kt else max(k, st["bc"]))
            acc[MXU_CYCLES] += S.mxu_matmul_cycles(m, k, n)
            acc[MACS] += m * k * n
            acc[PASSES] += 1
            if op == "MAC":
                charge(S.ADD_PV, r.size, "ADD", r.shape)
            if kt:
                st["scores"] = dst
            if kt and st["flash"]:
                charge(S.WHERE_VALID, r.size, "MASK", r.shape, True)

        return price_matmul
    if op == "FILL":
        value, rows, cols = (float(x) for x in operands_of(ins)[:3])
        rows, cols = int(rows), int(cols)

        def price_fill(regs, r):
            st["after_log"] = False
            if value == 0 and cols > 1:
                st["acc"] = dst
                note(S.UNCHARGED[1])
            elif value not in (0, -math.inf) and rows * cols == 1:  # the softmax scale τ
                st["tau"] = operands_of(ins)[-1].name
                note(S.UNCHARGED[0])
            elif value == -math.inf:
                if not st["called"]:
                    st["called"] = True
                    for name in S.CALL_VECTORS:
                        charge(name, 1, "FILL")
                st["flash"] = True
                for name in (S.Q_IDX, S.Q_MASK, S.INIT_MAX):
                    charge(name, rows, "FILL", (rows, 1))
            elif value == 0:
                charge(S.INIT_SUM, rows, "FILL", (rows, 1))
            else:
                charge("FILL", r.size, "FILL")

        return price_fill
    reads = srcs[0][0] if op in ("ROWMAX", "ROWSUM") else None

    def price_vector(regs, r):
        after_log, st["after_log"] = st["after_log"], op == "LOG"
        row = st["scores"] not in names  # an op on the (Br, 1) row state, not on the scores
        if op == "LOG" or (op == "ADD" and after_log):
            note(S.UNCHARGED[2])
        elif op == "MASK":
            if not st["flash"]:
                charge(S.TRIU, r.size, "MASK")
                charge(S.WHERE_MASK, r.size, "MASK")
        elif op in ("ROWMAX", "ROWSUM"):
            src = regs[reads]
            charge(S.ROW_MAX if op == "ROWMAX" else S.ROW_SUM, src.size, op, src.shape, True)
        elif op == "MUL":
            if st["tau"] in names:
                charge(S.SCALE, r.size, op, r.shape, True)
            else:
                charge(S.RESCALE_ACC if st["acc"] in names else S.RESCALE_L, r.size, op, r.shape)
        elif op == "SUB":
            charge(S.SUB_M if row else S.SUB_MAX, r.size, op, r.shape, not row)
        elif op == "EXP":
            charge(S.RESCALE if row else S.EXP_S, r.size, op, r.shape, not row)
        elif op == "MAX":
            charge(S.NEW_MAX, r.size, op, r.shape)
        elif op == "ADD" and st["flash"] and st["acc"] not in names:
            charge(S.ADD_L, r.size, op, r.shape)
        elif op == "DIV":
            charge(S.DIV_ACC if st["flash"] else S.DIV_SUM, r.size, op, r.shape)
        else:  # an op the seed's attention code has no name for: its mnemonic
            charge(op, r.size, op)

    return price_vector
