"""The playground's API as plain functions: a decoded JSON request → ``(status, body, media type)``.

Each handler is one CLI command with its options taken from the request instead of argv, so the
body is the bytes that command prints (``POST /api/run`` = ``toym run FILE -f FORMAT``, where FILE
holds ``trace`` and is named ``options.file``, default ``playground.asm``; ``/api/check`` =
``toym check``; ``/api/sweep`` = ``toym sweep``). Errors are the CLI's JSON error object
(``render.jsonout.error_json``): status 400 for a malformed request, 422 for an input the toy
machine refuses (assembly, machine, data, limits). These functions run inside the worker process
(``serve.worker``) under its deadline; they never open a path the request names — examples are
looked up by name in the bundled folders' listings (``serve.examples``).
"""

from __future__ import annotations

__all__ = ["HANDLERS", "Reply", "RequestError", "handle"]

import dataclasses
import json
import os
from collections.abc import Callable
from typing import Any

from ..api import Ran, RunOptions, render_run, run_text, sweep_table
from ..dtypes import DTYPES
from ..errors import ConfigError, Location, ToyMachineError
from ..render.formats import FORMATS
from ..render.jsonout import MEMORY_MAX, error_json
from .limits import LIMITS

Reply = tuple[int, str, str]  # (HTTP status, body, media type)
JSON = "application/json"
MEDIA = {"json": JSON, "html": "text/html; charset=utf-8", "csv": "text/csv; charset=utf-8"}


class RequestError(ConfigError):
    """A request the API cannot read (missing key, wrong type): status 400."""


def _media(fmt: str) -> str:
    return MEDIA.get(fmt, "text/plain; charset=utf-8")


# -- reading a request: every value's type checked, every unknown key refused --------------------
def _get(obj: dict, key: str, kind: type | tuple, default: Any = None, where: str = "request") -> Any:
    value = obj.get(key, default)
    if value is None or value is default:
        return value
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise RequestError(f"{where}: '{key}' must be {_kind_name(kind)}, got {value!r}")
    if not isinstance(value, kind):
        raise RequestError(f"{where}: '{key}' must be {_kind_name(kind)}, got {type(value).__name__}")
    return value


