"""The claims' typed evidence: a runs table read once into conditions (plain or modified by the table's flag,
each with its Condition, references and runs), a progressive curve by k, and the probe and weight-change tables
by task (and size)."""

import math

import numpy as np
import pandas as pd
import pytest

from src.claims.evidence import CollapseCount, collapse_counts, grouped, runs_flagged
from tests.fake_evidence import RISING, Builder, probe_table


def test_a_runs_table_is_read_into_plain_and_modified_conditions_with_their_runs_and_references():
    b = Builder().curve(RISING, trials=2)
    b.add("k0_lr5x", 0.6, trial=0, k=0, lr_multiplier=5.0, plain=False, ref_baseline="k0", study="lr")
    b.add("k0_lr5x", math.nan, trial=1, k=0, lr_multiplier=5.0, plain=False, ref_baseline="k0", study="lr", status="x")
    ev = b.evidence()
    assert [c.slug for c in ev.conditions("progressive")] == ["k0", "k1", "k2", "k3", "k4"]
    (modified,) = ev.conditions(plain=False)
    assert modified.condition.lr_multiplier == 5.0 and modified.condition.modified and modified.condition.k == 0
    assert modified.refs == ("k4", "k0", "k0") and modified.studies == {"lr"}
    assert [run.trial for run in modified.finished()] == [0] and modified.diverged == 1
    assert {k: c.slug for k, c in ev.curve("sst2", 500).items()} == {k: f"k{k}" for k in range(5)}
    assert ev.curve_sizes() == {"sst2": [500]}
    by_k = grouped(ev.conditions(plain=None), lambda c: (c.condition.k, c.slug))
    assert [key for key, _ in by_k] == [(0, "k0"), (0, "k0_lr5x"), (1, "k1"), (2, "k2"), (3, "k3"), (4, "k4")]


def test_the_probe_and_weight_change_tables_are_read_by_task_seed_layer_and_by_run():
    probe = probe_table([[0.5, 0.6, 0.7, 0.8, 0.9], [0.4, 0.5, 0.6, 0.7, 0.8]]).assign(metric="accuracy")
    probe["selectivity"] = probe["value"] - 0.5
    b = Builder().curve(RISING, trials=2)
    change = pd.DataFrame(
        [
            {
                "task": "sst2",
                "size": 500,
                "slug": slug,
                "trial": t,
                "layer": layer,
                "sublayer": sub,
                "status": "ok",
                "frobenius": 10 * t + layer + 50 * (sub == "query"),
            }
            for slug in ("k4", "k0")
            for t in range(2)
            for layer in (2, 1)
            for sub in ("output", "query")
        ]
    )
    again = change.assign(frobenius=change["frobenius"] + 100)  # the same runs, a row in a second study
    ev = b.evidence(probe=probe, weight_change=pd.concat([change, again], ignore_index=True))
    (scores,) = ev.probe_scores().values()
    assert scores.metric == "accuracy" and scores.scores[1] == {0: 0.4, 1: 0.5, 2: 0.6, 3: 0.7, 4: 0.8}
    assert scores.measures["selectivity"][4] == pytest.approx(0.35)  # the mean over seeds
    (output,) = ev.output_change().values()  # the full model's (k4) output sublayer, first rows, in table order
    assert output.by_trial == {0: {2: 2.0, 1: 1.0}, 1: {2: 12.0, 1: 11.0}} and output.slugs == {"k4"}


def test_the_collapse_table_counts_each_studys_finished_headline_runs_nearly_collapsed_by_share_or_flag():
    runs = pd.DataFrame(
        {
            "study": ["b", "b", "b", "a", "a", "a"],
            "task": "cola",
            "size": 80,
            "slug": "k0",
            "trial": [0, 1, 2, 0, 1, 2],
            "headline": [True, True, True, True, True, False],
            "status": ["ok", "ok", "diverged", "ok", "ok", "ok"],
            "collapsed": [True, False, False, False, False, True],
            "majority_share": [1.0, 0.9, math.nan, 0.89, 0.95, 1.0],
        }
    )
    # a run two studies share counts in each; a diverged run and a row of another metric count in none
    assert collapse_counts(runs) == [
        CollapseCount("a", "cola", 80, "k0", 2, 0, 1, 0.5),
        CollapseCount("b", "cola", 80, "k0", 2, 1, 2, 1.0),
    ]


def test_a_run_is_flagged_where_it_collapsed_or_stands_out_from_the_units_median_share_below_any_fixed_threshold():
    shares = np.array([[0.50, 0.52, 0.63, 0.54], [0.51, 0.85, 0.95, np.nan]])
    flags = runs_flagged(np.array([[False] * 4, [False, False, False, True]]), shares)
    # the references, among the runs that did not (nearly) collapse (0.95 and the flagged run left out): the unit's
    # median 0.53, the first condition's lower quartile 0.515: 0.63 is 0.06 or more above the lower (degraded), 0.54
    # is not; 0.85 is; 0.95 nearly collapsed; the NaN share's collapse flag counts
    assert flags.tolist() == [[False, False, True, False], [False, True, True, True]]
    # over a batch: each replicate's median is its own
    batch = np.stack([shares, shares - 0.1], axis=1)  # here nothing collapsed, 0.85 - 0.1 is below 0.90: median 0.44
    assert runs_flagged(np.zeros(batch.shape, dtype=bool), batch)[:, 1].tolist() == [
        [False, False, True, False],
        [False, True, True, False],
    ]
    assert runs_flagged(np.zeros((2, 0), dtype=bool), np.zeros((2, 0))).shape == (2, 0)
    # one condition whose runs mostly degraded: the median is degraded, its lower quartile (0.675) is not
    assert runs_flagged(np.zeros((1, 3), dtype=bool), [[0.5, 0.85, 0.86]]).tolist() == [[False, True, True]]
    # a condition consistently more one-sided than the other is no mixture: 0.61 is 0.055 above the median (0.555)
    alike = runs_flagged(np.zeros((2, 3), dtype=bool), [[0.5, 0.5, 0.5], [0.61, 0.61, 0.61]])
    assert not alike.any()
