"""Figures are written as opaque RGB PNGs with the pixels savefig would draw (png.py)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from PIL import Image

from ccbench.core.png import write_figure


def _figure() -> Figure:
    fig = Figure(figsize=(4, 3), layout="constrained")
    ax = fig.subplots()
    ax.plot([0, 1, 2, 3], [1, 3, 2, 5], label="a line")
    ax.fill_between([0, 1, 2], [0, 1, 0], [1, 2, 1], alpha=0.3)
    ax.set_title("a title")
    ax.legend()
    return fig


def test_pixels_equal_savefigs_without_the_alpha_channel(tmp_path: Path) -> None:
    reference = io.BytesIO()
    _figure().savefig(reference, format="png", dpi=73)
    ref = np.asarray(Image.open(reference))
    write_figure(_figure(), tmp_path / "f.png", dpi=73)
    with Image.open(tmp_path / "f.png") as img:
        assert img.mode == "RGB"
        assert [round(d) for d in img.info["dpi"]] == [73, 73]
        ours = np.asarray(img)
    assert ref.shape[:2] == ours.shape[:2] == (219, 292)
    assert (ref[..., 3] == 255).all()
    assert (ref[..., :3] == ours).all()


def test_a_transparent_figure_keeps_its_alpha_and_other_suffixes_use_their_format(tmp_path: Path) -> None:
    fig = _figure()
    fig.patch.set_alpha(0.0)
    buf = io.BytesIO()
    write_figure(fig, buf, dpi=50)
    assert Image.open(io.BytesIO(buf.getvalue())).mode == "RGBA"
    assert fig.dpi == 100  # the figure's own dpi is left as it was
    write_figure(_figure(), tmp_path / "f.svg", dpi=50)
    assert (tmp_path / "f.svg").read_text().lstrip().startswith("<?xml")


def test_figures_drawn_one_after_another_have_the_pixels_each_has_alone(tmp_path: Path) -> None:
    """One renderer serves every figure of a size: nothing of one figure (pixels, text sizes) shows in the next."""
    def other() -> Figure:
        fig = Figure(figsize=(4, 3), layout="constrained")
        ax = fig.subplots()
        ax.bar([0, 1], [5e6, 2e6], label="bars, and a longer legend label")
        ax.set_title("another title", fontsize="large")
        ax.legend()
        return fig

    alone = []
    for make in (_figure, other):
        buf = io.BytesIO()
        make().savefig(buf, format="png", dpi=73)
        alone.append(np.asarray(Image.open(buf))[..., :3])
    for i, make in enumerate((_figure, other, _figure, other)):
        write_figure(make(), tmp_path / f"{i}.png", dpi=73)
        with Image.open(tmp_path / f"{i}.png") as img:
            assert (np.asarray(img) == alone[i % 2]).all(), i
