"""Usage errors in toym's own style: an unknown option, a bad value, a missing argument — each
rendered as every other toym error is (the command line as the source line, a caret under the
offending word, a hint), exit status 2, and under ``-f json`` the JSON error object on stdout too.

The one flag vocabulary (``cli.vocabulary``) names what a look-alike meant: ``-m`` is
``--machine`` and ``--m`` the rows of A, so ``toym gen matmul -m 4`` says "did you mean --m"
before any machine is looked up, ``toym run --m toy3`` "did you mean -m"; an unknown option gets
the command's closest option, or the commands that do take it.

``ToymGroup`` is the app's root group: it keeps the raw arguments, checks look-alikes before the
command runs, and turns click's ``UsageError``s (raised while any subcommand parses) into
``ToymUsageError``s, which ``show()`` in toym's style under typer's standalone mode and under
``cli.app.main`` alike.
"""

from __future__ import annotations

__all__ = ["ToymGroup", "ToymUsageError", "usage_error", "lookalike_error", "wants_json", "command_line_location",
           "raw_args"]

import difflib
import os
import re
import shlex
import sys
from collections.abc import Sequence
from typing import Any, overload

import typer
from typer.core import TyperGroup

from ..errors import ConfigError, Location
from . import click_fields as fields
from .vocabulary import flag_of, flag_words, short_flag

try:  # typer ≥ 0.20 carries its own copy of click; its exceptions are the ones raised
    from typer._click import exceptions as _click_errors
except ImportError:  # pragma: no cover - an older typer on the real click
    from click import exceptions as _click_errors  # type: ignore[no-redef]  # the same module

UsageError = _click_errors.UsageError
_ARGS = "toym.args"
_TOKEN_SHOWN = 40  # characters of one argument shown on the error's source line
_TOKENS_AROUND = 6  # arguments shown either side of the offending one


class ToymUsageError(UsageError):
    """A click usage error carrying the toym error it is shown as."""

    def __init__(self, error: ConfigError, json_error: bool = False):
        super().__init__(error.message)
        self.error = error
        self.json_error = json_error

    def format_message(self) -> str:
        return self.error.message

    def show(self, file: Any = None) -> None:
        typer.echo(self.error.render(flag_words), err=True)
        if self.json_error:
            from ..render.jsonout import error_json

            sys.stdout.write(error_json(self.error, flag_words))
            sys.stdout.flush()


class ToymGroup(TyperGroup):
    """The root group: usage errors of every command below it in toym's style."""

    def make_context(self, info_name, args, parent=None, **extra):
        original = list(args)
        try:
            ctx = super().make_context(info_name, list(args), parent=parent, **extra)
        except (ToymUsageError, _click_errors.NoArgsIsHelpError):
            raise
        except UsageError as exc:
            raise usage_error(original, exc, self) from None
        ctx.meta[_ARGS] = original
        return ctx

    def invoke(self, ctx):
        args = ctx.meta.get(_ARGS, [])
        try:
            error = lookalike_error(self, args)
            if error is not None:
                raise ToymUsageError(error, wants_json(args))
            return super().invoke(ctx)
        except (ToymUsageError, _click_errors.NoArgsIsHelpError):
            raise
        except UsageError as exc:
            raise usage_error(args, exc, self) from None


def raw_args(ctx) -> list[str]:
    """The command line's words after ``toym`` (as the root group received them; [] outside it)."""
    return list(ctx.find_root().meta.get(_ARGS, [])) if ctx is not None else []


def wants_json(args: Sequence[str]) -> bool:
    """The command line asks for ``-f json`` (its errors then print the JSON error object too)."""
    args = list(args)
    return any(a in ("-f", "--format") and b == "json" for a, b in zip(args, args[1:])) or \
        any(a in ("--format=json", "-fjson") for a in args)


# -- the command line as an error's source line ------------------------------------------------------
def _shown(token: str) -> str:
    if not token.isprintable():
        token = token.encode("unicode_escape").decode("ascii")
    if len(token) > _TOKEN_SHOWN:
        token = token[:_TOKEN_SHOWN - 1] + "…"
    return shlex.quote(token)


