"""Replay a call's launches as one CUDA graph when the same call comes again.

A small backward (d 64, N 1k: ~200 us on an H200) is bound by host time: each Triton launch
costs ~25-30 us of Python and driver work, three of them plus autograd more than the GPU needs
(`python -m kernels_gpu.bench.hostprobe`); a small forward likewise. A CUDA graph replays the launches of a call
for ~10 us of host time.

The graph bakes in every kernel argument: the data pointers, shapes, scalars and configs. So a
graph is keyed by exactly those, and replayed only for a call whose key is equal, where it does
the very launches the call would make. Training loops and benchmarks allocate the same buffers
again and again (PyTorch's caching allocator hands back the blocks just freed), so keys repeat.
A key is captured on its second sighting only (a first call runs eagerly), at most `SIZE`
graphs are kept (least recently used dropped), and only problems whose tensor-core work is
small (< `MAX_WORK` multiply-adds: where host time matters) take this path.
KERNELS_GPU_GRAPHS=0 turns it off.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable

import torch

__all__ = ["enabled", "run", "clear", "stats", "SIZE", "MAX_WORK"]

SIZE = 16                # graphs kept
MAX_WORK = 1 << 36       # B * H * N_q * N_k * d above which launches are not host bound
_graphs: OrderedDict[tuple, torch.cuda.CUDAGraph] = OrderedDict()
_seen: OrderedDict[tuple, None] = OrderedDict()
_failed: set = set()
_stats = {"eager": 0, "captured": 0, "replayed": 0}


def enabled(work: int) -> bool:
    return (os.environ.get("KERNELS_GPU_GRAPHS", "1") != "0" and work < MAX_WORK
            and not torch.cuda.is_current_stream_capturing())


def run(key: tuple, launch: Callable[[], None]) -> None:
    """launch() now, through a graph of it when `key` has been seen before."""
    g = _graphs.get(key)
    if g is not None:
        _graphs.move_to_end(key)
        g.replay()
        _stats["replayed"] += 1
        return
    if key not in _seen or key in _failed:
        _seen[key] = None
        if len(_seen) > 4 * SIZE:
            _seen.popitem(last=False)
        launch()
        _stats["eager"] += 1
        return
    g = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())  # inputs written before the capture point
    try:  # capture_begin/end, not torch.cuda.graph(): that one empties the allocator's cache
        with torch.cuda.stream(side):
            g.capture_begin(capture_error_mode="thread_local")
            try:
                launch()
            finally:
                g.capture_end()
    except RuntimeError:  # not capturable here: run eagerly from now on
        _seen.pop(key, None)
        _failed.add(key)
        launch()
        _stats["eager"] += 1
        return
    torch.cuda.current_stream().wait_stream(side)
    g.replay()  # capturing ran nothing: run it now
    _graphs[key] = g
    _stats["captured"] += 1
    if len(_graphs) > SIZE:
        _graphs.popitem(last=False)


def clear() -> None:
    _graphs.clear()
    _seen.clear()
    _failed.clear()


def stats() -> dict:
    return dict(_stats, kept=len(_graphs))
