"""Which Triton releases the Gluon kernels run on: the version gate every dispatch consults.

Gluon (`triton.experimental.gluon`) is an experimental API that changes between Triton
releases; the portable `tl` kernels are not. So the Gluon Hopper kernels are dispatched only
on the Triton minor releases in `GLUON_DISPATCHED` (compiled for sm_90 and run by the GPU
suite, `kernels_gpu/device/tests.sh`). `GLUON_COMPILES` are the releases whose offline sm_90
compile tests pass (the kernels build there, but no GPU run has checked them yet); they are
not dispatched unless KERNELS_GPU_GLUON=any. Everywhere else, and after a Gluon compile
fails, the `tl` kernels run and `warnings.warn` says once why and how to get the Gluon path.

`TRITON_RANGE` is the range pyproject.toml's `gpu` extra allows (the `tl` kernels and the
interpreter tests are verified across it); a test checks the two agree.

Switch: KERNELS_GPU_GLUON=any dispatches the Gluon kernels on any Triton that has Gluon
(compile failures still fall back); KERNELS_GPU_HOPPER=0 turns them off everywhere.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Mapping

import triton

from ..kernels.gluon_api import HAVE_GLUON

__all__ = ["GLUON_COMPILES", "GLUON_DISPATCHED", "TRITON_RANGE", "GluonFallbackWarning",
           "GLUON_COMPILE_ERRORS", "triton_version", "gluon_status", "gluon_usable",
           "gluon_failed", "reset"]

# Triton (major, minor) -> how the Gluon kernels were verified on it
GLUON_DISPATCHED: dict[tuple[int, int], str] = {
    (3, 6): "compiled for sm_90 and run by the GPU suite (H100, H200)"}
GLUON_COMPILES: dict[tuple[int, int], str] = {
    **GLUON_DISPATCHED, (3, 9): "compiled for sm_90 offline (the compile tests)"}
# the gpu extra's triton range: >= the first, < the second
TRITON_RANGE: tuple[tuple[int, int], tuple[int, int]] = ((3, 6), (3, 10))
FAST_PATH = "pip install 'triton==3.6.*' (the triton torch 2.10 and 2.11 bring)"


class GluonFallbackWarning(UserWarning):
    """The Gluon kernels do not run here; the portable `tl` kernels do."""


def _compile_errors() -> tuple[type[BaseException], ...]:
    from triton.compiler.errors import CompilationError

    errors: list[type[BaseException]] = [CompilationError]
    try:
        from triton.runtime.errors import PTXASError
        errors.append(PTXASError)
    except ImportError:  # pragma: no cover - a Triton without it
        pass
    return tuple(errors)


# what a Gluon launch that fails to build raises (caught: the `tl` kernels run instead)
GLUON_COMPILE_ERRORS = _compile_errors()

_state: dict[str, object] = {"failed": None, "warned": False}


def triton_version(version: str | None = None) -> tuple[int, int]:
    """(major, minor) of `version` (default the installed Triton's)."""
    parts = (version or triton.__version__).split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)


def gluon_status(version: str | None = None,
                 env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """(whether the Gluon kernels may be dispatched, why) for this Triton (or `version`) and
    the switches in `env` (default os.environ)."""
    env = os.environ if env is None else env
    shown = version or triton.__version__
    if env.get("KERNELS_GPU_HOPPER", "1") == "0":
        return False, "KERNELS_GPU_HOPPER=0"
    if not HAVE_GLUON:
        return False, f"triton {shown} has no Gluon"
    if _state["failed"] is not None:
        return False, f"a Gluon kernel failed to compile on triton {shown}: {_state['failed']}"
    ver = triton_version(version)
    if ver in GLUON_DISPATCHED:
        return True, f"triton {shown}: {GLUON_DISPATCHED[ver]}"
    if env.get("KERNELS_GPU_GLUON") == "any":
        return True, f"triton {shown}: KERNELS_GPU_GLUON=any"
    verified = ", ".join("{}.{}".format(*v) for v in sorted(GLUON_DISPATCHED))
    how = f" ({GLUON_COMPILES[ver]}, not run on a GPU)" if ver in GLUON_COMPILES else ""
    return False, (f"the Gluon kernels are verified on triton {verified}, not {shown}{how}")


def gluon_usable() -> bool:
    """Whether the Gluon kernels may run (the dispatch tables decide where). The first time
    it says no for a reason other than KERNELS_GPU_HOPPER=0, one GluonFallbackWarning
    names the reason and the way to the Gluon path."""
    ok, why = gluon_status()
    if not ok and not _state["warned"] and os.environ.get("KERNELS_GPU_HOPPER", "1") != "0":
        _state["warned"] = True
        warnings.warn(f"kernels_gpu: the portable tl kernels run instead of the Gluon Hopper "
                      f"kernels: {why}. For the Gluon path: {FAST_PATH}, or set "
                      f"KERNELS_GPU_GLUON=any to try them on this triton.",
                      GluonFallbackWarning, stacklevel=3)
    return ok


def gluon_failed(error: BaseException) -> None:
    """A Gluon kernel failed to compile: no Gluon kernel is dispatched from now on."""
    first = str(error).strip().splitlines()
    _state["failed"] = f"{type(error).__name__}: {first[-1] if first else ''}"


def reset() -> None:
    """Forget a compile failure and the warning (tests)."""
    _state.update(failed=None, warned=False)
