"""Statistics of a layer curve (a score per k = 0..L): where it first reaches a share of its
gain, its steepest step, how straight it is. Used by the claims and measured by the
calibration simulation (tools/calibrate/curves.py) as they are."""

from __future__ import annotations

import math

import numpy as np


def first_reaching(values_by_k, fraction: float = 0.9) -> float:
    """First index whose gain over index 0 reaches `fraction` of the gain at the last index (L);
    NaN when that gain is not positive, since "90% of no gain" is undefined."""
    gains = np.asarray(values_by_k, dtype=float)
    gains = gains - gains[0]
    if not gains[-1] > 0:
        return math.nan
    target = fraction * gains[-1]
    return float(np.argmax((gains >= target) | np.isclose(gains, target)))


def drop_point(curves):
    """The k whose addition gains most (the curve's steepest step), 1..L, of a curve or of each row."""
    return np.argmax(np.diff(np.asarray(curves, dtype=float), axis=-1), axis=-1) + 1.0


def linear_r2(curve) -> float:
    y = np.asarray(curve, dtype=float)
    x = np.arange(len(y))
    total = ((y - y.mean()) ** 2).sum()
    return 1 - ((y - np.polyval(np.polyfit(x, y, 1), x)) ** 2).sum() / total if total > 0 else math.nan
