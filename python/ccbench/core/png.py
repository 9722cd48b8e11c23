"""Figures to image files: what every plot of ccbench is written with.

matplotlib's ``savefig`` writes RGBA at zlib level 6. Our figures are
opaque (white background), so the alpha channel is a quarter of the data
for nothing: as RGB at level 3 a run's figure encodes in about 60 % of the
time (≈30 instead of ≈50 ms for an 1100 × 605 figure) into a file ~5 %
smaller, with the same pixels. Other formats (a path ending in .svg or
.pdf) go through ``savefig``.

Figures of one size are drawn with one Agg renderer for the whole process
(a sweep's worker draws a figure per run): matplotlib caches the size of
each text it lays out per renderer, so tick labels, titles and legends
measured for one figure are not measured again for the next, and the
pixel buffer is not allocated again — about 15 % of a run's figure, with
the same pixels.
"""

from __future__ import annotations

import io
import os
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["save_figure", "write_figure"]

LEVEL = 3
#: Renderers kept, one per (width, height, dpi): a sweep draws one or two sizes of per-run figure.
_RENDERERS = 4


def write_figure(fig: Any, target: str | os.PathLike[str] | io.IOBase, dpi: float) -> None:
    """Render ``fig`` at ``dpi`` into ``target``: a path (its suffix picks the format) or a binary file (PNG)."""
    if not isinstance(target, io.IOBase) and os.path.splitext(target)[1].lower() not in ("", ".png"):
        fig.savefig(target, dpi=dpi)
        return
    import numpy as np
    from PIL import Image

    old = fig.dpi
    fig.set_dpi(dpi)
    try:
        canvas = _canvas_class()(fig)
        canvas.draw()
        rgba = np.asarray(canvas.buffer_rgba())
        image = Image.fromarray(rgba[..., :3] if bool((rgba[..., 3] == 255).all()) else rgba)  # a copy
    finally:
        fig.set_dpi(old)
    image.save(target, format="png", compress_level=LEVEL, dpi=(dpi, dpi))


@cache
def _canvas_class() -> type:
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg

    renderers: dict[tuple[int, int, float], RendererAgg] = {}

    class SharedRendererCanvas(FigureCanvasAgg):  # type: ignore[misc]
        """An Agg canvas that draws with the process's renderer of its size and dpi (``draw`` clears it)."""

        def get_renderer(self) -> RendererAgg:
            w, h = self.get_width_height(physical=True)
            key = (w, h, self.figure.dpi)
            renderer = renderers.get(key)
            if renderer is None:
                if len(renderers) >= _RENDERERS:
                    renderers.pop(next(iter(renderers)))
                renderer = renderers[key] = RendererAgg(w, h, self.figure.dpi)
            self.renderer = renderer
            return renderer

    return SharedRendererCanvas


def save_figure(fig: Any, path: Path, dpi: int) -> None:
    """Save a matplotlib figure so that readers see the old or the new file, never a part."""
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")  # the suffix picks the format
    try:
        write_figure(fig, tmp, dpi)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
