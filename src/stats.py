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


def summarise(table: pd.DataFrame, by: list[str], carry: tuple[str, ...] = ()) -> pd.DataFrame:
    """Mean, CI bounds, std, n and the number of diverged runs per group of a long table
    (`carry`: columns constant within a group, kept as they are).

    Diverged runs are excluded from the mean and CI but counted, never silently dropped.
    """
    rows = []
    for key, group in table.groupby(by, sort=True, dropna=False):
        ok = group[group["status"] == "ok"]
        mean, half, n = mean_ci(ok["value"])
        std = float(ok["value"].std(ddof=1)) if n > 1 else math.nan
        carried = {column: group[column].iloc[0] for column in carry}
        rows.append({**dict(zip(by, key)), **carried, "mean": mean, "ci_low": mean - half, "ci_high": mean + half, "std": std, "n": n, "diverged": int((group["status"] != "ok").sum())})
    return pd.DataFrame(rows)


def results_table(results: list[dict], study: str) -> pd.DataFrame:
    """The long-form table of every run of `study`: one row per (condition, metric), with
    its status and the condition's slug (src/condition.py names it; nothing re-derives it).

    A diverged run has no scores; it still gets one row (value NaN) per metric of its
    task, so it is counted wherever its siblings are.
    """
    rows = []
    for result in results:
        slug = Condition(**result["condition"]).slug
        for metric in result["scores"] or {result["metric"]: None}:
            value = result["scores"].get(metric, math.nan)
            rows.append({"study": study, **result["condition"], "slug": slug, "metric": metric, "headline": metric == result["metric"], "value": value, "status": result["status"], "majority_share": result.get("majority_share")})
    return pd.DataFrame(rows)


def flag_collapsed(table: pd.DataFrame, threshold: float = 0.99, margin: float = 0.05) -> pd.DataFrame:
    """Mark as `diverged` a run that predicts one class for >= `threshold` of the eval set
    while a sibling (same condition, another trial) that did not collapse scores at least
    `margin` higher on the headline metric: it failed to train, and its chance-level score
    must not be averaged into the curve. Where the siblings are at chance too (a task not
    learnable at this size), that is the result, not a failure."""
    key = ["study", "task", "size", "slug"]
    runs = table[table["headline"]]
    collapsed = (runs["majority_share"].fillna(0) >= threshold) & (runs["status"] == "ok")
    learned = runs["value"].where(~collapsed & (runs["status"] == "ok"))
    best_sibling = learned.groupby([runs[c] for c in key]).transform("max")
    failed = runs.loc[collapsed & (best_sibling >= runs["value"] + margin), [*key, "trial"]]
    flagged = table[[*key, "trial"]].merge(failed.assign(failed=True), how="left", on=[*key, "trial"])["failed"].fillna(False).to_numpy(dtype=bool)
    return table.assign(status=table["status"].where(~flagged, "diverged"))


def plain(table: pd.DataFrame, params: dict, unique: list[str]) -> pd.DataFrame:
    """Rows of unmodified conditions (default epochs, no lr multiplier, no kept LayerNorm,
    no intermediate task), from whichever study ran them, each once by `unique`."""
    default_epochs = table["size"].map(lambda size: epochs_for(params["train"], size))
    keep = (table["lr_multiplier"] == 1.0) & ~table["keep_layernorm"].astype(bool) & table["intermediate_task"].isna() & (table["epochs"] == default_epochs)
    return table[keep].drop_duplicates(unique)


def full_model_weights(weights: pd.DataFrame, params: dict, num_layers: int) -> pd.DataFrame:
    """Weight-change rows of the unmodified full model (k = L: nothing reinitialised, pure
    finetuning), each (task, size, trial, layer, sublayer) once."""
    full = weights[(weights["scheme"] == "progressive") & (weights["k"] == num_layers)]
    return plain(full, params, ["task", "size", "trial", "layer", "sublayer"])
