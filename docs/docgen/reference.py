"""The reference pages, generated from the code (never hand-copied).

* ``reference/cli.md`` — every command and option, walked from the typer app's click tree (commands
  other modules add later appear as they land; lazy groups are walked through click's own
  ``list_commands``/``get_command``).
* ``reference/flags.md`` — the one vocabulary (``toym flags``).
* ``reference/isa.md`` — the instruction table (``toymachine.isa`` through ``render/isa.py``).
* ``reference/json.md`` — the JSON contract: the keys ``Result.to_dict()`` writes on representative runs,
  each with its meaning (a key without one fails tests/test_docs.py), and the error object.
* ``reference/machine-yaml.md`` — the ``Machine`` dataclass's fields: YAML key, type, default, comment.
* ``reference/problem-yaml.md`` — the problem file's keys, budgets and the expression language.
* ``reference/api.md`` — the Python API through mkdocstrings.

Each function returns Markdown; ``pages()`` maps a docs path to its text.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import re
import tokenize

import typer

try:  # typer ≥ 0.2x carries its own copy of click; the app's commands are its classes
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer: the click package
    import click


def _md(text: str) -> str:
    """Escape text for a Markdown table cell."""
    text = str(text).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("[", "\\[").replace("]", "\\]")


def _code(text: str) -> str:
    text = str(text)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


# -- commands ---------------------------------------------------------------------------------------
def root_command() -> click.Command:
    from toymachine.cli import app

    return typer.main.get_command(app)


def walk_commands(root=None):
    """(path, command, click context) for every command under the app, depth first, in registration order."""
    root = root or root_command()

    def walk(cmd, path, ctx):
        yield path, cmd, ctx
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is None or getattr(sub, "hidden", False):
                    continue
                yield from walk(sub, f"{path} {name}", click.Context(sub, info_name=name, parent=ctx))

    yield from walk(root, "toym", click.Context(root, info_name="toym"))


_NOTE = re.compile(r"\s*\[([^\[\]]*)\]\s*$")


def _record(p, ctx) -> tuple[str, str, str, str]:
    """(names, value it takes, default, help) from click's own help record."""
    names, text = p.get_help_record(ctx) or (p.name, p.help or "")
    takes = ""
    if " <" in names:
        names, takes = names.split(" <", 1)
        takes = takes.rstrip(">")
    default, notes = "", []
    while (m := _NOTE.search(text)):
        note = m.group(1)
        if note.startswith("default: "):
            default = note[len("default: "):]
        else:
            notes.insert(0, note)
        text = text[:m.start()]
    text = text.strip() + "".join(f" ({n})" for n in notes)
    return names, takes, default, text


def _options_table(cmd, ctx) -> list[str]:
    rows = []
    for p in cmd.params:
        if getattr(p, "hidden", False):
            continue
        names, takes, default, text = _record(p, ctx)
        if p.param_type_name == "argument":
            rows.append(f"| {_code(names.upper())} (argument) | | {_md(takes)} | | {_md(text)} |")
            continue
        opts = [o.strip() for part in names.split(" / ") for o in part.split(", ")]
        longs = [o for o in opts if o.startswith("--")]
        shorts = [o for o in opts if not o.startswith("--")]
        rows.append(f"| {' / '.join(_code(o) for o in longs)} | {' '.join(_code(o) for o in shorts)} | "
                    f"{_md(takes) if takes else 'flag'} | {_code(default) if default else ''} | {_md(text)} |")
    if not rows:
        return []
    return ["| option | short | takes | default | meaning |", "|---|---|---|---|---|", *rows]


