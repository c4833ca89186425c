"""What each FlashAttention-2 kernel launch actually does, as data: grid, order, tiles, traffic.

`schedule(...)` returns a `Schedule` mirroring the loops in kernels.py exactly (same tile
bounds, same causal split, same masking of rows >= N, which tiles come through TMA).
`launch_config(...)` is the config choice it (and `traffic.simulated_traffic`) uses.

The traffic prediction is the tile simulator's: `traffic.simulated_traffic` runs the tile
machine's program for the launch (toymachine.gen.tile, the same blocks and loops). The hand
formula `predict_traffic(schedule)` (each tile load counted once per program that issues it,
rows >= N not counted, no cache reuse) is kept only as a cross-check of it: the tests hold the
two equal to the byte.

No torch or triton import here: this runs on the CPU-only side.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from ..host.configs import KernelConfig, choose_config, tma_allowed

__all__ = ["Schedule", "TileRead", "Traffic", "schedule", "launch_config", "launch_order",
           "predict_traffic",
           "dkdv_part",
           "PASS_NAMES", "PREPROCESS_CONFIG", "LSE_BYTES"]

PASS_NAMES = ("fwd", "bwd_preprocess", "bwd_dkdv", "bwd_dq")
LSE_BYTES = 4  # lse and D are fp32, one per row
PREPROCESS_CONFIG = KernelConfig(128, 128, 4, 1)  # flash_attn's preprocess launch: BLOCK_M 128


@dataclass(frozen=True)
class TileRead:
    tensor: str       # "Q", "K", "V", "O", "dO", "lse", "D"
    row_bytes: int    # bytes per row of the tile (head_dim * elem_bytes, or 4 for lse/D)
    axis: str         # "q" (rows of Q: BLOCK_M tiles) or "kv" (rows of K: BLOCK_N tiles)


@dataclass(frozen=True)
class Schedule:
    pass_: str
    batch: int
    heads: int
    n: int
    head_dim: int
    causal: bool
    elem_bytes: int
    config: KernelConfig
    grid: tuple[int, int]          # (programs along axis 0, batch * heads)
    grid_order: str                # which program runs first / shares what
    held: tuple[TileRead, ...]     # loaded once per program, kept on chip
    streamed: tuple[TileRead, ...]  # loaded once per inner-loop iteration
    written: tuple[TileRead, ...]  # stored once per program
    # per program along axis 0 (identical for every head): (start row of the held tile,
    # list of start rows of the streamed tiles it loads, in loop order)
    held_rows: tuple[int, ...]
    streamed_starts: tuple[tuple[int, ...], ...]
    nk: int                      # key rows (`schedule`'s default: n)
    kv_heads: int                # K/V heads (`schedule`'s default: heads)
    kernel: str = ""             # the Gluon kernel's label (model.dispatch); "" the `tl` one

    @property
    def split(self) -> int:
        """Programs a grouped dK/dV head group is split over (1: the group loop)."""
        return self.config.split if self.pass_ == "bwd_dkdv" and self.heads > self.kv_heads \
            else 1

    @property
    def held_block(self) -> int:
        return self.config.block_n if self.pass_ == "bwd_dkdv" else self.config.block_m

    @property
    def streamed_block(self) -> int:
        return self.config.block_m if self.pass_ == "bwd_dkdv" else self.config.block_n

    @property
    def tma_tensors(self) -> tuple[str, ...]:
        """Tensors loaded through TMA descriptors. A `tl` kernel with use_tma: the streamed
        (BLOCK, d) tiles; its held tiles, outputs and the fp32 lse/D rows use pointers
        (kernels/). A Gluon kernel (`kernel`): every (rows, d) tile it reads, held or streamed;
        lse and D rows through pointers (kernels/hopper*.py)."""
        tiles = (self.held + self.streamed) if self.kernel else self.streamed
        if not (self.kernel or self.config.use_tma):
            return ()
        return tuple(t.tensor for t in tiles if t.row_bytes != LSE_BYTES)

    @property
    def load_copies(self) -> dict[str, int]:
        """Times the SMs request a pointer-loaded tensor's bytes, where not once: the Gluon
        dK/dV's lse and D rows, which every warp loads whole (the columns of its transposed
        S^T tile are the BLOCK_M query rows, and each warp holds all of them): num_warps
        requests at L1, one at L2 (ncu: the fixture data/traffic_gluon_h100.csv)."""
        if self.kernel and self.pass_ == "bwd_dkdv":
            return {"lse": self.config.num_warps, "D": self.config.num_warps}
        return {}

    @property
    def tma_stores(self) -> tuple[str, ...]:
        """Outputs written by a TMA store (through shared memory): O of the Gluon forwards, dK
        and dV of the one-partition Gluon dK/dV (kernels/hopper_bwd.py TMA_OUT, as the host
        dispatches it); every other output (lse, D, dQ, the `tl` kernels' O, dK, dV) by
        pointer stores."""
        if self.kernel and self.pass_ == "fwd":
            return ("O",)
        if self.pass_ == "bwd_dkdv" and self.kernel.startswith("gluon M"):
            return ("dK", "dV")
        return ()

    def iterations(self) -> int:
        """Inner-loop iterations summed over all programs of the launch (a dK/dV program runs
        its loop once per query head of its group: B*H in all, whatever H_kv)."""
        return self.batch * self.heads * sum(len(s) for s in self.streamed_starts)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["streamed_starts"] = [len(s) for s in self.streamed_starts]  # counts, not lists
        d["iterations"] = self.iterations()
        return d


@dataclass(frozen=True)
class Traffic:
    read_bytes: int
    write_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.read_bytes + self.write_bytes


def _rows_in(start: int, block: int, n: int) -> int:
    """Rows of a tile starting at `start` that lie inside the sequence (the rest are masked or
    out of bounds and generate no traffic)."""
    return max(0, min(block, n - start))


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _tile_starts(lo: int, hi: int, step: int) -> list[int]:
    return list(range(lo, hi, step))


def launch_config(n: int, d: int, causal: bool = False, block_m: int | None = None,
                  block_n: int | None = None, pass_: str = "fwd", elem_bytes: int = 2,
                  config: KernelConfig | None = None, nk: int | None = None) -> KernelConfig:
    """The config of one launch: `config` if given (the one that ran, e.g. from
    `flash_attn.resolve_config`), else the choice the GPU wrapper makes (tuned table /
    explicit blocks; TMA kept only where `configs.tma_allowed` allows it)."""
    if pass_ not in PASS_NAMES:
        raise ValueError(f"pass_ must be one of {PASS_NAMES}; got {pass_!r}")
    if config is not None:
        return config
    if pass_ == "bwd_preprocess":
        return PREPROCESS_CONFIG
    nk = n if nk is None else nk
    config = choose_config(pass_, d, causal, elem_bytes, max(n, nk), block_m=block_m,
                           block_n=block_n, interpreter=False, autotune=False)
    if config.use_tma and not tma_allowed(pass_, n, nk, d, config):
        config = replace(config, use_tma=False)
    return config


def launch_order(configs: dict) -> list[tuple[str, int]]:
    """The kernel launches of one forward + backward, in order, as (pass, part): pass -> config
    dicts (KernelConfig.to_dict) as the traffic run records them; a dV-apart dK/dV is two
    launches (part 1 dV, 2 dK), every other launch part 0."""
    dkdv = configs.get("bwd_dkdv")
    apart = bool(dkdv and KernelConfig.from_dict(dkdv).dv_apart)
    return [("fwd", 0), ("bwd_preprocess", 0),
            *((("bwd_dkdv", 1), ("bwd_dkdv", 2)) if apart else (("bwd_dkdv", 0),)),
            ("bwd_dq", 0)]


def dkdv_part(pass_: str, config: KernelConfig, part: int | None) -> int:
    """0 for a launch that is not one of a dV-apart pair; else the part (1 dV, 2 dK), which
    must be given."""
    if pass_ != "bwd_dkdv" or not config.dv_apart:
        if part:
            raise ValueError("part is for the two launches of a dK/dV config with dv_apart")
        return 0
    if part not in (1, 2):
        raise ValueError("a dV-apart dK/dV is two launches: part=1 (dV) or part=2 (dK)")
    return part


def _key_tiles(start_m: int, bm: int, bn: int, nk: int, off: int, causal: bool) -> list[int]:
    """Key tiles a Q tile's program streams (kernels_common._causal_key_range): the tiles every
    row sees whole, then the ones crossing the diagonal (key j visible to row i iff
    j <= i + off)."""
    if not causal:
        return _tile_starts(0, nk, bn)
    full_hi = min(max(start_m + off, 0) // bn, nk // bn) * bn
    hi = min(max(start_m + bm + off, 0), nk)
    return _tile_starts(0, full_hi, bn) + _tile_starts(full_hi, hi, bn)


def _query_tiles(start_n: int, bm: int, bn: int, n: int, off: int, causal: bool) -> list[int]:
    """Q tiles a K/V tile's program streams (kernels_common._causal_query_range): the ones
    crossing the diagonal, then those that see every key of the tile."""
    if not causal:
        return _tile_starts(0, n, bm)
    first = max(start_n - off, 0)
    diag_lo = (first // bm) * bm
    diag_hi = min(_cdiv(max(start_n + bn - off, 0), bm) * bm, n)
    return _tile_starts(diag_lo, diag_hi, bm) + _tile_starts(diag_hi, n, bm)


def schedule(n: int, d: int, batch: int = 1, heads: int = 1, causal: bool = False,
             block_m: int | None = None, block_n: int | None = None, pass_: str = "fwd",
             elem_bytes: int = 2, config: KernelConfig | None = None, nk: int | None = None,
             kv_heads: int | None = None, part: int | None = None,
             kernel: str = "") -> Schedule:
    """The schedule of one launch (`launch_config` chooses the config when none is given).
    nk: keys (default n; causal aligned bottom-right), kv_heads: K/V heads (default heads).
    part: a dK/dV config with dv_apart is two launches, 1 (dV: K held; Q, dO, lse streamed)
    and 2 (dK: K, V held; Q, dO, lse, D streamed). kernel: the label of the Gluon kernel that
    runs the launch (model.dispatch; `config` its tiles): the same loops, other loads; the
    chunked d 192 dK/dV's dV / dK launches are part 1 / 2 of a dV-apart config, and their
    64-column TMA boxes on the unpadded rows move d x elem_bytes bytes a row, as here."""
    nk = n if nk is None else nk
    kv_heads = heads if kv_heads is None else kv_heads
    off = nk - n
    if kernel:
        _check_gluon(kernel, pass_, n, nk, heads, kv_heads, config, d)
    config = launch_config(n, d, causal, block_m, block_n, pass_, elem_bytes, config, nk)
    part = dkdv_part(pass_, config, part)
    bm, bn = config.block_m, config.block_n
    row = d * elem_bytes
    q_t = lambda name: TileRead(name, row, "q")          # noqa: E731
    kv_t = lambda name: TileRead(name, row, "kv")        # noqa: E731
    stat = lambda name: TileRead(name, LSE_BYTES, "q")   # noqa: E731

    held_rows: list[int] = []
    streamed: list[tuple[int, ...]] = []
    held: tuple[TileRead, ...]
    stream: tuple[TileRead, ...]
    written: tuple[TileRead, ...]
    if pass_ in ("fwd", "bwd_dq"):
        for start_m in range(0, n, bm):
            held_rows.append(start_m)
            streamed.append(tuple(_key_tiles(start_m, bm, bn, nk, off, causal)))
        order = ("program_id(0) = Q tile (fastest; reversed when causal so the longest rows "
                 "start first), program_id(1) = batch*heads + head")
        if pass_ == "fwd":
            held, stream = (q_t("Q"),), (kv_t("K"), kv_t("V"))
            written = (q_t("O"), stat("lse"))
        else:
            held = (q_t("Q"), q_t("dO"), stat("lse"), stat("D"))
            stream = (kv_t("K"), kv_t("V"))
            written = (q_t("dQ"),)
        grid = (_cdiv(n, bm), batch * heads)
    elif pass_ == "bwd_dkdv":
        for start_n in range(0, nk, bn):
            held_rows.append(start_n)
            streamed.append(tuple(_query_tiles(start_n, bm, bn, n, off, causal)))
        split = config.split if heads > kv_heads else 1
        order = ("program_id(0) = K/V tile (fastest), program_id(1) = batch*kv_heads + kv head; "
                 "the heads / kv_heads query heads of the group stream past one after another")
        held = (kv_t("K"),) if part == 1 else (kv_t("K"), kv_t("V"))
        stream = (q_t("Q"), q_t("dO"), stat("lse")) + ((stat("D"),) if part != 1 else ())
        outs = {0: ("dK", "dV"), 1: ("dV",), 2: ("dK",)}[part]
        written = tuple(kv_t(t) for t in outs)
        if split > 1:  # the group split over programs: fp32 partial dK, dV per program
            order = ("program_id(0) = K/V tile (fastest), program_id(1) = (batch*kv_heads + kv "
                     f"head)*{split} + share; each program streams (heads / kv_heads) / {split} "
                     "query heads and writes fp32 partials")
            written = tuple(TileRead(t, d * 4, "kv") for t in outs)
        grid = (_cdiv(nk, bn), batch * kv_heads * split)
    else:  # bwd_preprocess: D = rowsum(dO * O), one pass, no inner loop
        for start_m in range(0, n, bm):
            held_rows.append(start_m)
            streamed.append(())
        order = "program_id(0) = row tile (fastest), program_id(1) = batch*heads + head"
        held, stream = (q_t("O"), q_t("dO")), ()
        written = (stat("D"),)
        grid = (_cdiv(n, bm), batch * heads)

    return Schedule(pass_, batch, heads, n, d, causal, elem_bytes, config, grid, order,
                    held, stream, written, tuple(held_rows), tuple(streamed), nk, kv_heads,
                    kernel)


def _check_gluon(kernel: str, pass_: str, n: int, nk: int, heads: int, kv_heads: int,
                 config: KernelConfig | None, d: int) -> None:
    """The Gluon kernels' limits (host/hopper.py, host/hopper_d192.py): one pass each, N_q =
    N_k a multiple of both blocks, H_kv = H (the forwards: H a multiple of H_kv), tiles given,
    no split / fused dQ; dV apart only for the chunked d 192 dK/dV's "dv" / "dk" launches (d 192
    alone)."""
    chunked = kernel.startswith("gluon192 ")
    if (pass_ not in (("bwd_dkdv", "bwd_dq") if chunked else ("fwd", "bwd_dkdv", "bwd_dq"))
            or not (chunked or kernel.startswith("gluon "))):
        raise ValueError(f"no Gluon kernel {kernel!r} runs the {pass_} launch")
    if config is None:
        raise ValueError("a Gluon kernel's schedule needs its tiles (config)")
    if chunked and d != 192:
        raise ValueError(f"the chunked Gluon backward runs d 192 only; got d {d}")
    apart = chunked and kernel.split()[1] in ("dv", "dk")
    heads_ok = heads % kv_heads == 0 if pass_ == "fwd" else kv_heads == heads
    if (nk != n or not heads_ok or n % config.block_m or n % config.block_n
            or config.split > 1 or config.fused_dq or config.dv_apart != apart):
        raise ValueError(f"the Gluon kernels run N_q = N_k a multiple of the blocks and H_kv = H "
                         f"(a forward: H a multiple of H_kv) only; got N {n}/{nk}, H {heads}/{kv_heads}, {config.short()}")


def predict_traffic(s: Schedule) -> Traffic:
    """Bytes the launch reads from / writes to global memory, every tile load counted (no reuse
    across programs; rows past N_q / N_k not counted). One program row's bytes times the
    programs along axis 1 (B*H, or B*H_kv for dK/dV, whose programs stream the group's heads).

    The hand formula, kept as a cross-check of `traffic.simulated_traffic` (the prediction
    the tables use); tests/test_kernels_gpu_traffic.py holds the two equal."""
    held_blk, str_blk = s.held_block, s.streamed_block
    dkdv = s.pass_ == "bwd_dkdv"
    held_len, str_len = (s.nk, s.n) if dkdv else (s.n, s.nk)
    split = s.split if dkdv else 1
    repeats = s.heads // s.kv_heads // split if dkdv else 1  # query heads per dK/dV program
    read = write = 0
    for start, starts in zip(s.held_rows, s.streamed_starts):
        rows_held = _rows_in(start, held_blk, held_len)
        read += rows_held * sum(t.row_bytes for t in s.held)
        write += rows_held * sum(t.row_bytes for t in s.written)
        for st in starts:
            read += repeats * _rows_in(st, str_blk, str_len) * sum(t.row_bytes for t in s.streamed)
    bh = s.batch * (s.kv_heads * split if dkdv else s.heads)
    return Traffic(read * bh, write * bh)
