"""params -> conditions: every family enumerates what the paper runs, references once."""

import pytest
import torch

from src.artefacts.run_result import RunResult, result_path
from src.conditions.condition import Condition
from src.conditions.studies import all_study_conditions, focus_conditions, study_conditions, trained_conditions
from src.params.load import validate
from src.results.aggregate import load_results
from src.train.weights import spectral_norm, weight_change
from tests.support import grid_params, stub_result

L = 6
# A fixed grid at L = 6 (the test grid's settings, these studies): every family, and twins
# of every kind (window 3 at L = 6, single 6 = k = 5, a sequential direct run that is
# another study's reference).
TASKS = ["rt_sentiment", "bigram_shift"]
ONE = {"tasks": ["rt_sentiment"], "sizes": [256], "trials": 3}
GRID = {
    "progressive": {**ONE, "scheme": "progressive", "sizes": [64, 256], "ks": [0, 1, 2, 3, 4, 5, 6]},
    "blocks": {**ONE, "scheme": "block", "window": 3},
    "single_layer": {**ONE, "scheme": "single_layer", "layers": [1, 2, 3, 4, 5, 6]},
    "permutation": {**ONE, "scheme": "permutation", "tasks": TASKS, "trials": 4},
    "heads": {**ONE, "scheme": "head", "layers": [1, 2, 3, 4, 5, 6], "heads": [0, 6], "trials": 1},
    "lr_multiplier": {**ONE, "scheme": "progressive", "ks": [0, 3], "reinit_lr_multiplier": 5},
    "keep_layernorm": {**ONE, "scheme": "progressive", "ks": [0, 3], "keep_layernorm": True},
    "epochs": {**ONE, "scheme": "progressive", "ks": [0, 6], "epochs": 6, "sizes": [64, 256], "trials": 2},
    "sequential": {**ONE, "scheme": "progressive", "ks": [6], "intermediate_tasks": TASKS, "tasks": TASKS},
}


def study_params(**changes) -> dict:
    params = grid_params()
    params.update({"task": "rt_sentiment", "size": 256, "k": 6, "trials": 3, **changes})
    params["data"]["tasks"] = TASKS
    params["probe"]["tasks"] = ["rt_sentiment"]
    params["train"].update(epochs=3, small_size=64, small_epochs=5)
    params["studies"] = GRID
    return params


@pytest.fixture
def reported():
    """study name -> the conditions it reports, on the grid above."""
    return all_study_conditions(validate(study_params()), L)


def slugs(conditions, task="rt_sentiment", trial=0):
    return sorted(c.slug for c in conditions if c.task == task and c.trial == trial)


def test_block_study_runs_every_window_both_ways_and_borrows_references(reported):
    conditions = reported["blocks"]
    assert slugs(conditions) == sorted(f"block_{w}{s}-{s + 2}_e3" for s in range(1, 5) for w in ("reinit", "preserve"))
    # k=0 and k=6 at n=256 come from the progressive study: not trained twice
    assert not any(c.scheme == "progressive" for c in conditions)


def test_a_study_runs_its_own_references_where_the_progressive_study_does_not(reported):
    conditions = reported["permutation"]
    assert slugs(conditions, "bigram_shift") == ["k0_e3", "k6_e3", "permutation_e3"]
    assert slugs(conditions, "rt_sentiment", trial=0) == ["permutation_e3"]
    assert slugs(conditions, "rt_sentiment", trial=3) == ["k0_e3", "k6_e3", "permutation_e3"]  # progressive has 3


def test_a_study_alone_reports_its_references():
    config = validate(study_params())
    alone = study_conditions(config.studies["blocks"], config.train, config.recipe, config.pooling, L)
    assert slugs(alone) == sorted(
        [f"block_{w}{s}-{s + 2}_e3" for s in range(1, 5) for w in ("reinit", "preserve")] + ["k0_e3", "k6_e3"]
    )


def test_modifier_and_sequential_studies(reported):
    assert {(c.k, c.lr_multiplier) for c in reported["lr_multiplier"]} == {(0, 5.0), (3, 5.0)}
    assert slugs(reported["sequential"], "rt_sentiment") == ["k6_after_bigram_shift_e3"]
    assert slugs(reported["sequential"], "bigram_shift") == ["k6_after_rt_sentiment_e3", "k6_e3"]  # its direct run
    assert {c.epochs for c in reported["epochs"]} == {6}


