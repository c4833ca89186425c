"""Problem files: what a trace must compute, on which machine, within which budgets.

::

    title: 2x2 matmul with 6 registers in at most 22 cycles
    inputs:                 # arrays given to the trace; they replace the trace's own .data
      a: [[1, 2], [3, 4]]   # a literal, or
      b: {shape: [2, 2]}    # random values of that shape (deterministic: seed, trial)
    expect:                 # arrays the trace must leave in DRAM: an expression over the inputs
      c: a @ b              # a key may name a cell or block: `c[0][0]: a @ b`
    registers: 6            # the machine: registers and/or machine: PRESET | FILE
    max_cycles: 22          # budgets (optional), see BUDGETS
    tolerance: 1e-9         # |trace − expected| ≤ tolerance · (1 + |expected|)
    trials: 3               # random input draws (default 3 when an input is random)

For a course (``check.rules``, ``check.variants``): ``points`` per check and budget tiers
(``max_cycles: {22: 10, 25: 5}``), ``hidden: true`` checks, ``allowed_ops: [LOAD, STORE, MAC]``,
``statement:`` (the handout's Markdown), ``variants:`` (parameter sets, used as ``{n}``) and
``submission:`` (the file each student hands in, in a folder per student).

Random inputs: ``{shape: [..], dist: normal}`` (default, standard normal),
``{shape, dist: uniform, low: 0, high: 1}`` or ``{shape, dist: integers, low: -5, high: 5}``
(both ends included). Trial k of seed s draws from ``numpy.random.default_rng([s, k,
crc32(name)])``, so a trace that hard-codes its answer fails. The expression language is
``toymachine.check.expr``. Every error names the file, line and column (an unknown key, a
bad shape, an unknown name in an expression, …).
"""

from __future__ import annotations

__all__ = ["Problem", "InputSpec", "Expectation", "BUDGETS", "ARRAY_BUDGETS", "load_problem", "load_variants",
           "KEYS", "KEY_DOCS"]

import difflib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import yamlsafe
from ..errors import ConfigError, Location
from ..limits import LIMITS
from ..machine import Machine
from ..program import Mem
from .deadline import Deadline, parse_deadline
from .expr import ExprError, Node, names_in, parse_expr
from .expr_eval import evaluate
from .problem_keys import ARRAY_BUDGETS, BUDGETS, KEY_DOCS, KEYS
from .rules import CHECK_NAMES, Rule, limit_rule, ops_rule, value_rule
from .variants import describe_variant, pick_variant, problem_id, substitute, variant_params
from .yamlsrc import Source, mapping, number, value_of

_DISTS = ("normal", "uniform", "integers")


@dataclass(frozen=True)
class InputSpec:
    """One input array: a literal ``value`` or a random draw of ``shape``."""

    name: str
    value: Any = None  # float64 ndarray for a literal
    shape: tuple[int, ...] | None = None
    dist: str = "normal"
    low: float = 0.0
    high: float = 1.0
    loc: Location | None = field(default=None, compare=False)

    @property
    def random(self) -> bool:
        return self.value is None


@dataclass(frozen=True)
class Expectation:
    """``target: expression``: the trace's array ``array`` (the cell/block ``address`` if
    the key names one) must equal the expression's value."""

    target: str
    array: str
    address: Mem | None
    text: str
    node: Node
    loc: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Problem:
    title: str
    inputs: tuple[InputSpec, ...]
    expect: tuple[Expectation, ...]
    machine: Machine
    machine_file: str | None = None  # the real path of the machine file named by ``machine:`` (None: a preset)
    budgets: dict = field(default_factory=dict)  # key of BUDGETS → limit
    array_budgets: dict = field(default_factory=dict)  # "max_reads"/"max_writes" → {array: words}
    tolerance: float = 1e-9
    trials: int = 1
    seed: int = 0
    description: str = ""
    reference: str | None = None  # a solution trace, relative to the problem file
    file: str = "<problem>"
    locations: dict = field(default_factory=dict, compare=False)  # key → Location, for messages
    rules: dict = field(default_factory=dict)  # check name → Rule (points), in the grader's order
    allowed_ops: tuple[str, ...] | None = None  # the instructions a trace may use (None: any)
    statement: str = ""  # the handout's text (markdown); description when not given
    submission: str | None = None  # the file each student hands in, in a folder per student
    variant: dict = field(default_factory=dict)  # this variant's parameters ({} without variants)
    variant_index: int | None = None  # 0-based
    variant_count: int = 0
    id: str = ""  # the problem's own id: it and the student's id pick the variant (check.variants)
    deadline: Deadline | None = None

    @property
    def max_score(self) -> float:
        return sum(rule.points for rule in self.rules.values())

    @property
    def variant_label(self) -> str | None:
        if self.variant_index is None:
            return None
        return describe_variant(self.variant_index, self.variant_count, self.variant)


