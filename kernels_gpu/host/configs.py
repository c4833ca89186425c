"""Launch configurations for the FlashAttention-2 kernels, and how one is chosen.

A `KernelConfig` is everything about a launch that is not the problem itself: the tile sizes, the
warps per program, the software-pipelining depth, and whether tiles come in through the Hopper
tensor-memory accelerator (TMA) or through plain pointer loads.

Choice, in order (see `choose_config`):
  1. explicit block sizes from the caller always win (warps/stages then come from `default_launch`);
  2. under the Triton interpreter (CPU) a small fixed config;
  3. if autotuning is on (`autotune=True` or env KERNELS_GPU_AUTOTUNE=1), each candidate of
     `candidates()` is timed once per key (pass, head dim, causal, dtype, N) and the fastest kept;
  4. otherwise the table `TUNED` measured on an H200 (`bench --tune`), else a safe default.

BLOCK_M always counts rows of Q (and O, dO, dQ); BLOCK_N always counts rows of K (and V, dK, dV),
in every pass: the forward and dQ kernels hold a BLOCK_M tile of Q and step over K/V in BLOCK_N
tiles; the dK/dV kernel holds a BLOCK_N tile of K/V and steps over Q in BLOCK_M tiles.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

__all__ = ["KernelConfig", "PASSES", "TUNED", "TUNED_SPLIT", "TUNED_CROSS", "LOOP_MIN_PROGRAMS",
           "dkdv_split",
           "cross_config", "candidates", "choose_config", "default_launch",
           "tuned_config", "tma_allowed", "smem_estimate", "SMEM_BYTES",
           "autotune_cache", "autotune_log", "autotune_enabled", "exclude_candidate"]

PASSES = ("fwd", "bwd_dkdv", "bwd_dq")


@dataclass(frozen=True)
class KernelConfig:
    block_m: int                   # rows of Q per tile
    block_n: int                   # rows of K/V per tile
    num_warps: int = 4             # warps per program (4 = one Hopper warpgroup)
    num_stages: int = 2            # software-pipelining depth of the inner loop's loads
    use_tma: bool = False          # tiles via host TensorDescriptor (TMA on sm_90+)
    split: int = 1                 # dK/dV of grouped-query attention: a head group's query
                                   # heads over this many programs (fp32 partials, summed)
    fused_dq: bool = False         # dK/dV only: dQ too, added with fp32 atomics (FA2's way;
                                   # then no dQ launch)
    dv_apart: bool = False         # dK/dV only: dV and dK in two launches (one accumulator
                                   # each; large head dims)

    def to_dict(self) -> dict:
        return asdict(self)

    def short(self) -> str:
        s = f"M{self.block_m}N{self.block_n}w{self.num_warps}s{self.num_stages}"
        s += "-tma" if self.use_tma else ""
        s += f"-sp{self.split}" if self.split > 1 else ""
        return s + ("-fq" if self.fused_dq else "") + ("-dv" if self.dv_apart else "")

    @classmethod
    def from_dict(cls, d: dict) -> KernelConfig:
        """From to_dict() output; keys this version does not know are ignored."""
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

    @classmethod
    def from_short(cls, text: str) -> KernelConfig:
        """Inverse of short(): 'M128N64w4s3-tma' -> KernelConfig ('-sp4': split 4; '-fq':
        dK/dV with the fused dQ; '-dv': dV apart from dK)."""
        head, *flags = text.split("-")
        m = re.fullmatch(r"M(\d+)N(\d+)w(\d+)s(\d+)", head)
        splits = [f for f in flags if re.fullmatch(r"sp\d+", f)]
        if m is None or not set(flags) - set(splits) <= {"tma", "fq", "dv"} or len(splits) > 1:
            raise ValueError(f"not a config name: {text!r} (expected like 'M128N64w4s3-tma')")
        bm, bn, w, st = (int(g) for g in m.groups())
        split = int(splits[0][2:]) if splits else 1
        if split < 1:
            raise ValueError(f"not a config name: {text!r} (split must be >= 1)")
        return cls(bm, bn, w, st, "tma" in flags, split, "fq" in flags, "dv" in flags)


def _c(bm, bn, w, s, tma=True, dv_apart=False) -> KernelConfig:
    return KernelConfig(bm, bn, w, s, tma, dv_apart=dv_apart)


# Candidates timed by the autotuner on CUDA, per pass and padded head dim (<=64 / 128 / 256):
# for 64 and 128 the configs that won somewhere in a wider sweep on an H200 (see ARCHITECTURE.md for
# what else was tried); for 256 (head dims 129-256) the ones that compile for sm_90 without
# register spills and with wgmma (`python -m kernels_gpu.bench.compile_check --dims 256`):
# the fp32 accumulators are BLOCK x 256 (forward, dQ) or two of BLOCK_N x 256 (dK, dV).
_CANDIDATES = {
    ("fwd", 64): [_c(64, 128, 4, 2), _c(64, 64, 4, 3), _c(128, 64, 4, 3, tma=False),
                  _c(128, 64, 4, 3)],
    ("fwd", 128): [_c(64, 64, 4, 3), _c(128, 128, 8, 3), _c(128, 64, 8, 3), _c(256, 64, 8, 3)],
    ("bwd_dkdv", 64): [_c(32, 64, 4, 4), _c(64, 128, 4, 3), _c(32, 128, 4, 4), _c(64, 128, 8, 3)],
    ("bwd_dkdv", 128): [_c(32, 64, 4, 4), _c(64, 128, 8, 2), _c(64, 128, 8, 2, tma=False),
                        _c(32, 128, 8, 3)],
    ("bwd_dq", 64): [_c(128, 64, 4, 3), _c(128, 64, 8, 3), _c(64, 32, 4, 4), _c(128, 32, 4, 4)],
    ("bwd_dq", 128): [_c(128, 32, 8, 3), _c(64, 32, 4, 4), _c(64, 64, 4, 3), _c(128, 64, 8, 2)],
    ("fwd", 256): [_c(64, 64, 8, 2), _c(128, 64, 8, 2), _c(64, 32, 4, 2), _c(128, 32, 8, 2)],
    ("bwd_dkdv", 256): [_c(32, 64, 8, 2), _c(16, 64, 8, 2), _c(16, 64, 8, 3), _c(64, 64, 8, 2),
                        _c(32, 128, 8, 3, dv_apart=True), _c(32, 128, 8, 2, dv_apart=True)],
    ("bwd_dq", 256): [_c(64, 32, 8, 2), _c(64, 64, 8, 2), _c(128, 32, 8, 2), _c(64, 16, 4, 2),
                      _c(128, 32, 8, 3)],
}
# fp8 forward (1-byte tiles: twice the rows in the same shared memory), seed 004's tutorial
# candidates beside the fp16 ones
_FP8_EXTRA = {64: [_c(128, 128, 8, 3), _c(128, 64, 8, 4)], 128: [_c(128, 128, 8, 4)],
              256: [_c(64, 128, 8, 2)]}

# Measured defaults, fp16/bf16 on sm_90 (H200, `python -m kernels_gpu.bench --tune`: the picks
# that agreed between two runs):
# (pass, head_dim_bucket, causal) -> [(largest N it is used for, config), ...], used when
# autotuning is off. The last entry covers every larger N.
_BIG = 1 << 62
TUNED: dict[tuple[str, int, bool], list[tuple[int, KernelConfig]]] = {
    ("fwd", 64, False): [(_BIG, _c(64, 128, 4, 2))],
    ("fwd", 64, True): [(1024, _c(64, 64, 4, 3)), (_BIG, _c(64, 128, 4, 2))],
    ("fwd", 128, False): [(4096, _c(64, 64, 4, 3)), (_BIG, _c(128, 128, 8, 3))],
    ("fwd", 128, True): [(8192, _c(64, 64, 4, 3)), (_BIG, _c(128, 128, 8, 3))],
    ("bwd_dkdv", 64, False): [(1024, _c(32, 64, 4, 4)), (_BIG, _c(32, 128, 4, 4))],
    ("bwd_dkdv", 64, True): [(2048, _c(32, 64, 4, 4)), (_BIG, _c(64, 128, 4, 3))],
    ("bwd_dkdv", 128, False): [(1024, _c(32, 64, 4, 4)), (8192, _c(64, 128, 8, 2, tma=False)),
                               (_BIG, _c(64, 128, 8, 2))],
    ("bwd_dkdv", 128, True): [(4096, _c(64, 128, 8, 2, tma=False)), (_BIG, _c(64, 128, 8, 2))],
    ("bwd_dq", 64, False): [(1024, _c(128, 64, 8, 3)), (_BIG, _c(128, 64, 4, 3))],
    ("bwd_dq", 64, True): [(1024, _c(64, 32, 4, 4)), (_BIG, _c(128, 64, 4, 3))],
    ("bwd_dq", 128, False): [(_BIG, _c(128, 32, 8, 3))],
    ("bwd_dq", 128, True): [(_BIG, _c(64, 32, 4, 4))],
    # d 129-256: the forward is the autotuner's pick on an H100 (bench --grid
    # frontier --dims 256 --tune, N 1k and 4k, causal and not). The backward is the winner of
    # the d 256 study (`python -m kernels_gpu.bench.studies d256`): dV apart
    # from dK (two launches, one fp32 accumulator each: no spills at 237 registers) with
    # BLOCK_N 128, and 3 stages for dQ; 1.10-1.41 x flash where the autotuner's M64N64w8s2
    # (two accumulators, 255 registers) gave 0.89-1.16 x.
    ("fwd", 256, False): [(_BIG, _c(128, 64, 8, 2))],
    ("fwd", 256, True): [(_BIG, _c(128, 64, 8, 2))],
    ("bwd_dkdv", 256, False): [(_BIG, _c(32, 128, 8, 3, dv_apart=True))],
    ("bwd_dkdv", 256, True): [(_BIG, _c(32, 128, 8, 3, dv_apart=True))],
    ("bwd_dq", 256, False): [(_BIG, _c(128, 32, 8, 3))],
    ("bwd_dq", 256, True): [(_BIG, _c(128, 32, 8, 3))],
}


# Grouped-query dK/dV (H_kv < H): how many programs share one K/V head's group of query heads.
# (head_dim_bucket, causal) -> [(largest N, smallest group split, query heads per program)]:
# the first row whose N covers the shape applies; a group of at least `smallest group` query
# heads is split into programs of `heads per program` heads each (1: the MHA code per query
# head; fp32 partials summed on the host), a smaller group keeps its loop in one program.
# Measured on an H100 (`python -m kernels_gpu.bench.studies gqa`): the
# group loop with the d 64 causal N > 2k config (M64N128w4s3) spills registers and ran 3.7 -
# 10 x slower than the split (a cliff); without that config the loop wins by up to
# 10 % for groups <= 8, the split for groups of 32 (multi-query).
_NEVER = 1 << 30
TUNED_SPLIT: dict[tuple[int, bool], list[tuple[int, int, int]]] = {
    (64, True): [(_BIG, 2, 1)],
    (64, False): [(4096, 16, 2), (_BIG, _NEVER, 1)],
    (128, True): [(_BIG, 16, 2)],
    (128, False): [(_BIG, _NEVER, 1)],
    (256, True): [(_BIG, 2, 1)],  # not measured for GQA: the MHA code (as its MHA rows)
    (256, False): [(_BIG, 2, 1)],
}


# The group loop's grid is B·H_kv·⌈N_k / BLOCK_N⌉ programs, whatever the group size; with few
# K/V heads and a small batch it can leave the GPU with one 4-warp program an SM.
# (head_dim_bucket, causal) -> (fewest programs the loop may run, query heads per program of
# the split used below that), for groups of at least 16 heads. Measured on an H100
# (bench --grid frontier): d 64 non-causal multi-query at B·N 16k (128 programs), N 8k / 16k:
# the loop 9.02 / 18.21 ms (1.08 / 1.06 x flash), the split into one head a program 7.30 /
# 14.54 ms (1.34 / 1.31 x, data/frontier_d64_split_h100.json); the
# study's B 4 (256 programs) had the loop within 1 % of flash-beating at N 8k.
LOOP_MIN_PROGRAMS: dict[tuple[int, bool], tuple[int, int]] = {(64, False): (264, 1)}


def dkdv_split(group: int, head_dim: int, causal: bool, n: int,
               programs: int | None = None) -> int:
    """The dK/dV split for a head group of `group` query heads (1: the group loop);
    `programs`: the loop's grid size, where known (LOOP_MIN_PROGRAMS)."""
    if group <= 1:
        return 1
    bucket = _d_bucket(head_dim)
    for n_max, min_group, per_program in TUNED_SPLIT.get((bucket, causal), ()):
        if n <= n_max:
            if group >= min_group:
                return max(1, group // per_program)
            break
    floor = LOOP_MIN_PROGRAMS.get((bucket, causal))
    if floor is not None and programs is not None and programs < floor[0] and group >= 16:
        return max(1, group // floor[1])
    return 1


# Causal cross-attention with N_k > N_q (bottom-right: the kernels compile the key-offset clamp,
# OFF_POS, which costs registers): (pass, head_dim_bucket) -> config used instead of TUNED's.
# Measured on an H100 (bench --grid frontier --cross --tune):
# d 64, N_q 1k / N_k 8k backward 0.39 x flash with TUNED's M64N128w4s3 (spills with the clamp),
# 1.35 x with M32N64w4s4.
TUNED_CROSS: dict[tuple[str, int], KernelConfig] = {
    ("bwd_dkdv", 64): _c(32, 64, 4, 4),
}


def cross_config(pass_: str, head_dim: int, causal: bool, nq: int, nk: int
                 ) -> KernelConfig | None:
    """The TUNED_CROSS entry for a causal shape with N_k > N_q, else None."""
    if not causal or nk <= nq:
        return None
    return TUNED_CROSS.get((pass_, _d_bucket(head_dim)))


def tuned_config(pass_: str, head_dim: int, causal: bool, n: int) -> KernelConfig | None:
    """The measured default for this shape (head_dim padded or not), or None if the table has
    no entry."""
    for n_max, cfg in TUNED.get((pass_, _d_bucket(head_dim), causal), ()):
        if n <= n_max:
            return cfg
    return None


# Interpreter (CPU): small tiles keep numpy's per-op overhead low and exercise several tiles.
INTERPRETER_DEFAULT = KernelConfig(32, 32, 4, 1, False)

_AUTOTUNE_CACHE: dict[tuple, KernelConfig] = {}
_AUTOTUNE_LOG: dict[tuple, list[tuple[KernelConfig, float]]] = {}
_EXCLUDED: set[tuple[str, int, bool, int, KernelConfig]] = set()


def autotune_cache() -> dict[tuple, KernelConfig]:
    """The configs the autotuner picked in this process, keyed like `choose_config` keys them."""
    return _AUTOTUNE_CACHE


def autotune_log() -> dict[tuple, list[tuple[KernelConfig, float]]]:
    """Every timing the autotuner took: key -> [(config, ms)], inf for a config that failed."""
    return _AUTOTUNE_LOG


def exclude_candidate(pass_: str, head_dim: int, causal: bool, config: KernelConfig,
                      elem_bytes: int = 2) -> None:
    """Drop a candidate from autotuning (e.g. one that failed to compile or check on this GPU)."""
    _EXCLUDED.add((pass_, _d_bucket(head_dim), causal, elem_bytes, config))


def autotune_enabled() -> bool:
    return os.environ.get("KERNELS_GPU_AUTOTUNE", "0") == "1"


def _d_bucket(head_dim: int) -> int:
    """Candidate/tuning bucket of a head dim: 64 (d <= 64), 128 (<= 128) or 256 (<= 256)."""
    return 64 if head_dim <= 64 else 128 if head_dim <= 128 else 256


SMEM_BYTES = 227 * 1024  # shared memory one Hopper block may use (sm_90: 227 KB)


def smem_estimate(pass_: str, cfg: KernelConfig, head_dim_p: int, elem_bytes: int) -> int:
    """Bytes of shared memory a config's tiles take (held tile + streamed tiles x stages), the
    rough size Triton allocates; used to drop candidates that cannot fit (fp32, d 256)."""
    row = head_dim_p * elem_bytes
    if pass_ == "bwd_dkdv":  # K, V held; Q, dO streamed
        return 2 * cfg.block_n * row + 2 * cfg.block_m * row * cfg.num_stages
    held = (1 if pass_ == "fwd" else 2) * cfg.block_m * row  # Q (and dO)
    return held + 2 * cfg.block_n * row * cfg.num_stages     # K, V streamed


def tma_allowed(pass_: str, nq: int, nk: int, head_dim: int, cfg: KernelConfig) -> bool:
    """Whether a launch may stream its tiles through TMA descriptors over the flattened
    (B*H*N, d) tensors: the streamed tiles must not cross into the next head (N a multiple of
    the streamed block) and d a power of two >= 16 (no pad columns)."""
    if head_dim < 16 or head_dim & (head_dim - 1):
        return False
    if pass_ == "bwd_dkdv":
        return nq % cfg.block_m == 0
    return nk % cfg.block_n == 0


def candidates(pass_: str, head_dim: int, elem_bytes: int = 2,
               causal: bool | None = None) -> list[KernelConfig]:
    """Autotuning candidates; with `causal` given, those excluded for it are left out."""
    bucket = _d_bucket(head_dim)
    cands = list(_CANDIDATES[(pass_, bucket)])
    if causal is not None:
        cands = [c for c in cands if (pass_, bucket, causal, elem_bytes, c) not in _EXCLUDED]
    if elem_bytes == 4:  # fp32 tiles take twice the shared memory: halve the larger tiles
        cap = 64 if bucket <= 128 else 32
        cands = [replace(c, block_m=min(c.block_m, cap), block_n=min(c.block_n, cap),
                         num_stages=2) for c in cands]
        cands = list(dict.fromkeys(cands))
    if elem_bytes == 1 and pass_ == "fwd":
        cands += [c for c in _FP8_EXTRA[bucket] if c not in cands]
    fits = [c for c in cands if smem_estimate(pass_, c, bucket, elem_bytes) <= SMEM_BYTES]
    return fits or cands[-1:]


def default_launch(pass_: str, block_m: int, block_n: int, head_dim: int) -> KernelConfig:
    """Warps/stages for caller-given tile sizes: 8 warps once a tile pair holds >= 128x128
    fp32 accumulators' worth of work, else 4."""
    big = block_m * block_n >= 128 * 128 or (pass_ != "fwd" and max(block_m, block_n) * head_dim
                                              >= 128 * 128)
    return KernelConfig(block_m, block_n, 8 if big else 4, 2, use_tma=False)


def choose_config(pass_: str, head_dim: int, causal: bool, elem_bytes: int, n: int, *,
                  block_m: int | None, block_n: int | None, interpreter: bool,
                  autotune: bool | None = None,
                  timer: Callable[[KernelConfig], float] | None = None,
                  shape_key: tuple = ()) -> KernelConfig:
    """The launch config for one pass. `n`: the sequence length the TUNED table is looked up
    with (the longer of N_q, N_k); `shape_key` (e.g. (N_q, N_k, group)) tells autotuned shapes
    apart. `timer(config) -> ms` is used only when autotuning; it returns float('inf') for a
    config that fails to compile or launch."""
    if block_m is not None or block_n is not None:
        if interpreter:
            base = INTERPRETER_DEFAULT
        else:
            base = tuned_config(pass_, head_dim, causal, n) or INTERPRETER_DEFAULT
        bm = block_m if block_m is not None else base.block_m
        bn = block_n if block_n is not None else base.block_n
        return default_launch(pass_, bm, bn, head_dim)
    if interpreter:
        return INTERPRETER_DEFAULT
    key = (pass_, head_dim, causal, elem_bytes, n) + tuple(shape_key)
    if key in _AUTOTUNE_CACHE:  # tuned earlier in this process
        return _AUTOTUNE_CACHE[key]
    if autotune is None:
        autotune = autotune_enabled()
    if autotune and timer is not None:
        cands = candidates(pass_, head_dim, elem_bytes, causal)
        timed = [(timer(c), i, c) for i, c in enumerate(cands)]
        _AUTOTUNE_LOG[key] = [(c, ms) for ms, _, c in timed]
        best_ms, _, best = min(timed)
        if best_ms == float("inf"):
            raise RuntimeError(f"no {pass_} candidate config ran for d={head_dim}")
        _AUTOTUNE_CACHE[key] = best
        return best
    cfg = tuned_config(pass_, head_dim, causal, n)
    if cfg is None or elem_bytes != 2 or \
            (pass_, _d_bucket(head_dim), causal, elem_bytes, cfg) in _EXCLUDED:
        cfg = candidates(pass_, head_dim, elem_bytes, causal)[0]
    return cfg
