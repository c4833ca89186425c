"""Seed 003's "break it" experiments as one table: attention variant × number format →
error against a float64 reference, first numerical alarm, underflows (``toym numerics``).

The variants are the generators' (``toymachine.gen.tile`` at tile level,
``toymachine.gen.scalar.attention`` at scalar level):

exact       the online softmax: tile-local exponentials e^(S − m_new) and the rescaling
            α = e^(m − m_new) of the old running sum and output (seed 003, Step 3).
no-max      Break 1: no running max, P̃ = e^S, l += rowsum(P̃), O += P̃V. Overflows once a
            score passes ln(max) of the format: ln 65504 ≈ 11.09 in fp16, ≈ 88.72 in
            fp32/bf16, ≈ 709.78 in fp64.
no-rescale  Break 2: each tile subtracts its own max but the old l and O are never
            rescaled, so tiles are summed on incompatible scales: finite, silently wrong.

Inputs are the machine's deterministic random values for ``seed`` (``sim.memory.random_block``:
unit variance, a scaled sum of four uniforms, |x| ≤ 2√3) — exactly the ``.data`` that
``toym gen attention --level tile … --data --seed S`` embeds, so a tile row can be
re-run with ``toym run``. The scores are τ·Q·Kᵀ with τ = 1/√d by default, as seed 003's
``tiled_attention`` applies it; ``scale=1`` is seed 000's convention applied to an
unscaled Q (scores √d times larger). At scalar level τ is folded into Q before the run
(``q = τ·Q``, the scalar generator's convention). The reference is float64 numpy
(``gen.tile.attention_reference``) on the same inputs.

Every run rounds each register write and store to the dtype (``toymachine.dtypes``);
tile arithmetic is exact within an instruction and rounded once per result (a tensor core
that accumulates wide), the scalar machine rounds after every MAC.
"""

from __future__ import annotations

__all__ = ["LEVELS", "ALGOS", "VARIANTS", "DTYPES", "NumericsRow", "NumericsTable", "numerics_table",
           "numerics_report", "attention_inputs", "parse_list"]

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..dtypes import DTYPES as _FORMATS
from ..errors import ConfigError, Opt
from ..gen.scalar import attention_program as scalar_program
from ..gen.tile import ALGOS, VARIANTS, attention_program, attention_reference, resolve_blocks
from ..params import check_choice, check_int
from ..program import Mem, Program, Span
from ..render.cells import Num
from ..render.report import Report, Section
from ..result import Alarm, Result, json_value
from ..sim import simulate
from ..sim.memory import random_block

LEVELS = ("tile", "scalar")
# the table's columns: every number format, the widest exponent range first (then the more bytes)
DTYPES = tuple(sorted(_FORMATS, key=lambda name: (-_FORMATS[name].emax, -_FORMATS[name].bytes)))
DEFAULT_N = {"tile": 256, "scalar": 16}
DEFAULT_BLOCK = 64
_SCALAR_ORDER = {"fa2": "inner", "fa1": "outer"}  # query loop outside = FA2, KV loop outside = FA1
# the break-it variants an algorithm has (FlashAttention's running statistics: all three; a whole-row softmax
# has no running statistics to leave unrescaled; eager attention's softmax kernel is the framework's, exact)
_ALGO_VARIANTS = {"eager": ("exact",), "standard": ("exact", "no-max"), "standard-3pass": ("exact", "no-max"),
                  "fused": ("exact", "no-max")}


