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


def test_a_verdicts_scope_says_the_papers_layers_are_scaled_on_a_depth_other_than_theirs():
    """The claims name BERT-base's layers ("layers 8-12"); a 12-layer model meets them as stated,
    another depth reads the same fractions of itself, and the scope says so."""
    from src.artefacts.base_model import BaseModelRecord
    from stages.report import model_scope

    def base(name: str, model_type: str, layers: int) -> BaseModelRecord:
        return BaseModelRecord(name, "", model_type, layers, 64, 4, "0" * 64, 512)

    assert model_scope(base("embedded-base", "mpnet", 12)) == "embedded-base (mpnet, 12 layers)"
    assert model_scope(base("embedded", "bert", 6)) == "embedded (bert, 6 layers; the papers' layers scaled by 6/12)"
