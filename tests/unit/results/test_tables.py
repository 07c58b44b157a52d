"""src/results/tables.py: diverged runs are counted, not averaged; collapsed runs are a result:
averaged and counted; every run names its references; each task's epoch curves read its own metric."""

import pytest

from src.artefacts.run_result import RunResult
from src.conditions.condition import Condition
from src.results.tables import results_table, summarise
from tests.support import stub_result


def run_result(condition: dict, status: str, metric: str, scores: dict, majority_share) -> RunResult:
    """A RunResult with what the tables read; the rest (losses, weights, seeds) left empty."""
    return stub_result(condition, status=status, metric=metric, scores=scores, majority_share=majority_share)


def result(k, trial, value, status="ok", majority_share=0.5):
    condition = Condition("rt_sentiment", 50, trial, 3, k=k).as_dict()
    scores = {} if status != "ok" else {"accuracy": value}
    return run_result(condition, status, "accuracy", scores, majority_share)


def test_diverged_runs_are_excluded_from_means_but_counted():
    table = results_table(
        [result(0, 0, 0.6), result(0, 1, 0.7), result(0, 2, None, status="diverged")], "progressive", 6
    )
    assert len(table) == 3 and table["value"].isna().sum() == 1
    row = summarise(table, ["task", "size", "slug"]).iloc[0]
    assert row["mean"] == pytest.approx(0.65) and row["n"] == 2 and row["diverged"] == 1


def test_a_collapsed_run_stays_in_the_mean_whatever_its_siblings_scored():
    # trial 1 predicts one class while trial 0 learned: a poor training subset is an outcome, not a failure
    table = results_table(
        [result(0, 0, 0.8), result(0, 1, 0.5, majority_share=1.0), result(0, 2, 0.7, majority_share=0.989)],
        "progressive",
        6,
    )
    assert table["status"].tolist() == ["ok", "ok", "ok"] and table["collapsed"].tolist() == [False, True, False]
    row = summarise(table, ["task", "size", "slug"]).iloc[0]
    assert row["mean"] == pytest.approx((0.8 + 0.5 + 0.7) / 3) and (row["n"], row["collapsed"], row["diverged"]) == (
        3,
        1,
        0,
    )


def test_every_run_names_its_references_by_slug():
    table = results_table([result(3, 0, 0.8)], "progressive", 6)
    assert table[["slug", "ref_full", "ref_scratch"]].iloc[0].tolist() == ["k3_e3", "k6_e3", "k0_e3"]


def test_every_metric_a_task_declares_is_summarised_with_one_headline():
    # STS-B declares Pearson and Spearman; GLUE reports both, so every summary has both
    condition = Condition("stsb", 50, 0, 3, k=6).as_dict()
    results = [
        run_result(
            {**condition, "trial": t}, "ok", "pearson", {"pearson": 0.8 + t / 100, "spearman": 0.7 + t / 100}, None
        )
        for t in range(3)
    ]
    table = results_table(results, "progressive", 6)
    points = summarise(table, ["task", "size", "slug", "metric"], carry=("headline",)).set_index("metric")
    assert points.loc["pearson", "mean"] == pytest.approx(0.81) and points.loc["spearman", "mean"] == pytest.approx(
        0.71
    )
    assert points["headline"].to_dict() == {"pearson": True, "spearman": False}
    assert not table["collapsed"].any()  # regression runs have no majority class


def test_epoch_curves_give_each_task_its_own_headline_metric():
    # Tamkin et al. App. D runs SST-2 and CoLA in one epochs study: one metric for both crashed the
    # aggregate (a KeyError 'mcc' on SST-2's scores) after every run had trained
    from src.results.aggregate import epoch_curves

    def logged(task, metric, scores):
        condition = Condition(task, 50, 0, 2, k=6).as_dict()
        epochs = [{"epoch": e, "loss": 1.0 / e, "scores": scores} for e in (1, 2)]
        return stub_result(condition, metric=metric, scores=scores, epoch_eval=epochs)

    curves = epoch_curves(
        [logged("sst2", "accuracy", {"accuracy": 0.8}), logged("cola", "mcc", {"mcc": 0.3, "accuracy": 0.7})]
    )
    quantities = curves.groupby("task")["quantity"].agg(lambda q: sorted(set(q))).to_dict()
    assert quantities == {"cola": ["eval_loss", "mcc"], "sst2": ["accuracy", "eval_loss"]}
    assert epoch_curves([]).empty  # nothing logged: no rows (the figure says so), not a crash
