"""The regression corpus of hostile inputs: every case of every input channel, as files to write and a
``toym`` command line to run on them. ``tests/test_hostile_corpus.py`` runs each in a subprocess
under a 1 GB address-space cap and asserts the documented outcome (exit 2 unless stated, a short
message, no traceback, quick where a closed form decides, hostile text inert in the output).

A case is ``Case(id, args, files, rc, ...)``: ``files`` maps a file name to its text (str) or bytes,
or to a zero-argument callable producing either (for the big ones, built at run time).
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Content = str | bytes | Callable[[], str | bytes]


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple
    files: dict = field(default_factory=dict)
    rc: tuple = (2,)
    seconds: float = 10.0          # wall-clock budget (a closed form decides within a second + start-up)
    stdin: str | None = None
    absent: tuple = ()             # strings that must not appear in stdout or stderr
    in_output: tuple = ()          # strings that must appear in stdout or stderr
    inert: str | None = None       # the output format whose hostile text must stay inert (runner.inert_problems)


def _alias_bomb(top_key: str, holder: str = "description") -> str:
    """Ten levels of anchors, ten aliases wide (10^10 leaves once expanded) in a few hundred bytes:
    the anchors sit in a list under ``holder``, and ``top_key`` takes the last one."""
    levels = ["&a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i in range(1, 10):
        levels.append(f"&a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    return f"{holder}: [{', '.join(levels)}]\n{top_key}: *a9\n"


def _npy(arr) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _npy_huge_header() -> bytes:
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000, 100000), }"
    header = header.ljust(118) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + b"\0" * 64


def _npz_truncated() -> bytes:
    buf = io.BytesIO()
    np.savez(buf, x=np.arange(100.0))
    data = buf.getvalue()
    return data[: len(data) // 2]


def _many_names() -> str:
    return "LOAD z[0], R0\n" + "".join(f"STORE R0, n{i}[0]\n" for i in range(100_000))


def _long_line() -> str:
    return "LOAD x[0], R0\n" + "FOO " + "x" * 5_000_000 + "\n"


def _nested_data() -> str:
    return ".data x = " + "[" * 100 + "1" + "]" * 100 + "\nLOAD x" + "[0]" * 100 + ", R0\n"


HOSTILE = "=cmd|' /C calc'!A0<!--<script>alert(1)</script><img src=x onerror=alert(1)>&amp;\\input{/etc/passwd}"

PROBLEM = """title: "{title}"
description: "{desc}"
inputs:
  x: {{shape: [3]}}
expect:
  y: {expr}
registers: 3
"""

TRACE_Y = "LOAD x[0], R0\nSTORE R0, y[0]\nLOAD x[1], R0\nSTORE R0, y[1]\nLOAD x[2], R0\nSTORE R0, y[2]\n"


HOSTILE_TRACE = ("; " + HOSTILE + "\n.data x = [1, 2]\nLOAD x[0], R0 ; " + HOSTILE + "\n"
                 "STORE R0, y_script_alert[0] ; </script><!--\n")


def _problem(expr: str = "x", title: str = "t", desc: str = "d", extra: str = "") -> str:
    return PROBLEM.format(title=title, desc=desc, expr=expr) + extra


def _zip_bytes(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _zip_junk_student() -> bytes:
    """A class zip in which one student's folder holds more files than one submission may."""
    members = {"alice/t.asm": TRACE_Y, "bob/t.asm": TRACE_Y}
    members.update({f"mallory/junk{k}.txt": "x" for k in range(10_004)})
    return _zip_bytes(members)


def _zip_forged_count() -> bytes:
    """Three members, but a ZIP64 end record that declares 3,500,000 entries."""
    data = _zip_bytes({f"s{k}.asm": TRACE_Y for k in range(3)})
    at = data.rfind(b"PK\x05\x06")
    cd_size, cd_offset = struct.unpack_from("<II", data, at + 12)
    record = struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, 3_500_000, 3_500_000, cd_size, cd_offset)
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, at, 1)
    end = bytearray(data[at:])
    struct.pack_into("<HH", end, 8, 0xFFFF, 0xFFFF)
    return data[:at] + record + locator + bytes(end)


WHEEL = "toymachine-0.1.0-py3-none-any.whl"


