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

Modules named in ``PLUGINS`` are imported (if present) the first time the registry is
read, so ``toymachine/gen/tile.py`` can register itself this way.
"""

from __future__ import annotations

__all__ = ["Param", "GeneratorSpec", "register", "get_generator", "generator_names", "PLUGINS"]

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..cost import (Bound, Cost, attention_bound, attention_cost, matmul_bound, matmul_cost, softmax_bound,
                    softmax_cost, variance_bound, variance_cost)
from ..errors import ConfigError
from ..machine import Machine
from ..program import Program
from . import attention, matmul, softmax, variance

PLUGINS = ("toymachine.gen.tile",)


@dataclass(frozen=True)
class Param:
    """One parameter of a generator: its type, default, allowed values."""

    name: str  # Python name; the command-line option is --name with _ → -
    kind: type  # int | str | bool
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    minimum: int | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


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

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.flag for p in self.params)
        raise ConfigError(f"generator '{self.name}' has no parameter '{name.replace('_', '-')}'",
                          hint=f"its parameters are {known}")

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


# -- the scalar machine's generators -------------------------------------------------------

def _with_registers(params: Mapping[str, Any], machine: Machine) -> Machine:
    return machine.with_(registers=params["registers"])


def _attention_machine(params: Mapping[str, Any], machine: Machine) -> Machine:
    _, need = attention.resolve_attention(**params)
    return machine.with_(registers=params["registers"] or need)


def _attention_cost(**params) -> Cost:
    slots, _ = attention.resolve_attention(**params)
    return attention_cost(params["n"], params["d"], params["order"], slots, params["variant"])


register(GeneratorSpec(
    "matmul", "C = A·B (A m×k, B k×n) on an R-register machine: inner, outer or best schedule",
    (Param("n", int, 2, "columns of B and C (and m, k unless given)", minimum=1),
     Param("m", int, None, "rows of A and C (default n)", minimum=1),
     Param("k", int, None, "columns of A, rows of B (default n)", minimum=1),
     Param("registers", int, 3, "register count R (at least 3)", minimum=3),
     Param("schedule", str, "best", "inner, outer, or the cheapest that fits", choices=matmul.SCHEDULES)),
    build=matmul.matmul_program, cost=matmul_cost, bound=matmul_bound, machine=_with_registers))

register(GeneratorSpec(
    "softmax", "softmax of x[0..n−1]: naive (no max), 3-pass safe, 2-pass online",
    (Param("n", int, 6, "number of elements", minimum=1),
     Param("algo", str, "online", "naive, safe or online", choices=softmax.ALGOS)),
    build=softmax.softmax_program, cost=softmax_cost, bound=softmax_bound))

register(GeneratorSpec(
    "attention", "attention softmax(QKᵀ)V on the scalar machine, inner or outer loop order",
    (Param("n", int, 4, "sequence length (rows of Q, K, V)", minimum=1),
     Param("d", int, 2, "head dimension", minimum=1),
     Param("order", str, "inner", "inner (query loop outside) or outer (KV loop outside)", choices=attention.ORDERS),
     Param("registers", int, None, "register count (default: the minimum the order needs)", minimum=1),
     Param("output_slots", int, None, "outer order: output rows kept resident (default: as many as fit)", minimum=0),
     Param("variant", str, "exact", "exact, no-max or no-rescale", choices=attention.VARIANTS)),
    build=attention.attention_program, cost=_attention_cost, bound=attention_bound, machine=_attention_machine))

register(GeneratorSpec(
    "variance", "Welford's one-pass sample variance of x[0..n−1]",
    (Param("n", int, 6, "number of elements (at least 2)", minimum=2),),
    build=variance.variance_program, cost=variance_cost, bound=variance_bound))
