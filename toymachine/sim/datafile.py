"""``--data FILE``: input arrays from YAML (name: nested list), ``.npy`` or ``.npz``, read as the
limits allow (``toymachine.limits``): the YAML through the one strict loader, an ``.npy``
header (in a file or inside an ``.npz``) read and judged *before* its data is allocated —
real numbers only (no complex, structured or object arrays), at most ``array_elements`` and
``npy_bytes``, the file as long as its header claims.

``data_warnings`` names what a float64 run would silently change: an integer beyond 2⁵³
(it loses precision) and a NaN or infinite input, each with its array and index.
"""

from __future__ import annotations

__all__ = ["load_data_file", "load_data", "load_data_text", "data_warnings"]

import math
import os
import zipfile

import numpy as np

from ..errors import DataError, Location, Opt
from ..limits import LIMITS

_HINT = "a .npy holds one numeric array (named after the file); a .npz holds several"
_EXACT = 2 ** 53  # float64 holds every integer up to this exactly
_STRICT = (Opt("strict"), " makes this an error")  # what a data file's warning says of the strict run


def load_data_file(path: str) -> dict[str, np.ndarray]:
    """``--data FILE``: YAML mapping name → nested list, or .npy / .npz (never pickles), as float64."""
    return load_data(path)[0]


def load_data(path: str) -> tuple[dict[str, np.ndarray], list[DataError]]:
    """``load_data_file`` and its ``data_warnings``."""
    arrays = _load(path)
    return arrays, data_warnings(arrays, path)


def _load(path: str) -> dict[str, np.ndarray]:
    if not os.path.exists(path):
        raise DataError(f"no such data file: {path}", loc=Location(path), hint="check the path")
    try:
        size = os.path.getsize(path)
        if path.endswith(".npz"):
            return _load_npz(path)
        if path.endswith(".npy"):
            name = os.path.splitext(os.path.basename(path))[0]
            with open(path, "rb") as fh:
                return {name: _read_npy(fh, size, path, name)}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        raise DataError(f"cannot read {path}: {str(exc)[:160]}", loc=Location(path), hint=_HINT) from None
    return _load_yaml(path, size)


def _load_npz(path: str) -> dict[str, np.ndarray]:
    out = {}
    with zipfile.ZipFile(path) as zf:
        members = zf.infolist()
        LIMITS["arrays"].check(len(members), f"{path}'s {len(members):,} arrays", loc=Location(path))
        for info in members:
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            with zf.open(info) as fh:
                out[name] = _read_npy(fh, info.file_size, path, name)
    return out


def _read_npy(fh, size: int, path: str, name: str) -> np.ndarray:
    """One .npy stream: its header judged first, then exactly the data it declares."""
    fmt = np.lib.format
    version = fmt.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = fmt.read_array_header_1_0(fh)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = fmt.read_array_header_2_0(fh) if version == (2, 0) else \
            fmt._read_array_header(fh, version)  # type: ignore[attr-defined]  # noqa: SLF001 (private, absent from numpy's stubs; numpy reads v3 headers only so)
    else:
        raise ValueError(f"unsupported .npy version {version}")
    where = Location(path)
    if dtype.names is not None or dtype.kind not in "biuf":
        kind = {"c": "complex", "O": "object", "V": "structured", "U": "text", "S": "bytes", "M": "date",
                "m": "time"}.get(dtype.kind, dtype.kind)
        if dtype.names is not None:
            kind = "structured"
        raise DataError(f"array '{name}' in {path} is {kind} ({dtype.str}); toym reads real numbers only",
                        loc=where, hint="save a float or integer array (np.save(path, a.astype(float)))")
    count = math.prod(shape)
    LIMITS["array_elements"].check(count, f"array '{name}' of shape {tuple(shape)}", loc=where)
    nbytes = count * dtype.itemsize
    LIMITS["npy_bytes"].check(nbytes, f"array '{name}' of shape {tuple(shape)}", loc=where)
    header = fh.tell() if hasattr(fh, "tell") else 0
    if size and header + nbytes > size:
        raise DataError(f"{path} is truncated: array '{name}' needs {nbytes:,} bytes of data, the file has "
                        f"{max(0, size - header):,}", loc=where, hint=_HINT)
    data = fh.read(nbytes)
    if len(data) != nbytes:
        raise DataError(f"{path} is truncated: array '{name}' needs {nbytes:,} bytes of data, found {len(data):,}",
                        loc=where, hint=_HINT)
    a = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    return a if a.dtype.kind in "iu" else np.asarray(a, dtype=np.float64)


