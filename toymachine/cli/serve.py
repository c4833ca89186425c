"""``toym serve``: the live playground in the browser (``toymachine.serve``; the ``serve`` extra).

Starlette and uvicorn are imported when the command runs, never by ``toym --help``."""

from __future__ import annotations

__all__ = ["serve_command"]


import typer

from ..errors import ConfigError
from .common import guard

LOCAL = "127.0.0.1"


def serve_command(
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="TCP port to listen on (0: any free port)."),
    host: str | None = typer.Option(None, "--host", help="Address to bind (default 127.0.0.1: this computer "
                                                            "only). Anything else serves your network: a warning."),
    open_browser: bool = typer.Option(False, "--open", help="Open the page in the default web browser."),
) -> None:
    """Serve the live playground: edit a trace in the browser and watch its registers, cycles and
    traffic change as you type (needs the 'serve' extra: pip install 'toymachine[serve]')."""
    with guard():
        try:
            import uvicorn

            from ..serve.app import create_app
        except ImportError as exc:
            raise ConfigError(f"toym serve needs Starlette and uvicorn ({exc.name} is not installed)",
                              hint="pip install 'toymachine[serve]'") from None
        bind = host or LOCAL
        if host is not None and host not in (LOCAL, "localhost", "::1"):
            typer.echo(f"warning: serving on {host}: anyone who can reach this address can run traces here "
                       "(the limits in toymachine/limits.py still apply)", err=True)
        _check_port(bind, port)
        app = create_app(local_only=host is None or host in (LOCAL, "localhost", "::1"))
        config = uvicorn.Config(app, host=bind, port=port, log_level="warning", access_log=False)
        server = uvicorn.Server(config)
        _announce(server, bind, open_browser)
        server.run()


def _check_port(host: str, port: int) -> None:
    """A port in use (or a host that is not this machine's) is an error (exit 2) before uvicorn starts."""
    import socket

    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                              hint="another program has that port? --port 0 takes any free one") from None


def _announce(server, host: str, open_browser: bool) -> None:
    """Print the URL (and open it) once uvicorn is listening: the real port when --port 0."""
    import threading
    import time

    def wait() -> None:
        while not server.started:
            if server.should_exit:
                return
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1] if server.servers else server.config.port
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}/"
        typer.echo(f"toym playground: {url}  (Ctrl+C stops it)", err=True)
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    threading.Thread(target=wait, daemon=True).start()
