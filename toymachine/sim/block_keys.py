"""A template chunk's text cut into the units its blocks are made of (``sim.blocks``): the lines from
one LOAD to the next (``SEP``), without a string per unit where the chunk repeats one
(``units``); the units a chunk cuts at its two ends (``cut_edges``), which the loop runs; whether
a unit holds a tile instruction (``tile_units``)."""

from __future__ import annotations

__all__ = ["SEP", "units", "cut_edges", "tile_units"]

from .engines.kinds import EXEC

SEP = "\nLOAD "
MIN_UNITS = 16  # a repeated unit is looked for where it comes back this often


def units(ktext: str) -> list:
    """``ktext.split(SEP)``: the same list, made without a string per unit where the text after its
    first unit repeats one unit (a long run of one block, as each pass of a softmax is) — then the
    units are one string, its hash computed once."""
    s = ktext.find(SEP)
    t = ktext.find(SEP, s + 1) if s >= 0 else -1
    if t < 0:
        return ktext.split(SEP)
    unit = ktext[s:t]  # SEP + the unit (no SEP inside it, none across two of them: SEP overlaps no copy of itself)
    m = (len(ktext) - s) // len(unit)
    if m < MIN_UNITS or not ktext.startswith(unit * m, s):
        return ktext.split(SEP)
    rest = ktext[s + m * len(unit):]
    if rest[:len(SEP)] != SEP:  # the last one runs on into the rest: split with it
        m -= 1
        rest = ktext[s + m * len(unit):]
    return [ktext[:s]] + [unit[len(SEP):]] * m + rest.split(SEP)[1:]


def cut_edges(keys: list, templates: dict):
    """``(head, tail)``: the codes of the chunk's first unit where the chunk starts inside a unit
    (its lines before the first LOAD), and of its last where that differs from the one before it
    (the chunk ends inside a unit), both taken out of ``keys`` — or None where a line of them is not
    compiled. They stand once (their text depends on where the chunk was cut): run in the loop,
    they cost no compiled block per chunk."""
    head: list | tuple = ()
    tail: list | tuple = ()
    if len(keys) > 2 and keys[0][:1] == "\n":
        head = list(map(templates.get, keys.pop(0)[1:].split("\n")))
    if len(keys) > 2 and keys[-1] != keys[-2]:
        tail = list(map(templates.get, ("LOAD " + keys.pop()).split("\n")))
    if None in head or None in tail:
        return None
    return head, tail


def tile_units(units: list, templates: dict) -> bool:
    """Does one of these units (a chunk cut at its LOAD lines) hold a tile instruction? (Not looked
    for among many distinct units: such a chunk hardly repeats.)"""
    distinct = dict.fromkeys(units)
    if len(distinct) > 256:
        return False
    for unit in distinct:
        text = unit[1:] if unit[:1] == "\n" else "LOAD " + unit
        for line in text.split("\n"):
            code = templates.get(line)
            if code is not None and code[0] == EXEC:
                return True
    return False