def _anchor(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


def cli_page() -> str:
    out = ["# Commands and options", "",
           "Generated from the `toym` app itself (its click command tree: every command, option, short form",
           "and default), so it cannot drift from `toym COMMAND --help`. The flags mean the same on every",
           "command: see [Flags](flags.md).", ""]
    commands = list(walk_commands())
    out += ["| command | what it does |", "|---|---|"]
    for path, cmd, _ in commands[1:]:
        short = " ".join(inspect.cleandoc(cmd.help or "").split("\n\n")[0].split())
        if len(short) > 160:
            short = short[:short.rindex(" ", 0, 160)] + " …"
        out.append(f"| [{_code(path)}](#{_anchor(path)}) | {_md(short)} |")
    out.append("")
    for path, cmd, ctx in commands:
        out += [f"## {_code(path)} {{ #{_anchor(path)} }}", ""]
        usage = " ".join(cmd.collect_usage_pieces(ctx))
        out += ["```text", f"{path} {usage}".rstrip(), "```", ""]
        if cmd.help:
            out += [_help_text(cmd.help), ""]
        if hasattr(cmd, "list_commands"):
            subs = [n for n in cmd.list_commands(ctx) if not getattr(cmd.get_command(ctx, n), "hidden", False)]
            out += ["Subcommands: " + ", ".join(f"[{_code(f'{path} {n}')}](#{_anchor(f'{path} {n}')})" for n in subs), ""]
        table = _options_table(cmd, ctx)
        if table:
            out += table + [""]
        if path == "toym sweep":
            out += ["Generators and their parameters (`toym sweep --list`): each parameter is an option of",
                    "`toym sweep NAME` and takes a value, a list or a range.", "", *sweep_generators_table(), ""]
    return "\n".join(out)


def _help_text(text: str) -> str:
    """A command's help (click's ``\\b`` paragraphs kept as written) as Markdown text."""
    paras = [p.strip() for p in inspect.cleandoc(text).split("\n\n")]
    out = []
    for p in paras:
        if p.startswith("\b"):
            lines = p[1:].strip("\n").splitlines()
            out.append("```text\n" + "\n".join(lines) + "\n```")
        else:
            out.append(" ".join(line.strip() for line in p.splitlines()).replace("[", "\\[").replace("]", "\\]")
                       .replace("<", "&lt;"))
    return "\n\n".join(out)


def sweep_generators_table() -> list[str]:
    from toymachine.cli.vocabulary import flag_words
    from toymachine.gen.registry import generator_names, get_generator

    rows = ["| generator | parameter | default | values | meaning |", "|---|---|---|---|---|"]
    for name in generator_names():
        spec = get_generator(name)
        for p in spec.params:
            default = "" if p.default is None else _code(p.default)
            values = getattr(p, "choices", None)
            values = ", ".join(map(str, values)) if values else (f"≥ {p.minimum}" if getattr(p, "minimum", None) is not None else "")
            rows.append(f"| {name} | {_code(flag_words(p.name))} | {default} | {_md(values)} | {_md(p.help)} |")
    return rows


def all_options() -> set[str]:
    """Every visible option string of every command (what the completeness test looks for)."""
    found = set()
    for _, cmd, _ in walk_commands():
        for p in cmd.params:
            if p.param_type_name == "option" and not p.hidden:
                found.update(p.opts)
                found.update(p.secondary_opts)
    return found


def all_command_paths() -> list[str]:
    return [path for path, _, _ in walk_commands()]


# -- flags, ISA ---------------------------------------------------------------------------------------
def flags_page() -> str:
    from toymachine.cli import vocabulary
    from toymachine.render import render_report

    table = render_report(vocabulary.vocabulary_report(root_command()), "markdown").strip()
    table = table.split("\n", 1)[1].lstrip() if table.startswith("#") else table
    aliases = getattr(vocabulary, "HIDDEN_ALIASES", {})
    old = ("Other spellings accepted, hidden: "
           + ", ".join(f"{_code(a)} (read as {_code(b)})" for a, b in aliases.items()) + ".") if aliases else ""
    return "\n".join(["# Flags: one vocabulary", "",
                      "The same name means the same thing on every command. This table is what `toym flags`",
                      "prints (`toymachine/cli/vocabulary.py`; `tests/test_vocabulary.py` walks every command's",
                      "options against it). Shell completion: `toym --install-completion`.", "", table, "", old, ""])


def isa_page() -> str:
    from toymachine.isa import ISA
    from toymachine.render.isa import isa_markdown

    table = isa_markdown().strip()
    table = table.split("\n", 1)[1].lstrip() if table.startswith("#") else table
    out = ["# Instruction set", "",
           "Generated from the instruction table, `toymachine/isa.py` (what `toym isa --format markdown`",
           "prints); every instruction costs 1 cycle on the default machine. Operands follow the seed:",
           "`Rd = Ra op Rb` for `OP Ra, Rb, Rd`, so `SUB Ra, Rb, Rd` is Ra − Rb. Syntax and addressing:",
           "[Run a trace](../how-to/run-traces.md#assembly).", "", table, "", "## By instruction", ""]
    for op, spec in ISA.items():
        out += [f"### {op}", "", f"```toym\n{spec.syntax}\n```", "",
                f"* scalar: {_md(spec.operation or '— (tiles only)')}",
                f"* on tiles: {_md(spec.tile_operation)}",
                f"* tile FLOPs: {_md(spec.tile_flops)}; unit: {spec.cost_class}; kind: {spec.kind}", ""]
    return "\n".join(out)


# -- JSON ---------------------------------------------------------------------------------------------
JSON_MEANINGS = {
    "file": "the trace's file name (`<stdin>` for standard input, `<program>` for a generated Program)",
    "cycles": "total cycles under the machine's per-instruction costs (and, on a machine with rates or units, their work)",
    "instructions": "instructions executed",
    "ops": "opcode → count (executed opcodes only, in ISA order)",
    "dram": "`reads`, `writes` (elements), `read_bytes`, `write_bytes` (elements × `word_bytes`)",
    "registers_used": "number of distinct registers the program names (ACC not counted)",
    "registers": "final value of every register by name (`\"R0\"`); `null` if never written; a tile as nested lists",
    "memory": "every array's final contents as nested lists (`null` = never written); large arrays summarised (`--memory-max`)",
    "machine": "the machine's `name`, `registers`, `word_bytes`, `dtype`, per-op `cycles` (and its tile keys)",
    "dtype": "the number format used",
    "symbolic": "whether values are expressions (then strings)",
    "alarms": "numerical alarms (first overflow, NaN, division by zero): `kind`, `step`, `line`, `instruction`, `operands`, `result`",
    "underflows": "results that underflowed to zero (normal in a softmax)",
    "first_underflow": "the first underflow (an alarm object) or `null`",
    "steps": "present when steps are shown: `step`, `line`, `instruction`, `registers` after the step",
    "warnings": "present when the run has any: arrays read but never given (`kind`, `message`, `file`, `line`, `col`, `hint`)",
    "intensity": "arithmetic intensity: `flops` (all units), `words` and `bytes` of DRAM/HBM traffic, `flops_per_word`, `flops_per_byte` (`null` when nothing moved)",
    "sram_peak": "tile machine: most SRAM words in use at once",
    "sram_words": "tile machine: the machine's SRAM capacity in words (`null`: unlimited)",
    "flops": "tile machine: `matmul` (tensor core) and `other` FLOPs",
    "sfu_ops": "tile machine: EXP/LOG elements (counted among `flops.other`, priced at the SFU's rate)",
    "cycle_breakdown": "tile machine: `issue`, `hbm`, `tensor`, `vector`, `sfu` cycles (they sum to `cycles`); with units `issue`, `hbm`, `mxu`, `vpu`",
    "tile_traffic": "tile machine: array → words moved by block `reads` and `writes`",
    "hbm_footprint": "tile machine: words of DRAM/HBM the arrays occupy",
    "time_s": "machines with `clock_hz`: the roofline time, max(HBM time, compute time)",
    "roofline": "machines with `clock_hz`: `hbm_s`, `compute_s`, `bound` (memory or compute)",
    "sram_rule": "present when the machine counts SRAM by the paper's rule (`paper`): `sram_peak` then counts only blocks of HBM matrices",
    "memory_peak": "tile machine: peak bytes per memory level, `hbm` and `sram` (`vmem` on a machine that declares VMEM)",
    "units": "machines with `mxu`/`vpu`: `mxu` (`cycles`, `macs`, `passes`, `utilization`, `utilization_of_all`), `vpu` (`cycles`, `by_op`), `dma` (`bytes`, `cycles`, `overlapped`), `total`",
    "vmem_bytes": "machines that declare VMEM: its capacity in bytes",
}

# (label, assembly or generator call, machine, run options): runs whose keys the contract lists
JSON_RUNS = (
    ("scalar trace (programs/c00.asm)", "c00", None, {}),
    ("scalar trace, a never-given input", "warn", None, {}),
    ("tile program on h100 (rates, clock)", "tile", "h100", {}),
    ("tile program on toysram-paper (paper SRAM rule)", "tile-paper", "toysram-paper", {}),
    ("tile program on tpu-v5e (MXU, VPU, VMEM)", "tile", "tpu-v5e", {}),
)


def _json_run(kind: str, machine: str | None):
    from toymachine import parse, resolve_machine, simulate
    from toymachine.gen.tile import attention_program

    m = resolve_machine(machine) if machine else None
    if kind == "c00":
        return simulate(parse(".data a = [[1, 2], [3, 4]]\n.data b = [[5, 6], [7, 8]]\nLOAD a[0][0], R0\n"
                              "LOAD b[0][0], R1\nMAC_Z R0, R1, R2\nSTORE R2, c[0][0]\n"), m, steps=True)
    if kind == "warn":
        return simulate(parse("LOAD x[0], R0\nEXP R0, R0\nSTORE R0, y[0]\n"), m, steps=False)
    if kind == "tile-paper":
        return simulate(attention_program(n=5, d=3, algo="fa1", sram_words=59, sram_rule="paper", block_m=3,
                                          block_n=4), m, steps=False)
    return simulate(attention_program(n=16, d=8, algo="fa2", block_m=8, block_n=8), m, steps=False)


def json_keys() -> dict[str, list[str]]:
    """Top-level key → the labels of the representative runs that write it."""
    seen: dict[str, list[str]] = {}
    for label, kind, machine, _ in JSON_RUNS:
        for key in _json_run(kind, machine).to_dict():
            seen.setdefault(key, []).append(label)
    return seen


def json_page() -> str:
    from toymachine import parse
    from toymachine.errors import ToyMachineError
    from toymachine.render.jsonout import error_json

    keys = json_keys()
    try:
        parse(".data x = [1, 2]\nLOAD x[0], R0\nLAOD x[1], R1\n", file="trace.asm")
        raise AssertionError("the misspelt trace assembled")
    except ToyMachineError as exc:
        err = error_json(exc)
    out = ["# JSON output", "",
           "`--format json` prints one object; autograders, sweeps and tests depend on these keys. The list",
           "is generated: the keys below are those `Result.to_dict()` writes on the runs named in the last",
           "column (tests/test_docs.py fails when a run writes a key this page does not explain).", "",
           "| key | meaning | written by |", "|---|---|---|"]
    for key, labels in keys.items():
        where = "every run" if len(labels) == len(JSON_RUNS) else "; ".join(labels)
        out.append(f"| {_code(key)} | {JSON_MEANINGS.get(key, '**undocumented**')} | {_md(where)} |")
    out += ["", "The tile keys appear when a run executes a tile instruction or its machine describes SRAM or",
            "throughputs; tile registers' values are nested lists.", "",
            "**Narrowing it.** `--json-fields cycles,dram,ops` keeps only those keys, in that order (a",
            "dotted path reaches inside an object: `dram.reads`; an unknown key is an error listing the keys",
            "there are). `--no-memory` leaves `memory` out. An array with more than `--memory-max N` elements",
            "(default 1024) is summarised as `{\"summary\": true, \"shape\": …, \"elements\": …, \"min\": …,",
            "\"max\": …, \"mean\": …, \"nan\": 0, \"inf\": 0}`; `--full-memory` writes every array whole.", "",
            "Non-finite numbers are the strings `\"inf\"`, `\"-inf\"` and `\"nan\"`. Output is deterministic:",
            "same inputs, same bytes.", "",
            "## The error object", "",
            "Under `-f json` an error prints, besides the human message on stderr, this object on stdout",
            "(absent parts `null`; exit status 2), here for an unknown mnemonic:", "",
            "```json", err.rstrip(), "```", ""]
    return "\n".join(out)


# -- machine YAML ---------------------------------------------------------------------------------------
def _field_comments(cls) -> dict[str, str]:
    """A dataclass field's trailing ``# comment`` in its source line."""
    src = inspect.getsource(cls)
    comments, current = {}, None
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.NAME and tok.start[1] == 4 and current is None:
            current = tok.string
        elif tok.type == tokenize.COMMENT and current:
            comments.setdefault(current, tok.string.lstrip("# ").strip())
        elif tok.type == tokenize.NEWLINE:
            current = None
    return comments


def _type_name(t) -> str:
    text = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    return text.replace("typing.", "").replace("Mapping[str, float]", "{OP: cycles}")


def _docstring_comments(obj) -> dict[str, str]:
    """``key: value   # comment`` lines of a module's or class's docstring (its YAML examples)."""
    found = {}
    for line in (inspect.getdoc(obj) or "").splitlines():
        m = re.match(r"\s*(\w+):[^#]*#\s*(.+)$", line)
        if m:
            found.setdefault(m.group(1), m.group(2).strip())
    return found


def _dataclass_rows(cls, skip=()) -> list[str]:
    comments = {**_docstring_comments(inspect.getmodule(cls)), **_field_comments(cls)}
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        if f.default is not dataclasses.MISSING:
            default = "null" if f.default is None else f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = dict(f.default_factory()) or "{}"
        else:
            default = "required"
        rows.append(f"| {_code(f.name)} | {_md(_type_name(f.type))} | {_code(default)} | {_md(comments.get(f.name, ''))} |")
    return rows


def machine_page() -> str:
    from toymachine.dtypes import DTYPES
    from toymachine.machine import loader, units
    from toymachine.machine.config import SRAM_RULES, Machine
    from toymachine.machine.units import MXU, VPU

    presets = sorted(p.stem for p in loader.PRESET_DIR.glob("*.yaml"))
    out = ["# Machine YAML", "",
           "A machine file (`--machine FILE`) or preset (`--machine NAME`) is the frozen `Machine` dataclass",
           "of `toymachine/machine/config.py`; the YAML keys are its fields (generated from the dataclass:",
           "names, types, defaults and the comments beside them). An unknown key is an error naming the file,",
           "line and key. How the keys price a run: [The machine and its costs](../explanation/machine-model.md).", "",
           *_dataclass_rows(Machine), "",
           f"`dtype` is one of {', '.join(_code(d) for d in DTYPES)}; `sram_rule` one of "
           f"{', '.join(_code(r) for r in SRAM_RULES)}.", "",
           "## `mxu` and `vpu`: compute units", "",
           "A machine with compute units (seed 002's TPU) declares them as the example in",
           "`toymachine/machine/units.py` shows:", "", "```yaml", *_yaml_example(units), "```", "",
           "### `mxu`: systolic arrays", "", *_dataclass_rows(MXU), "",
           "### `vpu`: the vector unit", "", *_dataclass_rows(VPU), "",
           "## Presets", "",
           "`--machine NAME` takes one of these (`toymachine/machine/presets/NAME.yaml`, sources in their comments):", ""]
    out += ["| preset | description |", "|---|---|"]
    for name in presets:
        m = loader.resolve_machine(name)
        out.append(f"| {_code(name)} | {_md(m.description)} |")
    out += ["", "An example file (`examples/machines/slow_exp.yaml`):", "", "```yaml",
            _read("examples/machines/slow_exp.yaml").rstrip(), "```"]
    return "\n".join(out) + "\n"


def _yaml_example(module) -> list[str]:
    """The indented ``key: …`` lines of the first ``::`` block of a module's docstring."""
    doc = inspect.getdoc(module) or ""
    block = doc.split("::", 1)[1].split("\n\n", 2)[1] if "::" in doc else ""
    return [line.strip() for line in block.splitlines() if line.strip()]


def _read(rel: str) -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[2] / rel).read_text(encoding="utf-8")