@dataclass(frozen=True)
class NumericsRow:
    """One (variant, dtype) run: how far O is from the float64 reference and what the
    machine's alarms said. ``max_error`` is NaN if any output is NaN, +inf if any is ±inf
    (and none NaN), else max |O − O_ref|."""

    variant: str
    dtype: str
    max_error: float
    nonfinite: int  # output elements that are NaN or ±inf
    outputs: int  # output elements
    alarms: tuple[Alarm, ...]  # first overflow, NaN, division by zero, in the order they happened
    where: tuple[str, ...]  # per alarm: the tile pair (tile) or query row and key (scalar) it fell in
    underflows: int
    first_underflow: Alarm | None
    instructions: int
    result: Result | None = field(default=None, repr=False, compare=False)  # the run (counts, memory)
    output: np.ndarray | None = field(default=None, repr=False, compare=False)  # O, float64

    @property
    def finite(self) -> bool:
        return self.nonfinite == 0

    @property
    def first_alarm(self) -> Alarm | None:
        return self.alarms[0] if self.alarms else None

    def to_dict(self) -> dict:
        return {
            "variant": self.variant, "dtype": self.dtype, "max_error": json_value(self.max_error),
            "finite": self.finite, "nonfinite": self.nonfinite, "outputs": self.outputs,
            "alarms": [{**a.to_dict(), "where": w} for a, w in zip(self.alarms, self.where)],
            "underflows": self.underflows,
            "first_underflow": self.first_underflow.to_dict() if self.first_underflow else None,
            "instructions": self.instructions,
        }


@dataclass(frozen=True)
class NumericsTable:
    """The rows and the setting they were measured in."""

    settings: dict  # level, algo, n, d, batch, heads, causal, block_m, block_n, seed, scale (τ), scale_given
    rows: tuple[NumericsRow, ...]
    score_max: float  # max |τ·q·k| over the scores the softmax sees (masked ones excluded)
    notes: tuple[str, ...] = ()

    def row(self, variant: str, dtype: str) -> NumericsRow:
        for r in self.rows:
            if (r.variant, r.dtype) == (variant, dtype):
                return r
        raise KeyError(f"no row for variant {variant!r}, dtype {dtype!r}")

    def to_dict(self) -> dict:
        return {"settings": dict(self.settings), "score_max": self.score_max,
                "overflow_above": {name: _exp_limit(name) for name in DTYPES},
                "rows": [r.to_dict() for r in self.rows], "notes": list(self.notes)}


