"""What click's usage errors and parameters say, read from their fields (never their messages):
the parameter's key, how click names it, its choices and bounds, the words its parser leaves over,
the command a command line names that its group lacks. ``cli.usage`` words its errors from these."""

from __future__ import annotations

__all__ = ["key", "param_hint", "choices", "why_not", "unknown_command", "extra_arguments", "is_group"]

from typing import Any

from .lazy import leaf
from .vocabulary import key_of


def key(param) -> str | None:
    """The parameter a click parameter sets, as the library names it (``--format`` → ``format``)."""
    opts = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
    return key_of(opts[0]) if opts else getattr(param, "name", None)


def param_hint(param) -> str:
    """``'--registers' / '-r'``, ``'FILE'``: how click names a parameter in its errors."""
    hint = getattr(param, "get_error_hint", None)
    return hint() if hint is not None else repr(getattr(param, "name", "?"))


def choices(param) -> list[str]:
    """The values a parameter takes, if it is a choice (an Enum annotation)."""
    from enum import Enum

    annotation = leaf(getattr(getattr(param, "type_descriptor", None), "annotation", None))
    return [str(m.value) for m in annotation] if isinstance(annotation, type) and issubclass(annotation, Enum) else []


def why_not(param, value: str | None, choices: list[str]) -> str | None:
    """Why ``value`` is not one of ``param``'s values, in toym's words (None: not known)."""
    if value is None:
        return None
    if choices:
        return f"{value!r} is not one of {', '.join(repr(c) for c in choices)}"
    annotation = leaf(getattr(getattr(param, "type_descriptor", None), "annotation", None))
    if annotation in (int, float):
        try:
            number = int(value) if annotation is int else float(value)
        except ValueError:
            return f"{value!r} is not a {'whole number' if annotation is int else 'number'}"
        low, high = getattr(param, "min", None), getattr(param, "max", None)
        if low is not None and number < low:
            return f"must be at least {low}, got {value}"
        if high is not None and number > high:
            return f"must be at most {high}, got {value}"
    return None


def unknown_command(root, args: list[str]) -> tuple[int, Any, str] | None:
    """Where ``args`` name a command their group lacks: (its index, the group, the group's path)."""
    group, path = root, ["toym"]
    for i, token in enumerate(args):
        if not is_group(group):
            return None
        if token.startswith("-"):
            continue  # the groups' own options (-V, -h) take no value
        cmd = group.get_command(None, token)
        if cmd is None:
            return i, group, " ".join(path)
        group, path = cmd, path + [token]
    return None


def extra_arguments(cmd, ctx, rest: list[str]) -> list[str]:
    """The words of ``rest`` that none of ``cmd``'s options or arguments take (click's parser leaves them)."""
    try:
        _, left, _ = cmd.make_parser(ctx).parse_args(args=list(rest))
    except Exception:  # click's usage error: nothing left over to name
        return []
    return [str(word) for word in left]


def is_group(cmd) -> bool:
    return hasattr(cmd, "list_commands")  # a click group, its commands loaded or not (cli.lazy)
