"""Grade a trace against a problem: run it on the problem's machine with the problem's
inputs (several random draws), compare every expected array, check every budget.

The toy machine has no branches, so a trace executes each of its instructions exactly
once, in order: the words a trace reads from or writes to one array (``max_reads``,
``max_writes``) are counted from its LOAD/STORE operands.

What fails and what is an error: a problem file that is wrong (unknown key, bad shape,
an expression outside the language) raises ``ConfigError`` (exit 2); a trace file that
cannot be read raises too. A trace that does not assemble, faults while running or needs
more than the machine has is a *failed* grade (the ``run`` check, with the error as its
message), because that is a verdict on the submission.
"""

from __future__ import annotations

__all__ = ["check_trace", "draw_inputs"]

import copy
import dataclasses
import math
import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ..asm import parse
from ..errors import ConfigError, Location, ToyMachineError
from ..limits import LIMITS
from ..machine import Machine
from ..program import Mem, Program, Span
from ..result import Result
from ..sim import simulate
from .expr_eval import evaluate
from .problem import ARRAY_BUDGETS, BUDGETS, Expectation, Problem, load_problem
from .report import Check, CheckReport
from .rules import CHECK_NAMES


def draw_inputs(problem: Problem, seed: int, trial: int) -> dict[str, np.ndarray]:
    """The input arrays of one trial: literals as given, random ones drawn from
    ``default_rng([seed, trial, crc32(name)])``."""
    out = {}
    for spec in problem.inputs:
        if not spec.random:
            out[spec.name] = spec.value.copy()
            continue
        rng = np.random.default_rng([seed, trial, zlib.crc32(spec.name.encode())])
        if spec.dist == "uniform":
            out[spec.name] = rng.uniform(spec.low, spec.high, spec.shape)
        elif spec.dist == "integers":
            out[spec.name] = rng.integers(math.ceil(spec.low), math.floor(spec.high), spec.shape,
                                          endpoint=True).astype(np.float64)
        else:
            out[spec.name] = rng.standard_normal(spec.shape)
    return out


def _read_trace(trace: str | os.PathLike | Program) -> tuple[str, str | Program]:
    """(name, text or Program) of a trace given as a path, assembly text or a Program."""
    if isinstance(trace, Program):
        return trace.file, trace
    if isinstance(trace, str) and ("\n" in trace or not trace.strip()):
        return "<trace>", trace
    path = os.fspath(trace)
    try:
        return path, Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no such trace file: {path}", loc=Location(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read trace file {path}: {getattr(exc, 'strerror', None) or exc}",
                          loc=Location(path)) from None


def _nested_shape(values) -> tuple[int, ...]:
    shape = []
    while isinstance(values, list):
        shape.append(len(values))
        values = values[0] if values else None
    return tuple(shape)


def _written_mask(values) -> np.ndarray:
    """True where the run wrote a value (None = never written)."""
    return np.array(_map_nested(values, lambda v: v is not None), dtype=bool)


def _map_nested(values, fn):
    return [_map_nested(v, fn) for v in values] if isinstance(values, list) else fn(values)


def _index(address: Mem, shape: tuple[int, ...]) -> tuple | None:
    """A numpy index for an address, or None if it lies outside ``shape``."""
    if len(address.index) != len(shape):
        return None
    idx: list = []
    for item, n in zip(address.index, shape):
        if isinstance(item, Span):
            start, stop = item.start or 0, n if item.stop is None else item.stop
            if stop > n or start >= stop:
                return None
            idx.append(slice(start, stop))
        else:
            if item >= n:
                return None
            idx.append(item)
    return tuple(idx)


def _words(mem: Mem, shape: tuple[int, ...]) -> int:
    n = 1
    for item, size in zip(mem.index, shape):
        if isinstance(item, Span):
            n *= (size if item.stop is None else item.stop) - (item.start or 0)
    return n


