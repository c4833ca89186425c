"""Running a sweep's points in parallel: worker processes on this machine, or a Dask cluster.

``run_points(fn, tasks, jobs=, executor=, scheduler=, on_point=)`` calls ``fn(*task)`` for every
task and returns the results in the tasks' order — the same rows, in the same order, whatever
the number of workers (a sweep's output is the same bytes with ``--jobs 1`` and ``--jobs 8``).
``on_point(done, total)`` counts *finished* points, as they finish.

* ``executor="local"``: ``jobs`` worker processes (``multiprocessing.Pool``), which ignore Ctrl-C:
  the parent stops them at once (``terminate``) and re-raises ``KeyboardInterrupt``. One job, or one
  point, runs in this process.
* ``executor="dask"``: the points are submitted to the Dask scheduler at ``scheduler`` (``host:port``,
  e.g. ``tcp://10.0.0.5:8786``; the ``dask`` extra, ``dask[distributed]``) and gathered in order. The
  workers need ``toymachine`` installed (the same version) and import ``fn`` by name; generators
  registered at run time in this process are not known there (the built-in ones and ``PLUGINS`` are).
"""

from __future__ import annotations

__all__ = ["run_points", "EXECUTORS", "default_jobs"]

import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ConfigError, Opt

EXECUTORS = ("local", "dask")


def default_jobs() -> int:
    """Every core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def run_points(fn: Callable, tasks: Sequence[tuple], *, jobs: int = 1, executor: str = "local",
               scheduler: str | None = None, on_point: Callable[[int, int], None] | None = None) -> list[Any]:
    """``[fn(*task) for task in tasks]``, in parallel (module docstring)."""
    if executor not in EXECUTORS:
        raise ConfigError.of_option("executor", f"must be one of {', '.join(EXECUTORS)}; got {executor!r}")
    if executor == "dask":
        return _dask(fn, tasks, scheduler, on_point)
    if scheduler is not None:
        raise ConfigError.of_option("scheduler", "is the address of a Dask scheduler",
                                    hint=("add ", Opt("executor", "dask")))
    if jobs < 1:
        raise ConfigError.of_option("jobs", f"must be at least 1, got {jobs}")
    jobs = min(jobs, len(tasks))
    if jobs <= 1:
        results = []
        for done, task in enumerate(tasks, 1):
            results.append(fn(*task))
            if on_point is not None:
                on_point(done, len(tasks))
        return results
    return _local(fn, tasks, jobs, on_point)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle


def _call(args: tuple) -> tuple[int, Any]:
    index, fn, task = args
    return index, fn(*task)


def _local(fn: Callable, tasks: Sequence[tuple], jobs: int, on_point) -> list[Any]:
    import multiprocessing

    results: list[Any] = [None] * len(tasks)
    pool = multiprocessing.get_context().Pool(jobs, initializer=_ignore_sigint)
    try:
        for done, (index, value) in enumerate(pool.imap_unordered(_call, [(i, fn, t) for i, t in enumerate(tasks)]),
                                              1):
            results[index] = value
            if on_point is not None:
                on_point(done, len(tasks))
        pool.close()
    except BaseException:  # Ctrl-C, or an error in a point: stop every worker now
        pool.terminate()
        raise
    finally:
        pool.join()
    return results


def _dask(fn: Callable, tasks: Sequence[tuple], scheduler: str | None, on_point) -> list[Any]:
    if not scheduler:
        raise ConfigError((Opt("executor", "dask"), " needs the scheduler's address"), key="scheduler",
                          hint=(Opt("scheduler", "tcp://HOST:8786"), " (start one with `dask scheduler`, workers with "
                                "`dask worker tcp://HOST:8786`)"))
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ConfigError((Opt("executor", "dask"), " needs dask's distributed scheduler"), key="executor",
                          hint="pip install 'toymachine[dask]'") from None
    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"cannot reach the Dask scheduler at {scheduler}: {exc}",
                          hint="check the address (tcp://HOST:PORT) and that the scheduler runs") from None
    results: list[Any] = [None] * len(tasks)
    try:
        futures = [client.submit(_call, (i, fn, t), pure=False) for i, t in enumerate(tasks)]
        try:
            for done, future in enumerate(as_completed(futures), 1):
                index, value = future.result()
                results[index] = value
                if on_point is not None:
                    on_point(done, len(tasks))
        except BaseException:
            client.cancel(futures)
            raise
    finally:
        client.close()
    return results
