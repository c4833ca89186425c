"""toymachine: an instruction-set simulator and cost model for the toy machine that
teaches FlashAttention from first principles (seed 000)."""

from __future__ import annotations

__version__ = "0.1.0"

from .api import run_file
from .asm import parse, parse_file
from .errors import (AsmError, ConfigError, DataError, MachineLimitError, NumericsError, RuntimeFault,
                     ToyMachineError)
from .isa import ISA
from .machine import DEFAULT_MACHINE, Machine, load_machine, resolve_machine
from .notebook import view
from .program import ArrayDecl, Instr, Mem, Program, Reg, Span
from .result import Result
from .sim import simulate

__all__ = [
    "__version__", "parse", "parse_file", "simulate", "run_file", "Result", "Machine", "DEFAULT_MACHINE",
    "load_machine", "resolve_machine", "Program", "Instr", "Reg", "Mem", "Span", "ArrayDecl", "ISA",
    "ToyMachineError", "AsmError", "ConfigError", "DataError", "MachineLimitError", "RuntimeFault", "NumericsError",
    "view",
]