def test_conditions_share_a_training_run_only_when_they_train_the_same():
    def run(**fields):
        return Condition(**{"task": "rt_sentiment", "size": 256, "trial": 0, "epochs": 3, **fields}).training_run(L)

    # At L=6 with window 3: reinitialising layers 4-6 is keeping layers 1-3 is k=3.
    assert run(scheme="block_reinit", layer=4, window=3) == run(scheme="block_preserve", layer=1, window=3) == run(k=3)
    assert run(scheme="block_preserve", layer=4, window=3) == run(scheme="block_reinit", layer=1, window=3)
    assert run(scheme="single_layer", layer=6) == run(k=5)
    # nothing reinitialised: the modifiers act on nothing
    assert run(k=6, lr_multiplier=5.0, keep_layernorm=True) == run(k=6)
    different = [
        run(k=3),
        run(k=2),
        run(k=3, trial=1),
        run(k=3, size=64),
        run(k=3, epochs=6),
        run(k=3, task="bigram_shift"),
        run(k=3, lr_multiplier=5.0),
        run(k=3, keep_layernorm=True),
        run(k=3, intermediate_task="bigram_shift"),
        run(k=3, recipe="authors_code"),
        run(k=3, pooling="cls"),
        run(scheme="permutation"),
        run(k=6),
        run(scheme="head", layer=1, head_index=0),
        run(scheme="head", layer=1, head_index=6),
        run(scheme="head", layer=2, head_index=0),
    ]
    assert len(set(different)) == len(different)


def test_each_training_run_is_trained_by_one_study_only(reported):
    trained = {name: trained_conditions(reported, name, L) for name in reported}
    runs = [c.training_run(L) for conditions in trained.values() for c in conditions]
    assert len(runs) == len(set(runs))
    # ... and every condition a study reports has its run trained by some study
    assert {c.training_run(L) for conditions in reported.values() for c in conditions} == set(runs)
    # blocks per trial: 8 conditions, of which reinit 4-6 and preserve 1-3 are progressive k=3,
    # and preserve 4-6 is reinit 1-3
    assert slugs(trained["blocks"]) == sorted(
        [
            "block_reinit1-3_e3",
            "block_reinit2-4_e3",
            "block_preserve2-4_e3",
            "block_reinit3-5_e3",
            "block_preserve3-5_e3",
        ]
    )
    assert "single6_e3" not in slugs(trained["single_layer"])  # = progressive k=5
    assert slugs(trained["sequential"], "bigram_shift") == ["k6_after_rt_sentiment_e3"]  # direct run: permutation's
    assert len(runs) == sum(len(c) for c in reported.values()) - 15  # 128 runs for 143 conditions


def test_the_focus_condition_is_the_grid_point_it_names_with_its_recipe_and_pooling():
    # Not the defaults (paper, mean): a focus condition or study that dropped either would
    # train the default instead, and the focus stage would reuse the wrong study's results.
    config = validate(study_params(k=3, recipe="authors_code", pooling="cls"))
    focus = focus_conditions(config)
    expected = [("rt_sentiment", 256, 3, 3, trial) for trial in range(3)]
    assert [(c.task, c.size, c.k, c.epochs, c.trial) for c in focus] == expected
    assert {(c.recipe, c.pooling) for c in focus} == {("authors_code", "cls")}
    reported = all_study_conditions(config, L)
    assert {(c.recipe, c.pooling) for conditions in reported.values() for c in conditions} == {("authors_code", "cls")}
    progressive = reported["progressive"]
    assert set(focus) == {c for c in progressive if (c.task, c.size, c.k) == ("rt_sentiment", 256, 3)}
    # ... and with the defaults, the focus condition is a different run
    default = focus_conditions(validate(study_params(k=3)))
    assert not {c.training_run(L) for c in default} & {c.training_run(L) for c in focus}


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


def result_of(condition: Condition, accuracy: float) -> RunResult:
    return stub_result(condition.as_dict(), scores={"accuracy": accuracy})


def test_aggregate_gives_each_condition_its_shared_run_and_refuses_a_missing_one(tmp_path):
    params = study_params()
    params["studies"] = {name: {**GRID[name], "trials": 1} for name in ("progressive", "blocks")}
    reported = all_study_conditions(validate(params), L)
    score_of_run = {}  # a distinct score per training run, to see which run a condition got
    for name in reported:
        for condition in trained_conditions(reported, name, L):
            score = score_of_run.setdefault(condition.training_run(L), len(score_of_run) / 100)
            result_of(condition, score).write(result_path(tmp_path / name, condition))
    blocks = {r.cond: r for r in load_results(tmp_path, reported, L)["blocks"]}
    assert set(blocks) == set(reported["blocks"])  # every condition it reports, trained there or not
    for condition, result in blocks.items():
        assert result.scores["accuracy"] == score_of_run[condition.training_run(L)]
    preserve = Condition("rt_sentiment", 256, 0, 3, scheme="block_preserve", layer=1, window=3)
    assert not result_path(tmp_path / "blocks", preserve).exists() and preserve in blocks  # progressive k=3 trained it

    reinit_2_4 = Condition("rt_sentiment", 256, 0, 3, scheme="block_reinit", layer=2, window=3)
    result_path(tmp_path / "blocks", reinit_2_4).unlink()
    with pytest.raises(SystemExit, match="studies.blocks has 4 finished runs under .*, expected 5"):
        load_results(tmp_path, reported, L)
