"""The typed artefacts, each with one writer and one reader: a run's result
(src/artefacts/run_result.py), base.json (src/artefacts/base_model.py) and the predictions store the
report resamples (src/artefacts/predictions.py). Each is written by its writer and read back
by its reader, from what the real code produces."""

import hashlib
import json
import shutil
from dataclasses import asdict, fields

import numpy as np
import pytest

from src.artefacts.base_model import BaseModelRecord
from src.artefacts.predictions import read_predictions, write_predictions
from src.artefacts.probe_result import write_probe_predictions
from src.artefacts.run_result import RunResult, read_results, readable, result_path
from src.conditions.condition import Condition
from src.conditions.studies import all_study_conditions
from src.core.files import sha256_of
from src.core.seeds import derive_seed
from src.model.export import export_base_model
from src.params.load import ModelLimits, model_limits, validate
from src.tasks.kinds import KINDS
from src.tasks.splits import load_split
from src.train.loop import RunSettings
from src.train.reuse import with_measurements_of
from src.train.run import fingerprint, run_condition
from src.train.schedule import run_settings
from tests.support import grid_params, stub_result

PROGRESSIVE = Condition("rt_sentiment", 8, 0, 1, k=1)
PERMUTATION = Condition("rt_sentiment", 8, 1, 1, scheme="permutation")


@pytest.fixture(scope="module")
def settings() -> RunSettings:
    return run_settings(validate(grid_params()), epochs=1)


@pytest.fixture(scope="module")
def runs(tiny_model_dir, tiny_tasks_root, settings) -> dict[Condition, RunResult]:
    """Two real runs on the tiny model, each result as run_condition returns it."""
    results = {}
    for c in (PROGRESSIVE, PERMUTATION):
        key = fingerprint(c, settings, tiny_model_dir, tiny_tasks_root)
        results[c] = run_condition(c, settings, tiny_model_dir, tiny_tasks_root, key=key)
    return results


# --- a run's result ---------------------------------------------------------------------------


def test_a_result_written_and_read_back_is_the_same_result(runs, tmp_path):
    for condition, result in runs.items():
        assert result.ok and result.cond == condition
        path = result_path(tmp_path, condition)
        assert path == tmp_path / "rt_sentiment" / "n8" / condition.slug / f"trial{condition.trial}.json"
        result.write(path)
        assert RunResult.read(path) == result  # every field survives JSON as it was
        assert readable(path) == result
        settings = RunSettings(**result.settings)
        assert with_measurements_of(readable(path), settings, result.fingerprint, "any training") == result
        assert with_measurements_of(readable(path), settings, "other", "other training") is None  # computed again
    assert read_results(tmp_path) == [runs[PROGRESSIVE], runs[PERMUTATION]]  # k1_e1/ sorts before permutation_e1/


