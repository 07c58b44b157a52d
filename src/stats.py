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

from src.condition import Condition
from src.params import epochs_for


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


COLLAPSE_SHARE = 0.99  # a run predicting one class for >= 99% of the eval set is "collapsed"


def summarise(table: pd.DataFrame, by: list[str], carry: tuple[str, ...] = ()) -> pd.DataFrame:
    """Mean, CI bounds, std, n, and the numbers of diverged and collapsed runs per group of a
    long table (`carry`: columns constant within a group, kept as they are).

    Only diverged runs (a training failure: non-finite loss) are left out of the mean and
    CI, and they are counted. Collapsed runs (one class predicted) are a real outcome: they
    are in the mean and CI, and counted so a reader sees how often it happens.
    """
    rows = []
    for key, group in table.groupby(by, sort=True, dropna=False):
        ok = group[group["status"] == "ok"]
        mean, half, n = mean_ci(ok["value"])
        std = float(ok["value"].std(ddof=1)) if n > 1 else math.nan
        carried = {column: group[column].iloc[0] for column in carry}
        collapsed = int(ok["collapsed"].fillna(False).astype(bool).sum()) if "collapsed" in ok else 0
        rows.append({**dict(zip(by, key)), **carried, "mean": mean, "ci_low": mean - half, "ci_high": mean + half, "std": std, "n": n, "diverged": int((group["status"] != "ok").sum()), "collapsed": collapsed})
    return pd.DataFrame(rows)


def results_table(results: list[dict], study: str, num_layers: int) -> pd.DataFrame:
    """The long-form table of every run of `study`: one row per (condition, metric), with
    its status, whether it collapsed, the condition's slug and the slugs of its references
    (src/condition.py names both; nothing re-derives them).

    A diverged run has no scores; it still gets one row (value NaN) per metric of its
    task, so it is counted wherever its siblings are.
    """
    rows = []
    for result in results:
        condition = Condition(**result["condition"])
        refs = {f"ref_{role}": ref.slug for role, ref in condition.references(num_layers).items()}
        share = result.get("majority_share")
        for metric in result["scores"] or {result["metric"]: None}:
            value = result["scores"].get(metric, math.nan)
            rows.append({
                "study": study, **result["condition"], "slug": condition.slug, "metric": metric, "headline": metric == result["metric"], "value": value,
                "status": result["status"], "majority_share": share, "collapsed": share is not None and share >= COLLAPSE_SHARE,
                "ref_full": refs["ref_full"], "ref_scratch": refs["ref_scratch"], "ref_baseline": refs.get("ref_baseline"),
            })
    return pd.DataFrame(rows)


def plain(table: pd.DataFrame, params: dict, unique: list[str]) -> pd.DataFrame:
    """Rows of unmodified conditions (default epochs, no lr multiplier, no kept LayerNorm,
    no intermediate task), from whichever study ran them, each once by `unique`."""
    default_epochs = table["size"].map(lambda size: epochs_for(params["train"], size))
    keep = (table["lr_multiplier"] == 1.0) & ~table["keep_layernorm"].astype(bool) & table["intermediate_task"].isna() & (table["epochs"] == default_epochs)
    return table[keep].drop_duplicates(unique)


def full_model(table: pd.DataFrame, params: dict, unique: list[str]) -> pd.DataFrame:
    """Rows of the unmodified full model (k = L: nothing reinitialised, pure finetuning),
    each once by `unique`: the conditions that are their own `full` reference."""
    return plain(table[table["slug"] == table["ref_full"]], params, unique)
