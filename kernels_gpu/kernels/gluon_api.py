"""The Gluon names the Hopper kernels use, from whichever Triton is installed: one place.

Gluon (`triton.experimental.gluon`) is experimental and renames between Triton releases. The
kernels import what they use from here, so a rename is mapped once:

* the TMA copies: Triton 3.6 calls them `tma.async_copy_global_to_shared` /
  `tma.async_copy_shared_to_global`; later releases `tma.async_load` / `tma.async_store`
  (same arguments) and make the former names raise. `tma_load` / `tma_store` are whichever this
  Triton has;
* the CTA-wide barrier: `gl.thread_barrier()` in 3.6, `gl.barrier()` later (same lowering).
  `thread_barrier` is whichever this Triton has.

`HAVE_GLUON` is False on a Triton without Gluon; the kernel modules then define no kernels.
Which Triton versions the kernels are verified on (and so dispatched on) is
`kernels_gpu.host.support`'s decision, not this module's.
"""
from __future__ import annotations

from typing import Any

__all__ = ["HAVE_GLUON", "gluon", "gl", "fence_async_shared", "mbarrier", "tma",
           "warpgroup_mma", "warpgroup_mma_wait", "tma_load", "tma_store", "thread_barrier"]

tma_load: Any
tma_store: Any
thread_barrier: Any

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_wait,
    )
    HAVE_GLUON = True
except ImportError:  # pragma: no cover - a Triton without Gluon
    HAVE_GLUON = False
    gluon = gl = fence_async_shared = mbarrier = tma = None  # type: ignore[assignment]
    warpgroup_mma = warpgroup_mma_wait = None  # type: ignore[assignment]

if HAVE_GLUON:
    # the renamed TMA copies (Triton > 3.6) where this Triton has them
    tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
    tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global
    thread_barrier = getattr(gl, "barrier", None) or gl.thread_barrier
else:  # pragma: no cover
    tma_load = tma_store = thread_barrier = None
