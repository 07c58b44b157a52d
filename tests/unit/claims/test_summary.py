"""The first screen's headline numbers (src/claims/summary.py `headline`): the full model's and scratch's mean over
their finished trials and their gap paired by trial, each with its 95% t interval, read from the evidence."""

import pytest

from src.claims.summary import headline
from src.stats.intervals import mean_ci
from tests.fake_evidence import Builder, L


def test_the_headline_is_full_scratch_and_their_paired_gap_over_finished_trials():
    builder = Builder().curve([0.50, 0.70, 0.80, 0.85, 0.90], trials=3)
    builder.add(
        f"k{L}", 0.0, trial=3, status="diverged", k=L
    )  # left out: it did not finish, and scratch has no trial 3
    found = headline(builder.evidence(), "sst2", 500)
    assert found is not None and (found.task, found.size, found.metric) == ("sst2", 500, "accuracy")
    full, scratch = [0.90, 0.91, 0.89], [0.49, 0.50, 0.51]  # Builder.curve's planted values by trial
    assert found.full == pytest.approx(mean_ci(full)) and found.scratch == pytest.approx(mean_ci(scratch))
    assert found.gap == pytest.approx(mean_ci([f - s for f, s in zip(full, scratch)]))
    lines = found.lines()
    assert lines[0].endswith("**0.900** [0.875, 0.925] (3 trials)") and "**+0.400** [" in lines[2], lines


def test_no_headline_where_the_full_model_or_scratch_did_not_run_there():
    evidence = Builder().curve([0.50, 0.70, 0.80, 0.85, 0.90], trials=3).evidence()
    assert headline(evidence, "sst2", 1000) is None
    only_full = Builder()
    only_full.add(f"k{L}", 0.9, k=L)
    assert headline(only_full.evidence(), "sst2", 500) is None