def _compare(exp: Expectation, result: Result, want: np.ndarray, tol: float) -> tuple[bool, float, str, dict | None]:
    """(passed, max |diff|, message, first difference) for one trial."""
    name = exp.array
    if name not in result.memory or name not in result.written_arrays:
        return False, math.inf, f"the trace never stores to '{name}'", None
    values = result.memory[name]
    got = np.asarray(result.array(name), dtype=np.float64)
    mask = _written_mask(values)
    offset: tuple = ()
    if exp.address is not None:
        idx = _index(exp.address, got.shape)
        if idx is None:
            return False, math.inf, f"'{exp.target}' lies outside the trace's '{name}' (shape {got.shape})", None
        widx = _index(exp.address, want.shape) if want.ndim == len(exp.address.index) else None
        if widx is not None:  # the expression gives the whole array: compare the same cells
            want = want[widx]
        got, mask = got[idx], mask[idx]
        offset = tuple((i.start if isinstance(i, slice) else i) for i in idx)
        keep = [not isinstance(i, slice) for i in idx]
    else:
        keep = [False] * got.ndim
    if want.ndim == 0 and got.size == 1:
        want = np.full(got.shape, float(want))
    if want.shape != got.shape:
        return False, math.inf, (f"'{exp.target}' has shape {got.shape} in the trace but {exp.text} has shape "
                                 f"{want.shape}"), None

    def full_index(local: tuple) -> list[int]:
        it = iter(local)
        if exp.address is None:
            return [int(i) for i in local]
        return [int(o) if k else int(o) + int(next(it)) for o, k in zip(offset, keep)]

    if not mask.all():
        where = tuple(int(i) for i in np.argwhere(~mask)[0])
        cell = name + "".join(f"[{i}]" for i in full_index(where))
        return False, math.inf, f"{cell} was never stored ({int((~mask).sum())} cell(s) of '{exp.target}' missing)", None
    both_nan = np.isnan(got) & np.isnan(want)
    with np.errstate(invalid="ignore"):
        diff = np.where(both_nan, 0.0, np.abs(got - want))
    diff = np.where(np.isnan(diff), np.inf, diff)  # one side NaN, or inf − inf
    ok = np.isclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    worst = float(diff.max()) if diff.size else 0.0
    if ok.all():
        return True, worst, "", None
    where = tuple(int(i) for i in np.argwhere(~ok)[0])
    g, w = float(got[where]), float(want[where])
    cell = name + "".join(f"[{i}]" for i in full_index(where))
    first = {"index": full_index(where), "got": g, "expected": w}
    return False, worst, (f"{cell} is {g:.10g} where {exp.text} gives {w:.10g}: off by {abs(g - w):.3g}, "
                          f"over the tolerance {tol:g}"), first


