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

Random inputs: ``{shape: [..], dist: normal}`` (default, standard normal),
``{shape, dist: uniform, low: 0, high: 1}`` or ``{shape, dist: integers, low: -5, high: 5}``
(both ends included). Trial k of seed s draws from ``numpy.random.default_rng([s, k,
crc32(name)])``, so a trace that hard-codes its answer fails. The expression language is
``toymachine.check.expr``. Every error names the file, line and column (an unknown key, a
bad shape, an unknown name in an expression, …).
"""

from __future__ import annotations

__all__ = ["Problem", "InputSpec", "Expectation", "BUDGETS", "ARRAY_BUDGETS", "load_problem", "KEYS"]

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
from .expr import ExprError, Node, evaluate, names_in, parse_expr

# budget key → (what it limits, unit)
BUDGETS: dict[str, str] = {
    "max_cycles": "cycles",
    "max_loads": "LOAD instructions",
    "max_stores": "STORE instructions",
    "max_registers": "registers used",
    "max_dram_reads": "DRAM words read",
    "max_dram_writes": "DRAM words written",
    "max_sram": "SRAM peak (words)",
}
ARRAY_BUDGETS: dict[str, str] = {"max_reads": "words read from", "max_writes": "words written to"}
KEYS = ("title", "description", "inputs", "expect", "registers", "machine", "tolerance", "trials", "seed",
        "reference") + tuple(BUDGETS) + tuple(ARRAY_BUDGETS)
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
    budgets: dict = field(default_factory=dict)  # key of BUDGETS → limit
    array_budgets: dict = field(default_factory=dict)  # "max_reads"/"max_writes" → {array: words}
    tolerance: float = 1e-9
    trials: int = 1
    seed: int = 0
    description: str = ""
    reference: str | None = None  # a solution trace, relative to the problem file
    file: str = "<problem>"
    locations: dict = field(default_factory=dict, compare=False)  # key → Location, for messages


class _Source:
    def __init__(self, path: str, text: str):
        self.path, self.lines = path, text.splitlines()

    def loc(self, node, offset: int = 0, length: int | None = None) -> Location:
        line, col = node.start_mark.line + 1, node.start_mark.column + 1
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        if length is None:
            same = node.start_mark.line == node.end_mark.line
            length = max(1, node.end_mark.column - node.start_mark.column) if same else 1
        return Location(self.path, line, col + offset, src, length)

    def error(self, message: str, node, hint: str | None = None, **kw) -> ConfigError:
        return ConfigError(message, loc=self.loc(node, **kw), hint=hint)


def _value(node):
    return yamlsafe.construct(node, what="problem file")


def _number(src: _Source, node, key: str, *, integer: bool = False, minimum: float = 0, strict: bool = False):
    value = _value(node)
    if isinstance(value, str):  # YAML 1.1 reads 1e-9 (no '.') as text
        try:
            value = float(value)
        except ValueError:
            pass
    bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
    if not bad and integer and float(value) != int(value):
        bad = True
    if bad or value < minimum or (strict and value == minimum):
        kind = "a whole number" if integer else "a number"
        bound = f" > {minimum:g}" if strict else f" ≥ {minimum:g}"
        raise src.error(f"'{key}' must be {kind}{bound}, got {value!r}", node)
    return int(value) if integer or isinstance(value, int) else float(value)


def _mapping(src: _Source, node, what: str):
    if not isinstance(node, yaml.MappingNode):
        raise src.error(f"{what} must be a mapping (name: value lines)", node)
    return node.value


def _input(src: _Source, name: str, node) -> InputSpec:
    import numpy as np

    if isinstance(node, yaml.MappingNode):
        opts = {k.value: v for k, v in node.value}
        for key, knode in ((k.value, k) for k, _ in node.value):
            if key not in ("shape", "dist", "low", "high"):
                raise src.error(f"unknown key '{key}' in input '{name}'", knode,
                                hint="a random input takes shape, dist (normal | uniform | integers), low, high")
        if "shape" not in opts:
            raise src.error(f"input '{name}' needs a shape, e.g. {{shape: [2, 2]}}", node)
        shape = _value(opts["shape"])
        if isinstance(shape, int) and not isinstance(shape, bool):
            shape = [shape]
        if (not isinstance(shape, list) or not shape
                or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in shape)):
            raise src.error(f"the shape of '{name}' must be a list of positive whole numbers, got {shape!r}",
                            opts["shape"], hint="e.g. shape: [4, 3]")
        LIMITS["array_elements"].check(math.prod(shape), f"input '{name}' of shape {tuple(shape)}",
                                       loc=src.loc(opts["shape"]))
        dist = _value(opts["dist"]) if "dist" in opts else "normal"
        if dist not in _DISTS:
            raise src.error(f"unknown distribution {dist!r} for input '{name}'", opts["dist"],
                            hint=f"choose one of {', '.join(_DISTS)}")
        default_low, default_high = (-5.0, 5.0) if dist == "integers" else (0.0, 1.0)
        low = _number(src, opts["low"], "low", minimum=-math.inf) if "low" in opts else default_low
        high = _number(src, opts["high"], "high", minimum=-math.inf) if "high" in opts else default_high
        if dist != "normal" and high < low:
            raise src.error(f"input '{name}': high ({high:g}) is below low ({low:g})", node)
        return InputSpec(name, None, tuple(shape), dist, low, high, src.loc(node))
    value = _value(node)
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


def _expectation(src: _Source, knode, vnode, inputs: dict) -> Expectation:
    import numpy as np

    from ..asm import parse
    from ..errors import AsmError

    target = str(knode.value).strip()
    address = None
    if "[" in target:
        try:
            address = parse(f"LOAD {target}, R0").instrs[0].args[0]
        except AsmError as exc:
            raise src.error(f"'{target}' is not an array, cell or block address: {exc.message}", knode,
                            hint="write c, c[0][1] or O[0:2, :] (the assembly's address syntax)") from None
        array = address.array
    else:
        array = target
        if not array.isidentifier():
            raise src.error(f"'{target}' is not an array name", knode, hint="write c, c[0][1] or O[0:2, :]")
    text = _value(vnode)
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
        evaluate(node, {n: np.ones(spec.shape) for n, spec in inputs.items()})
    except ExprError as exc:
        one_line = vnode.start_mark.line == vnode.end_mark.line
        loc = src.loc(vnode, offset=quoted + exc.pos, length=exc.length) if one_line else src.loc(vnode)
        raise ConfigError(f"in the expected value of '{target}': {exc.message}", loc=loc, hint=exc.hint) from None
    return Expectation(target, array, address, text, node, src.loc(knode))


def _trials(src: _Source, node) -> int:
    trials = _number(src, node, "trials", integer=True, minimum=1)
    LIMITS["trials"].check(trials, f"'trials: {trials}'", loc=src.loc(node))
    return int(trials)


def _machine(src: _Source, spec: dict, base: str, allow_outside: bool = False) -> Machine:
    from ..machine import DEFAULT_MACHINE, preset_names, resolve_machine

    machine = DEFAULT_MACHINE
    if "machine" in spec:
        node = spec["machine"]
        name = _value(node)
        if not isinstance(name, str):
            raise src.error(f"'machine' must be a preset name or a machine file, got {name!r}", node)
        path = name if os.path.isabs(name) else os.path.join(base, name)
        if os.path.exists(path) and not allow_outside and name not in preset_names():
            inside = os.path.realpath(path)
            if os.path.commonpath([inside, os.path.realpath(base)]) != os.path.realpath(base):
                raise src.error("the machine file lies outside the problem's folder", node,
                                hint="copy it next to the problem file, or pass --allow-outside if you trust it")
        try:
            machine = resolve_machine(path if os.path.exists(path) else name)
        except ConfigError as exc:
            raise src.error(exc.message, node, hint=exc.hint) from None
    if "registers" in spec:
        machine = machine.with_(registers=_number(src, spec["registers"], "registers", integer=True, minimum=1))
    return machine


def load_problem(path: str | os.PathLike, text: str | None = None, *, allow_outside: bool = False) -> Problem:
    """Read and check a problem file (``text`` instead of reading ``path``, which then only
    names it in messages and anchors relative machine/reference paths). A ``machine:`` file must
    lie under the problem's folder unless ``allow_outside``."""
    path = os.fspath(path)
    if text is None:
        try:
            text = yamlsafe.read_text(path, "problem file")
        except FileNotFoundError:
            raise ConfigError(f"no such problem file: {path}", loc=Location(path),
                              hint="problem sets live in examples/problems/") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read problem file {path}: {getattr(exc, 'strerror', None) or exc}",
                              loc=Location(path)) from None
    src = _Source(path, text)
    try:
        root = yamlsafe.compose(text, path, "problem file")
    except ConfigError as exc:
        if "not valid YAML" in exc.message:
            exc.hint = "quote an expression that contains ': ' or starts with a special character"
        raise
    if root is None:
        raise ConfigError("problem file is empty", loc=Location(path), hint="see examples/problems/ for the format")
    spec: dict = {}
    for knode, vnode in _mapping(src, root, "a problem file"):
        key = knode.value
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            raise src.error(f"unknown key '{key}' in problem file", knode,
                            hint=(f"did you mean '{close[0]}'? " if close else "") + f"keys are: {', '.join(KEYS)}")
        if key in spec:
            raise src.error(f"'{key}' is given twice", knode)
        spec[key] = vnode
    locations = {k: src.loc(v) for k, v in spec.items()}
    inputs: dict[str, InputSpec] = {}
    if "inputs" in spec and _value(spec["inputs"]) is not None:
        for knode, vnode in _mapping(src, spec["inputs"], "'inputs'"):
            name = str(knode.value)
            if not name.isidentifier():
                raise src.error(f"'{name}' is not an array name", knode)
            inputs[name] = _input(src, name, vnode)
    if "expect" not in spec:
        raise ConfigError("a problem file needs 'expect': the arrays the trace must compute", loc=Location(path),
                          hint="e.g. expect: {c: a @ b}")
    expect = tuple(_expectation(src, k, v, inputs) for k, v in _mapping(src, spec["expect"], "'expect'"))
    if not expect:
        raise src.error("'expect' is empty: name at least one array the trace must compute", spec["expect"])
    budgets = {k: _number(src, spec[k], k, integer=k != "max_cycles") for k in BUDGETS if k in spec}
    array_budgets = {}
    for key in ARRAY_BUDGETS:
        if key in spec:
            array_budgets[key] = {str(k.value): _number(src, v, f"{key}: {k.value}", integer=True)
                                  for k, v in _mapping(src, spec[key], f"'{key}' (array: words)")}
    title = _value(spec["title"]) if "title" in spec else Path(path).stem
    any_random = any(i.random for i in inputs.values())
    return Problem(
        title=str(title), inputs=tuple(inputs.values()), expect=expect,
        machine=_machine(src, spec, os.path.dirname(os.path.abspath(path)), allow_outside),
        budgets=budgets, array_budgets=array_budgets,
        tolerance=_number(src, spec["tolerance"], "tolerance") if "tolerance" in spec else 1e-9,
        trials=_trials(src, spec["trials"]) if "trials" in spec else (3 if any_random else 1),
        seed=_number(src, spec["seed"], "seed", integer=True) if "seed" in spec else 0,
        description=str(_value(spec["description"]) or "") if "description" in spec else "",
        reference=str(_value(spec["reference"])) if "reference" in spec else None,
        file=path, locations=locations,
    )
