"""The generator registry: name → how to build, cost and bound a program.

``toym sweep`` and ``toymachine.sweep`` work from these entries alone, so a new generator
becomes sweepable by registering itself::

    from toymachine.gen.registry import GeneratorSpec, Param, register
    register(GeneratorSpec(
        name="attention-tile", summary="tiled attention on the SRAM/HBM machine",
        params=(Param("n", int, 256, "sequence length", minimum=1),
                Param("algo", str, "fa2", "algorithm", choices=("standard", "fa1", "fa2")), …),
        build=lambda with_data=False, seed=0, **p: attention_program(**p, with_data=with_data),
        cost=None, bound=None, machine=lambda p, m: m.with_(sram_words=p["sram"])))

The built-in generators register in ``gen.catalog`` (imported with ``toymachine.gen``). Modules
named in ``PLUGINS`` are imported (if present) the first time the registry is read, so an
outside package can register its own generators this way.
"""

from __future__ import annotations

__all__ = ["Param", "GeneratorSpec", "register", "get_generator", "generator_names", "PLUGINS"]

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..cost import Bound, Cost
from ..errors import ConfigError, Opt
from ..machine import Machine
from ..program import Program

PLUGINS: tuple[str, ...] = ()  # modules imported on first use that register more generators


@dataclass(frozen=True)
class Param:
    """One parameter of a generator: its type, default, allowed values."""

    name: str  # Python name: the key (the CLI's flag is the vocabulary's for it, cli.vocabulary.flag_words)
    kind: type  # int | str | bool
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    minimum: int | None = None


@dataclass(frozen=True)
class GeneratorSpec:
    """A generator as the sweep sees it."""

    name: str
    summary: str
    params: tuple[Param, ...]
    build: Callable[..., Program]  # build(**params, with_data=bool, seed=int) -> Program
    cost: Callable[..., Cost] | None = None  # cost(**params) -> Cost (closed form)
    bound: Callable[..., Bound] | None = None  # bound(**params) -> Bound
    machine: Callable[[Mapping[str, Any], Machine], Machine] | None = None  # the machine for one point
    size: Callable[..., int] | None = None  # size(**params): score elements, for ``experiments.simulable``
    # resolved(**params, machine=…): the values a point left to the defaults took (blocks, order), which its row shows
    resolved: Callable[..., Mapping[str, Any]] | None = None

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known: list[str | Opt] = []
        for p in self.params:
            known += [", "] * bool(known) + [Opt(p.name)]
        raise ConfigError(f"generator '{self.name}' has no parameter '{name.replace('_', '-')}'",
                          hint=("its parameters are ", *known))

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}


_REGISTRY: dict[str, GeneratorSpec] = {}
_plugins_loaded = False


def register(spec: GeneratorSpec, *, replace: bool = False) -> GeneratorSpec:
    if spec.name in _REGISTRY and not replace:
        raise ValueError(f"generator {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec
    return spec


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for module in PLUGINS:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


def generator_names() -> tuple[str, ...]:
    _load_plugins()
    return tuple(_REGISTRY)


def get_generator(name: str) -> GeneratorSpec:
    _load_plugins()
    spec = _REGISTRY.get(name)
    if spec is None:
        raise ConfigError(f"no generator named '{name}'", hint=f"generators: {', '.join(_REGISTRY)}")
    return spec
