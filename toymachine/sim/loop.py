"""The interpreter loop: run compiled code tuples, count, record steps.

``execute(run, keys, cache, text_mode)`` runs every key of ``keys`` — line numbers of a
``Program`` (``cache`` holds their code tuples), or source lines streamed from a file (text
mode: a line seen before is a dict hit, a new one is parsed and compiled by ``miss``). The
scalar engine's kinds run inline here; every other engine's ``EXEC`` closure is called with
``(run, line)``. Nothing is kept per executed instruction unless step rows are recorded.
"""

from __future__ import annotations

__all__ = ["execute", "SKIP", "DIRECTIVE"]

from typing import Iterable

from ..asm import parse_line, strip_comment
from ..program import ArrayDecl
from ..result import Step
from .engines import scalar
from .engines.kinds import BINARY, LOAD, STORE, TERNARY, UNARY, code_text
from .symbolic import Expr, const, leaf

SKIP = ("skip",)  # a blank or comment line (text mode)
DIRECTIVE = ("directive",)  # a .data/.array line (text mode), run when met
_CACHE_LIMIT = 131_072  # distinct compiled lines kept; bounds memory on huge traces


def miss(run, n: int, text: str):
    """Parse and compile one source line not seen before (text mode)."""
    run.current = (n, text)
    lb = text.find("[")
    rb = text.rfind("]")
    if 0 < lb < rb:
        # a line like one seen before but for the index ("LOAD x[" … "], R0"): reuse
        # its compiled form, parse only the index
        template = run.templates.get(text[:lb] + text[rb:])
        if template is not None:
            inner = text[lb + 1:rb]
            if inner.isdigit():
                idx = (int(inner),)
            else:
                parts = inner.split("][")
                idx = tuple(map(int, parts)) if all(p.isdigit() for p in parts) else None
            if idx is not None and template[2].check_index(idx) is None:
                return (template[0], template[1], template[2], idx, template[3], (None, text.strip(), False))
    code = scalar.compile_memory_line(run, n, text)
    if code is not None:
        if 0 < lb < rb:
            run.templates[text[:lb] + text[rb:]] = (code[0], code[1], code[2], code[4])
        return code
    item = parse_line(text, n, run.file)
    if item is None:
        return SKIP
    if isinstance(item, ArrayDecl):
        run.declare(item, run.data)
        return DIRECTIVE
    return run.compile(item, n, text=strip_comment(text).strip())


def _at(run, n: int, key, text_mode: bool) -> int:
    """The source line of the current step (and remember its text for errors)."""
    if text_mode:
        run.current = (n, key)
        return n
    return key


def execute(run, keys: Iterable, cache: dict, text_mode: bool) -> None:
    """Run every key in ``keys``: source lines (text mode) or line numbers (programs).

    ``cache`` maps a key to its compiled code tuple; text lines not in it are parsed on first
    sight (traces repeat lines, so most steps are dict hits).
    """
    regs = run.regs
    counts = run.counts
    check = not run.symbolic
    symbolic = run.symbolic
    rnd = run.round
    record = run.record
    rows = run.steps
    limit = run.step_limit
    step = run.step
    reads = writes = 0
    event = scalar.numeric_event
    get = cache.get
    at = _at
    for n, key in enumerate(keys, 1):
        code = get(key)
        if code is None:
            code = miss(run, n, key)
            if run.flush:  # an array went dense: cached word accesses to it must recompile
                cache.clear()
                run.templates.clear()
                run.flush = False
            if code is not DIRECTIVE:
                if len(cache) >= _CACHE_LIMIT:  # full: start over, so lines of a later
                    cache.clear()  # phase (a second pass) get cached too
                cache[key] = code
        if code is SKIP or code is DIRECTIVE:
            continue
        step += 1
        kind = code[0]
        counts[code[1]] += 1
        if kind == BINARY:
            x = regs[code[4]]
            y = regs[code[5]]
            try:
                r = code[2](x, y)
            except Exception as exc:  # None operand, x/0, overflow
                run.step = step
                r = event(run, at(run, n, key, text_mode), code, (x, y), None, exc)
            else:
                if check and (r - r != 0.0 or (r == 0.0 and code[-1][2])):
                    run.step = step
                    r = event(run, at(run, n, key, text_mode), code, (x, y), r)
            regs[code[3]] = r
        elif kind == LOAD:
            cells = code[2].cells
            v = cells.get(code[3])
            if v is None:
                arr = code[2]
                if symbolic:
                    v = leaf(arr.name, code[3]) if arr.fill is None else const(arr.fill)
                else:
                    v = arr.initial(code[3])
                    if rnd is not None:
                        v = rnd(v)
                    cells[code[3]] = v
                if check and v != v:
                    run.step = step
                    run.alarm("nan", at(run, n, key, text_mode), code, (), v)
            reads += 1
            regs[code[4]] = v
        elif kind == TERNARY:
            x = regs[code[4]]
            y = regs[code[5]]
            z = regs[code[6]]
            try:
                r = code[2](x, y, z)
            except Exception as exc:
                run.step = step
                r = event(run, at(run, n, key, text_mode), code, (x, y, z), None, exc)
            else:
                if check and (r - r != 0.0 or (r == 0.0 and code[-1][2])):
                    run.step = step
                    r = event(run, at(run, n, key, text_mode), code, (x, y, z), r)
            regs[code[3]] = r
        elif kind == UNARY:
            x = regs[code[4]]
            if x is None:
                run.empty_register(at(run, n, key, text_mode), code, (x,))
            try:
                r = code[2](x)
            except Exception as exc:
                run.step = step
                r = event(run, at(run, n, key, text_mode), code, (x,), None, exc)
            else:
                if check and (r - r != 0.0 or (r == 0.0 and code[-1][2])):
                    run.step = step
                    r = event(run, at(run, n, key, text_mode), code, (x,), r)
            regs[code[3]] = r
        elif kind == STORE:
            v = regs[code[4]]
            if v is None:
                run.empty_register(at(run, n, key, text_mode), code, (v,))
            code[2].cells[code[3]] = v
            writes += 1
            if symbolic and isinstance(v, Expr) and v.op == "+":
                run.outputs.setdefault(v, leaf(code[2].name, code[3]).name)
        else:  # EXEC: another engine's instruction (the tile machine's, …) does all its work
            run.step = step
            code[2](run, at(run, n, key, True) if text_mode else key)
        if record:
            if step <= limit or run.record_all:
                rows.append(Step(step, at(run, n, key, text_mode), code_text(code), tuple(regs)))
            else:
                record = run.record = False
                run.steps_dropped = True
                rows.clear()
    run.step = step
    run.reads += reads
    run.writes += writes
