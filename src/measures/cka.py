"""Linear CKA between two representations of the same examples, with the unbiased HSIC
estimator (Song et al. 2012), as Nguyen, Raghu & Kornblith (2021) use it.

The plain (biased) HSIC estimator has a positive bias of order 1/n that does not shrink
with the features' width: two independent 32 x 384 Gaussian matrices get a biased CKA of
about 0.2 (tests/unit/measures/test_measures.py shows both). The unbiased estimator is centred on 0
for independent representations at any n >= 4.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class Side:
    """One representation as the feature-space HSIC reads it: its centred [n, features] matrix
    in float64, each row's squared norm (the Gram's diagonal), its column sums (X^T 1, so that
    the Gram's row sums are X (X^T 1)) and its unbiased HSIC with itself."""

    x: np.ndarray
    row_norms: np.ndarray
    column_sums: np.ndarray
    self_hsic: float
    scale: float  # the Gram's largest |entry|, its largest diagonal one (a Gram is PSD): what "tiny" is scaled by

    @classmethod
    def of(cls, features: np.ndarray) -> Side:
        x = np.asarray(features, dtype=np.float64)
        x = x - x.mean(0)
        n = x.shape[0]
        if n < 4:
            raise ValueError(f"the unbiased HSIC needs at least 4 examples, got {n}")
        side = cls(x, np.einsum("ij,ij->i", x, x), x.sum(0), 0.0, 0.0)
        return replace(side, self_hsic=unbiased_hsic(side, side), scale=float(side.row_norms.max()))


def unbiased_hsic(a: Side, b: Side) -> float:
    """Song et al. (2012), eq. 5, of the linear Grams K = X X^T and L = Y Y^T with their
    diagonals zeroed, from the features alone in O(n d^2), no n x n Gram:
    tr(K L) = ||X^T Y||_F^2 - sum_i |x_i|^2 |y_i|^2, 1^T K 1 = |X^T 1|^2 - sum_i |x_i|^2, and
    1^T K L 1 = (K 1) . (L 1) with K 1 = X (X^T 1) - |x_i|^2."""
    n = a.x.shape[0]
    trace = float(np.sum((a.x.T @ b.x) ** 2)) - float(a.row_norms @ b.row_norms)
    k_rows, l_rows = a.x @ a.column_sums - a.row_norms, b.x @ b.column_sums - b.row_norms
    sums = float(k_rows.sum()) * float(l_rows.sum()) / ((n - 1) * (n - 2))
    cross = 2.0 * float(k_rows @ l_rows) / (n - 2)
    return (trace + sums - cross) / (n * (n - 3))


def linear_cka(x: np.ndarray | Side, y: np.ndarray | Side) -> float:
    """CKA of [n, features] matrices (or their prepared Sides) with linear kernels, in float64.
    The features are centred first (the estimator is then also exact for representations that
    differ by a shift). A representation with no variation across examples (a constant) shares
    no variation with any other, so its CKA is defined as 0, not 0/0 = NaN."""
    a, b = (v if isinstance(v, Side) else Side.of(v) for v in (x, y))
    if a.x.shape[0] != b.x.shape[0]:
        raise ValueError(f"CKA compares the same examples: {a.x.shape[0]} vs {b.x.shape[0]} rows")
    # A constant representation gives 0 up to rounding; the unbiased self-HSIC of one with
    # variance is positive, so anything this small (relative to the Gram's scale) is "none".
    tiny = 1e-12 * max(a.scale**2, b.scale**2, 1e-300)
    if a.self_hsic <= tiny or b.self_hsic <= tiny:
        return 0.0
    return unbiased_hsic(a, b) / float(np.sqrt(a.self_hsic * b.self_hsic))


def layer_cka(finetuned: np.ndarray, pretrained: np.ndarray) -> list[float]:
    """CKA of every layer of [examples, layers, hidden] features with the same layer of the other."""
    sides = pretrained_sides(pretrained)
    return [round(linear_cka(finetuned[:, i], sides[i]), 6) for i in range(finetuned.shape[1])]


_last_pretrained: list[tuple[np.ndarray, list[Side]]] = []  # the last features prepared, and their Sides


def pretrained_sides(features: np.ndarray) -> list[Side]:
    """Each layer of [examples, layers, hidden] features prepared for linear_cka; the last
    features' Sides are kept, so every run of one task in a process (they all compare with the
    same pretrained features) prepares them once. Reused only for equal features (one exact
    comparison, a fraction of what preparing them costs)."""
    if _last_pretrained and np.array_equal(_last_pretrained[0][0], features):
        return _last_pretrained[0][1]
    sides = [Side.of(features[:, i]) for i in range(features.shape[1])]
    _last_pretrained[:] = [(features.copy(), sides)]
    return sides
