"""The playground's ASGI app (Starlette): one page, its static bundle, and the JSON API.

Routes (``docs/reference/http-api.md``):

``GET /``                         the page (``static/index.html``)
``GET /static/NAME``              the bundle: ``playground.js`` (CodeMirror 6 + the page's code,
                                  built by ``frontend/build.mjs``), ``playground.css``, the licences
``GET /api/meta``                 presets (their YAML), generators, opcodes, formats, limits, examples
``GET /api/examples/KIND/NAME``   a bundled program (``programs``) or problem (``problems``)
``POST /api/run``                 = ``toym run FILE -f FORMAT`` (``serve.handlers.run``)
``POST /api/live``                one run → its JSON, its step viewer page, its warnings
``POST /api/check``               = ``toym check FILE --problem NAME -f FORMAT``
``POST /api/sweep``               = ``toym sweep GENERATOR --NAME VALUES … -f FORMAT``

Every POST body is JSON (``Content-Type: application/json``: a page on another site cannot post
one without the browser asking first), at most ``LIMITS.body_bytes``, and runs in a worker
process under ``LIMITS.run_seconds`` (``serve.worker``). A request waits for a worker on the event
loop (``serve.scheduler``): interactive requests before sweeps, fair between clients, at most
``LIMITS.client_requests`` per client (429) and ``LIMITS.queue_seconds`` of waiting (503), both with
``Retry-After``. Bound to 127.0.0.1, the app also
refuses a ``Host`` other than localhost (a DNS-rebinding page cannot reach it).
"""

from __future__ import annotations

__all__ = ["create_app", "STATIC_FILES"]

import logging
from contextlib import asynccontextmanager
from importlib import resources

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import ConfigError
from ..render.jsonout import error_json
from .limits import Limits
from .scheduler import Busy, Scheduler, lane_of
from .worker import WorkerPool

log = logging.getLogger("toymachine.serve")

JSON = "application/json"
STATIC_FILES = {"playground.js": "text/javascript; charset=utf-8", "playground.css": "text/css; charset=utf-8",
                "THIRD_PARTY_LICENSES.txt": "text/plain; charset=utf-8", "index.html": "text/html; charset=utf-8"}
# the step viewer (an iframe's srcdoc) carries its own inline script and style; nothing loads from elsewhere
CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; frame-src 'self' about:; object-src 'none'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'self'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}


def _error(status: int, message: str, hint: str | None = None, headers: dict | None = None) -> Response:
    return Response(error_json(ConfigError(message, hint=hint)), status, media_type=JSON,
                    headers={**HEADERS, **(headers or {})})


def _static(name: str) -> bytes:
    return resources.files(__package__).joinpath("static").joinpath(name).read_bytes()


def create_app(limits: Limits | None = None, *, local_only: bool = True) -> Starlette:
    """The app. ``local_only``: refuse requests whose Host is not localhost/127.0.0.1. ``limits``: by
    default the central table's values in force (``Limits.from_table()``)."""
    limits = Limits.from_table() if limits is None else limits
    pool: list[WorkerPool] = []
    scheduler: list[Scheduler] = []

    @asynccontextmanager
    async def lifespan(app):
        pool.append(WorkerPool(limits))
        scheduler.append(Scheduler(limits.workers, queue_seconds=limits.queue_seconds,
                                   per_client=limits.client_requests, retry_after=limits.run_seconds))
        app.state.scheduler = scheduler[0]  # read by tests and the load test's figures
        try:
            yield
        finally:
            scheduler.pop()
            pool.pop().close()

    async def page(request: Request) -> Response:
        return Response(_static("index.html"), media_type=STATIC_FILES["index.html"], headers=HEADERS)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC_FILES:  # a fixed set of names: no path reaches the file system
            return _error(404, f"no static file '{name}'")
        return Response(_static(name), media_type=STATIC_FILES[name], headers=HEADERS)

    async def call(request: Request, kind: str, body) -> Response:
        client = request.client.host if request.client else "-"
        try:
            async with scheduler[0].slot(lane_of(kind), client):  # waits on the event loop, holding no thread
                status, text, media = await run_in_threadpool(pool[0].call, kind, body)
        except Busy as busy:
            return _error(busy.status, busy.message, hint="the playground runs a few requests at a time",
                          headers={"Retry-After": str(busy.retry_after)})
        return Response(text, status, media_type=media, headers=HEADERS)

    meta_body: list[bytes] = []  # what the pickers offer is fixed for the server's life: asked once

    async def meta(request: Request) -> Response:
        if meta_body:
            return Response(meta_body[0], 200, media_type=JSON, headers=HEADERS)
        response = await call(request, "meta", {})
        if response.status_code == 200:
            meta_body.append(bytes(response.body))
        return response

    async def example(request: Request) -> Response:
        return await call(request, "example", dict(request.path_params))

    async def post(request: Request) -> Response:
        kind = request.url.path.rsplit("/", 1)[-1]
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != JSON:
            return _error(415, f"POST /api/{kind} takes a JSON body (Content-Type: application/json), "
                               f"got '{media or 'none'}'")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.body_bytes:
            return _error(413, limits.refuse_body(int(declared)))
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > limits.body_bytes:
                    return _error(413, limits.refuse_body(len(body)))
        except ClientDisconnect:  # the client went away mid-body: one line in the log, nothing to answer
            log.info("POST /api/%s: the client disconnected after %d bytes of its body", kind, len(body))
            return Response(b"", 400, headers=HEADERS)
        return await call(request, kind, bytes(body))

    routes = [Route("/", page), Route("/static/{name}", static), Route("/api/meta", meta),
              Route("/api/examples/{kind}/{name}", example)]
    routes += [Route(f"/api/{k}", post, methods=["POST"]) for k in ("run", "live", "check", "sweep")]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "[::1]"])] \
        if local_only else []
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
