"""Per-student variants: one problem file, several parameter sets, one per student.

::

    variants:                      # each entry: values for the placeholders {name}
      - {n: 6, reads: 18, seed: 1}
      - {n: 8, reads: 24, seed: 2}
    inputs:
      x: {shape: [{n}], dist: uniform, low: -4, high: 4}
    max_dram_reads: {reads}
    seed: {seed}

Every ``{name}`` of a variant's parameters is replaced in the file's text before it is read
(numbers as written, text as is), so a placeholder may stand anywhere — a size, a register
count, a budget, an input seed, a word of the statement. A student's variant is the first 8
bytes of ``sha256(problem id + NUL + student key)``, big-endian, mod the number of variants:

* the problem id is the file's ``id:`` (a name without placeholders), else its ``title:`` as
  written (placeholders unreplaced) — never the file's name, so copying ``p.yaml`` to
  ``hw3.yaml`` moves no student;
* the student key is the student's ID as ``toym grade`` names it (``submissions.safe_id``),
  case-folded: with a roster, the e-mail address it gives, else the login, else the LMS's id
  (``check.roster.variant_key``), the key Gradescope's autograder uses (the e-mail address).

The same key always gets the same variant on every machine, and keys spread evenly over the
variants.
"""

from __future__ import annotations

__all__ = ["variant_params", "pick_variant", "problem_id", "substitute", "describe_variant", "PLACEHOLDER"]

import hashlib
import re

import yaml

from .yamlsrc import Source, value_of

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_VARIANTS = 1000


def variant_params(src: Source, node) -> list[dict]:
    """The ``variants:`` list: mappings of the same parameter names to scalars."""
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise src.error("'variants' must be a non-empty list of parameter sets, e.g. - {n: 6}", node)
    if len(node.value) > MAX_VARIANTS:
        raise src.error(f"'variants' lists {len(node.value)} parameter sets; at most {MAX_VARIANTS}", node)
    out: list[dict] = []
    names: list[str] | None = None
    for item in node.value:
        if not isinstance(item, yaml.MappingNode) or not item.value:
            raise src.error("each variant must be a mapping of parameters, e.g. {n: 6, seed: 1}", item)
        params = {}
        for knode, vnode in item.value:
            name = str(knode.value)
            if not name.isidentifier():
                raise src.error(f"variant parameter '{name}' is not a name", knode,
                                hint="parameters are names used as {name} in the problem")
            value = value_of(vnode)
            if isinstance(value, (list, dict)) or value is None:
                raise src.error(f"variant parameter '{name}' must be a number or text, got {value!r}", vnode)
            if name in params:
                raise src.error(f"variant parameter '{name}' is given twice", knode)
            params[name] = value
        if names is None:
            names = list(params)
        elif sorted(params) != sorted(names):
            raise src.error(f"every variant needs the same parameters ({', '.join(names)}); this one has "
                            f"{', '.join(params)}", item)
        out.append(params)
    return out


def problem_id(src: Source, spec: dict, default: str = "") -> str:
    """The problem's own id (``id:``, else the title as written, placeholders and all): what the
    variant hash salts with."""
    if "id" in spec:
        value = value_of(spec["id"])
        if not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip() \
                or PLACEHOLDER.search(str(value)):
            raise src.error(f"'id' must be a name without {{placeholders}}, got {value!r}", spec["id"],
                            hint="e.g. id: hw3-matmul; the variant each student gets depends on it")
        return str(value).strip()
    if "title" in spec:  # the spec is read before any substitution: the title as written
        return str(value_of(spec["title"]))
    if default:
        return default
    raise src.error("a problem with variants needs an 'id' or a 'title' (the variant hash uses it)",
                    spec.get("variants") or next(iter(spec.values())), hint="add id: a-name")


def pick_variant(student: str, count: int, salt: str) -> int:
    """The variant (0-based) of ``student``: stable across runs, Python versions and machines."""
    from .readers import safe_id  # the ID as toym grade names a file: the same variant everywhere

    key = safe_id(student).casefold()  # Alice@Uni.edu on Gradescope is alice@uni.edu in the folder
    digest = hashlib.sha256(f"{salt}\0{key}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def substitute(text: str, params: dict) -> str:
    """``text`` with every ``{name}`` of ``params`` replaced (other braces untouched)."""
    return PLACEHOLDER.sub(lambda m: _text(params[m.group(1)]) if m.group(1) in params else m.group(0), text)


def describe_variant(index: int, count: int, params: dict) -> str:
    """``variant 2 of 3 (n = 8, seed = 2)``."""
    values = ", ".join(f"{k} = {_text(v)}" for k, v in params.items())
    return f"variant {index + 1} of {count} ({values})"
