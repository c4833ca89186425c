"""``toym serve``: the live playground — a web front beside ``cli/``, calling the same library.

``app`` (Starlette routes and the page), ``handlers`` (each API route as a function of the
request: the bytes the matching CLI command prints), ``worker`` (requests in killable worker
processes under a deadline), ``limits`` (what a request may cost), ``examples`` (the bundled
programs and problems, by name), ``static/`` (the page and its bundle, built from
``frontend/`` by esbuild). Starlette and uvicorn come with the ``serve`` extra and are imported
only when the server starts.
"""

from __future__ import annotations

__all__ = ["create_app"]


def create_app(*args, **kwargs):
    """The ASGI app (``serve.app.create_app``); imports Starlette on first call."""
    from .app import create_app as make

    return make(*args, **kwargs)