def test_a_result_cut_short_or_of_another_layout_is_not_finished(runs, tmp_path):
    result = runs[PROGRESSIVE]
    path = result_path(tmp_path, PROGRESSIVE)
    result.write(path)
    text = path.read_text()
    path.write_text(text[: len(text) // 2])  # a write cut short
    assert readable(path) is None
    older = {k: v for k, v in json.loads(text).items() if k != "seeds"}  # a result from before a field existed
    path.write_text(json.dumps(older))
    assert readable(path) is None
    assert readable(tmp_path / "absent.json") is None


def test_a_result_records_the_settings_and_seeds_it_trained_with(runs, settings, tiny_model_dir, tiny_tasks_root):
    for condition, result in runs.items():
        again = RunResult(**json.loads(json.dumps(asdict(result))))
        assert RunSettings(**again.settings) == settings and again.settings["device"] == "cpu"
        seeds = again.seeds
        assert seeds["base"] == settings.seed
        # the default design: order and dropout draw from the one seed a run had before they were split
        assert seeds["order"] == seeds["dropout"] == derive_seed(settings.seed, "train", condition.trial)
        # the recorded subset seed draws exactly the examples the run trained on
        pool = len(load_split(tiny_tasks_root / "rt_sentiment" / "tokens.npz", "train"))
        drawn = np.sort(np.random.default_rng(seeds["subset"]).choice(pool, size=condition.size, replace=False))
        assert hashlib.sha256(drawn.tobytes()).hexdigest() == again.train_subset_sha256
        assert "per tensor" in seeds["reinit"]
        assert again.base_weights_sha256 == BaseModelRecord.read(tiny_model_dir).weights_sha256
        assert again.fingerprint == fingerprint(condition, settings, tiny_model_dir, tiny_tasks_root)
        assert again.eval_examples == 60 and len(again.eval_predictions()) == 60
    # a permutation records the seed of its order, and the order it drew from it
    permuted = runs[PERMUTATION]
    assert permuted.seeds["permutation"] == derive_seed(settings.seed, "permutation", PERMUTATION.trial)
    assert permuted.layer_order == PERMUTATION.layer_order(3, settings.seed)
    assert "permutation" not in runs[PROGRESSIVE].seeds and runs[PROGRESSIVE].layer_order == [0, 1, 2]


def test_a_results_headline_score_is_the_score_of_its_stored_predictions(runs, tiny_tasks_root):
    labels = load_split(tiny_tasks_root / "rt_sentiment" / "tokens.npz", "eval").labels
    for result in runs.values():
        predictions = result.eval_predictions()
        assert result.metric == "accuracy" and result.predictions["dtype"] == "int8"
        assert result.scores["accuracy"] == pytest.approx(np.mean(predictions == labels))
        assert result.majority_share == pytest.approx(np.bincount(predictions).max() / len(predictions))


# --- base.json ---------------------------------------------------------------------------------


def test_base_json_written_by_its_writer_is_read_back_by_its_reader(tiny_model_dir, tmp_path):
    model_dir = tmp_path / "model"
    record = export_base_model(str(tiny_model_dir), model_dir)  # the tiny checkpoint as a local folder
    assert (record.model_type, record.num_layers, record.hidden_size, record.num_heads) == ("bert", 3, 64, 4)
    assert record.source == f"local folder {tiny_model_dir.resolve()}"
    assert record.weights_sha256 == sha256_of(model_dir / "model.safetensors")
    record.write(model_dir)
    assert BaseModelRecord.read(model_dir) == record
    assert set(json.loads((model_dir / "base.json").read_text())) == {f.name for f in fields(BaseModelRecord)}
    assert model_limits(model_dir) == ModelLimits(num_layers=3, num_heads=4, max_positions=64)


# --- the predictions store ---------------------------------------------------------------------


def test_the_predictions_of_real_runs_and_probes_round_trip_with_the_eval_labels(runs, tiny_tasks_root, tmp_path):
    diverged = RunResult(**{**asdict(runs[PROGRESSIVE]), "status": "diverged", "predictions": None, "scores": {}})
    diverged = RunResult(**{**asdict(diverged), "condition": {**diverged.condition, "trial": 5}})
    eval_size = len(load_split(tiny_tasks_root / "rt_sentiment" / "tokens.npz", "eval").labels)
    probe = np.random.default_rng(0).integers(0, 2, (2, 4, eval_size)).astype(np.int8)  # seeds x layers x examples
    (tmp_path / "probe").mkdir()
    write_probe_predictions(tmp_path / "probe" / "rt_sentiment.npz", probe)
    write_probe_predictions(tmp_path / "probe" / "subjectivity.npz", probe)  # not in probe.tasks: not read
    write_predictions(
        tmp_path / "predictions.npz",
        {"progressive": [runs[PROGRESSIVE], diverged], "permutation": [runs[PERMUTATION]]},
        tiny_tasks_root,
        tmp_path / "probe",
        ["rt_sentiment"],
    )
    by_run, labels, probes = read_predictions(tmp_path / "predictions.npz")
    assert probes.keys() == {"rt_sentiment"} and np.array_equal(probes["rt_sentiment"], probe)
    assert set(by_run) == {
        ("rt_sentiment", 8, c.slug, c.trial) for c in (PROGRESSIVE, PERMUTATION)
    }  # none for diverged
    for condition, result in runs.items():
        assert np.array_equal(by_run[("rt_sentiment", 8, condition.slug, condition.trial)], result.eval_predictions())
    assert set(labels) == {"rt_sentiment"}
    assert np.array_equal(
        labels["rt_sentiment"], load_split(tiny_tasks_root / "rt_sentiment" / "tokens.npz", "eval").labels
    )


def fake_result(condition: Condition, predictions: np.ndarray) -> RunResult:
    """A finished result with `predictions` (the rest of what a run records left empty)."""
    return stub_result(
        condition.as_dict(),
        scores={"accuracy": 0.5},
        eval_loss=0.7,
        majority_share=0.5,
        predictions=KINDS["classification"].encode_predictions(predictions),
    )


def test_every_condition_of_the_test_grid_has_its_own_key_in_the_predictions_store(config, tiny_task_dir, tmp_path):
    """Every slug shape (blocks, heads, modifiers, sequential) and task round trips to its own key."""
    tasks_dir = tmp_path / "tasks"
    for task in config.data.tasks:
        (tasks_dir / task).mkdir(parents=True)
        shutil.copy(tiny_task_dir / "tokens.npz", tasks_dir / task / "tokens.npz")
    reported = all_study_conditions(config, 6)
    rng = np.random.default_rng(0)
    expected, results = {}, {}
    for study, conditions in reported.items():
        results[study] = []
        for c in conditions:
            predictions = rng.integers(0, 2, 60)
            expected[(c.task, c.size, c.slug, c.trial)] = predictions
            results[study].append(fake_result(c, predictions))
    write_predictions(tmp_path / "predictions.npz", results, tasks_dir, tmp_path / "probe", [])
    by_run, labels, _ = read_predictions(tmp_path / "predictions.npz")
    assert by_run.keys() == expected.keys()
    assert all(np.array_equal(by_run[key], expected[key]) for key in expected)
    assert set(labels) == {c.task for cs in reported.values() for c in cs}


def test_step_loss_curves_average_the_finished_runs_at_each_step():
    from src.artefacts.run_result import encode_step_losses
    from src.results.aggregate import step_loss_curves

    def result(k, trial, losses, status="ok"):
        condition = Condition("rt_sentiment", 8, trial, 1, k=k).as_dict()
        return stub_result(condition, status=status, step_losses=encode_step_losses(losses))

    curves = step_loss_curves(
        [
            result(0, 0, [0.75, 0.5, 0.25]),
            result(0, 1, [0.25, 0.5, 0.75]),
            result(6, 0, [1.0, 0.5, 0.0]),
            result(6, 1, [9.0, float("nan"), 9.0], status="diverged"),  # left out
            stub_result(Condition("rt_sentiment", 8, 2, 1, k=6).as_dict()),  # an older result: no step losses
        ],
        lambda c: f"k={c.k}",
    )
    assert curves[["series", "step", "loss", "n"]].values.tolist() == [
        ["k=0", 1, 0.5, 2],
        ["k=0", 2, 0.5, 2],
        ["k=0", 3, 0.5, 2],
        ["k=6", 1, 1.0, 1],
        ["k=6", 2, 0.5, 1],
        ["k=6", 3, 0.0, 1],
    ]
    half = 12.7062 * 0.25  # t(0.975, 1) x the standard error of (0.75, 0.25)
    assert curves["ci_high"].iloc[0] == pytest.approx(0.5 + half, rel=1e-4) and curves["ci_low"].iloc[3:].isna().all()
