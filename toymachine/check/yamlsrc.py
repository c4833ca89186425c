"""The problem file's YAML, located: every node knows its file, line and column, so every
error a problem file can cause points at the offending text (``Source.error``)."""

from __future__ import annotations

__all__ = ["Source", "value_of", "number", "mapping", "flag"]

import math

import yaml

from ..errors import ConfigError, Location, Words


class Source:
    def __init__(self, path: str, text: str):
        self.path, self.lines = path, text.splitlines()

    def loc(self, node, offset: int = 0, length: int | None = None) -> Location:
        line, col = node.start_mark.line + 1, node.start_mark.column + 1
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        if length is None:
            same = node.start_mark.line == node.end_mark.line
            length = max(1, node.end_mark.column - node.start_mark.column) if same else 1
        return Location(self.path, line, col + offset, src, length)

    def error(self, message: str, node, hint: Words | None = None, **kw) -> ConfigError:
        return ConfigError(message, loc=self.loc(node, **kw), hint=hint)


def value_of(node):
    from .. import yamlsafe

    return yamlsafe.construct(node, what="problem file")


def number(src: Source, node, key: str, *, integer: bool = False, minimum: float = 0, strict: bool = False):
    value = value_of(node)
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


def mapping(src: Source, node, what: str):
    if not isinstance(node, yaml.MappingNode):
        raise src.error(f"{what} must be a mapping (name: value lines)", node)
    return node.value


def flag(src: Source, node, key: str) -> bool:
    value = value_of(node)
    if not isinstance(value, bool):
        raise src.error(f"'{key}' must be true or false, got {value!r}", node)
    return value