# -- problem files ----------------------------------------------------------------------------------------
def problem_page() -> str:
    from toymachine.check import expr, problem

    doc = inspect.getdoc(expr) or ""
    grammar = doc.split("Grammar", 1)[1].split("::", 1)[1].split("\n\n", 2)[1]
    example = inspect.getdoc(problem).split("::", 1)[1].split("\n\n", 2)[1]
    out = ["# Problem sets and the expression language", "",
           "`toym check TRACE --problem FILE` grades a trace against a problem file (a how-to:",
           "[Grade traces](../how-to/check.md)). Generated from `toymachine/check/problem.py` and",
           "`toymachine/check/expr.py`.", "", "## Keys", "", "```yaml", inspect.cleandoc(example), "```", "",
           "| key | meaning |", "|---|---|"]
    meaning = {"title": "a line shown above the grade", "description": "free text",
               "inputs": "arrays given to the trace (a literal, or `{shape, dist, low, high}` drawn at random per trial); they replace the trace's own `.data`",
               "expect": "array (or cell/block, `c[0][0]`, `O[0:2, :]`) → expression over the inputs the trace must leave in DRAM",
               "registers": "register count of the machine", "machine": "a preset name or a machine file (relative to the problem file)",
               "tolerance": "|trace − expected| ≤ tolerance · (1 + |expected|)",
               "trials": "random input draws (default 3 when an input is random)", "seed": "the draws' seed",
               "reference": "the reference solution's trace (relative to the problem file)"}
    meaning.update(getattr(problem, "KEY_DOCS", {}))  # keys other modules document where they are parsed
    for key in problem.KEYS:
        if key in problem.BUDGETS:
            text = f"budget: at most this many {problem.BUDGETS[key]}"
        elif key in problem.ARRAY_BUDGETS:
            text = f"budget per array: `{{array: words}}`, at most this many {problem.ARRAY_BUDGETS[key]} the array"
        else:
            text = meaning.get(key, "**undocumented**")
        out.append(f"| {_code(key)} | {_md(text) if key not in meaning else text} |")
    out += ["", "Random inputs: `{shape: [..], dist: normal}` (default), `{shape, dist: uniform, low, high}`,",
            "`{shape, dist: integers, low, high}` (both ends included).", "",
            "## The expression language", "",
            "An `expect:` value is parsed and evaluated by the grader, never by Python. Grammar (precedence",
            "low → high; left-associative):", "", "```text", inspect.cleandoc(grammar), "```", "",
            "| function | positional arguments | keywords |", "|---|---|---|"]
    for name, (lo, hi, kws) in expr.FUNCTIONS.items():
        args = str(lo) if lo == hi else f"{lo}–{hi}"
        out.append(f"| {_code(name + '()')} | {args} | {', '.join(_code(k) for k in kws) or '—'} |")
    out += ["", "Semantics (numpy, float64): `exp`, `log`, `sqrt` elementwise; `max(x)` the largest element,",
            "`max(x, axis=k)` along an axis, `max(x, y)` elementwise; `sum`, `mean`; `var` the *sample* variance",
            "(ddof = 1; `var(x, ddof=0)` divides by n); `softmax(x)` along the last axis (`axis=k` for another).",
            "`@` is the matrix product, `.T` the transpose, `*` and `/` elementwise with broadcasting. Anything",
            "else (`x.shape`, `x[0]`, `**`, an unknown name) is an error naming the token, with the problem",
            "file's line and column and a caret.", ""]
    return "\n".join(out)


# -- Python API -----------------------------------------------------------------------------------------
API_MODULES = ("toymachine", "toymachine.gen", "toymachine.gen.tile", "toymachine.cost", "toymachine.experiments.sweep",
               "toymachine.experiments.numerics", "toymachine.optimize", "toymachine.check", "toymachine.render",
               "toymachine.machine")


def api_page() -> str:
    out = ["# Python API", "",
           "Generated by mkdocstrings from the docstrings. Everything the CLI does, the library does:",
           "[Use toym from Python](../how-to/python-api.md) shows it in use.", ""]
    for mod in API_MODULES:
        out += [f"## `{mod}`", "", f"::: {mod}", "    options:", "      show_root_heading: false",
                "      heading_level: 3", "      show_submodules: false", ""]
    return "\n".join(out)


def pages() -> dict[str, str]:
    return {"reference/cli.md": cli_page(), "reference/flags.md": flags_page(), "reference/isa.md": isa_page(),
            "reference/json.md": json_page(), "reference/machine-yaml.md": machine_page(),
            "reference/problem-yaml.md": problem_page(), "reference/api.md": api_page()}
