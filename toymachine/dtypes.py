"""Floating-point formats of the machine's registers and DRAM words.

Every register write and DRAM store rounds to the machine's dtype (round to nearest,
ties to even, overflow to ±inf, gradual underflow), so results match what that precision
gives. Scalars round in pure Python (``round_scalar``); tiles through numpy
(``round_array``); both implement the same IEEE rule and tests hold them equal.
"""

from __future__ import annotations

__all__ = ["DType", "DTYPES", "get_dtype"]

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class DType:
    """An IEEE-754 binary format: ``mant_bits`` stored fraction bits, exponent range."""

    name: str
    bytes: int
    mant_bits: int  # fraction bits (excluding the implicit leading 1)
    emin: int  # exponent of the smallest normal number
    emax: int  # exponent of the largest finite number

    @property
    def max(self) -> float:
        return (2.0 - 2.0 ** -self.mant_bits) * 2.0 ** self.emax

    @property
    def tiny(self) -> float:
        """Smallest positive normal."""
        return 2.0 ** self.emin

    @property
    def exact(self) -> bool:
        return self.name == "fp64"

    def round_scalar(self, x: float) -> float:
        """Round a Python float to this format (returned as a Python float)."""
        if self.name == "fp64" or x != x or x == 0.0 or x in (math.inf, -math.inf):
            return x
        if abs(x) >= (2.0 - 2.0 ** -(self.mant_bits + 1)) * 2.0 ** self.emax:
            return math.copysign(math.inf, x)  # at or past the midpoint above max: overflow
        m, e = math.frexp(x)  # x = m * 2**e, 0.5 <= |m| < 1
        # quantum: spacing of representable numbers around x
        q = max(e - 1, self.emin) - self.mant_bits
        r = math.ldexp(round(math.ldexp(x, -q)), q)  # round() is ties-to-even
        if abs(r) > self.max:
            return math.copysign(math.inf, x)
        return r

    def round_array(self, a: np.ndarray) -> np.ndarray:
        import numpy as np

        """Round a float64 array to this format (returned as float64)."""
        a = np.asarray(a, dtype=np.float64)
        if self.name == "fp64":
            return a
        if self.name == "fp32":
            with np.errstate(over="ignore"):
                return a.astype(np.float32).astype(np.float64)
        if self.name == "fp16":
            with np.errstate(over="ignore"):
                return a.astype(np.float16).astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            m, e = np.frexp(a)
            q = np.maximum(e - 1, self.emin) - self.mant_bits
            r = np.ldexp(np.rint(np.ldexp(a, -q)), q)
            r = np.where(np.abs(r) > self.max, np.copysign(np.inf, a), r)
            return np.where(np.isfinite(a) & (a != 0), r, a)


DTYPES: dict[str, DType] = {
    "fp64": DType("fp64", 8, 52, -1022, 1023),
    "fp32": DType("fp32", 4, 23, -126, 127),
    "fp16": DType("fp16", 2, 10, -14, 15),
    "bf16": DType("bf16", 2, 7, -126, 127),
}


def get_dtype(name: str) -> DType:
    try:
        return DTYPES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown dtype '{name}' (choose {', '.join(DTYPES)})") from None
