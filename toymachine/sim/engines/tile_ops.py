"""What each tile instruction computes: one closure per compiled instruction, ``(regs) -> new tile``.

Registers never change in place: every instruction makes a new tile, so a MOV, a step row or a
transposed view can share arrays safely. Each closure also adds its FLOPs to the run's
accumulator ``acc`` (``MM`` tensor core, ``VEC`` vector unit, ``SFU`` special functions):
MAC_Z m·n·(2k−1), MAC 2·m·n·k, one per result element of the elementwise ops, r·(c−1) per row
reduction, none for MOV and MASK. Operands are ``(slot, transposed, operand position)``.
"""

from __future__ import annotations

__all__ = ["UFUNC", "matmul", "binary", "unary", "rowreduce", "mov", "mask", "dropout", "dropout_keep"]

from collections.abc import Callable

import numpy as np

from .kinds import MM, MZO, VEC

UFUNC = {"MAX": np.maximum, "SUB": np.subtract, "ADD": np.add, "MUL": np.multiply, "DIV": np.divide,
         "EXP": np.exp, "LOG": np.log}
_NEG_INF = -np.inf


# -- semantics: one closure per instruction, (regs) -> new tile ---------------------------
def matmul(a, b, c, acc: list) -> Callable:
    (sa, ta, _), (sb, tb, _) = a, b
    if c is None:
        if not (ta or tb):
            def mac_z(regs):
                x = regs[sa]
                r = x @ regs[sb]
                acc[MM] += r.size * (2 * x.shape[1] - 1)
                acc[MZO] += r.size
                return r

            return mac_z

        def mac_z_t(regs):
            x = regs[sa].T if ta else regs[sa]
            r = x @ (regs[sb].T if tb else regs[sb])
            acc[MM] += r.size * (2 * x.shape[1] - 1)
            acc[MZO] += r.size
            return r

        return mac_z_t
    sc, tc, _ = c

    def mac(regs):
        x = regs[sa].T if ta else regs[sa]
        r = x @ (regs[sb].T if tb else regs[sb])
        r += regs[sc].T if tc else regs[sc]  # r is new: adding in place mutates no register
        acc[MM] += 2 * r.size * x.shape[1]
        return r

    return mac


def binary(ufunc, a, b, acc: list) -> Callable:
    (sa, ta, _), (sb, tb, _) = a, b
    if not (ta or tb):
        def binary(regs):
            r = ufunc(regs[sa], regs[sb])
            acc[VEC] += r.size
            return r

        return binary

    def binary_t(regs):
        r = ufunc(regs[sa].T if ta else regs[sa], regs[sb].T if tb else regs[sb])
        acc[VEC] += r.size
        return r

    return binary_t


def unary(ufunc, s: int, t: bool, acc: list, unit: int) -> Callable:
    if not t:
        def unary(regs):
            r = ufunc(regs[s])
            acc[unit] += r.size
            return r

        return unary

    def unary_t(regs):
        r = ufunc(regs[s].T)
        acc[unit] += r.size
        return r

    return unary_t


_max, _sum = np.maximum.reduce, np.add.reduce  # what ndarray.max/.sum call, without their Python wrappers


def rowreduce(op: str, s: int, t: bool, acc: list) -> Callable:
    if op == "ROWMAX":
        def rowmax(regs):
            x = regs[s].T if t else regs[s]
            r = _max(x, axis=1, keepdims=True)  # NaN propagates, as the scalar MAX does
            acc[VEC] += x.size - x.shape[0]
            return r

        return rowmax

    def rowsum(regs):
        x = regs[s].T if t else regs[s]
        r = _sum(x, axis=1, keepdims=True)
        acc[VEC] += x.size - x.shape[0]
        return r

    return rowsum


def mov(s: int, t: bool) -> Callable:
    def mov(regs):
        x = regs[s]
        x.size  # noqa: B018  (an empty register raises here, inside the loop's try)
        return x.T if t else x  # shared, not copied: registers never change in place

    return mov


def mask(s: int, t: bool, row0: int, col0: int) -> Callable:
    keeps: dict = {}

    def mask(regs):
        x = regs[s].T if t else regs[s]
        keep = keeps.get(x.shape)
        if keep is None:
            rows, cols = x.shape
            keep = keeps[x.shape] = np.arange(col0, col0 + cols)[None, :] <= np.arange(row0, row0 + rows)[:, None]
        return np.where(keep, x, _NEG_INF)

    return mask


# -- dropout: a counter-based mask, made where it is used ------------------------------------
_M64 = (1 << 64) - 1


def _mix(x: int) -> int:
    """splitmix64's finaliser on a Python int (the scalar part of the hash)."""
    x &= _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _mix_array(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def dropout_keep(seed: int, head: int, rows, cols, p: float) -> np.ndarray:
    """Which elements dropout keeps: (len(rows), len(cols)) booleans, u(seed, head, row, col) ≥ p
    with u = the top 53 bits of mix(mix(mix(mix(seed) ⊕ head) ⊕ row) ⊕ col) / 2⁵³ — a
    counter-based hash of the element's coordinates (as Philox is on GPUs), so any block of the
    mask can be made anywhere, in any order, without storing it."""
    base = np.uint64(_mix(_mix(int(seed)) ^ int(head)))
    r = _mix_array(base ^ np.asarray(rows, dtype=np.uint64))
    x = _mix_array(r[:, None] ^ np.asarray(cols, dtype=np.uint64)[None, :])
    return (x >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53)) >= p


def dropout(s: int, t: bool, p: float, seed: int, head: int, row0: int, col0: int, acc: list) -> Callable:
    """Td = Ta∘Z, Z = keep/(1 − p): the mask of the block whose first element is (row0, col0)."""
    scales: dict = {}

    def dropout(regs):
        x = regs[s].T if t else regs[s]
        z = scales.get(x.shape)
        if z is None:
            keep = dropout_keep(seed, head, np.arange(row0, row0 + x.shape[0]), np.arange(col0, col0 + x.shape[1]), p)
            z = scales[x.shape] = keep / (1.0 - p)
        r = x * z
        acc[VEC] += r.size
        return r

    return dropout
