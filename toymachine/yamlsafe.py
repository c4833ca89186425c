"""The one YAML loader every file toym reads goes through (machine, problem, data files).

Stricter than ``yaml.safe_load``, each refusal an error naming the file, line and column:

* a duplicate key (``registers: 4`` then ``registers: 10**12``: the last would win silently);
* a key that is not a scalar (``? [a, b]``);
* a tag outside YAML's core schema (``!!python/object``, ``!!binary``, ``!!set``, ``!local``);
  dates stay text (no implicit timestamps);
* more nodes than ``limits.yaml_nodes`` once aliases are expanded, or nesting deeper than
  ``limits.yaml_depth``, or a recursive alias — counted on the composed graph with each
  anchored node counted once per use (memoised: an alias bomb costs its size in bytes, never
  its expansion), so nothing is ever built or quoted from it;
* a number of more than ``limits.literal_digits`` digits (Python refuses 4,300-digit ints).
"""

from __future__ import annotations

__all__ = ["SafeYamlLoader", "compose", "construct", "load", "node_location", "read_text", "CORE_TAGS"]

from collections.abc import Callable
from typing import Any

import yaml

from .errors import ConfigError, Location, ToyMachineError
from .limits import LIMITS, LimitError

_T = "tag:yaml.org,2002:"
CORE_TAGS = frozenset(_T + t for t in ("null", "bool", "int", "float", "str", "seq", "map"))


class SafeYamlLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without implicit timestamps; mappings refuse duplicate and complex keys."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _T + "timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise _YamlProblem("a key must be a plain value, not a list or mapping", key_node)
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise _YamlProblem(f"duplicate key '{str(key)[:80]}' (first on line {seen[key]})", key_node)
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


class _YamlProblem(Exception):
    def __init__(self, message: str, node, limit: str | None = None):
        """``limit``: the name in ``LIMITS`` of the limit the value is over (None: not a limit)."""
        super().__init__(message)
        self.message, self.node, self.limit = message, node, limit


def node_location(path: str, node, lines: list[str]) -> Location:
    """file:line:col of a node, with its source line (for the caret)."""
    mark = node.start_mark
    line, col = mark.line + 1, mark.column + 1
    src = lines[line - 1] if 0 < line <= len(lines) else None
    length = max(1, node.end_mark.column - mark.column) if node.end_mark.line == mark.line else 1
    return Location(path, line, col, src, length)


def _check(root, max_nodes: float, max_depth: float, max_digits: float) -> None:
    """Count ``root``'s nodes with aliases expanded (memoised per node), its depth, its tags."""
    sizes: dict[int, tuple[int, int]] = {}  # id(node) → (nodes, depth) once expanded
    active: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            kids = _children(node)
            total = 1 + sum(sizes[id(k)][0] for k in kids)
            depth = 1 + max((sizes[id(k)][1] for k in kids), default=0)
            if total > max_nodes:
                raise _YamlProblem(f"this value expands to more than {max_nodes:,} YAML nodes (aliases counted "
                                   f"each time they are used)", node, limit="yaml_nodes")
            if depth > max_depth:
                raise _YamlProblem(f"YAML nested deeper than {max_depth} levels", node, limit="yaml_depth")
            sizes[key] = (total, depth)
            continue
        if key in sizes:
            continue
        if key in active:
            raise _YamlProblem("a recursive alias (a value that contains itself)", node)
        if node.tag not in CORE_TAGS:
            tag = node.tag.replace(_T, "!!")
            raise _YamlProblem(f"tag {tag[:60]} is not allowed (only YAML's core types: null, bool, int, float, "
                               f"str, list, mapping)", node)
        if isinstance(node, yaml.ScalarNode):
            if node.tag in (_T + "int", _T + "float") and len(node.value) > max_digits:
                raise _YamlProblem(f"a number of {len(node.value):,} characters (the limit is {max_digits})",
                                   node, limit="literal_digits")
            sizes[key] = (1, 1)
            continue
        active.add(key)
        if len(active) > max_depth:
            raise _YamlProblem(f"YAML nested deeper than {max_depth} levels", node, limit="yaml_depth")
        stack.append((node, True))
        for kid in _children(node):
            if id(kid) not in sizes:
                stack.append((kid, False))


