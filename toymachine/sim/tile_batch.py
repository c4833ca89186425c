"""Runs of one template tile block at once (``sim.tile_blocks``): the ``mixed-new`` shape's LOAD of a new
block of Q, MUL, STORE to a new block of O, n times in a chunk, as numpy operations on all n blocks
stacked — one gather, one ufunc call per instruction, one scatter — instead of n calls.

Only where the n runs cannot differ from n runs one after another (the caller ran the block once
just before, so the SRAM it holds is known): the block reads no register it did not write (pure),
no array it loads is one it stores to, its instructions are template LOADs/STOREs of a cut span
(and constant columns), FILL constants and elementwise ops exact in IEEE arithmetic — ADD SUB MUL
DIV MAX MOV (not EXP/LOG, whose vector loops may round otherwise on other lengths; not matmuls or
row sums, whose summation order depends on the layout; no transposed operand) — every run's
blocks have the shape the last run's had (the same SRAM, counters and FLOPs per run), every block
is inside its array; where the blocks STOREd overlap, each cell gets the value the last run wrote. Anything
else — a shape that changes, a bound past the array, a floating-point flag, a rounding that
overflows or underflows — and ``batch`` returns 0 having changed nothing: the runs go one by one
(which bail to the loop where the loop must speak).
"""

from __future__ import annotations

__all__ = ["compile_batch"]

import numpy as np

from .engines.kinds import VEC
from .engines.tile_ops import UFUNC
from .engines.tile_templates import remember_rows

_EXACT = {UFUNC[op] for op in ("ADD", "SUB", "MUL", "DIV", "MAX") if op in UFUNC}


def _last(rows, values):
    """The rows a batch of STOREs writes, each once, and the value the last STORE to it wrote (blocks
    STOREd over one another: the later run wins, as one run after another leaves it)."""
    flat = rows.ravel()
    if len(flat) < 2 or (np.diff(flat) > 0).all():
        return flat, values
    last = len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1]
    return flat[last], values[last]


def compile_batch(specs: list, env: dict):
    """``batch(count)`` for a tile block of ``specs`` (``execute.block`` of its codes), or None."""
    loaded: set[int] = set()
    stored: set[int] = set()
    written: set[int] = set()
    body: list[str] = []
    tail: list[str] = []
    final: dict[int, str] = {}  # register slot → its value after the last run
    k = 0  # bounds per run
    vec = False  # FLOPs counted
    names: dict = {}

    def bind(obj, prefix: str) -> str:
        name = names.get(id(obj))
        if name is None:
            name = names[id(obj)] = f"X{prefix}{len(names)}"  # apart from the block's own names
            env[name] = obj
        return name

    def src(slot: int, t: bool) -> str | None:
        return None if t or slot not in written else f"t{slot}"

    for spec in specs:
        kind = spec[0]
        if kind in ("tload", "tstore"):
            arr, axes = spec[1], spec[-2]
            if len(axes) > 2 or (len(axes) == 2 and axes[1][0] != "c"):
                return None
            a = bind(arr, "A")
            cols = f"{axes[1][1]}:{axes[1][2]}" if len(axes) == 2 else None
            width = axes[1][2] - axes[1][1] if cols else 1
            s, e, h, rows = f"s{k}", f"e{k}", f"h{k}", f"R{k}"
            body.append(f"{s} = b[:, {k}]\n{e} = b[:, {k + 1}]\n{h} = int({e}[0] - {s}[0])\n"
                        f"if {h} <= 0 or not (({e} - {s}) == {h}).all() or int({e}.max()) > {axes[0][4]}: return 0\n"
                        f"{rows} = {s}[:, None] + _ar[:{h}]")
            k += 2
            if kind == "tload":
                d = spec[2]
                if id(arr) in stored:
                    return None
                loaded.add(id(arr))
                written.add(d)
                body.append(f"if {a}.pending: {a}.materialise()\n"
                            f"t{d} = {a}.dense[{rows}, {cols}]" if cols else
                            f"if {a}.pending: {a}.materialise()\nt{d} = {a}.dense[{rows}][:, :, None]")
                body.append(f"if {h} * {width} != sizes[{d}]: return 0")
                final[d] = f"{a}.dense[int({s}[-1]):int({e}[-1]), {cols or 'None'}]"
                tail.append(f"{a}.viewed = True\n{a}.tile_reads += count * {h} * {width}\n"
                            f"run.reads += count * {h} * {width}\nrun.tile_reads += count * {h} * {width}")
            else:
                v = src(spec[2], spec[3])
                if v is None or id(arr) in loaded or id(arr) in stored:
                    return None
                stored.add(id(arr))
                body.append(f"if {v}.shape[1:] != ({h}, {width}): return 0\n"
                            f"G{k}, V{k} = _last({rows}, {v}.reshape(-1, {width}))")
                where = f"G{k}, {cols}" if cols else f"G{k}"
                value = f"V{k}" if cols else f"V{k}[:, 0]"
                tail.append(f"if {a}.viewed: {a}.detach(regs)\n{a}.dense[{where}] = {value}\n"
                            f"if {a}.regions is not None: _remr({a}, {rows}, {cols and repr(slice(*axes[1][1:]))})\n"
                            f"{a}.tile_writes += count * {h} * {width}\n"
                            f"run.writes += count * {h} * {width}\nrun.tile_writes += count * {h} * {width}")
            continue
        if kind != "op":
            return None
        _, d, what = spec
        op = what[0]
        if op == "const":
            body.append(f"t{d} = {bind(what[1], 'K')}" if env["_rnd"] is None else f"t{d} = _rnd({bind(what[1], 'K')})")
            written.add(d)
            final[d] = f"t{d}"
            continue
        elif op == "binary" and what[1] in _EXACT:
            x, y = src(*what[2][:2]), src(*what[3][:2])
            if x is None or y is None:
                return None
            expr: str | None = f"{bind(what[1], 'F')}({x}, {y})"
        elif op == "MOV":
            expr = src(*what[1][:2])
            if expr is None:
                return None
        else:
            return None
        body.append(f"r = {expr}" if env["_rnd"] is None else f"r = _rnd({expr})")
        body.append(f"if r.ndim != 3 or r[0].size != sizes[{d}]: return 0\nt{d} = r")
        if op == "binary":
            body.append("fv += r.size")
            vec = True
        written.add(d)
        final[d] = f"t{d}[-1]"
    if not k or not stored:
        return None
    tail[:0] = [f"regs[{d}] = {v}" for d, v in final.items()]
    lines = ["def batch(count):", "    if run.tile_bounds is None: return 0", "    B, P = run.tile_bounds", "    p = P[0]",
             f"    if count < 2 or len(B) < p + {k} * count: return 0",
             f"    b = np.array(B[p:p + {k} * count]).reshape(count, {k})", "    fv = 0", "    try:"]
    for stmt in body:
        lines.extend("        " + s for s in stmt.split("\n"))
    lines += ["    except Exception:", "        return 0"]
    for stmt in tail:
        lines.extend("    " + s for s in stmt.split("\n"))
    lines += [f"    acc[{VEC}] += fv\n    L[{VEC}] = fv // count" if vec else "    pass",
              f"    P[0] = p + {k} * count", "    H[0] += count", "    return count"]
    env["_ar"] = np.arange(1 << 16)
    env["_remr"] = remember_rows
    env["_last"] = _last
    exec(compile("\n".join(lines), "<toym tile batch>", "exec"), env)
    return env["batch"]
