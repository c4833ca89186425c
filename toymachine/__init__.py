"""toymachine: an instruction-set simulator and cost model for the toy machine that
teaches FlashAttention from first principles (seed 000).

The public names load on first use (module ``__getattr__``): ``import toymachine`` costs
nothing, so the ``toym`` command line starts fast and pays only for what a command uses."""

from __future__ import annotations

import sys

__version__ = "0.1.0"

# name → the module (relative to this package) that defines it
_EXPORTS = {
    "run_file": "api",
    "parse": "asm", "parse_file": "asm",
    "AsmError": "errors", "ConfigError": "errors", "DataError": "errors", "MachineLimitError": "errors",
    "NumericsError": "errors", "RuntimeFault": "errors", "ToyMachineError": "errors",
    "ISA": "isa",
    "DEFAULT_MACHINE": "machine", "Machine": "machine", "load_machine": "machine", "resolve_machine": "machine",
    "view": "notebook",
    "ArrayDecl": "program", "Instr": "program", "Mem": "program", "Program": "program", "Reg": "program",
    "Span": "program",
    "Result": "result",
    "simulate": "sim",
}

__all__ = [
    "__version__", "parse", "parse_file", "simulate", "run_file", "Result", "Machine", "DEFAULT_MACHINE",
    "load_machine", "resolve_machine", "Program", "Instr", "Reg", "Mem", "Span", "ArrayDecl", "ISA",
    "ToyMachineError", "AsmError", "ConfigError", "DataError", "MachineLimitError", "RuntimeFault", "NumericsError",
    "view",
]


def _display_hooks() -> None:
    """Jupyter shows a Result as its tables (``notebook``), which loads when one is first shown."""
    from . import result

    def html(r):
        from .notebook import result_html

        return result_html(r)

    def markdown(r):
        from .notebook import result_markdown

        return result_markdown(r)

    result.DISPLAY.setdefault("text/html", html)
    result.DISPLAY.setdefault("text/markdown", markdown)


if "IPython" in sys.modules:  # in a notebook, whatever is imported first: hooks now
    _display_hooks()


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toymachine' has no attribute {name!r}")
    from importlib import import_module

    _display_hooks()
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
