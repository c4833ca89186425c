"""Sweeps on every core and on a cluster (experiments.parallel): the same rows in the same order for
any number of workers, finished points counted, Ctrl-C stopping the workers, and a Dask cluster
(a LocalCluster of processes on loopback, started here)."""

import time

import pytest

from toymachine import ConfigError
from toymachine.experiments.parallel import run_points
from toymachine.experiments.sweep import sweep, sweep_report
from toymachine.render import render_report

GRID = {"n": "2,3", "registers": "3..8", "schedule": "inner,outer,best"}


def _bytes(rows, generator="matmul"):
    return render_report(sweep_report(rows, generator), "json")


@pytest.mark.slow
def test_jobs_give_the_same_rows_in_the_same_order(toym):
    one = sweep("matmul", GRID)
    assert len(one) == 36
    assert _bytes(sweep("matmul", GRID, jobs=2)) == _bytes(one)
    tile = {"n": "32,64", "d": "8", "algo": "standard,fa1,fa2", "block_m": "16", "block_n": "16"}
    assert _bytes(sweep("attention-tile", tile, jobs=2), "attention-tile") == _bytes(sweep("attention-tile", tile),
                                                                                      "attention-tile")
    args = ["sweep", "matmul", "--n", "2,3", "--registers", "3..8", "-f", "csv"]
    assert toym(*args, "--jobs", "1")[1] == toym(*args, "--jobs", "2")[1] == toym(*args)[1]


@pytest.mark.slow
def test_progress_counts_finished_points():
    seen = []
    sweep("softmax", {"n": "4..64*2", "algo": "naive,safe,online"}, jobs=2, on_point=lambda d, t: seen.append((d, t)))
    assert seen == [(d, 15) for d in range(1, 16)]


def _slow(i):
    time.sleep(0.05 if i else 0.0)
    return i * i


@pytest.mark.slow
def test_results_come_back_in_task_order_whatever_finishes_first():
    assert run_points(_slow, [(i,) for i in range(8)], jobs=3) == [i * i for i in range(8)]


@pytest.mark.slow
def test_an_interrupt_stops_the_workers_at_once():
    def interrupt(done, total):
        raise KeyboardInterrupt

    t = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        run_points(time.sleep, [(2.0,)] * 6, jobs=2, on_point=interrupt)
    assert time.perf_counter() - t < 3.5  # not the 6 s the pending points would take


@pytest.mark.slow
def test_bad_executor_options_are_errors(toym):
    with pytest.raises(ConfigError, match="needs the scheduler's address"):
        sweep("softmax", {"n": "4,8"}, executor="dask")
    with pytest.raises(ConfigError) as info:
        run_points(_slow, [(1,)], scheduler="tcp://127.0.0.1:1")
    assert info.value.key == "scheduler"
    code, out, err = toym("sweep", "softmax", "--n", "4,8", "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9")
    assert code == 2 and "cannot reach the Dask scheduler" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_dask_cluster_runs_the_points_in_order():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        rows = sweep("matmul", GRID, executor="dask", scheduler=cluster.scheduler_address)
    assert _bytes(rows) == _bytes(sweep("matmul", GRID))
