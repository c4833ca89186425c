"""How a launch's programs land on the SMs: programs per SM from the config, and the makespan.

The tile machine's time (`predict._one`) is a rate: the launch's work divided by the whole GPU's
throughput, as if every SM were busy from the first cycle to the last. Three things a GPU
architect adds, all computed here from the config that ran (no GPU needed):

* **programs per SM** (`programs_per_sm`): the fewest of what the registers, the shared memory
  and the warp slots allow (H100: 64k registers, 228 KB shared memory of which 1 KB is
  reserved per block, 64 warps). The shared memory is the config's tiles, d_p wide, 2 bytes:
  the streamed tiles once per pipeline buffer (num_stages with TMA, num_stages - 1 with
  pointer loads) plus the tiles a program holds. The registers are the fp32 accumulators and
  score tiles per thread plus a fixed overhead (`REG_OVERHEAD`) for addresses, softmax
  statistics and loop state (`resources`). Where the offline sm_90 compile of the kernel is
  stored (`data/resources_sm90.json`: the frontier grid's 30 kernels, fp16, written by
  `TRITON_INTERPRET=0 python -m kernels_gpu.bench.fit_model --compile`) its registers and
  shared memory are used instead (`program_resources`); a CPU test compares the two.
* **the program list** (`program_row`): the inner-loop iterations of each program, in the
  order the hardware starts them (program_id(0) fastest; causal forward and dQ reversed so the
  longest rows start first; a dK/dV program runs its loop once per query head it streams).
* **the makespan** (`makespan`): programs start in that order on the first free slot of
  SMs x programs-per-SM slots (greedy list scheduling); the launch ends with its last program.
  Equal programs give the wave quantisation ceil(P / slots); causal ones the uneven tail.
"""
from __future__ import annotations

import heapq
import json
import math
from functools import lru_cache

from . import data

__all__ = ["SM", "REG_OVERHEAD", "resources", "programs_per_sm", "program_row", "makespan",
           "kernel_key", "compiled", "program_resources", "COMPILED_FILE", "schedule_time"]

COMPILED_FILE = data.path("resources_sm90.json")

# H100 SXM (the datasheet; the same per SM on the H200)
SM = {"regs": 65536, "smem": 233472, "smem_reserved": 1024, "warps": 64, "blocks": 32,
      "max_regs": 255, "reg_granule": 8}
REG_OVERHEAD = 24  # registers per thread beyond the tiles: chosen against the offline compile
#                    of the frontier grid's 30 kernels (data/resources_sm90.json): 27 of 30
#                    get the compiled programs per SM (a CPU test holds it)

MAX_PROGRAMS = 1 << 20  # a launch with more programs gets the closed form of equal programs


def _padded(d: int) -> int:
    return max(16, 1 << (int(d) - 1).bit_length())


def resources(pass_: str, d: int, config, part: int | None = None, elem_bytes: int = 2
              ) -> tuple[int, int]:
    """(registers per thread, shared-memory bytes) of one program, in closed form.

    fwd: streamed K, V (BN x d_p), held Q; fp32 O (BM x d_p), S (BM x BN) and P (half).
    bwd_dq: streamed K, V, held Q, dO; fp32 dQ, S and dP, dS (half).
    bwd_dkdv: streamed Q, dO (BM x d_p), held K, V (K only for the dV launch, part 1); fp32
    dK and dV (one of them with dv_apart), S^T, dP^T and dS^T (half)."""
    dp = _padded(d)
    bm, bn = config.block_m, config.block_n
    threads = 32 * config.num_warps
    buffers = config.num_stages if config.use_tma else max(1, config.num_stages - 1)
    if pass_ == "fwd":
        stream, held, acc = 2 * bn * dp, bm * dp, bm * dp + 1.5 * bm * bn
    elif pass_ == "bwd_dq":
        stream, held, acc = 2 * bn * dp, 2 * bm * dp, bm * dp + 2.5 * bm * bn
    elif pass_ == "bwd_dkdv":
        held_tiles = 1 if part == 1 else 2
        stream, held = 2 * bm * dp, held_tiles * bn * dp
        acc = (1 if part else 2) * bn * dp + 2.5 * bm * bn
    else:
        raise ValueError(f"no program resources for pass {pass_!r}")
    regs = min(SM["max_regs"], math.ceil(acc / threads) + REG_OVERHEAD)
    return regs, (buffers * stream + held) * elem_bytes