def _input(src: Source, name: str, node) -> InputSpec:
    import numpy as np

    if isinstance(node, yaml.MappingNode):
        opts = {k.value: v for k, v in node.value}
        for key, knode in ((k.value, k) for k, _ in node.value):
            if key not in ("shape", "dist", "low", "high"):
                raise src.error(f"unknown key '{key}' in input '{name}'", knode,
                                hint="a random input takes shape, dist (normal | uniform | integers), low, high")
        if "shape" not in opts:
            raise src.error(f"input '{name}' needs a shape, e.g. {{shape: [2, 2]}}", node)
        shape = value_of(opts["shape"])
        if isinstance(shape, int) and not isinstance(shape, bool):
            shape = [shape]
        if (not isinstance(shape, list) or not shape
                or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in shape)):
            raise src.error(f"the shape of '{name}' must be a list of positive whole numbers, got {shape!r}",
                            opts["shape"], hint="e.g. shape: [4, 3]")
        if math.prod(shape) > (cap := LIMITS["expr_elements"].value()):  # every trial draws it, every expression holds it
            raise src.error(f"input '{name}' has {math.prod(shape):,} elements; at most {int(cap):,}", opts["shape"],
                            hint=LIMITS["expr_elements"].lift_hint(math.prod(shape)))
        dist = value_of(opts["dist"]) if "dist" in opts else "normal"
        if dist not in _DISTS:
            raise src.error(f"unknown distribution {dist!r} for input '{name}'", opts["dist"],
                            hint=f"choose one of {', '.join(_DISTS)}")
        default_low, default_high = (-5.0, 5.0) if dist == "integers" else (0.0, 1.0)
        low = number(src, opts["low"], "low", minimum=-math.inf) if "low" in opts else default_low
        high = number(src, opts["high"], "high", minimum=-math.inf) if "high" in opts else default_high
        if dist != "normal" and high < low:
            raise src.error(f"input '{name}': high ({high:g}) is below low ({low:g})", node)
        return InputSpec(name, None, tuple(shape), dist, low, high, src.loc(node))
    value = value_of(node)
    if not isinstance(value, list):
        raise src.error(f"input '{name}' must be an array literal ([...]) or {{shape: [...]}}, got {value!r}",
                        node, hint="the trace addresses arrays by index: give x: [1, 2, 3], not x: 1")
    try:
        arr = np.array(value, dtype=np.float64)
    except (ValueError, TypeError):
        raise src.error(f"input '{name}' is not a rectangular array of numbers", node,
                        hint="every row needs the same length, and every entry a number") from None
    if arr.size == 0:
        raise src.error(f"input '{name}' is empty", node)
    return InputSpec(name, arr, tuple(arr.shape), loc=src.loc(node))


def _expectation(src: Source, knode, vnode, inputs: dict) -> tuple[Expectation, Rule]:
    import numpy as np

    from ..asm import parse
    from ..errors import AsmError

    target = str(knode.value).strip()
    vnode, rule = value_rule(src, vnode, target)
    address: Mem | None = None
    if "[" in target:
        try:
            address = parse(f"LOAD {target}, R0").instrs[0].mem(0)
        except AsmError as exc:
            raise src.error(f"'{target}' is not an array, cell or block address: {exc.message}", knode,
                            hint="write c, c[0][1] or O[0:2, :] (the assembly's address syntax)") from None
        array = address.array
    else:
        array = target
        if not array.isidentifier():
            raise src.error(f"'{target}' is not an array name", knode, hint="write c, c[0][1] or O[0:2, :]")
    text = value_of(vnode)
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = repr(text)
    if not isinstance(text, str):
        raise src.error(f"the expected value of '{target}' must be an expression (text), got {text!r}", vnode,
                        hint="e.g. c: a @ b")
    quoted = 1 if vnode.style in ("'", '"') else 0
    try:
        node = parse_expr(text)
        for name in names_in(node):
            if name.name not in inputs:
                raise ExprError(f"unknown name '{name.name}'", name.pos, len(name.name),
                                hint=f"names are the problem's inputs: {', '.join(inputs) or '(none)'}")
        # evaluate once on stand-in values of the inputs' shapes: shape errors surface here
        shape = np.shape(evaluate(node, {n: np.ones(spec.shape) for n, spec in inputs.items()}))
    except ExprError as exc:
        one_line = vnode.start_mark.line == vnode.end_mark.line
        loc = src.loc(vnode, offset=quoted + exc.pos, length=exc.length) if one_line else src.loc(vnode)
        raise ConfigError(f"in the expected value of '{target}': {exc.message}", loc=loc, hint=exc.hint) from None
    if address is not None and len(address.index) == len(shape) and not _inside(address, shape):
        raise src.error(f"'{target}' lies outside {text}, of shape {shape}", knode,
                        hint="name a cell or block inside the expected array")
    return Expectation(target, array, address, text, node, src.loc(knode)), rule


