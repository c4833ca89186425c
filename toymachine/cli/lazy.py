"""Lazy commands: the root group knows each command's name and one-line help from a table
(``app.COMMANDS``) and imports the command's module only when that command runs (or its own
help is asked for). ``toym --help`` lists every command without importing one; ``toym run``
imports the run path alone.

Typer coerces every option value through a pydantic adapter it builds on first use — importing
pydantic and building a schema per option costs more than a whole small run. ``fast_params``
gives the common annotations (str, int, float, enum choices) a direct conversion that returns
what the adapter returns, and hands everything else — and every value it does not accept, so
that the error message is typer's own — to typer's adapter.
"""

from __future__ import annotations

__all__ = ["Lazy", "LazyCommands", "LazyGroup", "load", "fast_params", "leaf"]

import re
from enum import Enum
from importlib import import_module
from types import UnionType
from typing import Any, NamedTuple, Union, get_args, get_origin

import typer
from typer.core import TyperGroup


class Lazy(NamedTuple):
    target: str  # "module:attribute", the module under toymachine.cli
    help: str  # the command's one-line help (tests/test_startup.py holds it equal to the docstring's)
    context: str | None = None  # a module attribute holding the command's context settings


class LazyCommands(TyperGroup):
    """Mixin for a typer group (``class G(LazyCommands, TyperGroup)``, or any subclass of it):
    its commands come from ``table`` (name → ``Lazy``), imported on demand. Commands registered
    the ordinary way (``app.command(...)``) still work and are listed after."""

    table: dict[str, Lazy] = {}

    def get_params(self, ctx) -> list:
        params = super().get_params(ctx)
        _fast(params)
        return params

    def list_commands(self, ctx) -> list[str]:
        return list(self.table) + [n for n in super().list_commands(ctx) if n not in self.table]

    def get_command(self, ctx, cmd_name: str):
        cmd = super().get_command(ctx, cmd_name)
        if cmd is None and cmd_name in self.table:
            cmd = load(cmd_name, self.table[cmd_name], self.rich_markup_mode)
            self.commands[cmd_name] = cmd
        return cmd

    def format_commands(self, ctx, formatter) -> None:
        """As click does it, with the table's help for commands not loaded (no import)."""
        from typer._click.utils import make_default_short_help

        rows: list[tuple[str, Any, str]] = []  # (name, the command if loaded, else None and the table's help)
        for name in self.list_commands(ctx):
            if name in self.table and name not in self.commands:
                rows.append((name, None, self.table[name].help))
                continue
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd, ""))
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _, _ in rows)
        dl = [(name, cmd.get_short_help_str(limit) if cmd is not None else make_default_short_help(text, limit))
              for name, cmd, text in rows]
        with formatter.section("Commands"):
            formatter.write_dl(dl)


class LazyGroup(LazyCommands, TyperGroup):
    """A typer group with lazy commands."""


def load(name: str, entry: Lazy, rich_markup_mode: Any = None):
    """The click command (or group) of a table entry: its module imported, built by typer as
    ``app.command(name)`` / ``app.add_typer(sub, name=name)`` would build it."""
    from typer.main import get_command_from_info, get_group_from_info
    from typer.models import CommandInfo, TyperInfo

    module_name, attr = entry.target.split(":")
    module = import_module(f"{__package__}.{module_name}")
    obj = getattr(module, attr)
    cmd: Any  # a group or a command of typer's click
    if isinstance(obj, typer.Typer):
        cmd = get_group_from_info(TyperInfo(obj, name=name), pretty_exceptions_short=True,
                                  rich_markup_mode=rich_markup_mode, suggest_commands=True)
    else:
        settings = getattr(module, entry.context) if entry.context else {}
        cmd = get_command_from_info(CommandInfo(name=name, callback=obj, context_settings=settings),
                                    pretty_exceptions_short=True, rich_markup_mode=rich_markup_mode)
    fast_params(cmd)
    return cmd