def command_line_location(args: Sequence[str], index: int | None) -> Location | None:
    """``command line:1:COL`` with the command line (a window of it around long ones) as the source
    line and a caret under argument ``index``; None when it is not known."""
    if index is None or not 0 <= index < len(args):
        return None
    lo, hi = max(0, index - _TOKENS_AROUND), min(len(args), index + _TOKENS_AROUND + 1)
    words = ["toym"] + (["…"] if lo > 0 else []) + [_shown(a) for a in args[lo:hi]] + (["…"] if hi < len(args) else [])
    at = 1 + (lo > 0) + (index - lo)
    col = 1 + sum(len(w) + 1 for w in words[:at])
    return Location("command line", 1, col, " ".join(words), max(1, len(words[at])))


def _index(args: Sequence[str], want, start: int = 0) -> int | None:
    return next((i for i in range(start, len(args)) if want(args[i])), None)


# -- what a command takes ---------------------------------------------------------------------------
def _options(cmd) -> dict[str, Any]:
    """Every visible spelling of ``cmd``'s options → the option."""
    out = {}
    for p in getattr(cmd, "params", ()):
        if getattr(p, "param_type_name", "") == "option" and not p.hidden:
            for o in list(p.opts) + list(p.secondary_opts):
                out[o] = p
    return out


def _long(option) -> str:
    return next((o for o in option.opts if o.startswith("--")), option.opts[0])


def _meaning(name: str) -> str:
    """`` (head dimension)``: the vocabulary's meaning of a flag, up to its first ``;``."""
    f = flag_of(name)
    return f" ({f.meaning.split(';')[0]})" if f is not None else ""


def _path(ctx) -> str:
    return ctx.command_path if ctx is not None else "toym"


def _where_taken(root, name: str) -> list[str]:
    from .vocabulary import flag_commands

    f = flag_of(name)
    return flag_commands(root).get(f.name, []) if f is not None else []


# -- click's errors, said as toym says things ----------------------------------------------------------
# Every message below is composed from the fields click's exceptions carry (``param``, ``option_name``,
# ``param_type``, ``ctx``) and from the command line; click's own wording is shown only for a usage
# error of no kind named here, as click wrote it.
def usage_error(args: Sequence[str], exc, root=None) -> ToymUsageError:
    """``exc`` (click's usage error) as a ``ToymUsageError``: the message, where on the command line,
    the parameter concerned (``key``) and a hint from the vocabulary (``root``: the app's group, to
    find the command ``args`` name)."""
    args = list(args)
    ctx = getattr(exc, "ctx", None)
    cmd, sub, rest = _subcommand(root, args) if root is not None else (None, "", [])
    path = f"toym {sub}" if cmd is not None else _path(ctx)
    cmd = cmd if cmd is not None else (ctx.command if ctx is not None else None)
    help_hint = f"`{path} -h` lists its options; `toym flags` every flag and what it means"
    index = None
    if isinstance(exc, _click_errors.NoSuchOption):
        name = exc.option_name
        index = _index(args, lambda a: a == name or a.startswith(name + "=") or
                       (not name.startswith("--") and a.startswith(name) and not a.startswith("--")))
        message, hint = _unknown_option(root, cmd, path, name)
        error = ConfigError(message, hint=hint or help_hint)
    elif isinstance(exc, _click_errors.MissingParameter):
        param = exc.param
        opts = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
        hint = f"{opts[0]}{_meaning(opts[0])}; {help_hint}" if opts else help_hint
        kind = exc.param_type or getattr(param, "param_type_name", "parameter")
        error = ConfigError(f"missing {kind} {exc.param_hint or fields.param_hint(param)}", hint=hint,
                            key=fields.key(param))
    elif isinstance(exc, _click_errors.BadParameter):
        error, index = _bad_value(args, exc, cmd, path)
    elif isinstance(exc, _click_errors.BadOptionUsage):
        name = exc.option_name
        index = _index(args, lambda a: a == name or a.startswith(name + "="))
        option = _options(cmd).get(name)
        takes = option is not None and not getattr(option, "is_flag", False)
        error = ConfigError(f"option '{name}' " + ("requires an argument" if takes else "does not take a value"),
                            hint=help_hint, key=fields.key(option) if option is not None else None)
    elif ctx is not None and fields.is_group(ctx.command):
        found = fields.unknown_command(root, args) if root is not None else None
        if found is None:
            error = ConfigError(exc.format_message(), hint=help_hint)
        else:
            index, group, group_path = found
            name = args[index]
            close = difflib.get_close_matches(name, group.list_commands(ctx), n=1, cutoff=0.6)
            error = ConfigError(f"no such command '{name}'" + (f"; did you mean '{close[0]}'?" if close else ""),
                                hint=f"`{group_path} -h` lists its commands")
    else:
        extra = fields.extra_arguments(cmd, ctx, rest) if cmd is not None else []
        if extra:
            index = len(args) - len(rest) + rest.index(extra[0])
            error = ConfigError(f"got unexpected extra argument{'s' if len(extra) > 1 else ''} ({' '.join(extra)})",
                                hint=help_hint)
        else:
            error = ConfigError(exc.format_message(), hint=help_hint)
    error.message, error.hint = _bounded(error.message), _bounded(error.hint)
    error.loc = command_line_location(args, index)
    return ToymUsageError(error, wants_json(args))