def _children(node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def read_text(path: str, what: str = "YAML file") -> str:
    """A YAML file's text, read no further than ``limits.file_bytes`` (a device or a FIFO too): raises
    ``OSError``/``UnicodeDecodeError`` as ``open`` does, a ``LimitError`` past the limit."""
    cap = int(LIMITS["file_bytes"].value())
    with open(path, encoding="utf-8") as fh:
        text = fh.read(cap + 1)
    if len(text) > cap:
        LIMITS["file_bytes"].check(cap + 1, f"{what} {path} (at least)", loc=Location(path))
    return text


def compose(text: str, path: str, what: str = "YAML file",
            error: Callable[..., ToyMachineError] = ConfigError):
    """``text`` → its checked node graph (None for an empty document). Every refusal is ``error``
    (or a ``LimitError``) naming ``path``, the line and the column."""
    lines = text.splitlines()
    size = len(text.encode("utf-8", "surrogatepass")) if len(text) > 1 << 20 else len(text)
    LIMITS["file_bytes"].check(size, f"{what} {path}", loc=Location(path))
    loader = SafeYamlLoader(text)
    try:
        root = loader.get_single_node()
        if root is not None:
            lim = LIMITS
            _check(root, lim["yaml_nodes"].value(), lim["yaml_depth"].value(), lim["literal_digits"].value())
    except _YamlProblem as exc:
        raise _error(exc, path, lines, what, error) from None
    except yaml.YAMLError as exc:
        raise _syntax(exc, path, lines, what, error) from None
    except RecursionError:
        raise LimitError(f"{what} is nested too deeply", loc=Location(path),
                         hint=LIMITS["yaml_depth"].lift_hint()) from None
    finally:
        loader.dispose()
    return root


def construct(node, path: str = "<yaml>", lines: list[str] | None = None, what: str = "YAML file",
              error: Callable[..., ToyMachineError] = ConfigError) -> Any:
    """The Python value of a checked node (a subtree of ``compose``'s graph)."""
    if node is None:
        return None
    loader = SafeYamlLoader("")
    try:
        return loader.construct_document(node)
    except _YamlProblem as exc:
        raise _error(exc, path, lines or [], what, error) from None
    except yaml.YAMLError as exc:
        raise _syntax(exc, path, lines or [], what, error) from None
    except ValueError as exc:  # e.g. an int PyYAML cannot convert
        raise error(f"{what}: {str(exc)[:120]}", loc=node_location(path, node, lines or [])) from None
    finally:
        loader.dispose()


def load(text: str, path: str, what: str = "YAML file", error: Callable[..., ToyMachineError] = ConfigError) -> Any:
    """``compose`` and ``construct`` in one: the checked document's Python value."""
    root = compose(text, path, what, error)
    return construct(root, path, text.splitlines(), what, error)


def _error(exc: _YamlProblem, path: str, lines: list[str], what: str, error) -> ToyMachineError:
    loc = node_location(path, exc.node, lines)
    if exc.limit:
        return LimitError(f"{what}: {exc.message}", loc=loc, hint=LIMITS[exc.limit].lift_hint())
    return error(f"{what}: {exc.message}", loc=loc, hint="toym reads plain YAML: no duplicate keys, no tags, "
                                                          "scalar keys, aliases within the node limit")


def _syntax(exc: yaml.YAMLError, path: str, lines: list[str], what: str, error) -> ToyMachineError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        line = mark.line + 1
        loc = Location(path, line, mark.column + 1, lines[mark.line] if mark.line < len(lines) else None)
    else:
        loc = Location(path)
    if isinstance(exc, yaml.constructor.ConstructorError):
        return error(f"{what}: {problem}", loc=loc, hint="toym reads plain YAML: numbers, text, lists and mappings")
    return error(f"{what} is not valid YAML: {problem}", loc=loc, code="yaml-syntax")