def _load_yaml(path: str, size: int) -> dict[str, np.ndarray]:
    from .. import yamlsafe  # yaml loads with the first file that needs it (a fast start)

    try:
        text = yamlsafe.read_text(path, "data file")
    except UnicodeDecodeError:
        raise DataError(f"data file {path} is not UTF-8 text", loc=Location(path),
                        hint="use YAML (name: [values]) or .npy/.npz") from None
    except OSError as exc:
        raise DataError(f"cannot read data file {path}: {exc.strerror}", loc=Location(path)) from None
    return load_data_text(text, path)


def load_data_text(text: str, path: str) -> dict[str, np.ndarray]:
    """YAML text (name → nested list) as arrays; ``path`` names it in messages (``toym serve``'s
    data panel sends text, never a path)."""
    from .. import yamlsafe  # yaml loads with the first file that needs it (a fast start)

    doc = yamlsafe.load(text, path, "data file", DataError)
    if not isinstance(doc, dict):
        raise DataError("a YAML data file must map array names to nested lists", loc=Location(path),
                        hint="e.g.  x: [1, 2, 3]")
    out = {}
    for k, v in doc.items():
        exact = _exact_ints(v)
        try:
            a = np.asarray(v, dtype=np.int64 if exact else np.float64)
        except (ValueError, TypeError, OverflowError):
            a = None
        if a is None or a.dtype == object:
            raise DataError(f"array '{k}' in {path} is not a rectangular list of numbers", loc=Location(path),
                            hint="every row must have the same length; values must be numbers")
        out[str(k)] = a
    return out


def _exact_ints(v) -> bool:
    """True when a nested list holds integers only, one of them beyond float64's exact range."""
    stack, big = [v], False
    while stack:
        x = stack.pop()
        if isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, bool) or not isinstance(x, int):
            return False
        elif abs(x) > _EXACT:
            if abs(x) >= 2 ** 63:
                return False
            big = True
    return big


def data_warnings(arrays: dict[str, np.ndarray], path: str) -> list[DataError]:
    """One ``DataError`` per array that a float64 run changes: an integer beyond 2⁵³ (rounded)
    or a NaN/infinite value; each names the array and the first such index. The arrays are
    returned as float64 in place."""
    found = []
    for name, a in arrays.items():
        if a.dtype.kind in "iu":
            flat = a.ravel()
            for k in np.flatnonzero(np.abs(flat.astype(np.float64)) >= _EXACT)[:10_000]:  # candidates; exact below
                v = int(flat[k])
                if int(float(v)) != v:
                    idx = "".join(f"[{i}]" for i in np.unravel_index(k, a.shape))
                    found.append(DataError(f"{name}{idx} = {v} loses precision as a float64 (it becomes "
                                           f"{float(v):.17g}; integers are exact up to 2^53)", loc=Location(path),
                                           hint=_STRICT))
                    break
            a = a.astype(np.float64)
        elif a.dtype != np.float64:
            a = a.astype(np.float64)
        arrays[name] = a
        bad = np.argwhere(~np.isfinite(a))
        if bad.size:
            idx = "".join(f"[{i}]" for i in bad[0])
            found.append(DataError(f"{name}{idx} = {a[tuple(bad[0])]} is not a finite number "
                                   f"({bad.shape[0]:,} such value{'s' if bad.shape[0] != 1 else ''} in '{name}')",
                                   loc=Location(path), hint=_STRICT))
    return found