def _bad_value(args: list[str], exc, cmd, path: str) -> tuple[ConfigError, int | None]:
    """A value click refused: what it is not (a choice, a number in range), from the parameter's fields."""
    param = exc.param
    opts = list(getattr(param, "opts", ()) or ())
    at = _index(args, lambda a: a in opts or any(a.startswith(o + "=") for o in opts if o.startswith("--")))
    index = at + 1 if at is not None and args[at] in opts and at + 1 < len(args) else at
    value = args[index] if index is not None else None
    if value is not None and value.startswith("--") and "=" in value:
        value = value.partition("=")[2]
    choices = fields.choices(param)
    close = difflib.get_close_matches(value, choices, n=1, cutoff=0.5) if value is not None and choices else []
    reason = fields.why_not(param, value, choices) or exc.message
    hint = _value_lookalike(cmd, param, value) or (f"did you mean '{close[0]}'?" if close else
                                                   f"`{path} -h` says what {_long(param) if opts else 'it'} takes")
    error = ConfigError(f"invalid value for {exc.param_hint or fields.param_hint(param)}: {reason}", hint=hint,
                        key=fields.key(param), suggestion=close[0] if close else None)
    return error, index


@overload
def _bounded(text: str) -> str: ...
@overload
def _bounded(text: None) -> None: ...
def _bounded(text: str | None) -> str | None:
    """A message quoting what was typed: control characters escaped, every long word cut short."""
    if text is None:
        return None
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return re.sub(rf"\S{{{_TOKEN_SHOWN + 1},}}", lambda m: m.group(0)[:_TOKEN_SHOWN - 1] + "…", text)


