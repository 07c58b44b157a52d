"""params -> conditions: every family enumerates what the paper runs, references once."""

import copy

import pytest
import torch
import yaml

from src.studies import focus_condition, study_conditions
from src.weights import weight_change

with open("params.yaml") as f:
    DEFAULT = yaml.safe_load(f)


def slugs(conditions, task="rt_sentiment", trial=0):
    return sorted(c.slug for c in conditions if c.task == task and c.trial == trial)


def test_block_study_runs_every_window_both_ways_and_borrows_references():
    conditions = study_conditions(DEFAULT, "blocks", 6)
    assert slugs(conditions) == sorted(f"block_{w}{s}-{s + 2}_e3" for s in range(1, 5) for w in ("reinit", "preserve"))
    # k=0 and k=6 at n=256 come from the progressive study: not trained twice
    assert not any(c.scheme == "progressive" for c in conditions)


def test_a_study_runs_its_own_references_where_the_progressive_study_does_not():
    conditions = study_conditions(DEFAULT, "permutation", 6)
    assert slugs(conditions, "bigram_shift") == ["k0_e3", "k6_e3", "permutation_e3"]
    assert slugs(conditions, "rt_sentiment", trial=0) == ["permutation_e3"]
    assert slugs(conditions, "rt_sentiment", trial=3) == ["k0_e3", "k6_e3", "permutation_e3"]  # progressive has 3 trials


def test_modifier_and_sequential_studies():
    lr = study_conditions(DEFAULT, "lr_multiplier", 6)
    assert {(c.k, c.lr_multiplier) for c in lr} == {(0, 5.0), (3, 5.0)}
    sequential = study_conditions(DEFAULT, "sequential", 6)
    assert slugs(sequential, "rt_sentiment") == ["k6_after_bigram_shift_e3"]
    assert slugs(sequential, "bigram_shift") == ["k6_after_rt_sentiment_e3", "k6_e3"]  # its direct run
    epochs = study_conditions(DEFAULT, "epochs", 6)
    assert {c.epochs for c in epochs} == {6}


def test_the_focus_condition_is_the_grid_point_it_names():
    params = copy.deepcopy(DEFAULT)
    focus = focus_condition(params, trial=1)
    assert focus in study_conditions(params, "progressive", 6)


def test_weight_change_norms_by_hand():
    before = {(1, "output"): torch.zeros(2, 2)}
    after = {(1, "output"): torch.tensor([[3.0, 0.0], [0.0, 4.0]])}
    (row,) = weight_change(before, after)
    assert (row["layer"], row["sublayer"]) == (1, "output")
    assert row["frobenius"] == pytest.approx(5.0) and row["spectral"] == pytest.approx(4.0)
    rank_one = {(1, "output"): torch.ones(3, 3)}  # singular values 3, 0, 0
    (row,) = weight_change({(1, "output"): torch.zeros(3, 3)}, rank_one)
    assert row["spectral"] == pytest.approx(3.0) and row["frobenius"] == pytest.approx(3.0)