CASES: list[Case] = [
    # -- a student's trace can take a grader down ------------------------------------------------
    Case("far-store", ("run", "t.asm"), {"t.asm": "LOAD x[0], R0\nSTORE R0, junk[99999999999999]\n"}),
    Case("far-store-check", ("check", "t.asm", "-p", "p.yaml"),  # the grader reports the trace failed (exit 1)
         {"t.asm": "LOAD x[0], R0\nSTORE R0, junk[99999999999999]\nSTORE R0, y[0]\n", "p.yaml": _problem()},
         rc=(1,), in_output=("beyond the largest array",)),
    Case("huge-array-directive", ("run", "t.asm"), {"t.asm": ".array junk[100000][100000] = 1\nLOAD junk[0][0], R0\n"}),
    Case("many-array-names", ("run", "t.asm", "--no-steps", "-f", "json", "--no-memory"),
         {"t.asm": _many_names}, rc=(2,), seconds=60),
    Case("load-1e26", ("run", "t.asm"), {"t.asm": "LOAD x[100000000000000000000000000], R0\n"}),
    Case("address-1e30-json", ("run", "t.asm", "-f", "json"),
         {"t.asm": "LOAD x[0], R0\nSTORE R0, y[1000000000000000000000000000000]\n"}),
    # -- denial of service from a few hundred bytes ----------------------------------------------
    Case("alias-bomb-machine", ("run", "t.asm", "-m", "m.yaml"),
         {"t.asm": "LOAD x[0], R0\n", "m.yaml": _alias_bomb("registers")}),
    Case("alias-bomb-machine-key", ("run", "t.asm", "-m", "m.yaml"),
         {"t.asm": "LOAD x[0], R0\n", "m.yaml": _alias_bomb("name")}),
    Case("alias-bomb-problem", ("check", "t.asm", "-p", "p.yaml"),
         {"t.asm": TRACE_Y, "p.yaml": _problem().replace('description: "d"\n', "").replace("registers: 3\n", "") + _alias_bomb("registers")}),
    Case("alias-bomb-data", ("run", "t.asm", "-d", "d.yaml"), {"t.asm": "LOAD x[0], R0\n", "d.yaml": _alias_bomb("x", "y")}),
    Case("trials-1e9", ("check", "t.asm", "-p", "p.yaml"),
         {"t.asm": TRACE_Y, "p.yaml": _problem(extra="trials: 1000000000\n")}),
    Case("trials-flag-1e9", ("check", "t.asm", "-p", "p.yaml", "--trials", "1000000000"),
         {"t.asm": TRACE_Y, "p.yaml": _problem()}),
    Case("sweep-registers", ("sweep", "matmul", "--n", "2", "--registers", "3..100000")),
    Case("optimize-attention-huge", ("optimize", "attention-tile", "--n", "1000000000", "--sram", "100000")),
    Case("gen-attention-huge", ("gen", "attention-tile", "--n", "10000000000", "-o", "out.asm")),
    Case("memory-huge", ("memory", "--n", "1000000000000"), rc=(0, 2)),  # closed forms: a table, at once
    Case("gen-softmax-huge", ("gen", "softmax", "--n", "100000000", "-o", "out.asm")),
    # -- tracebacks --------------------------------------------------------------------------------
    Case("expr-deep-parens", ("check", "t.asm", "-p", "p.yaml"),
         {"t.asm": TRACE_Y, "p.yaml": _problem("(" * 200 + "x" + ")" * 200)}),
    Case("expr-long-sum", ("check", "t.asm", "-p", "p.yaml"),
         {"t.asm": TRACE_Y, "p.yaml": _problem(" + ".join(["x"] * 1000))}),
    Case("expr-axis-overflow", ("check", "t.asm", "-p", "p.yaml"),
         {"t.asm": TRACE_Y, "p.yaml": _problem("x + sum(x, axis=99999999999999999999999)")}),
    Case("expr-ddof-overflow", ("check", "t.asm", "-p", "p.yaml"),
         {"t.asm": TRACE_Y, "p.yaml": _problem("x + var(x, ddof=99999999999999999999999)")}),
    Case("expr-ddof-99", ("check", "t.asm", "-p", "p.yaml"),
         {"t.asm": TRACE_Y, "p.yaml": _problem("x + var(x, ddof=99)")}),
    Case("yaml-python-tag", ("run", "t.asm", "-m", "m.yaml"),
         {"t.asm": "LOAD x[0], R0\n", "m.yaml": "registers: !!python/object/apply:os.system ['echo pw\"\"ned']\n"},
         absent=("pwned",)),
    Case("yaml-anchor-empty", ("run", "t.asm", "-m", "m.yaml"),
         {"t.asm": "LOAD x[0], R0\n", "m.yaml": "registers: &a\nname: *a\n&b\n"}),
    Case("yaml-complex-key", ("run", "t.asm", "-m", "m.yaml"),
         {"t.asm": "LOAD x[0], R0\n", "m.yaml": "? [a, b]\n: 3\nregisters: 4\n"}),
    Case("yaml-complex-key-problem", ("check", "t.asm", "-p", "p.yaml"),
         {"t.asm": TRACE_Y, "p.yaml": _problem() + "? [a, b]\n: 3\n"}),
    Case("cycles-nan", ("run", "t.asm", "-m", "m.yaml", "-f", "json"),
         {"t.asm": "LOAD x[0], R0\n", "m.yaml": "registers: 3\ncycles: {LOAD: .nan}\n"}),
    Case("npz-truncated", ("run", "t.asm", "-d", "d.npz"), {"t.asm": "LOAD x[0], R0\n", "d.npz": _npz_truncated}),
    Case("npy-huge-header", ("run", "t.asm", "-d", "x.npy"), {"t.asm": "LOAD x[0][0], R0\n", "x.npy": _npy_huge_header}),
    Case("npy-structured", ("run", "t.asm", "-d", "x.npy"),
         {"t.asm": "LOAD x[0], R0\n", "x.npy": lambda: _npy(np.zeros(3, dtype=[("a", "<f8"), ("b", "<i4")]))}),
    Case("npy-complex", ("run", "t.asm", "-d", "x.npy"),
         {"t.asm": "LOAD x[0], R0\n", "x.npy": lambda: _npy(np.array([1 + 2j, 3j]))}),
    Case("optimize-matmul-huge", ("optimize", "matmul", "--n", "100000000")),
    Case("systolic-huge", ("systolic", "--m", "100000000", "--k", "100000000", "--n", "100000000")),
    Case("numerics-huge", ("numerics", "--n", "100000000000")),
    # -- injection into outputs ----------------------------------------------------------------------
    Case("html-machine-name", ("run", "t.asm", "-m", "m.yaml", "-f", "html"),
         {"t.asm": "LOAD x[0], R0\n", "m.yaml": f"name: {json.dumps(HOSTILE)}\nregisters: 3\n"}, rc=(0,),
         inert="html"),
    Case("html-file-name", ("run", "a<!--<script>.asm", "-f", "html"),
         {"a<!--<script>.asm": "LOAD x[0], R0\n"}, rc=(0,), inert="html"),
    Case("latex-title-newline", ("check", "t.asm", "-p", "p.yaml", "-f", "latex"),
         {"t.asm": TRACE_Y, "p.yaml": _problem(title="T\\n\\\\input{/etc/passwd}\\n\\\\write18{rm -rf x}")},
         rc=(0,), inert="latex"),
    Case("csv-formula-title", ("check", "t.asm", "-p", "p.yaml", "-f", "csv"),
         {"t.asm": TRACE_Y, "p.yaml": _problem(title="=HYPERLINK(\\\"http://x\\\")")}, rc=(0,),
         inert="csv"),
    Case("markdown-trace-html", ("check", "t.asm", "-p", "p.yaml", "-f", "markdown"),
         {"t.asm": TRACE_Y.replace("STORE R0, y[2]", "STORE R0, y[2] ; <script>alert(1)</script><img src=x onerror=alert(1)>")
          + "LOAD <script>alert(1)</script>, R0\n",
          "p.yaml": _problem()}, rc=(1, 2), inert="markdown"),
    # every output format of run and check, hostile text in every field that reaches it
    *[Case(f"run-hostile-{fmt}", ("run", "h.asm", "-m", "m.yaml", "-f", fmt, "--steps"),
           {"h.asm": HOSTILE_TRACE, "m.yaml": f"name: {json.dumps(HOSTILE)}\ndescription: {json.dumps(HOSTILE)}\n"
                                              f"registers: 3\n"},
           rc=(0,), inert=fmt) for fmt in ("table", "markdown", "csv", "json", "latex", "html", "html-fragment")],
    *[Case(f"check-hostile-{fmt}", ("check", "t.asm", "-p", "p.yaml", "-f", fmt),
           {"t.asm": TRACE_Y.replace("STORE R0, y[2]", "STORE R0, y[2] ; " + HOSTILE.replace("\\", "/")),
            "p.yaml": _problem(title=json.dumps(HOSTILE)[1:-1] + "\\n\\\\input{x}",
                               desc=json.dumps(HOSTILE)[1:-1])},
           rc=(0,), inert=fmt) for fmt in ("table", "markdown", "csv", "json", "latex", "html", "html-fragment")],
    # -- what a mutation fuzzer found ------------------------------------------------------------------
    Case("unicode-digit-index", ("run", "t.asm"), {"t.asm": "LOAD x[²], R0\n"}),
    Case("unicode-digit-register", ("run", "t.asm"), {"t.asm": "LOAD x[0], R²\n"}),
    Case("unicode-digit-register-arabic", ("run", "t.asm"), {"t.asm": "LOAD x[0], R\u0663\n"}),
    Case("unicode-digit-data", ("run", "t.asm"), {"t.asm": ".data x = [\u0663]\nLOAD x[0], R0\n"}),
    Case("literal-5000-digits", ("run", "t.asm"), {"t.asm": ".data x = [" + "9" * 5000 + "]\nLOAD x[0], R0\n"}),
    Case("index-5000-digits", ("run", "t.asm"), {"t.asm": "LOAD x[" + "9" * 5000 + "], R0\n"}),
    Case("data-nested-100", ("run", "t.asm"), {"t.asm": _nested_data}),
    Case("tile-unchecked-shape", ("run", "t.asm", "-m", "toysram"),
         {"t.asm": ".array Q[100000000][100000000]\nLOAD Q[0:100000000, :], T0\n"}),
    Case("tile-fill-unchecked", ("run", "t.asm", "-m", "toysram"), {"t.asm": "FILL 0, 18446744073709551616, 1, T5\n"}),
    Case("tile-fill-huge", ("run", "t.asm", "-m", "toysram"), {"t.asm": "FILL 0, 100000, 100000, T5\n"}),
    # -- silent acceptance ------------------------------------------------------------------------------
    Case("yaml-duplicate-key", ("run", "t.asm", "-m", "m.yaml"),
         {"t.asm": "LOAD x[0], R0\n", "m.yaml": "registers: 4\nregisters: 1000000000000\n"}),
    Case("data-nan-strict", ("run", "t.asm", "-d", "d.yaml", "--strict"),
         {"t.asm": "LOAD x[0], R0\n", "d.yaml": "x: [.nan, 1.0]\n"}),
    Case("data-int-precision-strict", ("run", "t.asm", "-d", "d.yaml", "--strict"),
         {"t.asm": "LOAD x[0], R0\n", "d.yaml": "x: [9007199254740993]\n"}),
    Case("problem-machine-outside", ("check", "t.asm", "-p", "p/p.yaml"),
         {"t.asm": TRACE_Y, "p/p.yaml": _problem(extra="machine: /etc/passwd\n")}, absent=("root:",)),
    Case("problem-machine-working-directory", ("check", "t.asm", "-p", "p/p.yaml"),
         {"t.asm": TRACE_Y, "evil.yaml": "registers: 99\n", "p/p.yaml": _problem(extra="machine: evil.yaml\n")},
         in_output=("no machine file 'evil.yaml'",)),
    Case("problem-machine-dotdot-passwd", ("check", "t.asm", "-p", "a/b/c/d/p.yaml"),
         {"t.asm": TRACE_Y, "a/b/c/d/p.yaml": _problem(extra="machine: ../../../../../../../../etc/passwd\n")},
         absent=("root:",), in_output=("lies outside the folder",)),
    Case("problem-machine-dev-stdin", ("check", "t.asm", "-p", "a/b/c/d/p.yaml"),
         {"t.asm": TRACE_Y, "a/b/c/d/p.yaml": _problem(extra="machine: ../../../../../../../../dev/stdin\n")},
         stdin="registers: 99\n", in_output=("lies outside the folder",)),
    Case("autograder-hostile-problem-name", ("autograder", "p$(id>&2);`id`'\"q.yaml", "-o", "a.zip", "--wheel", WHEEL),
         {"p$(id>&2);`id`'\"q.yaml": _problem(), WHEEL: b"stand-in"}, rc=(0,), absent=("uid=",)),
    Case("autograder-hostile-wheel-name", ("autograder", "p.yaml", "-o", "a.zip", "--wheel", "x;id;.whl"),
         {"p.yaml": _problem(), "x;id;.whl": b"stand-in"}, in_output=("is not a wheel's file name",)),
    Case("grade-zip-junk-student", ("grade", "class.zip", "-p", "p.yaml", "--out", "out", "-j", "1", "--no-progress"),
         {"class.zip": _zip_junk_student, "p.yaml": _problem()}, rc=(0, 1), seconds=30),
    Case("grade-zip-forged-entry-count", ("grade", "class.zip", "-p", "p.yaml", "--out", "out", "-j", "1"),
         {"class.zip": _zip_forged_count, "p.yaml": _problem()}, seconds=5,
         in_output=("declares 3,500,000 entries",)),
    Case("long-line-error", ("run", "t.asm"), {"t.asm": _long_line}),
    Case("output-empty", ("run", "t.asm", "-o", ""), {"t.asm": "LOAD x[0], R0\n"}),
    Case("output-proc", ("run", "t.asm", "-o", "/proc/version"), {"t.asm": "LOAD x[0], R0\n"}),
]
