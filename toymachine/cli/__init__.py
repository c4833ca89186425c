"""The ``toym`` command line: one module per command group (``run``: run and isa, ``gen``,
``sweep``, ``numerics``, ``verify``), ``common`` for what they share, ``app`` the typer app
that registers them. A command is options → one library call → render."""

from __future__ import annotations

__all__ = ["app", "main"]

from .app import app, main
