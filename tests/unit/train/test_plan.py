"""A finetune stage's plan (schedule.plan_run): for each run, keep, copy from another study,
measure kept weights or train, and the line it prints why, from the files alone: no model,
no training, nothing written."""

from dataclasses import asdict, replace
from pathlib import Path

import pytest

from src.artefacts.run_result import result_path, weights_path
from src.conditions.condition import Condition
from src.core.files import sha256_of
from src.params.load import validate
from src.train.reuse import made_now
from src.train.run import RunJob
from src.train.schedule import Action, plan_run, run_settings
from tests.support import stub_result, tiny_params

CONDITION = Condition("rt_sentiment", 40, 0, 1, k=3)


@pytest.fixture
def job(tmp_path) -> RunJob:
    """The run of CONDITION in study `here`, asking for CKA (fingerprint "key", training fingerprint "t")."""
    settings = run_settings(validate(tiny_params(cka=True)), 1)
    return RunJob(CONDITION, settings, tmp_path, tmp_path, result_path(tmp_path / "here", CONDITION), "key", "t")


def finished(path: Path, job: RunJob, weights: bool, **recorded) -> None:
    """A finished run of `job`'s training at `path` (as it asked, unless `recorded` says otherwise),
    with its kept weights beside it if `weights`."""
    fields = dict(
        fingerprint=job.key,
        training_fingerprint=job.training_key,
        settings=asdict(job.settings),
        measurement_code=made_now(job.settings),  # its measurements made by today's code
    )
    if weights:
        weights_path(path).parent.mkdir(parents=True, exist_ok=True)
        weights_path(path).write_bytes(b"weights")
        fields["weights_sha256"] = sha256_of(weights_path(path))
    stub_result(CONDITION.as_dict(), **{**fields, **recorded}).write(path)


def test_a_run_with_nothing_at_its_place_trains_and_says_nothing(job, tmp_path):
    planned = plan_run(job, keep_weights=False, reuse=tmp_path, equivalent={})
    assert planned.action is Action.TRAIN and planned.line == "" and planned.result is None
    assert not list(tmp_path.rglob("*.json")), "planning writes nothing"


def test_a_run_finished_as_asked_is_kept(job):
    finished(job.result_file, job, weights=False)
    planned = plan_run(job, keep_weights=False, reuse=None, equivalent={})
    assert planned.action is Action.KEEP and planned.line == "finished earlier, kept" and not planned.rewrite
    assert planned.result.fingerprint == "key"


def test_a_run_that_measured_more_is_kept_without_the_rest(job):
    finished(job.result_file, job, weights=False, fingerprint="older", layer_cka=[0.5])
    planned = plan_run(
        replace(job, settings=replace(job.settings, cka=False)), keep_weights=False, reuse=None, equivalent={}
    )
    assert planned.action is Action.KEEP and planned.rewrite
    assert planned.line == "finished earlier, kept (the measurements no longer asked for dropped)"
    assert planned.result.fingerprint == "key" and planned.result.layer_cka == []


def test_with_keep_weights_a_run_finished_without_them_trains_again(job):
    finished(job.result_file, job, weights=False)
    planned = plan_run(job, keep_weights=True, reuse=None, equivalent={})
    assert planned.action is Action.TRAIN
    assert planned.line == "finished earlier without its weights; trains again to keep them (train.keep_weights)"


def test_the_same_run_in_another_study_is_copied_or_trains_again_without_its_weights(job, tmp_path):
    source = result_path(tmp_path / "other", CONDITION)
    finished(source, job, weights=True)
    planned = plan_run(job, keep_weights=True, reuse=tmp_path, equivalent={})
    assert planned.action is Action.COPY and planned.source == source
    assert planned.line == f"the same run as in {source}, copied"
    weights_path(source).unlink()
    planned = plan_run(job, keep_weights=True, reuse=tmp_path, equivalent={})
    assert planned.action is Action.TRAIN
    assert planned.line == f"the same run as in {source}, without its weights; trains again to keep them"
    assert plan_run(job, keep_weights=False, reuse=tmp_path, equivalent={}).action is Action.COPY


def test_a_run_that_kept_its_weights_and_lacks_a_measurement_is_measured_on_them(job):
    unmeasured = asdict(replace(job.settings, cka=False))
    finished(job.result_file, job, weights=True, fingerprint="older", settings=unmeasured)
    planned = plan_run(job, keep_weights=False, reuse=None, equivalent={})
    assert planned.action is Action.MEASURE and planned.line == "" and planned.result.fingerprint == "older"
    weights_path(job.result_file).write_bytes(b"other weights")  # not the file the run recorded: it trains
    assert plan_run(job, keep_weights=False, reuse=None, equivalent={}).action is Action.TRAIN


def test_a_run_finished_under_a_recipe_declared_equivalent_is_kept(job):
    finished(job.result_file, job, weights=False, fingerprint="old key", training_fingerprint="old t")
    assert plan_run(job, keep_weights=False, reuse=None, equivalent={}).action is Action.TRAIN
    planned = plan_run(job, keep_weights=False, reuse=None, equivalent={"old key": "key", "old t": "t"})
    assert planned.action is Action.KEEP and planned.line == "finished earlier, kept" and not planned.rewrite


def test_a_measurement_made_by_other_code_is_kept_stale_without_weights_and_measured_again_with_them(job):
    finished(job.result_file, job, weights=False, layer_cka=[0.5], measurement_code={"cka": "older code"})
    planned = plan_run(job, keep_weights=False, reuse=None, equivalent={})
    assert planned.action is Action.KEEP and planned.result.layer_cka == [0.5]
    assert planned.line == "finished earlier, kept; its cka made by older code, stale (no kept weights to redo it)"
    finished(job.result_file, job, weights=True, layer_cka=[0.5], measurement_code={"cka": "older code"})
    assert plan_run(job, keep_weights=False, reuse=None, equivalent={}).action is Action.MEASURE
