"""``toym gen``: write a generated program (options → one generator of ``toymachine.gen`` →
its assembly text). Errors are ``ToyMachineError``s, mapped to exit status 2 by ``guard``."""

from __future__ import annotations

__all__ = ["gen_app"]

from enum import Enum

import typer

from ..errors import ConfigError
from ..gen.common import MAX_INSTRUCTIONS
from ..gen.scalar.attention import ORDERS, VARIANTS
from ..gen.scalar.attention import attention_program as scalar_attention_program
from ..gen.scalar.matmul import SCHEDULES, matmul_program
from ..gen.scalar.softmax import ALGOS, softmax_program
from ..gen.scalar.variance import variance_program
from ..gen.tile import ALGOS as TILE_ALGOS
from ..gen.tile import ORDERS as TILE_ORDERS
from ..gen.tile import PASSES
from ..gen.tile import attention_program as tile_attention_program
from ..machine import resolve_machine
from ..machine.config import SRAM_RULES
from .common import guard, machine_option, output_option, write_output
from .vocabulary import ORDER_SYNONYMS

Schedule = Enum("Schedule", {s: s for s in SCHEDULES}, type=str)  # type: ignore[misc]
SoftmaxAlgo = Enum("SoftmaxAlgo", {a: a for a in ALGOS}, type=str)  # type: ignore[misc]
Order = Enum("Order", {o: o for o in ORDERS + TILE_ORDERS}, type=str)  # type: ignore[misc]
Variant = Enum("Variant", {v.replace("-", "_"): v for v in VARIANTS}, type=str)  # type: ignore[misc]
Level = Enum("Level", {"scalar": "scalar", "tile": "tile"}, type=str)
TileAlgo = Enum("TileAlgo", {a.replace("-", "_"): a for a in TILE_ALGOS}, type=str)  # type: ignore[misc]
Pass = Enum("Pass", {p: p for p in PASSES}, type=str)  # type: ignore[misc]
SramRule = Enum("SramRule", {r: r for r in SRAM_RULES}, type=str)  # type: ignore[misc]