def _inside(address: Mem, shape: tuple) -> bool:
    from ..program import Span

    for item, n in zip(address.index, shape):
        if isinstance(item, Span):
            if (item.stop is not None and item.stop > n) or (item.start or 0) >= (n if item.stop is None else item.stop):
                return False
        elif item >= n:
            return False
    return True


def _machine(src: Source, spec: dict, path: str, allow_outside: bool = False) -> tuple[Machine, str | None]:
    """The problem's machine and the real path of the file ``machine:`` names (None: a preset)."""
    from ..machine import DEFAULT_MACHINE, load_named_machine
    from ..named_paths import NamedPathError

    machine, machine_file = DEFAULT_MACHINE, None
    if "machine" in spec:
        node = spec["machine"]
        name = value_of(node)
        if not isinstance(name, str) or not name.strip():
            raise src.error(f"'machine' must be a preset name or a machine file, got {name!r}", node)
        try:
            machine, machine_file = load_named_machine(name, path, allow_outside=allow_outside)
        except NamedPathError as exc:
            raise exc.with_loc(src.loc(node)) from None
        except ConfigError as exc:
            raise src.error(exc.message, node, hint=exc.hint) from None
    if "registers" in spec:
        machine = machine.with_(registers=number(src, spec["registers"], "registers", integer=True, minimum=1))
    return machine, machine_file


def _read(path: str) -> str:
    try:
        return yamlsafe.read_text(path, "problem file")
    except FileNotFoundError:
        raise ConfigError(f"no such problem file: {path}", loc=Location(path),
                          hint="problem sets live in examples/problems/") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read problem file {path}: {getattr(exc, 'strerror', None) or exc}",
                          loc=Location(path)) from None


def _compose(path: str, text: str) -> tuple[Source, dict]:
    """The file's top-level keys → their YAML nodes (unknown and repeated keys are errors)."""
    src = Source(path, text)
    try:
        root = yamlsafe.compose(text, path, "problem file")
    except ConfigError as exc:
        if exc.code == "yaml-syntax":
            exc.hint = "quote an expression that contains ': ' or starts with a special character"
        raise
    if root is None:
        raise ConfigError("problem file is empty", loc=Location(path), hint="see examples/problems/ for the format")
    spec: dict = {}
    for knode, vnode in mapping(src, root, "a problem file"):
        key = knode.value
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            raise src.error(f"unknown key '{key}' in problem file", knode,
                            hint=(f"did you mean '{close[0]}'? " if close else "") + f"keys are: {', '.join(KEYS)}")
        if key in spec:
            raise src.error(f"'{key}' is given twice", knode)
        spec[key] = vnode
    return src, spec


def _trials(src: Source, node) -> int:
    trials = number(src, node, "trials", integer=True, minimum=1)
    cap = LIMITS["trials"].value()  # each trial runs the whole trace: the cost of one grade is bounded
    if trials > cap:
        raise src.error(f"'trials' must be at most {int(cap):,}, got {trials:,}", node, hint=LIMITS["trials"].lift_hint(trials))
    return trials


def load_problem(path: str | os.PathLike, text: str | None = None, *, variant: int | None = None,
                 student: str | None = None, allow_outside: bool = False) -> Problem:
    """Read and check a problem file (``text`` instead of reading ``path``, which then only
    names it in messages and anchors relative machine/reference paths). A problem with
    ``variants`` is read as the variant ``variant`` (0-based), else ``student``'s, else the first. A
    ``machine:`` file must lie under the problem's folder unless ``allow_outside``."""
    path = os.fspath(path)
    text = _read(path) if text is None else text
    src, spec = _compose(path, text)
    if "variants" not in spec:
        if variant not in (None, 0):
            raise ConfigError(f"{path} has no variants (asked for variant {variant + 1})", loc=Location(path))
        return _build(path, src, spec, allow_outside=allow_outside)
    params = variant_params(src, spec["variants"])
    pid = problem_id(src, spec)
    if variant is None:
        variant = pick_variant(student, len(params), pid) if student is not None else 0
    if not 0 <= variant < len(params):
        raise src.error(f"there is no variant {variant + 1}: the problem has {len(params)}", spec["variants"])
    label = describe_variant(variant, len(params), params[variant])
    try:
        src, spec = _compose(path, substitute(text, params[variant]))
        return _build(path, src, spec, params[variant], variant, len(params), allow_outside=allow_outside, pid=pid)
    except ConfigError as exc:
        exc.context = label
        raise


