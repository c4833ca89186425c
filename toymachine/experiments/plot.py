"""``toym sweep --plot``: a sweep's metric against one swept parameter (matplotlib, the ``plot`` extra).

``check_plot`` runs before the sweep (the file's extension, the metric, the x parameter, that
matplotlib imports), so a bad ``--plot`` fails at once, not after the whole sweep ran.
A plot is made for a slide: the x axis is the swept parameter (by default the numeric one with the
most values), at most ``MAX_SERIES`` series unless asked for more (``--max-series``), the legend
beside the axes, never over the lines, and 16:9 (``SIZES``: ``slide``; ``page`` for a document).
``plot_sweep`` draws one line per combination of the other varying parameters. Series that
coincide stay visible — each has its own marker, dash style and marker size, and a series equal
to an earlier one says so in the legend (``schedule=best (= schedule=inner)``); the lower bound
(``--y traffic``) is drawn once per distinct bound, one legend entry each; the x axis is
logarithmic for a geometric sweep (``10..100000*10``) and the y axis when it spans 100× or more.
"""

from __future__ import annotations

__all__ = ["plot_sweep", "sweep_figure", "check_plot", "check_plot_path", "pyplot", "save_figure", "METRICS", "MAX_SERIES",
           "SIZES"]

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError, Location, Opt
from ..gen.registry import GeneratorSpec, get_generator
from .columns import COLUMNS, column_key, metric_key

# the --y metrics and their axis units: the sweep's column vocabulary (experiments/columns.py)
METRICS = {c.key: c.value for c in COLUMNS if c.value is not None}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
_DASHES = ("-", "--", "-.", ":")
UNITS = {c.key: c.unit for c in COLUMNS if c.value is not None}


MAX_SERIES = 6  # more lines than a slide's audience can tell apart
# figure size in inches and the font size: slide is 16:9; page fits a column of text
SIZES: dict[str, tuple[tuple[float, float], float]] = {"slide": ((10.0, 5.625), 13.0), "page": ((7.0, 4.5), 9.0)}


def _varying(spec: GeneratorSpec, points: Sequence[Mapping[str, Any]]) -> list[str]:
    return [p.name for p in spec.params if len({repr(pt[p.name]) for pt in points}) > 1]


def _values(points: Sequence[Mapping[str, Any]], name: str) -> int:
    return len({repr(pt[name]) for pt in points})


def _series(points: Sequence[Mapping[str, Any]], others: list[str]) -> int:
    return len({tuple(repr(pt[n]) for n in others) for pt in points})


def check_plot(spec: GeneratorSpec, points: Sequence[Mapping[str, Any]], path: str, *, x: str | None = None,
               metric: str = "cycles", size: str = "slide", max_series: int = MAX_SERIES) -> str:
    """Check a plot request against the sweep's points before running it; return the x parameter.
    ``metric`` and ``x`` may be any name the column vocabulary accepts (``reads`` ≡ ``dram_reads``).
    Without ``x``: the numeric parameter swept over the most values (the first of those tied)."""
    check_plot_path(path)
    if size not in SIZES:
        raise ConfigError((Opt("size", size), ": not a plot size"), loc=Location.of_option("size"), key="size",
                          hint=f"sizes: {', '.join(SIZES)}")
    metric_key(metric)
    varying = _varying(spec, points)
    if x is not None:
        x = column_key(x, [p.name for p in spec.params])
    if x is None:
        numeric = [n for n in varying if spec.param(n).kind is int]
        if not numeric:
            raise ConfigError((Opt("plot"), " needs a numeric parameter with several values"), key="plot",
                              hint=("e.g. ", Opt("n", "2..16")))
        x = max(numeric, key=lambda n: _values(points, n))  # max keeps the first of a tie
    elif x not in varying or spec.param(x).kind is not int:
        raise ConfigError((Opt("x", x), ": not a numeric parameter with several values in this sweep"), key="x",
                          hint=f"swept: {', '.join(varying) or 'nothing'}")
    others = [n for n in varying if n != x]
    count = _series(points, others)
    if count > max_series:
        raise ConfigError((Opt("plot"), f": this sweep makes {count} series ({' × '.join(others)}), more than the "
                           f"{max_series} a plot draws"), loc=Location.of_option("plot"), key="max_series",
                          hint=(f"sweep fewer values of {', '.join(others)}, pick another ", Opt("x"),
                                ", or ask for them all with ", Opt("max_series", count)))
    pyplot()
    return x


# -- the one way toym writes a picture (sweeps, toym memory) ---------------------------------------------
def check_plot_path(path: str) -> None:
    """A picture is PNG or SVG, by the file's extension."""
    if not path.lower().endswith((".png", ".svg")):
        raise ConfigError((Opt("plot", path), ": the file must end in .png or .svg"), key="plot")


