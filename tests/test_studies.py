"""params -> conditions: every family enumerates what the paper runs, references once."""

import copy

import pytest
import torch
import yaml

from src.condition import Condition
from src.studies import focus_condition, study_conditions, trained_conditions
from src.weights import spectral_norm, weight_change

with open("params.yaml") as f:
    LIVE = yaml.safe_load(f)

# A fixed grid, not the live params.yaml's: editing the experiment must not break these tests.
# It has every family, and twins of every kind (window 3 at L = 6, single 6 = k = 5, a
# sequential direct run that is another study's reference).
TASKS = ["rt_sentiment", "bigram_shift"]
GRID = {
    "progressive": {"scheme": "progressive", "tasks": ["rt_sentiment"], "sizes": [64, 256], "ks": [0, 1, 2, 3, 4, 5, 6], "trials": 3},
    "blocks": {"scheme": "block", "window": 3, "tasks": ["rt_sentiment"], "sizes": [256], "trials": 3},
    "single_layer": {"scheme": "single_layer", "layers": [1, 2, 3, 4, 5, 6], "tasks": ["rt_sentiment"], "sizes": [256], "trials": 3},
    "permutation": {"scheme": "permutation", "tasks": TASKS, "sizes": [256], "trials": 4},
    "heads": {"scheme": "head", "layers": [1, 2, 3, 4, 5, 6], "heads": [0, 6], "tasks": ["rt_sentiment"], "sizes": [256], "trials": 1},
    "lr_multiplier": {"scheme": "progressive", "ks": [0, 3], "reinit_lr_multiplier": 5, "tasks": ["rt_sentiment"], "sizes": [256], "trials": 3},
    "keep_layernorm": {"scheme": "progressive", "ks": [0, 3], "keep_layernorm": True, "tasks": ["rt_sentiment"], "sizes": [256], "trials": 3},
    "epochs": {"scheme": "progressive", "ks": [0, 6], "epochs": 6, "tasks": ["rt_sentiment"], "sizes": [64, 256], "trials": 2},
    "sequential": {"scheme": "progressive", "ks": [6], "intermediate_tasks": TASKS, "tasks": TASKS, "sizes": [256], "trials": 3},
}
DEFAULT = {**LIVE, "task": "rt_sentiment", "size": 256, "k": 6, "trials": 3, "data": {**LIVE["data"], "tasks": TASKS}, "train": {**LIVE["train"], "epochs": 3, "small_size": 64, "small_epochs": 5}, "studies": GRID}


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


def test_conditions_share_a_training_run_only_when_they_train_the_same():
    def run(**fields):
        return Condition(**{"task": "rt_sentiment", "size": 256, "trial": 0, "epochs": 3, **fields}).training_run(6)

    # At L=6 with window 3: reinitialising layers 4-6 is keeping layers 1-3 is k=3.
    assert run(scheme="block_reinit", layer=4, window=3) == run(scheme="block_preserve", layer=1, window=3) == run(k=3)
    assert run(scheme="block_preserve", layer=4, window=3) == run(scheme="block_reinit", layer=1, window=3)
    assert run(scheme="single_layer", layer=6) == run(k=5)
    assert run(k=6, lr_multiplier=5.0, keep_layernorm=True) == run(k=6)  # nothing reinitialised: modifiers act on nothing
    different = [
        run(k=3), run(k=2), run(k=3, trial=1), run(k=3, size=64), run(k=3, epochs=6), run(k=3, task="bigram_shift"),
        run(k=3, lr_multiplier=5.0), run(k=3, keep_layernorm=True), run(k=3, intermediate_task="bigram_shift"),
        run(k=3, recipe="authors_code"), run(k=3, pooling="cls"), run(scheme="permutation"), run(k=6),
        run(scheme="head", layer=1, head_index=0), run(scheme="head", layer=1, head_index=6), run(scheme="head", layer=2, head_index=0),
    ]
    assert len(set(different)) == len(different)


def test_each_training_run_is_trained_by_one_study_only():
    trained = {name: trained_conditions(DEFAULT, name, 6) for name in DEFAULT["studies"]}
    runs = [c.training_run(6) for conditions in trained.values() for c in conditions]
    assert len(runs) == len(set(runs))
    # ... and every condition a study reports has its run trained by some study
    assert {c.training_run(6) for name in DEFAULT["studies"] for c in study_conditions(DEFAULT, name, 6)} == set(runs)
    # blocks per trial: 8 conditions, of which reinit 4-6 and preserve 1-3 are progressive k=3, preserve 4-6 is reinit 1-3
    assert slugs(trained["blocks"]) == sorted(["block_reinit1-3_e3", "block_reinit2-4_e3", "block_preserve2-4_e3", "block_reinit3-5_e3", "block_preserve3-5_e3"])
    assert "single6_e3" not in slugs(trained["single_layer"])  # = progressive k=5
    assert slugs(trained["sequential"], "bigram_shift") == ["k6_after_rt_sentiment_e3"]  # the direct run is permutation's reference
    assert len(runs) == sum(len(study_conditions(DEFAULT, name, 6)) for name in DEFAULT["studies"]) - 15  # 128 runs for 143 conditions


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


def test_spectral_norm_is_the_largest_singular_value_of_wide_and_tall_matrices():
    generator = torch.Generator().manual_seed(0)
    for shape in [(5, 12), (12, 5), (7, 7)]:
        matrix = torch.randn(*shape, generator=generator)
        assert spectral_norm(matrix) == pytest.approx(float(torch.linalg.matrix_norm(matrix.double(), 2)), rel=1e-5)


def test_aggregate_gives_each_condition_its_shared_run_and_refuses_a_missing_one(tmp_path):
    from src.experiment import write_json_atomically
    from stages.aggregate import load_results

    params = copy.deepcopy(DEFAULT)
    params["studies"] = {name: {**DEFAULT["studies"][name], "trials": 1} for name in ("progressive", "blocks")}
    score_of_run = {}  # a distinct score per training run, to see which run a condition got
    for name in params["studies"]:
        for condition in trained_conditions(params, name, 6):
            score = score_of_run.setdefault(condition.training_run(6), len(score_of_run) / 100)
            write_json_atomically(condition.result_path(tmp_path / name), {"condition": condition.as_dict(), "scores": {"accuracy": score}})
    blocks = {Condition(**r["condition"]): r for r in load_results(tmp_path, params, 6)["blocks"]}
    assert set(blocks) == set(study_conditions(params, "blocks", 6))  # every condition it reports, trained there or not
    for condition, result in blocks.items():
        assert result["scores"]["accuracy"] == score_of_run[condition.training_run(6)]
    preserve = Condition("rt_sentiment", 256, 0, 3, scheme="block_preserve", layer=1, window=3)
    assert not preserve.result_path(tmp_path / "blocks").exists() and preserve in blocks  # progressive k=3 trained it

    Condition("rt_sentiment", 256, 0, 3, scheme="block_reinit", layer=2, window=3).result_path(tmp_path / "blocks").unlink()
    with pytest.raises(SystemExit, match="studies.blocks has 4 finished runs under .*, expected 5"):
        load_results(tmp_path, params, 6)
