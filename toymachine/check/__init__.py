"""Problem sets that grade themselves: ``check_trace(trace, problem) -> CheckReport``.

A problem file (``examples/problems/*.yaml``; format in ``toymachine.check.problem``)
names the inputs, the arrays the trace must compute as expressions over them
(``toymachine.check.expr``: parsed, never evaluated as Python), the machine and budgets.
The grader runs the trace on several random input draws and reports one check per
expected array and per budget, with the figure, the limit and the points it earned
(``toymachine.check.rules``; ``toymachine.check.report``). ``check.gradebook`` grades a
class (``toym grade``); ``bookout``, ``feedback``, ``gradescope`` and ``handout`` render.
"""

from __future__ import annotations

__all__ = ["check_trace", "draw_inputs", "load_problem", "load_variants", "Problem", "CheckReport", "Check",
           "parse_expr", "evaluate", "ExprError", "Rule", "GradeLimits", "DEFAULT_LIMITS", "pick_variant"]

from .expr import ExprError, parse_expr
from .expr_eval import evaluate
from .grader import check_trace, draw_inputs
from .limits import DEFAULT_LIMITS, GradeLimits
from .problem import Problem, load_problem, load_variants
from .report import Check, CheckReport
from .rules import Rule
from .variants import pick_variant
