"""ccbench.core.arrays: the page's and the suite figures' array helpers, value for value NumPy's."""

from __future__ import annotations

import numpy as np
import pytest

from ccbench.core.arrays import quantiles, unique


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_unique_is_numpys_unique(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ints = rng.integers(0, 20, 200)
    floats = np.round(rng.normal(size=300), 1)
    with_nan = np.concatenate([floats, [np.nan, np.nan, np.nan, -np.inf, np.inf]])
    rng.shuffle(with_nan)
    for a in (ints, floats, with_nan, floats.reshape(30, 10), np.array([5.0]), np.array([np.nan, np.nan])):
        got, want = unique(a), np.unique(a)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)  # NaN equals NaN here: one NaN, at the end, in both


def test_unique_of_nothing_is_empty() -> None:
    assert unique(np.array([], dtype=float)).size == 0
    assert unique([]).size == 0


def test_unique_leaves_its_input_alone() -> None:
    a = np.array([3.0, 1.0, 3.0, 2.0])
    assert unique(a).tolist() == [1.0, 2.0, 3.0]
    assert a.tolist() == [3.0, 1.0, 3.0, 2.0]


PROBS = [0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0, 0.333, 0.999]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_quantiles_are_numpys_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n in (1, 2, 3, 7, 100, 1001):
        for a in (rng.normal(50, 20, n), rng.exponential(3.0, n), np.round(rng.normal(size=n), 1),
                  rng.integers(0, 5, n).astype(float), np.full(n, 2.5)):
            got, want = quantiles(a, PROBS), np.quantile(a, PROBS)
            assert got.tobytes() == want.tobytes(), (n, a[:5], got, want)


def test_quantiles_of_values_with_nan_are_nan_and_of_nothing_an_error() -> None:
    assert np.isnan(quantiles([1.0, np.nan, 3.0], [0.0, 0.5, 1.0])).all()
    assert quantiles([1.0, 2.0, 4.0], [0.5]).tolist() == [2.0]
    with pytest.raises(ValueError):
        quantiles([], [0.5])