def check_trace(trace: str | os.PathLike | Program, problem: str | os.PathLike | Problem, *,
                seed: int | None = None, trials: int | None = None, name: str | None = None,
                machine: Machine | None = None, student: str | None = None,
                allow_outside: bool = False) -> CheckReport:
    """Grade ``trace`` against ``problem`` (a path or a loaded ``Problem``): one check per
    expected array and per budget, plus a ``run`` check if the trace cannot run.

    ``trace`` is a path, assembly text (a string with a newline in it) or a ``Program``;
    ``name`` names text in messages (default ``<trace>``). ``seed``/``trials`` override the
    problem's, and ``machine`` its machine (a note in the report says so); ``student`` picks
    the student's variant of a problem given as a path; ``allow_outside`` lets the problem's
    ``machine:`` file lie outside its folder."""
    if not isinstance(problem, Problem):
        problem = load_problem(problem, student=student, allow_outside=allow_outside)
    seed = problem.seed if seed is None else seed
    trials = problem.trials if trials is None else trials
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ConfigError(f"trials must be a whole number ≥ 1, got {trials!r}", loc=Location(problem.file))
    LIMITS["trials"].check(trials, f"{trials:,} trials")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed must be a whole number ≥ 0, got {seed!r}", loc=Location(problem.file))
    label, source = _read_trace(trace)
    name = name or label
    notes: tuple[str, ...] = ()
    if machine is not None:
        notes = (f"machine {machine.name} instead of the problem's {problem.machine.name}",)
        problem = dataclasses.replace(problem, machine=machine)
    checks: list[Check] = []
    results: list[Result] = []
    try:
        program = source if isinstance(source, Program) else parse(source, name)
        for t in range(trials):
            results.append(simulate(program, problem.machine, draw_inputs(problem, seed, t), seed=seed + t,
                                    steps=False))
    except ToyMachineError as err:
        checks.append(Check("run", "run", False, message=_for_grading(err, problem, machine is not None).render(),
                            max_points=problem.max_score))  # worth the whole score, as on Gradescope
        return CheckReport(problem.title, problem.file, name, tuple(checks), trials, seed, notes,
                           problem.max_score, problem.variant_label)
    checks += _value_checks(problem, results, seed)
    checks += _budget_checks(problem, results, program)
    if problem.allowed_ops is not None:
        checks.append(_ops_check(problem.allowed_ops, results))
    return CheckReport(problem.title, problem.file, name, tuple(_scored(problem, checks)), trials, seed, notes,
                       problem.max_score, problem.variant_label, _metrics(results))


def _metrics(results: list[Result]) -> dict:
    """What the run cost (the largest figure over the trials): the summary's distributions."""
    return {"cycles": max(r.cycles for r in results), "dram_reads": max(r.dram_reads for r in results),
            "dram_writes": max(r.dram_writes for r in results), "registers": max(r.registers_used for r in results),
            "instructions": max(sum(r.ops.values()) for r in results)}


def _ops_check(allowed_ops: tuple[str, ...], results: list[Result]) -> Check:
    used: dict[str, int] = {}
    for r in results[:1]:  # no branches: every trial runs the same instructions
        for op, count in r.ops.items():
            if count:
                used[op] = count
    extra = {op: n for op, n in used.items() if op not in allowed_ops}
    allowed = ", ".join(allowed_ops)
    if not extra:
        return Check("instructions", "ops", True, 0, 0, f"uses only the allowed instructions: {allowed}")
    listed = ", ".join(f"{op} ({n}×)" for op, n in sorted(extra.items()))
    return Check("instructions", "ops", False, sum(extra.values()), 0,
                 f"uses {listed}, which this problem does not allow (allowed: {allowed})")


def _scored(problem: Problem, checks: list[Check]) -> list[Check]:
    """Each check with its points (``check.rules``): a value check all or nothing; a budget
    the points of the best tier it meets; budgets and instructions only when every value is right."""
    values_right = all(c.passed for c in checks if c.kind == "value")
    out = []
    for c in checks:
        rule = problem.rules.get(c.name)
        if rule is None:
            out.append(c)
            continue
        message = c.message
        if c.kind == "value":
            points = rule.points if c.passed else 0
        elif c.kind == "ops":
            points = rule.points if c.passed else 0
        else:
            points = rule.earned(c.figure)
            tier = rule.tier_of(c.figure)
            if len(rule.tiers) > 1 and 0 < points < rule.points:
                message += f"; {tier:g} or fewer earns {points:g} of {rule.points:g} points"
        no_points = bool(points) and not values_right
        out.append(dataclasses.replace(c, message=message, points=0 if no_points else points,
                                       max_points=rule.points, hidden=rule.hidden, no_points=no_points))
    return out


# the parameters of `toym check`: a hint in a grade may name these, and no other command's
CHECK_KEYS = ("problem", "machine", "seed", "trials", "format", "output")


