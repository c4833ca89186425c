"""The deterministic input values: a cell read before anything was given or written holds a
function of (seed, array name, index) alone — not of the order of reads or the array's size.
Values are approximately standard normal (a scaled sum of four uniforms of splitmix64 hashes);
``random_block`` and ``random_run`` are ``random_value`` vectorised (the same values)."""

from __future__ import annotations

__all__ = ["random_value", "random_block", "random_run"]

import zlib

import numpy as np

_M64 = 0xFFFFFFFFFFFFFFFF
_GOLDEN = 0x9E3779B97F4A7C15
_SQRT3 = 3.0 ** 0.5


def _mix(z: int) -> int:
    """splitmix64 finaliser (pure Python)."""
    z = (z + _GOLDEN) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _base(seed: int, name: str) -> int:
    return _mix((seed & _M64) ^ (zlib.crc32(name.encode()) << 16))


def random_value(seed: int, name: str, index: tuple[int, ...]) -> float:
    """The deterministic input value of ``name[index]``."""
    h = _base(seed, name)
    for i in index:
        h = _mix(h ^ i)
    total = 0.0
    for k in range(1, 5):
        total += (_mix((h + k * _GOLDEN) & _M64) >> 11) * 2.0 ** -53
    return (total - 2.0) * _SQRT3


def _vmix(z: np.ndarray) -> np.ndarray:
    z = z + np.uint64(_GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _hash_values(seed: int, name: str, coords: list, shape: tuple[int, ...]) -> np.ndarray:
    with np.errstate(over="ignore"):
        h = np.full(shape, _base(seed, name), dtype=np.uint64)
        for c in coords:
            h = _vmix(h ^ c)
        total = np.zeros(shape, dtype=np.float64)
        for k in range(1, 5):
            u = (_vmix(h + np.uint64((k * _GOLDEN) & _M64)) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
            total = total + u
    return (total - 2.0) * _SQRT3


def random_block(seed: int, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """``random_value`` for every index of ``shape`` at once (vectorised, same values)."""
    coords = [np.arange(n, dtype=np.uint64).reshape([-1 if a == axis else 1 for a in range(len(shape))])
              for axis, n in enumerate(shape)]
    return _hash_values(seed, name, coords, tuple(shape))


def random_run(seed: int, name: str, prefix: tuple[int, ...], start: int, count: int) -> list[float]:
    """``random_value(prefix + (j,))`` for j in start..start+count-1, as a list."""
    coords = [np.uint64(i) for i in prefix] + [np.arange(start, start + count, dtype=np.uint64)]
    return _hash_values(seed, name, coords, (count,)).tolist()