# -- parameters ---------------------------------------------------------------------------------
def parse_list(key: str, value: str | Iterable[str] | None, choices: Sequence[str]) -> tuple[str, ...] | None:
    """``"exact,no-max"`` (or a sequence) for parameter ``key`` → a checked tuple; None stays None."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",")] if isinstance(value, str) else [str(v).strip() for v in value]
    items = [v.lower() for v in items if v]
    if not items:
        raise ConfigError.of_option(key, "is empty", hint=f"give one or more of {','.join(choices)}")
    for v in items:
        if v not in choices:
            raise ConfigError((Opt(key), f": unknown value '{v}'"), key=key, hint=f"choose from {','.join(choices)}")
    seen: list[str] = []
    for v in items:
        if v in seen:
            raise ConfigError((Opt(key), f": '{v}' is given twice"), key=key, hint=("e.g. ", Opt(key, ",".join(choices))))
        seen.append(v)
    return tuple(seen)


def _exp_limit(dtype: str) -> float:
    """The largest x with e^x finite in ``dtype`` (ln of its largest number)."""
    return math.log(_FORMATS[dtype].max)


def attention_inputs(*, n: int, d: int, batch: int = 1, heads: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """Q, K, V: the machine's deterministic random values for ``seed`` (unit variance,
    |x| ≤ 2√3), shaped (n, d), or (batch, heads, n, d) when batch·heads > 1 — the values
    ``toym gen attention --level tile --data --seed S`` embeds."""
    shape = (batch, heads, n, d) if batch * heads > 1 else (n, d)
    return {name: random_block(seed, name, shape) for name in ("Q", "K", "V")}


# -- the experiment -----------------------------------------------------------------------------
def numerics_table(*, level: str = "tile", algo: str = "fa2", n: int | None = None, d: int = 64, batch: int = 1,
                   heads: int = 1, causal: bool = False, block_m: int | None = None, block_n: int | None = None,
                   variants: str | Sequence[str] | None = None, dtypes: str | Sequence[str] | None = None,
                   seed: int = 0, scale: float | None = None) -> NumericsTable:
    """Run attention once per (variant, dtype) on the same inputs and compare O with a
    float64 numpy reference (module docstring: the variants, the inputs, the scale).

    ``level`` tile runs ``gen.tile.attention_program`` (``algo`` fa2, fa1 or standard,
    blocks ``block_m`` × ``block_n``, default 64 × 64); scalar runs ``gen.scalar.attention`` with
    the query loop outside (``algo`` fa2: order inner) or the KV loop outside (fa1: order
    outer). ``n`` defaults to 256 (tile) or 16 (scalar: one instruction per multiply, so
    ~2·n²·d instructions per run). ``variants``/``dtypes``: comma lists or sequences,
    default all (standard attention has no running statistics: no-rescale is left out
    unless asked for, and then an error)."""
    check_choice("level", level, LEVELS)
    check_choice("algo", algo, ALGOS)
    n = DEFAULT_N[level] if n is None else check_int("n", n, 1)
    d = check_int("d", d, 1)
    seed = check_int("seed", seed, 0)
    batch, heads = check_int("batch", batch, 1), check_int("heads", heads, 1)
    from ..limits import LIMITS

    LIMITS["size"].check(3 * batch * heads * n * d, f"the inputs Q, K, V ({batch}·{heads}·{n:,}·{d} each)")
    asked_variants = parse_list("variant", variants, VARIANTS)
    dtype_list = parse_list("dtype", dtypes, DTYPES) or DTYPES
    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, (int, float, np.floating, np.integer)) \
                or not math.isfinite(scale) or scale == 0:
            raise ConfigError.of_option("scale", f"must be a finite non-zero number, got {scale!r}",
                                        hint=("leave it out for 1/√d (seed 003), or ", Opt("scale", 1),
                                              " (seed 000: scale folded into Q)"))
    tau = 1.0 / math.sqrt(d) if scale is None else float(scale)
    notes: list[str] = []
    if level == "scalar":
        tile_only = {"batch": batch != 1, "heads": heads != 1, "causal": bool(causal),
                     "block_m": block_m is not None, "block_n": block_n is not None}
        wrong = [k for k, given in tile_only.items() if given]
        if wrong:
            named: list[str | Opt] = []
            for key in wrong:
                named += [", "] * bool(named) + [Opt(key)]
            raise ConfigError((*named, f" {'is a' if len(wrong) == 1 else 'are'} tile-level "
                               f"option{'' if len(wrong) == 1 else 's'}; the scalar machine runs one head, unmasked"),
                              key=wrong[0], hint=("use ", Opt("level", "tile"), ", or leave them out"))
        if algo not in _SCALAR_ORDER:
            raise ConfigError((Opt("algo", algo), " is tile level only; the scalar generator fuses softmax with V"),
                              key="algo", hint=("use ", Opt("algo", "fa2"), " (query loop outside) or fa1 (KV loop "
                                                "outside), or ", Opt("level", "tile")))
    else:
        if block_m is not None:
            check_int("block_m", block_m, 1)
        if block_n is not None:
            check_int("block_n", block_n, 1)
    variant_list = asked_variants or VARIANTS
    has = _ALGO_VARIANTS.get(algo, VARIANTS)
    missing = [v for v in variant_list if v not in has]
    if missing:
        if asked_variants is not None:
            raise ConfigError((Opt("variant", ", ".join(missing)), f": {algo} attention has no such break (its "
                               f"variants: {', '.join(has)})"), key="variant",
                              hint=("use ", Opt("variant", ",".join(has)), " with ", Opt("algo", algo)))
        variant_list = tuple(v for v in variant_list if v in has)
        notes.append(f"{algo} attention has no running statistics to break: {', '.join(missing)} "
                     f"{'is' if len(missing) == 1 else 'are'} left out.")

    inputs = attention_inputs(n=n, d=d, batch=batch if level == "tile" else 1,
                              heads=heads if level == "tile" else 1, seed=seed)
    q, k, v = inputs["Q"], inputs["K"], inputs["V"]
    ref = attention_reference(q, k, v, scale=tau, causal=bool(causal))["O"]
    scores = tau * (q @ np.swapaxes(k, -1, -2))
    if causal:
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, 0.0)
    score_max = float(np.abs(scores).max())

    rows = []
    br = bc = None
    for variant in variant_list:
        if level == "tile":
            br, bc, _ = resolve_blocks(n=n, d=d, algo=algo, block_m=block_m if block_m is not None else DEFAULT_BLOCK,
                                       block_n=block_n if block_n is not None else DEFAULT_BLOCK, variant=variant)
            program = attention_program(n=n, d=d, algo=algo, batch=batch, heads=heads, causal=bool(causal),
                                        block_m=br, block_n=bc, variant=variant, scale=tau)
            data = {"Q": q, "K": k, "V": v}
            out_name = "O"
        else:
            program = scalar_program(n, d, order=_SCALAR_ORDER[algo], output_slots=0 if algo == "fa1" else None,
                                     variant=variant, with_data=False)
            data = {"q": tau * q, "k": k, "v": v}  # τ folded into Q, the scalar generator's convention
            out_name = "o"
        for dtype in dtype_list:
            rows.append(_run(program, data, out_name, ref, variant, dtype, level, br, bc))
    settings = {"level": level, "algo": algo, "n": n, "d": d, "batch": batch, "heads": heads, "causal": bool(causal),
                "block_m": br, "block_n": bc, "seed": seed, "scale": tau, "scale_given": scale is not None,
                "variants": list(variant_list), "dtypes": list(dtype_list)}
    if level == "scalar":
        settings["order"] = _SCALAR_ORDER[algo]
    return NumericsTable(settings, tuple(rows), score_max, tuple(notes))


def _run(program: Program, data: dict, out_name: str, ref: np.ndarray, variant: str, dtype: str, level: str,
         br: int | None, bc: int | None) -> NumericsRow:
    result = simulate(program, None, data, dtype=dtype, steps=False)
    out = result.array(out_name).reshape(ref.shape)
    bad = ~np.isfinite(out)
    if np.isnan(out).any():
        err = math.nan
    elif bad.any():
        err = math.inf
    else:
        err = float(np.abs(out - ref).max())
    where = tuple(_site(program, a.step, level, br, bc) for a in result.alarms)
    return NumericsRow(variant=variant, dtype=dtype, max_error=err, nonfinite=int(bad.sum()), outputs=int(out.size),
                       alarms=tuple(result.alarms), where=where, underflows=result.underflows,
                       first_underflow=result.first_underflow, instructions=result.instructions, result=result,
                       output=out)


def _site(program: Program, step: int, level: str, br: int | None, bc: int | None) -> str:
    """Where step ``step`` (1-based; generated programs are straight-line) falls: the block
    pair whose tiles were last loaded (tile), or the query row and key (scalar)."""
    qrow = krow = None  # scalar: the indices
    qrows: Span | None = None  # tile: the blocks
    krows: Span | None = None
    head: tuple = ()
    for ins in program.instrs[:step]:
        if ins.op not in ("LOAD", "STORE"):
            continue
        mem = ins.args[0] if ins.op == "LOAD" else ins.args[1]
        if not isinstance(mem, Mem):
            continue
        name = mem.array
        if level == "scalar":
            if name in ("q", "row_max", "row_sum", "acc") and ins.op == "LOAD":
                qrow = mem.index[0]
            elif name in ("k",):
                krow = mem.index[0]
            continue
        spans = [x for x in mem.index if isinstance(x, Span)]
        lead = tuple(x for x in mem.index if not isinstance(x, Span))
        if name in ("S", "P"):
            qrows, krows = spans[0], spans[1]
        elif name in ("K", "V"):
            krows = spans[0]
        elif name in ("Q", "O", "L", "l", "m"):
            qrows = spans[0]
        else:
            continue
        head = lead
    if level == "scalar":
        parts = [f"query {qrow}" if qrow is not None else "", f"key {krow}" if krow is not None else ""]
        return ", ".join(p for p in parts if p)
    text = []
    if head:
        text.append(f"head ({', '.join(map(str, head))})")
    if qrows is not None and krows is not None and br and krows.start is None:  # a row block of S (Algorithm 0)
        text.append(f"row block {(qrows.start or 0) // br}: Q[{qrows.start}:{qrows.stop}] × every key")
    elif qrows is not None and krows is not None and br and bc:
        text.append(f"tile ({(qrows.start or 0) // br}, {(krows.start or 0) // bc}): Q[{qrows.start}:{qrows.stop}] × "
                    f"K[{krows.start}:{krows.stop}]")
    elif qrows is not None and br:
        text.append(f"Q block {(qrows.start or 0) // br}: Q[{qrows.start}:{qrows.stop}]")
    return ", ".join(text)


# -- report ---------------------------------------------------------------------------------------
def numerics_report(table: NumericsTable) -> Report:
    """The table as a ``Report`` (every ``--format`` but json draws it)."""
    rows = []
    for r in table.rows:
        first = r.first_alarm
        rows.append((
            r.variant, r.dtype, Num(r.max_error, 3),
            "yes" if r.finite else f"no: {r.nonfinite}/{r.outputs}",
            ", ".join(f"{a.kind} @{a.step}" for a in r.alarms) or "none",
            f"step {first.step}, line {first.line}: {first.instruction}" if first else "",
            r.where[0] if first else "",
            r.underflows,
        ))
    s = table.settings
    section = Section("Numerics", ("variant", "dtype", "max |O − ref|", "finite", "alarms", "first alarm", "where",
                                   "underflows"), tuple(rows), align=("l", "l", "r", "l", "l", "l", "l", "r"))
    tau = s["scale"]
    tau_text = f"τ = {tau:.6g}" + (" (given)" if s["scale_given"] else " (1/√d)")
    if s["level"] == "tile":
        setting = (f"tile level, {s['algo']}, n = {s['n']}, d = {s['d']}"
                   + (f", batch = {s['batch']}, heads = {s['heads']}" if s["batch"] * s["heads"] > 1 else "")
                   + (", causal" if s["causal"] else "") + f", blocks {s['block_m']} × {s['block_n']}, {tau_text}")
    else:
        setting = (f"scalar level, {s['algo']} ({s['order']} order), n = {s['n']}, d = {s['d']}, {tau_text} "
                   "folded into Q")
    limits = ", ".join(f"{name} {_exp_limit(name):.2f}" for name in reversed(DTYPES))
    notes = [
        f"Setting: {setting}; inputs: the machine's random values for seed {s['seed']} (unit variance, |x| ≤ 2√3).",
        "Reference: float64 numpy softmax(τ·Q·Kᵀ)·V on the same inputs. max |O − ref| is nan if any output is NaN, "
        "inf if any is infinite.",
        f"Largest score |τ·q·k| = {table.score_max:.4g}; e^x overflows above x = {limits}.",
        "Alarms: the first overflow, NaN and division by zero, in the order they happened (@ step); where: the block "
        "pair (tile) or query and key (scalar) being processed; after @ in the instruction: the element (row, column).",
    ]
    if s["level"] == "tile" and not s["scale_given"]:
        extra = (f" --batch {s['batch']} --heads {s['heads']}" if s["batch"] * s["heads"] > 1 else "") \
                + (" --causal" if s["causal"] else "")
        notes.append(f"Re-run a row: toym gen attention --level tile --algo {s['algo']} --n {s['n']} --d {s['d']}{extra} "
                     f"--block-m {s['block_m']} --block-n {s['block_n']} --variant VARIANT --data --seed {s['seed']} "
                     f"| toym run - --dtype DTYPE --no-steps")
    notes += list(table.notes)
    return Report("numerics: attention variants × number formats (seed 003's break-it)", (section,), tuple(notes))