def _unknown_option(root, cmd, path: str, name: str) -> tuple[str, str | None]:
    options = _options(cmd)
    letter = name.lstrip("-")
    short = short_flag(name) if not name.startswith("--") else None
    long = short.name.split("/")[0] if short else ""
    elsewhere = f"{name} is {long} on {', '.join(short.short_on)} only" if short and short.short_on and \
        long in options else ""  # the command takes the flag, not its short form
    if not name.startswith("--") and "--" + letter in options:  # -d on a command with --d
        what = elsewhere or (f"{name} is {long}, which {path} does not take" if short else
                             f"{path} has no option {name}")
        return f"{what}; did you mean --{letter}{_meaning('--' + letter)}?", \
            f"{long} is spelled out here" if elsewhere else None
    if elsewhere:
        return f"{path} has no option {name}: {elsewhere}", f"write {long} here"
    if name.startswith("--") and len(letter) == 1 and "-" + letter in options:  # --m on a command with -m
        long = _long(options["-" + letter])
        return f"{path} has no option {name}; did you mean -{letter} ({long})?", f"-{letter} is {long}{_meaning(long)}"
    same_kind = [o for o in options if o.startswith("--") == name.startswith("--") and len(o) > 3]
    close = difflib.get_close_matches(name, same_kind, n=1, cutoff=0.6) if len(letter) > 1 else []
    message = f"{path} has no option {name}" + (f"; did you mean {close[0]}?" if close else "")
    taken = short_flag(name) if not name.startswith("--") else flag_of(name)
    if taken is not None and root is not None:
        long = taken.name.split("/")[0]
        where = [w for w in _where_taken(root, long) if w != path.removeprefix("toym ")]
        if where:
            shown = ", ".join(where[:6]) + (" …" if len(where) > 6 else "")
            what = f"{name} is {long}{_meaning(long)}," if name != long else f"{long}{_meaning(long)} is"
            return message, f"{what} an option of {shown}"
    return message, None


def _value_lookalike(cmd, param, value: str | None) -> str | None:
    """``--m toy3`` on a command with ``-m``: the value is the other flag's kind of value."""
    long = _long(param) if getattr(param, "opts", None) else ""
    letter = long[2:]
    if len(letter) != 1 or "-" + letter not in _options(cmd):
        return None
    other = _long(_options(cmd)["-" + letter])
    return f"{long} is {f.meaning if (f := flag_of(long)) else long}; -{letter} is {other}: " \
           f"did you mean -{letter} {value}?" if value is not None else None


# -- look-alikes that parse: `-m 4` on a command with --m ------------------------------------------------
_NUMBERS = re.compile(r"\d[\d,.+*]*")


def lookalike_error(root, args: Sequence[str]) -> ConfigError | None:
    """``toym gen matmul -m 4``: ``-m`` is ``--machine``, and no machine is a number — the user meant
    ``--m 4``. Found before the command runs: a short form given a number (that names no file) on a
    command that also has the long one-letter flag of that letter (a sweep: its generator's)."""
    args = list(args)
    cmd, path, rest = _subcommand(root, args)
    if cmd is None or "-h" in rest or "--help" in rest:  # help first: it names every option
        return None
    options = _options(cmd)
    longs = set(options)
    if path == "sweep":
        longs |= _generator_flags(rest)
    for i, token in enumerate(args[len(args) - len(rest):], start=len(args) - len(rest)):
        if token.startswith("--") or len(token) < 2 or not token.startswith("-") or token[:2] not in options:
            continue
        short, letter = token[:2], token[1]
        value = token[2:] or (args[i + 1] if i + 1 < len(args) else "")
        if "--" + letter not in longs or not _NUMBERS.fullmatch(value) or os.path.exists(value):
            continue
        long = _long(options[short])
        error = ConfigError(f"{short} is {long}; did you mean --{letter}{_meaning('--' + letter)}?",
                            hint=_bounded(f"write --{letter} {value}; {short} is {long}{_meaning(long)}"))
        error.loc = command_line_location(args, i)
        return error
    return None


def _subcommand(root, args: list[str]):
    """The command ``args`` name (walking groups), its path, and the arguments after its name."""
    cmd, path, i = root, [], 0
    while fields.is_group(cmd) and i < len(args):
        token = args[i]
        i += 1
        if token.startswith("-"):
            continue  # the groups' own options (-V, -h) take no value
        cmd = cmd.get_command(None, token)  # a lazy group loads the command's module here
        if cmd is None:
            return None, "", []
        path.append(token)
    if fields.is_group(cmd):
        return None, "", []
    return cmd, " ".join(path), args[i:]


def _generator_flags(rest: list[str]) -> set[str]:
    from ..gen.registry import generator_names, get_generator

    names = set(generator_names())
    name = next((a for a in rest if a in names), None)
    return {flag_words(p.name) for p in get_generator(name).params} if name else set()
