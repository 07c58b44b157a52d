"""Confidence intervals use the t quantile of the real n and the sample std; diverged runs are counted, not averaged."""

import math

import numpy as np
import pytest

from src.stats import in_grid, mean_ci, results_table, summarise


def test_mean_ci_by_hand():
    mean, half, n = mean_ci([0.70, 0.80, 0.90])
    # s = 0.1 (ddof 1), t_{0.975, 2} = 4.3027: half-width = 4.3027 * 0.1 / sqrt(3)
    assert (mean, n) == (pytest.approx(0.8), 3)
    assert half == pytest.approx(4.302653 * 0.1 / math.sqrt(3), rel=1e-5)
    # not the released code's fixed t = 2.667 with ddof 0
    assert half != pytest.approx(2.667 * np.std([0.7, 0.8, 0.9]) / math.sqrt(3), rel=1e-2)


def test_single_trial_has_no_interval():
    mean, half, n = mean_ci([0.5])
    assert mean == 0.5 and math.isnan(half) and n == 1


def result(k, trial, value, status="ok", task="rt_sentiment", size=50, recipe="paper", head="mean"):
    condition = {"task": task, "size": size, "k": k, "trial": trial, "scheme": "progressive", "recipe": recipe, "head": head}
    return {"condition": condition, "status": status, "metric": "accuracy", "scores": {} if status != "ok" else {"accuracy": value}}


def test_diverged_runs_are_excluded_from_means_but_counted():
    table = results_table([result(0, 0, 0.6), result(0, 1, 0.7), result(0, 2, None, status="diverged")])
    assert len(table) == 3 and table["value"].isna().sum() == 1
    row = summarise(table, ["task", "size", "k"]).iloc[0]
    assert row["mean"] == pytest.approx(0.65) and row["n"] == 2 and row["diverged"] == 1


def test_in_grid_drops_runs_the_params_no_longer_ask_for():
    runs = [result(0, 0, 0.6), result(6, 0, 0.8), result(0, 2, 0.5), result(0, 0, 0.7, size=500), result(0, 0, 0.7, recipe="authors_code")]
    grid = {"tasks": ["rt_sentiment"], "sizes": [50], "ks": [0], "trials": 2}
    kept = in_grid(results_table(runs), grid, "paper", "mean")
    assert kept[["k", "trial", "size"]].values.tolist() == [[0, 0, 50]]