def load_variants(path: str | os.PathLike, text: str | None = None) -> list[Problem]:
    """Every variant of a problem (one Problem when it has none): a lecturer's file is checked whole."""
    first = load_problem(path, text, variant=0)
    return [first] + [load_problem(path, text, variant=k) for k in range(1, max(1, first.variant_count))]


def _build(path: str, src: Source, spec: dict, params: dict | None = None, index: int | None = None,
           count: int = 0, allow_outside: bool = False, pid: str | None = None) -> Problem:
    from ..isa import MNEMONICS

    locations = {k: src.loc(v) for k, v in spec.items()}
    inputs: dict[str, InputSpec] = {}
    if "inputs" in spec and value_of(spec["inputs"]) is not None:
        for knode, vnode in mapping(src, spec["inputs"], "'inputs'"):
            name = str(knode.value)
            if not name.isidentifier():
                raise src.error(f"'{name}' is not an array name", knode)
            inputs[name] = _input(src, name, vnode)
    if "expect" not in spec:
        raise ConfigError("a problem file needs 'expect': the arrays the trace must compute", loc=Location(path),
                          hint="e.g. expect: {c: a @ b}")
    pairs = [_expectation(src, k, v, inputs) for k, v in mapping(src, spec["expect"], "'expect'")]
    if not pairs:
        raise src.error("'expect' is empty: name at least one array the trace must compute", spec["expect"])
    expect = tuple(e for e, _ in pairs)
    rules: dict[str, Rule] = {e.target: r for e, r in pairs}
    budgets = {}
    for key in BUDGETS:
        if key in spec:
            rule = limit_rule(src, spec[key], key, integer=key != "max_cycles")
            budgets[key], rules[CHECK_NAMES[key]] = rule.limit, rule
    array_budgets: dict[str, dict[str, float | None]] = {}
    for key in ARRAY_BUDGETS:
        if key in spec:
            array_budgets[key] = {}
            for k, v in mapping(src, spec[key], f"'{key}' (array: words)"):
                rule = limit_rule(src, v, f"{key}: {k.value}", integer=True)
                array_budgets[key][str(k.value)] = rule.limit
                rules[f"{key.removeprefix('max_')} {k.value}"] = rule
    allowed = None
    if "allowed_ops" in spec:
        allowed, rules["instructions"] = ops_rule(src, spec["allowed_ops"], MNEMONICS)
    title = value_of(spec["title"]) if "title" in spec else Path(path).stem
    any_random = any(i.random for i in inputs.values())
    description = str(value_of(spec["description"]) or "") if "description" in spec else ""
    submission = None
    if "submission" in spec:
        submission = value_of(spec["submission"])
        if not isinstance(submission, str) or not submission or "/" in submission or "\\" in submission \
                or submission.startswith("."):
            raise src.error(f"'submission' must be a file name (no folders), got {submission!r}", spec["submission"],
                            hint="e.g. submission: matmul.asm")
    machine, machine_file = _machine(src, spec, path, allow_outside)
    return Problem(
        title=str(title), inputs=tuple(inputs.values()), expect=expect, machine=machine, machine_file=machine_file,
        budgets=budgets, array_budgets=array_budgets,
        tolerance=number(src, spec["tolerance"], "tolerance") if "tolerance" in spec else 1e-9,
        trials=_trials(src, spec["trials"]) if "trials" in spec else (3 if any_random else 1),
        seed=number(src, spec["seed"], "seed", integer=True) if "seed" in spec else 0,
        description=description,
        reference=str(value_of(spec["reference"])) if "reference" in spec else None,
        file=path, locations=locations, rules=rules, allowed_ops=allowed,
        statement=str(value_of(spec["statement"]) or "") if "statement" in spec else description,
        submission=submission, variant=dict(params or {}), variant_index=index, variant_count=count,
        id=pid if pid is not None else problem_id(src, spec, str(title)),
        deadline=parse_deadline(src, spec.get("due"), spec.get("late")),
    )