def pyplot() -> Any:
    """matplotlib's pyplot, drawing off screen (Agg); an error naming the extra to install without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError((Opt("plot"), " needs matplotlib"), key="plot", hint="pip install 'toymachine[plot]'") from None
    return plt


def save_figure(fig: Any, path: str) -> None:
    """Write ``fig`` to ``path`` (an SVG without its date: the same sweep, the same bytes) and close it."""
    try:
        fig.savefig(path, metadata={"Date": None} if path.lower().endswith(".svg") else None)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}", hint="check that the directory exists") from None
    finally:
        pyplot().close(fig)


def _geometric(xs: Sequence[float]) -> bool:
    """x values that grow by a constant factor (≥ 2) — a ``a..b*k`` sweep — or span 100× or more."""
    xs = sorted(set(xs))
    if len(xs) < 2 or xs[0] <= 0:
        return False
    if xs[-1] / xs[0] >= 100:
        return True
    ratios = [b / a for a, b in zip(xs, xs[1:])]
    return len(xs) >= 3 and min(ratios) >= 2 and max(ratios) / min(ratios) < 1.01


_BOUND_DASHES = (":", (0, (6, 2, 1, 2)), (0, (1, 4)), (0, (8, 4)))


def _common(names: list[str], keys: list[tuple]) -> str:
    """What the series sharing one bound have in common: ``registers=3`` (or how many they are)."""
    same = [f"{n}={keys[0][i]}" for i, n in enumerate(names) if len({k[i] for k in keys}) == 1]
    return ", ".join(same) if same else f"{len(keys)} series"


def _log_x(ax, xs: list) -> None:
    """A log x axis labelled with the swept values themselves (base 2 for a doubling sweep)."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ratios = {round(b / a, 6) for a, b in zip(xs, xs[1:])}
    ax.set_xscale("log", base=2 if ratios == {2.0} else 10)
    if len(xs) <= 12:
        ax.xaxis.set_major_locator(FixedLocator(xs))
        ax.xaxis.set_minor_locator(NullLocator())
        formatter = ScalarFormatter()
        formatter.set_scientific(False)
        ax.xaxis.set_major_formatter(formatter)


def plot_sweep(rows, generator: str | GeneratorSpec, path: str, *, x: str | None = None,
               metric: str = "cycles", size: str = "slide", max_series: int = MAX_SERIES) -> None:
    """Draw ``metric`` against the swept parameter ``x`` (default: the numeric one with the most values) to
    ``path``, PNG or SVG by its extension. Needs matplotlib."""
    save_figure(sweep_figure(rows, generator, path, x=x, metric=metric, size=size, max_series=max_series), path)


def sweep_figure(rows, generator: str | GeneratorSpec, path: str = "plot.png", *, x: str | None = None,
                 metric: str = "cycles", size: str = "slide", max_series: int = MAX_SERIES):
    """The figure ``plot_sweep`` saves (a matplotlib ``Figure``; the caller closes it)."""
    spec = get_generator(generator) if isinstance(generator, str) else generator
    x = check_plot(spec, [r.params for r in rows], path, x=x, metric=metric, size=size, max_series=max_series)
    metric = metric_key(metric)
    if any(METRICS[metric](r) is None for r in rows):
        raise ConfigError((Opt("y", metric), ": this sweep does not measure it"), key="y",
                          hint=("sram_peak, flops, memory_peak and onchip_peak need a tile generator; time_s a machine "
                                "with a clock; mxu_cycles, vpu_cycles, mxu_utilization a machine with units "
                                "(e.g. ", Opt("machine", "tpu-v5e"), ")"))
    plt = pyplot()
    others = [n for n in _varying(spec, [r.params for r in rows]) if n != x]
    series: dict[tuple, list] = {}
    for r in rows:
        series.setdefault(tuple(r.params[n] for n in others), []).append(r)
    figsize, font = SIZES[size]
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    drawn: dict[tuple, str] = {}  # (xs, ys) → the label of the first series that drew them
    bounds: dict[tuple, list[tuple]] = {}  # (xs, bound ys) → keys of the series with that bound
    for k, (key, members) in enumerate(series.items()):
        members = sorted(members, key=lambda r: r.params[x])
        label = ", ".join(f"{n}={v}" for n, v in zip(others, key)) or spec.name
        xs = tuple(r.params[x] for r in members)
        ys = tuple(METRICS[metric](r) for r in members)
        same = drawn.setdefault((xs, ys), label)
        if same != label:
            label += f" (= {same})"
        ax.plot(xs, ys, marker=_MARKERS[k % len(_MARKERS)], linestyle=_DASHES[k % len(_DASHES)],
                markersize=max(3.0, 8.0 - 1.5 * (k % 4)), label=label)
        if metric == "traffic" and all(r.bound for r in members):
            bounds.setdefault((xs, tuple(r.bound.traffic for r in members)), []).append(key)
    for j, ((xs, ys), keys) in enumerate(bounds.items()):
        ax.plot(xs, ys, linestyle=_BOUND_DASHES[j % len(_BOUND_DASHES)], color="black", linewidth=1.2,
                label="lower bound" if len(bounds) == 1 else f"lower bound ({_common(others, keys)})")
    if _geometric([r.params[x] for r in rows]):
        _log_x(ax, sorted({r.params[x] for r in rows}))
    ys_all = [v for v in (METRICS[metric](r) for r in rows) if v is not None]
    if ys_all and min(ys_all) > 0 and max(ys_all) / min(ys_all) >= 100:
        ax.set_yscale("log")
    ax.set_xlabel(x, fontsize=font)
    unit = UNITS[metric]
    ax.set_ylabel(metric if unit in ("", metric) else f"{metric} ({unit})", fontsize=font)
    ax.set_title(f"toym sweep {spec.name}: {metric} against {x}", fontsize=font * 1.1)
    ax.tick_params(labelsize=font * 0.9)
    ax.grid(True, alpha=0.3)
    fig.legend(loc="outside right upper", fontsize=font * 0.85, frameon=False)  # beside the axes, never over a line
    return fig
