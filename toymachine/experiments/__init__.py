"""Experiments built on the machine: parameter sweeps of the generators (``sweep``: cost tables
and plots, ``toym sweep``) and seed 003's break-it table (``numerics``: variant × number
format → error, first alarm, ``toym numerics``)."""

from __future__ import annotations

__all__ = ["sweep", "sweep_report", "plot_sweep", "SweepRow", "numerics_table", "numerics_report"]

from .numerics import numerics_report, numerics_table
from .sweep import SweepRow, plot_sweep, sweep, sweep_report
