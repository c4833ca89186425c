"""A sweep's plot is made for a slide: the swept parameter along x, at most six series unless asked, the
legend beside the axes (never over a line), 16:9 by default."""

import struct

import pytest

pytest.importorskip("matplotlib")

from toymachine.errors import ConfigError  # noqa: E402
from toymachine.experiments.plot import MAX_SERIES, SIZES, check_plot, sweep_figure  # noqa: E402
from toymachine.experiments.sweep import expand_grid, sweep  # noqa: E402
from toymachine.gen.registry import get_generator  # noqa: E402

LECTURE = {"n": "4", "registers": "3..8", "schedule": "inner,outer,best"}
CROWDED = {"n": "2,4,8", "registers": "3..8", "schedule": "inner,outer,best"}  # 9 series against registers


def _png_size(path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("grid,want", [(LECTURE, "registers"), (CROWDED, "registers"),
                                       ({"n": "2,4,8", "registers": "3,6"}, "n")])
def test_the_default_x_is_the_parameter_swept_over_the_most_values(grid, want):
    spec = get_generator("matmul")
    points = expand_grid(spec, grid)
    counts = {name: len({p[name] for p in points}) for name in ("n", "registers")}
    assert check_plot(spec, points, "p.png", max_series=9) == want == max(counts, key=counts.get)


@pytest.mark.slow
def test_more_series_than_a_slide_holds_is_refused_unless_asked(toym, tmp_path):
    code, out, err = toym("sweep", "matmul", *[w for k, v in CROWDED.items() for w in (f"--{k}", v)],
                          "--plot", tmp_path / "p.png")
    assert code == 2 and out == "" and not (tmp_path / "p.png").exists()
    assert "9 series" in err and "--max-series 9" in err and "Traceback" not in err
    code, _, err = toym("sweep", "matmul", *[w for k, v in CROWDED.items() for w in (f"--{k}", v)],
                        "--plot", tmp_path / "p.png", "--max-series", "9")
    assert code == 0 and (tmp_path / "p.png").exists(), err
    with pytest.raises(ConfigError):
        check_plot(get_generator("matmul"), expand_grid(get_generator("matmul"), CROWDED), "p.png")
    assert MAX_SERIES == 6


@pytest.mark.slow
@pytest.mark.parametrize("size", sorted(SIZES))
def test_the_legend_sits_beside_the_axes(size):
    import matplotlib.pyplot as plt

    fig = sweep_figure(sweep("matmul", LECTURE), "matmul", size=size)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legend = fig.legends[0].get_window_extent(renderer)
        axes = fig.axes[0].get_window_extent(renderer)
        page = fig.bbox
        assert len(fig.legends[0].get_texts()) == 3
        assert legend.x0 >= axes.x1  # to the right of the axes: no line hidden under it
        assert page.x0 <= legend.x0 and legend.x1 <= page.x1 and page.y0 <= legend.y0 and legend.y1 <= page.y1
        assert fig.axes[0].get_xlabel() == "registers"
    finally:
        plt.close(fig)


@pytest.mark.slow
def test_the_default_plot_is_16_by_9(toym, tmp_path):
    args = [w for k, v in LECTURE.items() for w in (f"--{k}", v)]
    code, _, err = toym("sweep", "matmul", *args, "--plot", tmp_path / "slide.png")
    assert code == 0, err
    width, height = _png_size(tmp_path / "slide.png")
    assert abs(width / height - 16 / 9) < 0.01
    code, _, err = toym("sweep", "matmul", *args, "--plot", tmp_path / "page.png", "--size", "page")
    width, height = _png_size(tmp_path / "page.png")
    assert code == 0 and abs(width / height - 7 / 4.5) < 0.01
    code, _, err = toym("sweep", "matmul", *args, "--plot", tmp_path / "x.png", "--size", "poster")
    assert code == 2 and "--size poster" in err and "slide" in err