def kernel_key(pass_: str, d: int, causal: bool, config, part: int | None = None) -> str:
    """The key of a kernel in resources_sm90.json: pass|d|causal|config (split 1)|part."""
    short = config.short().replace(f"-sp{config.split}", "") if config.split > 1 \
        else config.short()
    return f"{pass_}|{int(d)}|{int(bool(causal))}|{short}|{part}"


@lru_cache(maxsize=4)
def compiled(path: str = COMPILED_FILE) -> dict:
    """{kernel_key: {"regs", "smem", "spill_stores"}} of the stored offline compile."""
    with open(path) as f:
        return json.load(f)["kernels"]


def program_resources(pass_: str, d: int, causal: bool, config, part: int | None = None,
                      elem_bytes: int = 2) -> tuple[int, int, str]:
    """(registers, shared-memory bytes, "compiled" or "closed form") of one program: the
    stored sm_90 compile of this fp16 kernel if there is one, else `resources`."""
    if elem_bytes == 2:
        hit = compiled().get(kernel_key(pass_, d, causal, config, part))
        if hit:
            return hit["regs"], hit["smem"], "compiled"
    return (*resources(pass_, d, config, part, elem_bytes), "closed form")


def programs_per_sm(regs: int, smem: int, num_warps: int) -> int:
    """Resident programs per SM: the registers (allocated per warp in granules of 8 per
    thread), the shared memory (1 KB reserved per block) and the warp slots; at least 1."""
    g = SM["reg_granule"]
    regs = -(-int(regs) // g) * g
    by_regs = SM["regs"] // (regs * 32 * num_warps)
    by_smem = SM["smem"] // (int(smem) + SM["smem_reserved"])
    return max(1, min(by_regs, by_smem, SM["warps"] // num_warps, SM["blocks"]))


def program_row(sched) -> tuple[list[int], int]:
    """(iterations of each program along axis 0 in launch order, number of such rows): a row
    is one (batch, head) — (batch, K/V head, share) for dK/dV, whose programs run their loop
    once per query head they stream."""
    per = [len(s) for s in sched.streamed_starts]
    if sched.pass_ == "bwd_dkdv":
        split = sched.split
        repeat = sched.heads // sched.kv_heads // split
        return [i * repeat for i in per], sched.batch * sched.kv_heads * split
    if sched.causal:  # program_id(0) = the last Q tile: the longest rows start first
        per = per[::-1]
    return per, sched.batch * sched.heads


def makespan(durations: list[float], rows: int, slots: int) -> float:
    """When the last of `rows` x len(durations) programs ends, each row's programs started in
    order on the first free of `slots` slots (greedy list scheduling)."""
    count = rows * len(durations)
    if count == 0:
        return 0.0
    if len(set(durations)) == 1 or count > MAX_PROGRAMS:
        mean = sum(durations) / len(durations)
        return math.ceil(count / slots) * mean if len(set(durations)) == 1 else \
            max(max(durations), count * mean / slots)
    if count <= slots:
        return max(durations)
    free = [0.0] * slots
    for _ in range(rows):
        for dur in durations:
            heapq.heapreplace(free, free[0] + dur)
    return max(free)


def schedule_time(rate, per: list[int], rows: int, occ: int,
                  terms, sms: int = 132, hidden_s: float = 0.0,
                  lanes: int = 1) -> float:
    """Seconds of one launch: the makespan of `rows` rows of programs with `per` loop
    iterations each on sms x occ slots (module docstring), plus the launch latency.
    `hidden_s`: the launch's seconds of serial work overlapped inside a program
    (overlap_hidden), taken off the chain; `lanes`: chains inside one program (they overlap
    as co-resident programs do)."""
    iterations = sum(per) * rows
    if iterations == 0:
        return rate.total_s
    serial = rate.tensor_s + rate.vector_s + rate.sfu_s - hidden_s
    thr = max(rate.tensor_s, rate.vector_s + rate.sfu_s, rate.hbm_s, rate.l2_s) * sms / iterations
    chain = serial * (1 + terms.exposed) * sms / iterations
    per_iteration = occ * max(thr, chain / (1 + terms.overlap * (occ * lanes - 1)))
    t = makespan([terms.fixed_s + i * per_iteration for i in per], rows, sms * occ)
    return t + rate.launch_s
