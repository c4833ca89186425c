"""Paths that a file names (a problem's ``machine:``, an assignment's problems), resolved in one place.

A name is always read relative to the folder of the file that names it — never the working
directory — and, after ``..`` and symbolic links are resolved, it must still lie inside that folder
and be a regular file (not a FIFO, a device or a folder), so a shared problem set can neither
read ``/etc/passwd`` nor block on ``/dev/stdin``. ``allow_outside`` (``toym check --allow-outside``)
lifts only the folder rule, for a file the user trusts.
"""

from __future__ import annotations

__all__ = ["NamedPathError", "resolve_named_file", "relative_to_folder"]

import os
import stat

from .errors import ConfigError, Location, Opt, Words


class NamedPathError(ConfigError):
    """A name in a file that does not resolve to a regular file inside that file's folder.

    ``reason`` is one of ``"outside"``, ``"missing"``, ``"not-a-file"``; ``name`` the name as written;
    ``folder`` the folder it was resolved against."""

    def __init__(self, message: str, *, reason: str, name: str, folder: str, hint: Words | None = None,
                 loc: Location | None = None):
        super().__init__(message, hint=hint, loc=loc)
        self.reason, self.name, self.folder = reason, name, folder


def resolve_named_file(name: str, naming_file: str | os.PathLike, *, what: str,
                       allow_outside: bool = False) -> str:
    """The real path of the file ``name`` that ``naming_file`` names, checked.

    ``what`` words the file in messages ("machine file"). Raises ``NamedPathError`` (no location:
    the caller attaches the node that holds the name)."""
    folder = os.path.realpath(os.path.dirname(os.path.abspath(os.fspath(naming_file))))
    real = os.path.realpath(os.path.join(folder, name))  # an absolute name stays absolute
    if not allow_outside and os.path.commonpath([real, folder]) != folder:
        raise NamedPathError(f"the {what} '{name}' lies outside the folder of {os.path.basename(naming_file)}",
                             reason="outside", name=name, folder=folder,
                             hint=("copy it next to the file that names it (or pass ", Opt("allow_outside"),
                                   " if you trust it)"))
    try:
        mode = os.stat(real).st_mode
    except OSError:
        raise NamedPathError(f"no {what} '{name}' next to {os.path.basename(naming_file)}",
                             reason="missing", name=name, folder=folder,
                             hint=f"names are read relative to {folder}") from None
    if not stat.S_ISREG(mode):
        raise NamedPathError(f"the {what} '{name}' is not a regular file", reason="not-a-file", name=name,
                             folder=folder, hint="name a YAML file, not a folder, a pipe or a device")
    return real


def relative_to_folder(path: str, naming_file: str | os.PathLike) -> str | None:
    """``path``'s POSIX path relative to ``naming_file``'s folder, or None when it lies outside."""
    folder = os.path.realpath(os.path.dirname(os.path.abspath(os.fspath(naming_file))))
    real = os.path.realpath(path)
    if os.path.commonpath([real, folder]) != folder:
        return None
    return os.path.relpath(real, folder).replace(os.sep, "/")