def _kind_name(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "a whole number", bool: "true or false", dict: "an object", float: "a number"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _check_keys(obj: Any, allowed: tuple[str, ...], where: str) -> dict:
    if not isinstance(obj, dict):
        raise RequestError(f"{where} must be a JSON object", hint="keys: " + ", ".join(allowed))
    unknown = [k for k in obj if k not in allowed]
    if unknown:
        raise RequestError(f"{where}: unknown key '{unknown[0]}'", hint="keys: " + ", ".join(allowed))
    return obj


def _trace(payload: dict, name: str) -> str:
    trace = _get(payload, "trace", str)
    if trace is None:
        raise RequestError("request: 'trace' is required (the assembly text)")
    lines = trace.count("\n") + (not trace.endswith("\n"))  # a final newline ends a line, it starts none
    if lines > LIMITS.trace_lines:
        raise ConfigError(LIMITS.refuse_lines(lines), loc=Location(name, LIMITS.trace_lines + 1),
                          hint="the limits are in toymachine/limits.py (TOYM_MAX_SERVE_TRACE_LINES)")
    return trace


def _machine(spec: Any):
    """``null`` (the default machine), a preset name, or ``{"yaml": TEXT}`` — never a path."""
    from ..machine import resolve_machine
    from ..machine.loader import load_machine, preset_names

    if spec is None:
        return resolve_machine(None)
    if isinstance(spec, str):
        if spec.lower() not in preset_names():
            raise ConfigError(f"no machine preset named '{spec}'", loc=Location("machine"),
                              hint="built-in machines: " + ", ".join(preset_names()))
        return resolve_machine(spec.lower())
    spec = _check_keys(spec, ("yaml", "name"), "machine")
    text = _get(spec, "yaml", str, "")
    if len(text.encode()) > LIMITS.machine_bytes:
        raise ConfigError(f"machine YAML over the playground's limit of {LIMITS.machine_bytes:,} bytes",
                          loc=Location("machine"))
    return load_machine(_get(spec, "name", str, "machine.yaml", "machine"), text=text)


def _data(text: Any):
    from ..sim.datafile import load_data_text

    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if not isinstance(text, str):
        raise RequestError("request: 'data' must be YAML text (name: [values])")
    if len(text.encode()) > LIMITS.data_bytes:
        raise ConfigError(f"data over the playground's limit of {LIMITS.data_bytes:,} bytes", loc=Location("data"))
    return load_data_text(text, "data.yaml")


RUN_OPTIONS = ("format", "file", "registers", "seed", "symbolic", "steps", "dtype", "strict", "strict_numerics",
               "json_fields", "no_memory", "memory_max", "full_memory")


def _format(opts: dict) -> str:
    fmt = _get(opts, "format", str, "json", "options")
    if fmt not in FORMATS:
        raise RequestError(f"options: format '{fmt}' is not one of {', '.join(FORMATS)}")
    return fmt


def _simulate(payload: dict) -> tuple[Ran, dict, str]:
    """The run ``toym run FILE`` does (``api.run_text``), on the request's text: (the run, its
    options, the format)."""
    _check_keys(payload, ("trace", "machine", "data", "options"), "request")
    opts = _check_keys(payload.get("options") or {}, RUN_OPTIONS, "options")
    fmt = _format(opts)
    name = _get(opts, "file", str, "playground.asm", "options")
    trace = _trace(payload, name)
    registers = _get(opts, "registers", int, None, "options")
    dtype = _get(opts, "dtype", str, None, "options")
    if dtype is not None and dtype not in DTYPES:
        raise RequestError(f"options: dtype '{dtype}' is not one of {', '.join(DTYPES)}", key="dtype")
    options = RunOptions(registers=registers, seed=_get(opts, "seed", int, 0, "options"),
                         symbolic=_get(opts, "symbolic", bool, False, "options"),
                         steps=_get(opts, "steps", bool, None, "options"), dtype=dtype,
                         strict_numerics=_get(opts, "strict_numerics", bool, False, "options"),
                         strict_inputs=_get(opts, "strict", bool, False, "options"))
    machine = _machine(payload.get("machine"))
    arrays = _data(payload.get("data"))
    return run_text(trace, name, options, machine=machine, data=arrays, fmt=fmt), opts, fmt


def _render_run(ran: Ran, opts: dict, fmt: str) -> str:
    memory_max = _get(opts, "memory_max", int, MEMORY_MAX, "options")
    return render_run(ran, fmt, steps=opts.get("steps"),
                      json_fields=_get(opts, "json_fields", str, None, "options"),
                      memory=not _get(opts, "no_memory", bool, False, "options"),
                      memory_max=None if _get(opts, "full_memory", bool, False, "options") else memory_max)


def run(payload: dict) -> Reply:
    """``POST /api/run``: the bytes of ``toym run FILE -f FORMAT`` (default json)."""
    ran, opts, fmt = _simulate(payload)
    return 200, _render_run(ran, opts, fmt), _media(fmt)


def live(payload: dict) -> Reply:
    """``POST /api/live``: what the page redraws after a keystroke, from one simulation — the run's
    JSON (the bytes of ``toym run FILE -f json --no-steps``), the step viewer page (``-f html``)
    and the warnings (error objects)."""
    payload = dict(payload, options={**(payload.get("options") or {}), "format": "html"})
    ran, opts, fmt = _simulate(payload)  # steps kept for the viewer (up to its 5,000)
    body = {"json": _render_run(ran, {**opts, "format": "json", "steps": False}, "json"),
            "page": render_run(ran, "html"),
            "warnings": [_problem(w) for w in ran.result.warnings]}
    return 200, json.dumps(body, ensure_ascii=False), JSON


def _problem(err: ToyMachineError) -> dict:
    return json.loads(error_json(err))["error"]


def check(payload: dict) -> Reply:
    """``POST /api/check``: the bytes of ``toym check FILE --problem P -f FORMAT`` for a bundled problem."""
    from ..check import check_trace
    from .examples import problem_path

    _check_keys(payload, ("trace", "problem", "machine", "options"), "request")
    opts = _check_keys(payload.get("options") or {}, ("format", "file", "seed", "trials"), "options")
    fmt = _format(opts)
    name = _get(opts, "file", str, "playground.asm", "options")
    trace = _trace(payload, name)
    problem = _get(payload, "problem", str)
    if problem is None:
        raise RequestError("request: 'problem' is required (a bundled problem's name, see /api/examples)")
    seed = _get(opts, "seed", int, None, "options")
    trials = _get(opts, "trials", int, None, "options")
    if trials is not None and not 1 <= trials <= 20:
        raise ConfigError(f"trials must be between 1 and 20 in the playground, got {trials}",
                          loc=Location.of_option("trials"), key="trials")
    machine = _machine(payload["machine"]) if payload.get("machine") is not None else None
    text = trace if trace.endswith("\n") else trace + "\n"  # text, never a path
    path = problem_path(problem)
    grade = check_trace(text, path, seed=seed, trials=trials, name=name, machine=machine)
    grade = dataclasses.replace(grade, problem_file=os.path.basename(path))  # the bundled name, not the server's path
    return 200, grade.render(fmt), _media(fmt)


def sweep(payload: dict) -> Reply:
    """``POST /api/sweep``: the bytes of ``toym sweep GEN --NAME VALUES … -f FORMAT`` (one process)."""
    from ..experiments.sweep import expand_grid
    from ..gen.registry import get_generator
    from ..render import render_report

    _check_keys(payload, ("generator", "params", "machine", "options"), "request")
    opts = _check_keys(payload.get("options") or {}, ("format", "columns"), "options")
    fmt = _format(opts)
    generator = _get(payload, "generator", str)
    if generator is None:
        raise RequestError("request: 'generator' is required (matmul, softmax, attention, …)")
    spec = get_generator(generator)
    params = _check_keys(payload.get("params") or {}, tuple(p.name for p in spec.params), "params")
    grid = {}
    for key, value in params.items():
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise RequestError(f"params: '{key}' must be a string of values (2,4,8 or 3..6)")
        grid[key] = str(value)
    points = expand_grid(spec, grid)
    if len(points) > LIMITS.sweep_points:
        raise ConfigError(f"sweep of {len(points):,} points is over the playground's limit of {LIMITS.sweep_points}",
                          loc=Location("params"), hint="run it with toym sweep")
    report, _ = sweep_table(spec, grid, machine=_machine(payload.get("machine")),
                            columns=_get(opts, "columns", str, None, "options"))
    return 200, render_report(report, fmt), _media(fmt)


def meta(payload: dict) -> Reply:
    """``GET /api/meta``: what the page's pickers offer (presets, generators, opcodes, formats, limits)."""
    import dataclasses

    from ..gen.registry import generator_names, get_generator
    from ..isa import MNEMONICS
    from ..machine.loader import PRESET_DIR, preset_names
    from .examples import listing

    presets = {n: (PRESET_DIR / f"{n}.yaml").read_text(encoding="utf-8") for n in preset_names()}
    generators = {n: [{"name": p.name, "default": p.default, "choices": p.choices, "help": p.help}
                      for p in get_generator(n).params] for n in generator_names()}
    body = {"presets": presets, "generators": generators, "opcodes": sorted(MNEMONICS), "formats": list(FORMATS),
            "dtypes": list(DTYPES), "limits": dataclasses.asdict(LIMITS), "examples": listing()}
    return 200, json.dumps(body, ensure_ascii=False, default=str), JSON


def example(payload: dict) -> Reply:
    """``GET /api/examples/{kind}/{name}``: a bundled program or problem's text."""
    from .examples import example_text

    return 200, example_text(str(payload.get("kind")), str(payload.get("name"))), "text/plain; charset=utf-8"


HANDLERS: dict[str, Callable[[dict], Reply]] = {"run": run, "live": live, "check": check, "sweep": sweep,
                                                 "meta": meta, "example": example}


def handle(kind: str, payload: Any) -> Reply:
    """Call a handler; every error a request can cause becomes the JSON error object."""
    try:
        if not isinstance(payload, dict):
            raise RequestError("the request body must be a JSON object")
        return HANDLERS[kind](payload)
    except RequestError as err:
        return 400, error_json(err), JSON
    except ToyMachineError as err:
        return 422, error_json(err), JSON
    except RecursionError:
        return 422, error_json(ConfigError("input nested too deeply")), JSON
    except MemoryError:
        return 422, error_json(ConfigError("the run needs more memory than the playground allows",
                                           hint="run it with toym run FILE")), JSON
    except Exception as exc:  # a bug, not the input's fault: say so, and keep the worker serving
        return 500, error_json(ConfigError(f"internal error: {type(exc).__name__}: {exc}",
                                           hint="please report it with the trace that caused it")), JSON