# -- values without pydantic -----------------------------------------------------------------------
_FLOAT = r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?\Z"  # what float() and pydantic read alike
_SLOW = object()


def _int_text(s: str) -> bool:
    """A plain decimal integer — no sign but "-", no leading zero, no "_", no spaces, ASCII digits."""
    t = s[1:] if s[:1] == "-" else s
    return t.isascii() and t.isdigit() and len(t) <= 18 and (t == "0" or t[0] != "0")


def leaf(annotation: Any) -> Any:
    """Optional[X] (or X | None) → X."""
    if get_origin(annotation) in (Union, UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _in_range(x: Any, info: Any) -> bool:
    return (info.min is None or x >= info.min) and (info.max is None or x <= info.max)


def _convert(annotation: Any, info: Any, value: Any, ctx: Any) -> Any:
    """``value`` as typer's adapter would return it, or ``_SLOW`` (let the adapter decide)."""
    if info.parser is not None or getattr(info, "clamp", False):
        return _SLOW
    if annotation is str:
        return value if isinstance(value, str) else _SLOW
    if annotation is bool:
        return value if type(value) is bool else _SLOW
    if annotation is int:
        if type(value) is int:
            x = value
        elif isinstance(value, str) and _int_text(value):
            x = int(value)
        else:
            return _SLOW
        return x if _in_range(x, info) else _SLOW
    if annotation is float:
        if type(value) in (int, float):
            f = float(value)
        elif isinstance(value, str) and re.match(_FLOAT, value):
            f = float(value)
        else:
            return _SLOW
        return f if _in_range(f, info) else _SLOW
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        from typer._param_types import coerce_cli_choice

        try:
            return coerce_cli_choice(value, choices=tuple(annotation), case_sensitive=info.case_sensitive, ctx=ctx)
        except (ValueError, TypeError):
            return _SLOW
    return _SLOW


try:  # typer's private coercion classes (typer ≥ 0.25); without them every value takes typer's own path
    from typer._coercion import RuntimeParam, build_runtime_param
except ImportError:  # pragma: no cover
    _COERCION = False
else:
    _COERCION = True

    class _Fast(RuntimeParam):  # RuntimeParam's fields, and leaf + descriptor set by _fast_runtime
        leaf: Any  # (not fields: RuntimeParam is a frozen dataclass, _Fast is not one)
        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            out = _convert(self.leaf, self.parameter_info, value, ctx)
            if out is _SLOW:
                return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)
            return out


def _fast_runtime(param: Any) -> Any:
    desc = param.type_descriptor
    bare = leaf(desc.annotation)
    if not _COERCION or desc.file_annotation is not None or \
            not (bare in (str, int, float, bool) or (isinstance(bare, type) and issubclass(bare, Enum))):
        return None
    fast = _Fast(parameter_info=desc.parameter_info, annotation=desc.annotation)
    object.__setattr__(fast, "leaf", bare)  # (RuntimeParam is a frozen dataclass)
    object.__setattr__(fast, "descriptor", desc)
    return fast


def _fast(params: Any) -> None:
    for param in params:
        if getattr(param, "_runtime_param", 0) is None and hasattr(param, "type_descriptor"):
            fast = _fast_runtime(param)
            if fast is not None:
                param._runtime_param = fast


def fast_params(cmd: Any) -> None:
    """Give ``cmd``'s parameters — its help option too, which click makes as it parses — and its
    subcommands' the direct conversion. Typer's internals are private: where they are not as
    expected this does nothing (slower, the same result)."""
    if not _COERCION:  # pragma: no cover
        return
    get_params = cmd.get_params

    def params_fast(ctx: Any) -> list:
        params = get_params(ctx)
        _fast(params)
        return params

    cmd.get_params = params_fast
    for sub in (getattr(cmd, "commands", None) or {}).values():
        fast_params(sub)
