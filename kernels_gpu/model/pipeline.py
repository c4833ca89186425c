"""The warp-specialised forward's two-stage software pipeline (model/gluon.py's "pipeline"
schedule; the constants: gluon.PIPELINE, fitted by `fit_model --gluon`)."""
from __future__ import annotations

from .occupancy import makespan

__all__ = ["program_time", "overlapped_time"]


def program_time(iterations: int, tensor: float, softmax: float, rate: float,
                 hidden: float = 1.0, balance: float = 0.0) -> float:
    """Seconds of one warp-specialised program of `iterations` loop iterations, each `tensor`
    s of matrix work and `softmax` s of vector + SFU work on its SM, `rate` the SM's throughput
    bound per iteration (max of tensor, softmax, HBM and L2 shares): a two-stage software
    pipeline in which a fraction `hidden` of the shorter stage runs under the longer one,
    n (max(rate, T, S) + (1 - hidden) min (min / max) ** balance) + hidden min, min and max of
    (T, S) (the first softmax or the last P V has nothing to hide under); hidden 1: n max +
    min; balance 0: the exposed rest a fixed fraction of the shorter stage (docstring)."""
    if iterations <= 0:
        return 0.0
    short, long = min(tensor, softmax), max(tensor, softmax)
    exposed = (1 - hidden) * short * ((short / long) ** balance if long > 0 else 0.0)
    return iterations * (max(rate, long) + exposed) + hidden * short


def _per_sm_iteration(rate, iterations: int, sms: int):
    """(tensor, vector + sfu, throughput bound) seconds of one program iteration on one SM."""
    k = sms / iterations
    softmax = rate.vector_s + rate.sfu_s
    return (rate.tensor_s * k, softmax * k,
            max(rate.tensor_s, softmax, rate.hbm_s, rate.l2_s) * k)


def overlapped_time(rate, per: list[int], rows: int, occ: int, fixed_s: float,
                    sms: int = 132, hidden: float = 1.0, balance: float = 0.0) -> float:
    """Seconds of one launch of the warp-specialised forward: each program a two-stage
    pipeline of matrix and softmax work hiding a fraction `hidden` of the shorter stage
    (program_time); occ programs per SM share its units; the makespan as for the
    others, plus the launch."""
    iterations = sum(per) * rows
    if iterations == 0:
        return rate.total_s
    tensor, softmax, thr = _per_sm_iteration(rate, iterations, sms)
    durations = [fixed_s + program_time(i, occ * tensor, occ * softmax, occ * thr, hidden,
                                        balance) for i in per]
    return makespan(durations, rows, sms * occ) + rate.launch_s
