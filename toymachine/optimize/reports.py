"""The optimizer's results as ``Report``s (titled tables), so every output format draws them:
``render_report(matmul_report(opt), "markdown")``. JSON is each result's ``to_dict()``."""

from __future__ import annotations

__all__ = ["matmul_report", "matmul_table_report", "analysis_report", "blocks_report", "block_table_report"]

from collections.abc import Sequence

from ..render import Report, Section
from ..render.cells import sig
from .analyze import TraceAnalysis
from .attention_blocks import BlockChoice, BlockSearch
from .matmul_search import MatmulOptimum


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def matmul_report(opt: MatmulOptimum, *, program: bool = True) -> Report:
    """The optimum, how it was established, and (``program``) the schedule line by line."""
    ops = " + ".join(f"{c} {op}" for op, c in opt.ops.items())
    rows = [
        ("shape", f"A {opt.m}×{opt.k} · B {opt.k}×{opt.n}"),
        ("registers", opt.registers),
        ("machine", opt.machine.name),
        ("cycles", sig(opt.cycles)),
        ("instructions", ops),
        ("lower bound", sig(opt.lower_bound)),
        ("gap", sig(opt.gap)),
        ("proven optimal", _yes(opt.proven_optimal)),
        ("every input once + every output once", sig(opt.static_bound)),
        ("states explored", opt.states_explored),
        ("states stored", opt.states_stored),
        ("seconds", f"{opt.seconds:.2f}"),
        ("found by", opt.found_by),
        ("spills searched", _yes(opt.spills)),
    ]
    sections = [Section("Optimum", ("quantity", "value"), tuple(rows), align=("l", "r"))]
    if program:
        offset = len(opt.program.header) + len(opt.program.arrays)
        sections.append(Section("Schedule", ("line", "instruction"),
                                tuple((offset + i + 1, str(ins)) for i, ins in enumerate(opt.program.instrs)),
                                align=("r", "l")))
    status = ("proven optimal: the search completed" if opt.proven_optimal else
              f"not proven: the best schedule found; no schedule costs less than {sig(opt.lower_bound)}")
    notes = (f"C = A·B on {opt.registers} registers: {sig(opt.cycles)} cycles, {status}",
             "search space: LOAD/MAC_Z/MAC/STORE schedules, registers as a multiset "
             "(toymachine.optimize.matmul_space)" + ("; spilling partial sums allowed" if opt.spills else ""))
    return Report(f"optimize matmul {opt.m}×{opt.k}·{opt.k}×{opt.n}, R = {opt.registers}", tuple(sections), notes)


def matmul_table_report(results: Sequence[MatmulOptimum], title: str = "Optimal schedules") -> Report:
    """One row per search: R → optimum, bound, proven, states, seconds."""
    rows = tuple((r.m, r.n, r.k, r.registers, sig(r.cycles), r.loads, sig(r.lower_bound),
                  _yes(r.proven_optimal), r.states_explored, f"{r.seconds:.2f}", r.found_by) for r in results)
    headers = ("m", "n", "k", "R", "cycles", "LOADs", "lower bound", "proven", "states", "seconds", "found by")
    return Report(title, (Section(title, headers, rows, align=("r",) * 10 + ("l",)),),
                  ("cycles at the machine's per-instruction cycles; states = states expanded by the A* search",))


def analysis_report(an: TraceAnalysis) -> Report:
    """The trace against an optimal allocation of its own order, and the redundant LOADs."""
    summary = (
        ("LOADs", an.trace_loads, an.alloc_loads, an.compulsory_loads),
        ("STOREs", an.trace_stores, an.alloc_stores, an.output_stores),
        ("cycles", sig(an.trace_cycles), sig(an.alloc_cycles), ""),
        ("registers", an.trace_registers, an.registers, ""),
    )
    sections = [Section("Summary", ("", "trace", "optimal allocation, same order", "any order (bound)"), summary,
                        align=("l", "r", "r", "r"))]
    sections.append(Section("Redundant LOADs", ("line", "instruction", "value", "kept since line"),
                            tuple((r.line, r.instruction, r.value, r.kept_since or "") for r in an.redundant),
                            align=("r", "l", "l", "r")))
    proven = ("proven optimal" if an.proven_optimal else
              f"not proven optimal (no allocation needs fewer than {an.lower_bound} LOADs + STOREs)")
    notes = [f"{an.file}: with {an.registers} registers an allocation of the same order of computation needs "
             f"{an.min_loads} LOADs at least (Belady's MIN); the allocation shown ({an.alloc_loads} LOADs + "
             f"{an.alloc_stores} STOREs) is {proven}"]
    notes += [r.note for r in an.redundant]
    excess = an.trace_loads - an.min_loads
    if len(an.redundant) > excess > 0:
        notes.append(f"an optimal allocation avoids these {len(an.redundant)} loads and makes "
                     f"{len(an.redundant) - excess} others the trace does not (it keeps different values): "
                     f"{excess} fewer LOADs in all")
    if not an.redundant:
        notes.append("no redundant LOADs: an optimal allocation of this order loads what the trace loads")
    return Report(f"analyze {an.file}", tuple(sections), tuple(notes))