def _for_grading(err: ToyMachineError, problem: Problem, overridden: bool) -> ToyMachineError:
    """A run's error as a grade shows it: where its fix is an option ``toym check`` lacks (``use
    --registers 6``: the machine is the exercise's), the hint says what fixes the *trace* instead."""
    if err.key is None or err.suggestion is None or err.key in CHECK_KEYS:
        return err
    m = problem.machine
    if err.key == "registers" and m.registers is not None:
        hint = (f"the exercise's machine has {m.registers} registers (R0–R{m.registers - 1}): reuse a register once "
                f"its value is no longer needed" + ("" if overridden else "; toym check --machine tries a bigger machine"))
    else:
        hint = f"the trace must fit the problem's machine ({m.name}); toym check --machine FILE grades on another " \
               f"machine, with a note"
    graded = copy.copy(err)
    graded.suggestion, graded.hint = None, hint
    return graded


def _value_checks(problem: Problem, results: list[Result], seed: int) -> list[Check]:
    out = []
    for exp in problem.expect:
        worst, failure = 0.0, None
        for t, result in enumerate(results):
            want = evaluate(exp.node, draw_inputs(problem, seed, t))  # shapes were checked on loading
            ok, diff, message, first = _compare(exp, result, want, problem.tolerance)
            worst = max(worst, diff)
            if not ok and failure is None:
                failure = (t, message + (f" (trial {t + 1} of {len(results)})" if len(results) > 1 else ""), first)
        if failure is None:
            message = f"right in every trial: largest error {worst:.3g} over {len(results)} trial(s), tolerance {problem.tolerance:g}"
            out.append(Check(exp.target, "value", True, worst, problem.tolerance, message))
        else:
            t, message, first = failure
            out.append(Check(exp.target, "value", False, worst, problem.tolerance, message, t, first))
    return out


def _figure(key: str, result: Result) -> Any:
    if key == "max_cycles":
        return result.cycles
    if key == "max_loads":
        return result.ops.get("LOAD", 0)
    if key == "max_stores":
        return result.ops.get("STORE", 0)
    if key == "max_registers":
        return result.registers_used
    if key == "max_dram_reads":
        return result.dram_reads
    if key == "max_dram_writes":
        return result.dram_writes
    return result.extra.get("sram_peak", result.registers_used)  # max_sram; the scalar machine: its registers


def _budget_words(what: str, figure: float, limit: float) -> str:
    """A budget's verdict in words: ``25 cycles: 3 over the budget of 22``."""
    if figure == 1 and what.endswith(" instructions"):
        what = what.removesuffix("s")
    if figure <= limit:
        return f"{figure:g} {what}: within the budget of {limit:g}"
    return f"{figure:g} {what}: {figure - limit:g} over the budget of {limit:g}"


def _budget_checks(problem: Problem, results: list[Result], program: Program) -> list[Check]:
    out = []
    for key, limit in problem.budgets.items():
        figure = max(_figure(key, r) for r in results)
        figure = int(figure) if float(figure).is_integer() else figure
        what = BUDGETS[key]
        passed = figure <= limit
        out.append(Check(CHECK_NAMES[key], "budget", passed, figure, limit, _budget_words(what, figure, limit)))
    memory = results[0].memory  # shapes of the arrays budgets name only: never every array's cells
    named = {a for per_array in problem.array_budgets.values() for a in per_array if a in memory}
    shapes = {n: memory.shape(n) if hasattr(memory, "shape") else _nested_shape(memory[n]) for n in named}
    for key, per_array in problem.array_budgets.items():
        kind = "load" if key == "max_reads" else "store"
        pos = 0 if kind == "load" else 1
        for array, limit in per_array.items():
            words = sum(_words(ins.mem(pos), shapes.get(array, ()))
                        for ins in program.instrs
                        if ins.op == ("LOAD" if kind == "load" else "STORE") and ins.mem(pos).array == array)
            passed = words <= limit
            out.append(Check(f"{key.removeprefix('max_')} {array}", "budget", passed, words, limit,
                             _budget_words(f"{ARRAY_BUDGETS[key]} {array}", words, limit)))
    return out
