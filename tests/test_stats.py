"""Confidence intervals use the t quantile of the real n and the sample std; diverged runs are
counted, not averaged; collapsed runs are a result: averaged and counted."""

import math

import numpy as np
import pytest

from src.condition import Condition
from src.stats import mean_ci, results_table, summarise


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


def result(k, trial, value, status="ok", majority_share=0.5):
    condition = Condition("rt_sentiment", 50, trial, 3, k=k).as_dict()
    return {"condition": condition, "status": status, "metric": "accuracy", "scores": {} if status != "ok" else {"accuracy": value}, "majority_share": majority_share}


def test_diverged_runs_are_excluded_from_means_but_counted():
    table = results_table([result(0, 0, 0.6), result(0, 1, 0.7), result(0, 2, None, status="diverged")], "progressive", 6)
    assert len(table) == 3 and table["value"].isna().sum() == 1
    row = summarise(table, ["task", "size", "slug"]).iloc[0]
    assert row["mean"] == pytest.approx(0.65) and row["n"] == 2 and row["diverged"] == 1


def test_a_collapsed_run_stays_in_the_mean_whatever_its_siblings_scored():
    # trial 1 predicts one class while trial 0 learned: a poor training subset is an outcome, not a failure
    table = results_table([result(0, 0, 0.8), result(0, 1, 0.5, majority_share=1.0), result(0, 2, 0.7, majority_share=0.989)], "progressive", 6)
    assert table["status"].tolist() == ["ok", "ok", "ok"] and table["collapsed"].tolist() == [False, True, False]
    row = summarise(table, ["task", "size", "slug"]).iloc[0]
    assert row["mean"] == pytest.approx((0.8 + 0.5 + 0.7) / 3) and (row["n"], row["collapsed"], row["diverged"]) == (3, 1, 0)


def test_every_run_names_its_references_by_slug():
    table = results_table([result(3, 0, 0.8)], "progressive", 6)
    assert table[["slug", "ref_full", "ref_scratch"]].iloc[0].tolist() == ["k3_e3", "k6_e3", "k0_e3"]


def test_every_metric_a_task_declares_is_summarised_with_one_headline():
    # STS-B declares Pearson and Spearman; GLUE reports both, so every summary has both
    condition = Condition("stsb", 50, 0, 3, k=6).as_dict()
    results = [{"condition": {**condition, "trial": t}, "status": "ok", "metric": "pearson", "scores": {"pearson": 0.8 + t / 100, "spearman": 0.7 + t / 100}, "majority_share": None} for t in range(3)]
    table = results_table(results, "progressive", 6)
    points = summarise(table, ["task", "size", "slug", "metric"], carry=("headline",)).set_index("metric")
    assert points.loc["pearson", "mean"] == pytest.approx(0.81) and points.loc["spearman", "mean"] == pytest.approx(0.71)
    assert points["headline"].to_dict() == {"pearson": True, "spearman": False}
    assert not table["collapsed"].any()  # regression runs have no majority class
