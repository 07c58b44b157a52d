"""Linear CKA between two representations of the same examples, with the unbiased HSIC
estimator (Song et al. 2012), as Nguyen, Raghu & Kornblith (2021) use it.

The plain (biased) HSIC estimator has a positive bias of order 1/n that does not shrink
with the features' width: two independent 32 x 384 Gaussian matrices get a biased CKA of
about 0.2 (tests/unit/measures/test_measures.py shows both). The unbiased estimator is centred on 0
for independent representations at any n >= 4.
"""

from __future__ import annotations

import numpy as np


def unbiased_hsic(k: np.ndarray, l: np.ndarray) -> float:  # noqa: E741 - the paper's name for the second Gram
    """Song et al. (2012), eq. 5: an unbiased estimate of HSIC from two n x n Gram matrices."""
    n = k.shape[0]
    if n < 4:
        raise ValueError(f"the unbiased HSIC needs at least 4 examples, got {n}")
    k, l = k.copy(), l.copy()  # noqa: E741
    np.fill_diagonal(k, 0.0)
    np.fill_diagonal(l, 0.0)
    trace = float(np.sum(k * l))
    sums = float(k.sum()) * float(l.sum()) / ((n - 1) * (n - 2))
    cross = 2.0 * float(k.sum(0) @ l.sum(1)) / (n - 2)
    return (trace + sums - cross) / (n * (n - 3))


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """CKA of [n, features] matrices with linear kernels, in float64. The features are
    centred first (the estimator is then also exact for representations that differ by a
    shift). A representation with no variation across examples (a constant) shares no
    variation with any other, so its CKA is defined as 0, not 0/0 = NaN."""
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"CKA compares the same examples: {x.shape[0]} vs {y.shape[0]} rows")
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x, y = x - x.mean(0), y - y.mean(0)
    k, l = x @ x.T, y @ y.T  # noqa: E741
    self_x, self_y = unbiased_hsic(k, k), unbiased_hsic(l, l)
    # A constant representation gives 0 up to rounding; the unbiased self-HSIC of one with
    # variance is positive, so anything this small (relative to the Gram's scale) is "none".
    tiny = 1e-12 * max(float(np.abs(k).max()) ** 2, float(np.abs(l).max()) ** 2, 1e-300)
    if self_x <= tiny or self_y <= tiny:
        return 0.0
    return unbiased_hsic(k, l) / float(np.sqrt(self_x * self_y))


def layer_cka(finetuned: np.ndarray, pretrained: np.ndarray) -> list[float]:
    """CKA of every layer of [examples, layers, hidden] features with the same layer of the other."""
    return [round(linear_cka(finetuned[:, i], pretrained[:, i]), 6) for i in range(finetuned.shape[1])]