def _choice_row(label: str, c: BlockChoice | None, bound: float, note: str = "") -> tuple:
    if c is None:
        return (label,) + ("",) * 10 + (note,)
    time = "" if c.time_s is None else f"{c.time_s:.3g}"
    return (label, c.loop, c.br, c.bc, c.reads, c.writes, c.traffic, c.sram_peak, sig(c.cycles), time,
            f"{c.traffic / bound:.3g}", note)


def blocks_report(s: BlockSearch) -> Report:
    headers = ("choice", "loop order", "Br", "Bc", "HBM reads", "HBM writes", "HBM words", "SRAM peak", "cycles",
               "time (s)", "words ÷ N²d²/M", "note")
    rows = [_choice_row("optimum", s.best, s.bound, "winner")]
    rows += [_choice_row("best of loop", c, s.bound) for c in s.per_loop if c != s.best]
    rows += [_choice_row("paper rule", c, s.bound, note) for _, c, note in s.paper]
    align = ("l", "l") + ("r",) * 9 + ("l",)
    notes = [f"attention {s.pass_}{' causal' if s.causal else ''}, n = {s.n}, d = {s.d}, M = {s.sram_words} words"
             f"{f', {s.heads} heads' if s.heads > 1 else ''}: least {s.objective.replace('_', ' ')} over "
             f"{s.candidates} feasible (loop order, Br, Bc)",
             f"Θ(N²d²/M) yardstick (FlashAttention Theorem 2 / Proposition 3): N²d²/M = {s.bound:.6g} words"]
    if s.verified is not None:
        v = s.verified
        notes.append(f"simulated the winner: {v['hbm_reads']} reads, {v['hbm_writes']} writes, SRAM peak "
                     f"{v['sram_peak']} — {'equal to' if v['matches_closed_form'] else 'DIFFERENT from'} the "
                     "closed form")
    return Report(f"optimize attention-tile n={s.n} d={s.d} M={s.sram_words}",
                  (Section("Block sizes", headers, tuple(rows), align=align),), tuple(notes))


def block_table_report(rows: Sequence[dict], *, n: int, d: int) -> Report:
    """Per M and loop order: the optimum beside the paper's rule."""
    headers = ("M", "loop order", "optimum Br×Bc", "optimum words", "paper Br×Bc", "paper words", "paper ÷ optimum",
               "paper optimal", "N²d²/M", "optimum ÷ N²d²/M")
    out = []
    for r in rows:
        b, p = r["best"], r["paper"]
        out.append((r["sram_words"], b.loop, f"{b.br}×{b.bc}", b.traffic, f"{p.br}×{p.bc}" if p else "",
                    p.traffic if p else "", f"{p.traffic / b.traffic:.3g}" if p else "",
                    _yes(r["paper_optimal"]), f"{r['bound']:.6g}", f"{b.traffic / r['bound']:.3g}"))
    notes = (f"n = {n}, d = {d}: paper rule Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d), shrunk to the largest blocks "
             "that fit where its working set exceeds M (as toym gen does); 'paper optimal': the rule's blocks "
             "cost as little as the optimum",)
    align = ("r", "l", "r", "r", "r", "r", "r", "l", "r", "r")
    return Report(f"block sizes over M (n = {n}, d = {d})", (Section("Paper rule vs optimum", headers, tuple(out),
                                                                       align=align),), notes)
