"""Problem sets that grade themselves: ``check_trace(trace, problem) -> CheckReport``.

A problem file (``examples/problems/*.yaml``; format in ``toymachine.check.problem``)
names the inputs, the arrays the trace must compute as expressions over them
(``toymachine.check.expr``: parsed, never evaluated as Python), the machine and budgets.
The grader runs the trace on several random input draws and reports one pass/fail check
per expected array and per budget, with the figure and the limit
(``toymachine.check.report``).
"""

from __future__ import annotations

__all__ = ["check_trace", "draw_inputs", "load_problem", "Problem", "CheckReport", "Check", "parse_expr",
           "evaluate", "ExprError"]

from .expr import ExprError, evaluate, parse_expr
from .grader import check_trace, draw_inputs
from .problem import Problem, load_problem
from .report import Check, CheckReport
