"""Points: what each check of a problem is worth, and how a figure earns them.

In a problem file every check is worth 1 point unless it says otherwise::

    expect:
      c: a @ b                                  # 1 point
      c: {value: a @ b, points: 10}             # 10 points
    max_cycles: 22                              # 1 point at ≤ 22
    max_cycles: {22: 10, 25: 5}                 # tiers: 10 points at ≤ 22, 5 at ≤ 25, else 0
    max_loads: {limit: 10, points: 2, hidden: true}
    max_reads: {k: 6, v: {6: 2, 9: 1}}          # per array, the same forms
    allowed_ops: [LOAD, STORE, MAC_Z, MAC]      # or {ops: [...], points: 2, hidden: true}

A ``hidden: true`` check counts in the score, but its figure and message appear only in the
lecturer's gradebook (student feedback and Gradescope's student view name it, nothing more).
Budget and instruction checks earn their points only when every expected array is right: an
empty trace is cheap, not good.
"""

from __future__ import annotations

__all__ = ["Rule", "CHECK_NAMES", "limit_rule", "value_rule", "ops_rule", "DEFAULT_POINTS"]

from dataclasses import dataclass

import yaml

from .yamlsrc import Source, flag, mapping, number, value_of

DEFAULT_POINTS = 1

# budget key → the name of its check (gradebook column, table row)
CHECK_NAMES = {"max_cycles": "cycles", "max_loads": "loads", "max_stores": "stores", "max_registers": "registers",
               "max_dram_reads": "DRAM reads", "max_dram_writes": "DRAM writes", "max_sram": "SRAM peak"}


@dataclass(frozen=True)
class Rule:
    """What a check is worth: ``kind`` value | budget | ops; budgets hold their ``tiers``
    ((limit, points), tightest limit first, points falling as the limit loosens)."""

    kind: str
    points: float  # the most it earns
    tiers: tuple[tuple[float, float], ...] = ()
    hidden: bool = False

    @property
    def limit(self) -> float | None:
        return self.tiers[0][0] if self.tiers else None

    def earned(self, figure: float) -> float:
        """Points a budget check earns with ``figure`` (the best tier it meets)."""
        for limit, points in self.tiers:
            if figure <= limit:
                return points
        return 0

    def tier_of(self, figure: float) -> float | None:
        """The limit of the tier ``figure`` meets (None: none)."""
        return next((limit for limit, _ in self.tiers if figure <= limit), None)


def _points(src: Source, node, key: str) -> float:
    return number(src, node, f"{key}: points")


def limit_rule(src: Source, node, key: str, *, integer: bool) -> Rule:
    """A budget: a number, ``{limit: L, points: P, hidden: B}`` or tiers ``{L1: P1, L2: P2}``."""
    if not isinstance(node, yaml.MappingNode):
        return Rule("budget", DEFAULT_POINTS, ((number(src, node, key, integer=integer), DEFAULT_POINTS),))
    tiers, hidden, limit, points = [], False, None, None
    for knode, vnode in node.value:
        name = value_of(knode)
        if name == "hidden":
            hidden = flag(src, vnode, f"{key}: hidden")
        elif name == "limit":
            limit = number(src, vnode, key, integer=integer)
        elif name == "points":
            points = _points(src, vnode, key)
        elif isinstance(name, (int, float)) and not isinstance(name, bool):
            tiers.append((number(src, knode, key, integer=integer), _points(src, vnode, key), knode))
        else:
            raise src.error(f"unknown key {name!r} in '{key}'", knode,
                            hint=f"write {key}: 22, {key}: {{22: 10, 25: 5}} (tiers: limit: points) or "
                                 f"{key}: {{limit: 22, points: 3, hidden: true}}")
    if limit is not None or points is not None:
        if tiers:
            raise src.error(f"'{key}' mixes limit/points with tiers; give one form", node)
        if limit is None:
            raise src.error(f"'{key}' gives points but no limit", node, hint=f"e.g. {key}: {{limit: 22, points: 3}}")
        tiers = [(limit, DEFAULT_POINTS if points is None else points, node)]
    if not tiers:
        raise src.error(f"'{key}' has no limit", node, hint=f"e.g. {key}: 22 or {key}: {{22: 10, 25: 5}}")
    tiers.sort(key=lambda t: t[0])
    for (l1, p1, _), (l2, p2, k2) in zip(tiers, tiers[1:]):
        if l1 == l2:
            raise src.error(f"'{key}' gives the limit {l2:g} twice", k2)
        if p2 > p1:
            raise src.error(f"'{key}': the looser limit {l2:g} earns more points ({p2:g}) than {l1:g} ({p1:g})", k2,
                            hint="tiers give the most points to the tightest budget")
    return Rule("budget", tiers[0][1], tuple((lim, pts) for lim, pts, _ in tiers), hidden)


def value_rule(src: Source, vnode, target: str):
    """(the expression's node, its Rule) of an ``expect`` entry: text or ``{value, points, hidden}``."""
    if not isinstance(vnode, yaml.MappingNode):
        return vnode, Rule("value", DEFAULT_POINTS)
    points: float
    expr, points, hidden = None, DEFAULT_POINTS, False
    for knode, v in vnode.value:
        name = value_of(knode)
        if name == "value":
            expr = v
        elif name == "points":
            points = _points(src, v, target)
        elif name == "hidden":
            hidden = flag(src, v, f"{target}: hidden")
        else:
            raise src.error(f"unknown key {name!r} in the expectation of '{target}'", knode,
                            hint="write c: a @ b or c: {value: a @ b, points: 10, hidden: false}")
    if expr is None:
        raise src.error(f"the expectation of '{target}' needs a value (an expression)", vnode,
                        hint="e.g. c: {value: a @ b, points: 10}")
    return expr, Rule("value", points, (), hidden)


def ops_rule(src: Source, node, known: tuple[str, ...]) -> tuple[tuple[str, ...], Rule]:
    """``allowed_ops``: a list of mnemonics, or ``{ops: [...], points: P, hidden: B}``."""
    points: float
    points, hidden, ops_node = DEFAULT_POINTS, False, node
    if isinstance(node, yaml.MappingNode):
        ops_node = None
        for knode, v in mapping(src, node, "'allowed_ops'"):
            name = value_of(knode)
            if name == "ops":
                ops_node = v
            elif name == "points":
                points = _points(src, v, "allowed_ops")
            elif name == "hidden":
                hidden = flag(src, v, "allowed_ops: hidden")
            else:
                raise src.error(f"unknown key {name!r} in 'allowed_ops'", knode,
                                hint="write allowed_ops: [LOAD, STORE, MAC] or {ops: [...], points: 2}")
        if ops_node is None:
            raise src.error("'allowed_ops' needs ops: [a list of instructions]", node)
    if not isinstance(ops_node, yaml.SequenceNode) or not ops_node.value:
        raise src.error("'allowed_ops' must be a list of instructions, e.g. [LOAD, STORE, MAC]", ops_node)
    ops = []
    for item in ops_node.value:
        name = str(value_of(item)).upper()
        if name not in known:
            import difflib

            close = difflib.get_close_matches(name, known, n=1)
            raise src.error(f"unknown instruction {value_of(item)!r} in 'allowed_ops'", item,
                            hint=(f"did you mean {close[0]}? " if close else "") + "see toym isa")
        if name not in ops:
            ops.append(name)
    return tuple(ops), Rule("ops", points, (), hidden)
