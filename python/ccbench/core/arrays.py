"""Array helpers shared by the run page and the suite figures.

:func:`unique` and :func:`quantiles` are ``np.unique`` and ``np.quantile``
(its default, linear method) of a 1-d array, value for value, without their
cost here: NumPy 2's ``np.unique``, which ``np.quantile`` calls, asks
``np.ma.is_masked`` first, and that imports ``numpy.ma`` (15–45 ms, more than
drawing a small run's page) into a command that otherwise never needs it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["quantiles", "unique"]


def unique(values: Any) -> np.ndarray:
    """The sorted distinct values of ``values`` (flattened), NaNs kept once at the end, as
    ``np.unique`` gives them."""
    a = np.sort(np.asarray(values).ravel())
    if a.size == 0:
        return a
    keep = np.empty(a.size, dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    if a.dtype.kind in "fc":  # NaNs sort last and never equal each other: keep the first only
        nan = np.isnan(a)
        if nan[-1]:
            first = int(np.argmax(nan))
            keep[first] = True
            keep[first + 1:] = False
    return a[keep]


def quantiles(values: Any, probs: Any) -> np.ndarray:
    """``np.quantile(values, probs)`` with its default (linear) method, computed as NumPy does so
    that the results are the same bits: rank ``(n - 1)·p``, interpolated from the lower neighbour
    below a fraction of 0.5 and from the upper one from 0.5; NaN if ``values`` holds a NaN."""
    a = np.sort(np.asarray(values, dtype=float).ravel())
    if a.size == 0:
        raise ValueError("quantiles of no values")
    p = np.asarray(probs, dtype=float)
    rank = (a.size - 1) * p
    lo = np.floor(rank)
    hi = lo + 1
    lo[rank >= a.size - 1] = hi[rank >= a.size - 1] = -1  # at or past the top: the largest value
    lo[rank < 0] = hi[rank < 0] = 0
    gamma = rank - lo
    below, above = a[lo.astype(np.intp)], a[hi.astype(np.intp)]
    diff = above - below
    out = below + diff * gamma
    np.subtract(above, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    if np.isnan(a[-1]):
        out[:] = np.nan
    return out
