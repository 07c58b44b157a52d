"""Which finished results a finetune stage keeps (src/train/reuse.py, run_all): one a recipe
declared equivalent made is kept; one whose measurement was made by other code is measured
again on its kept weights where they were kept, else kept as it is and called stale (in the
report's table too); neither trains again."""

import json
import sys

import pytest

from src.artefacts.run_result import RunResult, result_path, stage_measurement_code
from src.conditions.condition import Condition
from src.params.load import validate
from src.results.measures import REFRESH, stale_measurements
from src.train.loop import RunSettings
from src.train.reuse import EQUIVALENT_MEASUREMENT_CODE, measurement_code
from src.train.run import EQUIVALENT_RECIPES, fingerprint
from src.train.schedule import run_all
from tests.support import tiny_params
from tools import stale_runs

CONDITION = Condition("rt_sentiment", 8, 0, 1, k=1)
OLD_ALONE = next(digest for digest, what in EQUIVALENT_RECIPES.items() if what.startswith("83d6513's RECIPE"))


@pytest.fixture
def stage(tmp_path, tiny_model_dir, tiny_tasks_root, capsys):
    """run_all of CONDITION as a finetune stage runs it (cka on; train.keep_weights as asked):
    (its result file, a function that runs it and returns what it printed)."""
    out = tmp_path / "out"

    def run(keep_weights: bool = False) -> str:
        config = validate(tiny_params(workers=1, keep_weights=keep_weights, cka=True, criticality="off"))
        capsys.readouterr()
        run_all([CONDITION], config, tiny_model_dir, tiny_tasks_root, out, "test", False)
        return capsys.readouterr().out

    return result_path(out, CONDITION), run


def rewrite(path, **fields) -> dict:
    stored = {**json.loads(path.read_text()), **fields}
    path.write_text(json.dumps(stored))
    return stored


def test_a_result_of_a_recipe_declared_equivalent_is_kept_and_one_of_another_recipe_trains(
    stage, tiny_model_dir, tiny_tasks_root
):
    path, run = stage
    run()
    settings = RunSettings(**json.loads(path.read_text())["settings"])

    def as_made_by(code: str) -> dict:  # the result as a recipe with this digest wrote it, before measurement digests
        stored = json.loads(path.read_text())
        stored.pop("measurement_code", None)
        stored["fingerprint"] = fingerprint(CONDITION, settings, tiny_model_dir, tiny_tasks_root, code)
        stored["training_fingerprint"] = fingerprint(
            CONDITION, settings.unmeasured(), tiny_model_dir, tiny_tasks_root, code
        )
        path.write_text(json.dumps(stored))
        return stored

    before = as_made_by(OLD_ALONE)
    assert "finished earlier, kept" in run()
    # kept: nothing trained; recorded again only because its CKA's code (83d6513's) is declared equivalent too
    after = json.loads(path.read_text())
    relabelled = ("fingerprint", "training_fingerprint", "measurement_code")
    assert {k: v for k, v in after.items() if k not in relabelled} == {
        k: v for k, v in before.items() if k not in relabelled
    }
    assert after["measurement_code"] == {"cka": measurement_code()["cka"]}
    as_made_by("0" * 64)
    assert "finished earlier" not in run() and RunResult.read(path).measurement_code == {
        "cka": measurement_code()["cka"]
    }


def test_a_stale_measurement_without_kept_weights_is_kept_as_it_is_and_never_trains(stage, monkeypatch):
    path, run = stage
    run()
    before = rewrite(path, measurement_code={"cka": "older code"})
    printed = run()
    assert "its cka made by older code, stale" in printed and "ok {" not in printed
    assert json.loads(path.read_text()) == before
    assert RunResult.read(path).stale_measurements(stage_measurement_code(path.parents[3])) == ["cka"]
    stale = stale_measurements(path.parents[4])  # the report's table, over the folder of stage outputs
    assert stale.to_dict("records") == [{"measurement": "cka", "runs": 1, "refresh": REFRESH}]
    # the refresh: tools.stale_runs --delete, then the stage trains it again, with today's code
    monkeypatch.setattr(sys, "argv", ["stale_runs", "--runs", str(path.parents[4]), "--delete"])
    stale_runs.main()
    assert not path.exists() and ": ok {" in run()
    assert not stale_measurements(path.parents[4]).to_dict("records")


def test_a_stale_measurement_is_made_again_on_kept_weights(stage):
    path, run = stage
    run(keep_weights=True)
    before = rewrite(path, measurement_code={"cka": "older code"})
    assert "measured on its kept weights, not trained" in run(keep_weights=True)
    now = RunResult.read(path)
    assert now.measurement_code == {"cka": measurement_code()["cka"]} and not now.stale_measurements(measurement_code())
    assert now.layer_cka == before["layer_cka"] and now.train_seconds == before["train_seconds"]


def test_a_measurement_by_code_declared_equivalent_is_current_and_recorded_with_todays_digest(stage):
    """78fdc7e's CKA (n x n Gram matrices) equals today's feature-space CKA (EQUIVALENT_MEASUREMENT_CODE): its
    results are kept, not stale, and written again with today's digest so the report reads them current."""
    path, run = stage
    run()
    old = next(iter(EQUIVALENT_MEASUREMENT_CODE))
    for recorded in ({"cka": old}, {}):  # {}: a result from before results recorded the digest (LEGACY_...)
        before = rewrite(path, measurement_code=recorded)
        printed = run()
        assert "finished earlier, kept" in printed and "stale" not in printed and "ok {" not in printed
        now = RunResult.read(path)
        assert now.measurement_code == {"cka": measurement_code()["cka"]} and now.layer_cka == before["layer_cka"]
        assert not stale_measurements(path.parents[4]).to_dict("records")