gen_app = typer.Typer(
    help="Write a generated program (assembly with a header giving its cost formula) to stdout or -o FILE. "
         "Pipe it into `toym run -`.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_OUTPUT = output_option()
_MACHINE = machine_option("Machine preset or YAML file that sizes the program: its register count (unless -r), "
                          "its SRAM (tile level, unless --sram).")
_DATA = typer.Option(True, "--data/--no-data", help="Include .data inputs (deterministic, from --seed), or leave "
                                                    "them to the simulator's random values.")
_SEED = typer.Option(0, "--seed", help="Seed of the .data inputs.")


_MAX = typer.Option(MAX_INSTRUCTIONS, "--max-instructions", min=1,
                    help="Refuse to write a program of more instructions than this (its closed form tells before "
                         "anything is written); over 100,000,000 the count and size are printed on stderr first.")
_ANNOUNCE = 10 ** 8


def _announce(instructions: int, size: int) -> None:
    if instructions > _ANNOUNCE:
        typer.echo(f"toym gen: {instructions:,} instructions, about {size / 1e9:.1f} GB of text: this takes a while "
                   f"(Ctrl-C stops it)", err=True)


def _limits(max_instructions: int) -> dict:
    return dict(max_instructions=max_instructions, on_size=_announce)


def _emit(build) -> None:
    """Build a Program and write its text; errors exit 2."""
    with guard():
        program, path = build()
        write_output(program.to_text(), path)


@gen_app.command("matmul")
def gen_matmul(
    n: int = typer.Option(2, "--n", help="Columns of B and C; also m and k unless given."),
    m: int | None = typer.Option(None, "--m", help="Rows of A and C (default n)."),
    k: int | None = typer.Option(None, "--k", help="Columns of A, rows of B (default n)."),
    registers: int | None = typer.Option(None, "--registers", "-r", help="Register count R (at least 3; "
                                            "default: the machine's, else 3)."),
    schedule: Schedule = typer.Option("best", "--schedule", help="inner, outer, or the cheapest that fits R."),
    mac_accumulator: bool = typer.Option(False, "--mac-accumulator",
                                         help="The MAC unit keeps its own accumulator ACC (run it with --machine "
                                              "toy2acc or a machine with mac_accumulator: true): R registers + ACC. "
                                              "Implied by a --machine that has one."),
    machine: str | None = _MACHINE,
    output: str | None = _OUTPUT, data: bool = _DATA, seed: int = _SEED, max_instructions: int = _MAX,
) -> None:
    """C = A·B on an R-register machine (seed 000, Problems 1–3)."""
    def build():
        mach = resolve_machine(machine) if machine is not None else None
        r = registers if registers is not None else ((mach.registers if mach else None) or 3)
        acc = mac_accumulator or bool(mach is not None and mach.mac_accumulator)
        return matmul_program(n=n, registers=r, schedule=schedule.value, m=m, k=k, mac_accumulator=acc,
                              with_data=data, seed=seed, **_limits(max_instructions)), output

    _emit(build)


@gen_app.command("softmax")
def gen_softmax(
    n: int = typer.Option(6, "--n", help="Number of elements."),
    algo: SoftmaxAlgo = typer.Option("online", "--algo", help="naive (no max), safe (3 passes) or online (2 passes)."),
    output: str | None = _OUTPUT, data: bool = _DATA, seed: int = _SEED, max_instructions: int = _MAX,
) -> None:
    """Softmax of x[0..n−1] (seed 000, Problems 4 and 5)."""
    with guard():  # the program streams to its output as it is generated (a block of text in memory)
        write_output(lambda write: softmax_program(n=n, algo=algo.value, with_data=data, seed=seed,
                                                   **_limits(max_instructions), stream=write), output)


@gen_app.command("variance")
def gen_variance(
    n: int = typer.Option(6, "--n", help="Number of elements (at least 2)."),
    output: str | None = _OUTPUT, data: bool = _DATA, seed: int = _SEED, max_instructions: int = _MAX,
) -> None:
    """Welford's one-pass sample variance (seed 000, quiz 'Online variance'); 6 registers."""
    _emit(lambda: (variance_program(n=n, with_data=data, seed=seed, **_limits(max_instructions)), output))


@gen_app.command("attention")
def gen_attention(
    level: Level = typer.Option("scalar", "--level", help="scalar: the register machine; tile: the SRAM/HBM machine."),
    n: int = typer.Option(4, "--n", help="Sequence length (rows of Q, K, V)."),
    nk: int | None = typer.Option(None, "--nk", help="Tile level: keys/values length (default --n: "
                                                        "cross-attention otherwise; --causal aligns the mask "
                                                        "bottom-right, query i attends keys j ≤ i + nk − n)."),
    d: int = typer.Option(2, "--d", help="Head dimension."),
    registers: int | None = typer.Option(None, "--registers", "-r",
                                            help="Scalar level: Register count (default: the machine's, else the "
                                                 "minimum needed)."),
    order: Order | None = typer.Option(None, "--order", help="Loop order: inner (query loop outside; default) or "
                                                                "outer (key/value loop outside) — row and col are the "
                                                                "same two; tile backward also split: the FA2 kernel's "
                                                                "three launches."),
    output_slots: int | None = typer.Option(None, "--output-slots", help="Scalar, outer order: Output rows kept "
                                                                            "resident (default: as many as fit)."),
    variant: Variant = typer.Option("exact", "--variant", help="exact, no-max or no-rescale (seed 003's breaks)."),
    algo: TileAlgo | None = typer.Option(None, "--algo", help="Tile level: eager (one kernel per op, each a round "
                                                                 "trip through HBM), standard (Algorithm 0: S, P written "
                                                                 "and read once), standard-3pass (S read 3×), fa1, "
                                                                 "fa2 or fused (standard attention with S kept on "
                                                                 "chip)."),
    batch: int | None = typer.Option(None, "--batch", help="Tile level: Batch size."),
    heads: int | None = typer.Option(None, "--heads", help="Tile level: Number of heads."),
    kv_heads: int | None = typer.Option(None, "--kv-heads", help="Tile level: K/V heads (default --heads; fewer: "
                                                                    "grouped-query attention, 1: multi-query)."),
    causal: bool | None = typer.Option(None, "--causal/--no-causal", help="Tile level: Causal mask."),
    block_m: int | None = typer.Option(None, "--block-m", help="Tile level: Query block rows."),
    block_n: int | None = typer.Option(None, "--block-n", help="Tile level: Key/value block rows."),
    sram: int | None = typer.Option(None, "--sram", help="Tile level: SRAM size in words (default: the machine's)."),
    sram_rule: SramRule | None = typer.Option(None, "--sram-rule", help="Tile level: how SRAM is counted against "
                                                                          "--sram: exact (every tile, default) or "
                                                                          "paper (only Q_i, K_j, V_j, O_i … blocks, "
                                                                          "as Bc = ⌈M/4d⌉ assumes; run on a "
                                                                          "sram_rule: paper machine, e.g. "
                                                                          "toysram-paper)."),
    pass_: Pass | None = typer.Option(None, "--pass", help="Tile level: forward or backward."),
    precompute_d: bool | None = typer.Option(None, "--precompute-d/--no-precompute-d",
                                                help="Tile backward: D = rowsum(dO∘O) precomputed (K, V loaded once "
                                                     "per block) or not (K loaded twice). Default: precomputed."),
    scale: float | None = typer.Option(None, "--scale", help="Tile level: softmax scale τ (default 1/√d; 1 = "
                                                                "Q given pre-scaled, as seed 000 folds it in)."),
    dropout: float | None = typer.Option(None, "--dropout", help="Tile level: dropout probability p (Algorithm 2: "
                                                                    "the mask is made on chip by DROPOUT, never "
                                                                    "stored; the backward remakes it). Default 0."),
    dropout_seed: int | None = typer.Option(None, "--dropout-seed", help="Tile level: seed of the dropout mask "
                                                                            "(default 0)."),
    machine: str | None = _MACHINE,
    output: str | None = _OUTPUT, max_instructions: int = _MAX,
    data: bool | None = typer.Option(None, "--data/--no-data", help="Include .data inputs (deterministic, from "
                                        "--seed), or leave them to the simulator's random values. Default: --data "
                                        "at scalar level, --no-data at tile level (tile inputs are large)."),
    seed: int = _SEED,
) -> None:
    """Attention softmax(QKᵀ)·V: scalar machine (seed 000, 'Inner Product vs. Outer Product in
    Attention') or, with --level tile, the tile machine's generator."""
    scalar_only = {"--registers": registers, "--output-slots": output_slots}
    tile_only = {"--algo": algo, "--batch": batch, "--heads": heads, "--nk": nk, "--kv-heads": kv_heads,
                 "--causal": causal, "--block-m": block_m,
                 "--block-n": block_n, "--sram": sram, "--pass": pass_, "--precompute-d": precompute_d,
                 "--scale": scale, "--dropout": dropout, "--dropout-seed": dropout_seed, "--sram-rule": sram_rule,
                 "--machine": machine}
    with_data = data if data is not None else level.value == "scalar"

    def build():
        tile = level.value == "tile"
        wrong = [k for k, v in (scalar_only if tile else tile_only).items() if v is not None]
        order_value = None
        if order is not None:
            order_value = ORDER_SYNONYMS["tile" if tile else "scalar"].get(order.value, order.value)
            if order_value == "split" and not tile:
                wrong.append("--order split")
        if wrong:
            raise ConfigError(f"{', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} not an option of "
                              f"--level {level.value}", hint="see toym gen attention --help: options say which "
                                                            "level they belong to")
        if not tile:
            r = registers if registers is not None else _machine_registers(machine)
            return scalar_attention_program(n=n, d=d, order=order_value or "inner", registers=r,
                                            output_slots=output_slots, variant=variant.value, with_data=with_data,
                                            seed=seed, **_limits(max_instructions)), output
        return _tile_attention(n=n, d=d, variant=variant.value, with_data=with_data, algo=algo, pass_=pass_,
                               batch=batch, heads=heads, nk=nk, kv_heads=kv_heads, causal=causal, block_m=block_m,
                               block_n=block_n, sram_words=_sram(sram, machine), order=order_value,
                               precompute_d=precompute_d, scale=scale, dropout=dropout, dropout_seed=dropout_seed,
                               sram_rule=sram_rule, seed=seed, **_limits(max_instructions),
                               machine=resolve_machine(machine) if machine else None), output

    _emit(build)


def _machine_registers(machine: str | None) -> int | None:
    return resolve_machine(machine).registers if machine is not None else None


def _sram(sram: int | None, machine: str | None) -> int | None:
    """--sram, else the machine's SRAM (words), else None (blocks default to 64)."""
    return sram if sram is not None or machine is None else resolve_machine(machine).sram_words


def _tile_attention(**options):
    """``toymachine.gen.tile.attention_program`` with the options that were given."""
    kwargs = {k: (v.value if isinstance(v, Enum) else v) for k, v in options.items()
              if v is not None or k in ("n", "d", "with_data", "variant")}
    return tile_attention_program(**kwargs)


@gen_app.command("attention-tile")
def gen_attention_tile(
    n: int = typer.Option(256, "--n", help="Sequence length (rows of Q, K, V)."),
    d: int = typer.Option(64, "--d", help="Head dimension."),
    algo: TileAlgo = typer.Option("fa2", "--algo", help="eager (one kernel per op), standard (Algorithm 0), "
                                                        "standard-3pass, fa1, fa2 or fused "
                                                        "(S kept on chip)."),
    pass_: Pass = typer.Option("forward", "--pass", help="forward or backward."),
    batch: int = typer.Option(1, "--batch", help="Batch size."),
    heads: int = typer.Option(1, "--heads", help="Number of heads."),
    nk: int | None = typer.Option(None, "--nk", help="Keys/values length (default n; causal aligned bottom-right)."),
    kv_heads: int | None = typer.Option(None, "--kv-heads", help="K/V heads (default heads; grouped-query "
                                                                    "attention: heads % kv_heads == 0)."),
    dropout: float | None = typer.Option(None, "--dropout", help="Dropout probability p (Algorithm 2; default 0)."),
    dropout_seed: int | None = typer.Option(None, "--dropout-seed", help="Seed of the dropout mask (default 0)."),
    sram_rule: SramRule | None = typer.Option(None, "--sram-rule", help="exact (every tile, default) or paper "
                                                                          "(only blocks of HBM matrices)."),
    causal: bool = typer.Option(False, "--causal/--no-causal", help="Causal mask."),
    block_m: int | None = typer.Option(None, "--block-m", help="Query block rows Br (default: from --sram, else 64)."),
    block_n: int | None = typer.Option(None, "--block-n", help="Key/value block rows Bc (default: from --sram, "
                                                                  "else 64)."),
    sram: int | None = typer.Option(None, "--sram", help="SRAM size in words (default: the machine's)."),
    variant: Variant = typer.Option("exact", "--variant", help="exact, no-max or no-rescale (seed 003's breaks)."),
    order: Order | None = typer.Option(None, "--order", help="Backward loop order: inner ≡ row (query loop outside; "
                                                                "default), outer ≡ col (key loop outside), split."),
    precompute_d: bool = typer.Option(True, "--precompute-d/--no-precompute-d", help="Backward: D = rowsum(dO∘O) "
                                                                                   "first (K, V loaded once)."),
    scale: float | None = typer.Option(None, "--scale", help="Softmax scale τ (default 1/√d)."),
    machine: str | None = _MACHINE,
    output: str | None = _OUTPUT, max_instructions: int = _MAX,
    data: bool = typer.Option(False, "--data/--no-data", help="Include .data inputs (deterministic, from --seed); "
                                                              "default: declare them (.array), the simulator's random values."),
    seed: int = _SEED,
) -> None:
    """Tiled attention on the SRAM/HBM machine — the generator `toym sweep attention-tile` sweeps
    (the same as `toym gen attention --level tile`)."""
    def build():
        order_value = ORDER_SYNONYMS["tile"].get(order.value, order.value) if order is not None else None
        return _tile_attention(n=n, d=d, variant=variant.value, with_data=data, algo=algo, pass_=pass_, batch=batch,
                               heads=heads, nk=nk, kv_heads=kv_heads, causal=causal, block_m=block_m, block_n=block_n,
                               sram_words=_sram(sram, machine), order=order_value, precompute_d=precompute_d,
                               scale=scale, dropout=dropout, dropout_seed=dropout_seed, sram_rule=sram_rule, seed=seed,
                               machine=resolve_machine(machine) if machine else None, **_limits(max_instructions)), output

    _emit(build)
