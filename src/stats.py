"""Means and 95% confidence intervals over trials (paper App. B).

The half-width is t_{0.975, n-1} * s / sqrt(n) with the sample standard deviation
(ddof=1) and the t quantile of the actual number of trials. (The paper's released
code used a fixed t = 2.667 with ddof=0 whatever n was; we do not.)
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats


def mean_ci(values, confidence: float = 0.95) -> tuple[float, float, int]:
    """(mean, half-width, n); the half-width is NaN for a single trial: one run has no spread."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return math.nan, math.nan, 0
    if n == 1:
        return float(x[0]), math.nan, 1
    half = stats.t.ppf(0.5 + confidence / 2, df=n - 1) * x.std(ddof=1) / math.sqrt(n)
    return float(x.mean()), float(half), n


def summarise(table: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean, CI bounds, n and the number of diverged runs per group of a long results table.

    Diverged runs are excluded from the mean and CI but counted, never silently dropped.
    """
    rows = []
    for key, group in table.groupby(by, sort=True):
        ok = group[group["status"] == "ok"]
        mean, half, n = mean_ci(ok["value"])
        rows.append({**dict(zip(by, key)), "mean": mean, "ci_low": mean - half, "ci_high": mean + half, "n": n, "diverged": int((group["status"] != "ok").sum())})
    return pd.DataFrame(rows)


def results_table(results: list[dict]) -> pd.DataFrame:
    """The long-form table of every run: one row per (condition, metric), plus status.

    A diverged run has no scores; it still gets one row (value NaN) per metric of its
    task, so it is counted wherever its siblings are.
    """
    rows = []
    for result in results:
        metric_names = result["scores"] or {result["metric"]: None}
        for metric in metric_names:
            value = result["scores"].get(metric, math.nan)
            rows.append({**result["condition"], "metric": metric, "value": value, "status": result["status"]})
    return pd.DataFrame(rows)


def in_grid(table: pd.DataFrame, grid: dict, recipe: str, head: str) -> pd.DataFrame:
    """Only the runs the current params ask for: outputs of grid cells removed from
    params.yaml stay on disk (DVC does not delete them) and must not leak into curves."""
    keep = (
        table["task"].isin(grid["tasks"])
        & table["size"].isin(grid["sizes"])
        & table["k"].isin(grid["ks"])
        & (table["trial"] < grid["trials"])
        & (table["recipe"] == recipe)
        & (table["head"] == head)
    )
    return table[keep]
