"""What the validate stage knows before any model or data exists (src/params/preflight.py): every
training size against its task's examples, k, layers and heads against the model named, the GLUE
and SQuAD folders a listed task reads, the focus condition's one-trial warning, and the cost line
(src/params/cost.py). Each through the stage's entry point in process, in a folder with no data/
at all, as in a fresh clone (tests/support.py run_stage_in_process); the refusal through
`dvc repro` is tests/e2e/test_bad_input_stages.py."""

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from src.artefacts.run_result import result_path
from src.conditions.studies import focus_conditions
from src.params.cost import cost
from src.params.load import validate
from src.params.preflight import named_model_shape, training_pools
from tests.support import grid_params, on_tasks, run_stage_in_process, with_change, write_tiny_glue, write_tiny_squad


def run_validate(folder: Path, params: dict) -> subprocess.CompletedProcess:
    (folder / "params.yaml").write_text(yaml.safe_dump(params))
    return run_stage_in_process(folder, "stages.validate", "--model", "data/model", "--out", "valid.txt")


def assert_refused(run: subprocess.CompletedProcess, folder: Path, message: str) -> None:
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert [line for line in run.stderr.splitlines() if line.startswith("error: ")] == [f"error: {message}"]
    assert not (folder / "valid.txt").exists()


def on_glue(params: dict, glue_dir: str | None, carve: list[str] | None = None) -> dict:
    params = on_tasks(params, ["sst2", "rt_sentiment"])
    params["data"].update(glue_dir=glue_dir, glue_carve_train_from_dev=carve or [])
    return params


def on_squad(params: dict, squad_dir: str | None) -> dict:
    params = on_tasks(params, ["rt_sentiment", "squad_v2"])
    params["studies"]["progressive"]["tasks"] = ["squad_v2"]
    params["data"].update(squad_dir=squad_dir, qa_stride=8)  # a window of max_length 32 advances past the stride
    return params


def with_sizes_per_task(sizes: dict[str, list[int]]) -> dict:
    params = grid_params()
    params["studies"] = {"progressive": {**params["studies"]["progressive"], "tasks": list(sizes), "sizes": sizes}}
    return params


def with_intermediate(size) -> dict:
    params = grid_params()
    params["studies"] = {
        "progressive": params["studies"]["progressive"],
        "sequential": {
            "scheme": "progressive",
            "ks": [6],
            "intermediate_tasks": ["tweet_sentiment"],
            "intermediate_size": size,
            "tasks": ["rt_sentiment"],
            "sizes": [8],
            "trials": 2,
        },
    }
    return params


REFUSALS = [
    pytest.param(
        with_change("size", 100000),
        "params.yaml: size = 100000 is invalid; allowed: an integer from 1 to 9560: rt_sentiment has 9560 (9610 "
        "labelled at data.neutral_band 0.8, less data.eval_size 50)",
        id="focus size over an embedded task's examples",
    ),
    pytest.param(
        with_sizes_per_task({"rt_sentiment": [8], "subjectivity": [8, 5000]}),
        "params.yaml: studies.progressive.sizes.subjectivity[1] = 5000 is invalid; allowed: an integer from 1 to 4442: "
        "subjectivity has 4442 (4492 labelled, less data.eval_size 50)",
        id="a study's size, per task",
    ),
    pytest.param(
        with_intermediate(5000),
        "params.yaml: studies.sequential.intermediate_size = 5000 is invalid; allowed: an integer from 1 to 1812: "
        "tweet_sentiment has 1812 (1862 labelled at data.neutral_band 0.8, less data.eval_size 50)",
        id="an intermediate task's size",
    ),
    pytest.param(
        with_change("data.neutral_band", 0.6, with_change("size", 10100)),
        "params.yaml: size = 10100 is invalid; allowed: an integer from 1 to 10020: rt_sentiment has at most 10020 "
        "(at most 10070 labelled at data.neutral_band 0.6, less data.eval_size 50)",
        id="a band between the pinned ones: at most",
    ),
    pytest.param(
        with_change("data.eval_size", 2000),
        "params.yaml: data.eval_size = 2000 is invalid; allowed: fewer than the 1862 examples of task "
        "'tweet_sentiment' at data.neutral_band 0.8 (it would leave no training data)",
        id="eval_size leaves no training data",
    ),
    pytest.param(
        with_change("k", 9),
        "params.yaml: k = 9 is invalid; allowed: 0..6 (the model has 6 encoder layers)",
        id="k over the embedded model's depth, no data/model",
    ),
    pytest.param(
        with_change("model.name", "embedded-base", with_change("k", 13)),
        "params.yaml: k = 13 is invalid; allowed: 0..12 (the model has 12 encoder layers)",
        id="k over embedded-base's depth",
    ),
    pytest.param(
        on_glue(grid_params(), "<folder with the GLUE TSVs>"),
        "params.yaml: data.glue_dir = '<folder with the GLUE TSVs>' is invalid; allowed: null (from the hub), or the "
        "path of your folder: this value is a placeholder to replace",
        id="the report's placeholder",
    ),
    pytest.param(
        on_glue(grid_params(), "no_such_glue"),
        "params.yaml: data.glue_dir = 'no_such_glue' is invalid; allowed: null (GLUE from the hub) or a folder that "
        "exists (no_such_glue)",
        id="a GLUE folder that does not exist",
    ),
    pytest.param(
        on_glue(grid_params(), "glue_without_sst2"),
        "params.yaml: data.glue_dir = 'glue_without_sst2' is invalid; allowed: a folder in the GLUE TSV layout with "
        "SST-2/train.tsv and SST-2/dev.tsv for task 'sst2' (glue_without_sst2/SST-2/train.tsv is missing; or add "
        "sst2 to data.glue_carve_train_from_dev to train on half of dev)",
        id="a GLUE folder without a listed task's files",
    ),
    pytest.param(
        with_change("size", 61, on_glue(grid_params(), "glue")),
        "params.yaml: size = 61 is invalid; allowed: an integer from 1 to 60: sst2 has 60 (the rows of "
        "glue/SST-2/train.tsv)",
        id="a size over a GLUE folder's rows",
    ),
    pytest.param(
        with_change("size", 70000, on_glue(grid_params(), None)),
        "params.yaml: size = 70000 is invalid; allowed: an integer from 1 to 67349: sst2 has 67349 (the hub's "
        "published train split)",
        id="a size over the hub's published split",
    ),
    pytest.param(
        with_change("size", 437, on_glue(grid_params(), None, carve=["sst2"])),
        "params.yaml: size = 437 is invalid; allowed: an integer from 1 to 436: sst2 has 436 (half of the hub's 872 "
        "validation rows)",
        id="a size over half of a carved dev split",
    ),
    pytest.param(
        on_squad(grid_params(), "squad_missing"),
        "params.yaml: data.squad_dir = 'squad_missing' is invalid; allowed: null (SQuAD 2.0 from the hub) or a folder "
        "that exists (squad_missing)",
        id="a SQuAD folder that does not exist",
    ),
    pytest.param(
        with_change("studies.progressive.sizes", [36], on_squad(grid_params(), "squad")),
        "params.yaml: studies.progressive.sizes[0] = 36 is invalid; allowed: an integer from 1 to 35: squad_v2 has 36 "
        "(the questions of squad/train-v2.0.json), less one: span QA fits its no-answer threshold on a question it "
        "does not train on",
        id="span QA at all of a SQuAD folder's questions",
    ),
]


@pytest.mark.parametrize("params, message", REFUSALS)
def test_the_validate_stage_refuses_what_it_can_know_in_one_line_in_a_fresh_clone(tmp_path, params, message):
    write_tiny_glue(tmp_path / "glue")
    (tmp_path / "glue_without_sst2").mkdir()
    write_tiny_squad(tmp_path / "squad")
    assert_refused(run_validate(tmp_path, params), tmp_path, message)


def test_a_local_folder_model_is_checked_by_its_config_json(tmp_path):
    model = tmp_path / "my_bert"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps({"model_type": "bert", "num_hidden_layers": 3, "num_attention_heads": 4})
    )
    params = with_change("model.name", str(model))
    params["studies"] = {"progressive": {**params["studies"]["progressive"], "ks": [0, 4]}}
    params["k"] = 3
    assert_refused(
        run_validate(tmp_path, params),
        tmp_path,
        "params.yaml: studies.progressive.ks[1] = 4 is invalid; allowed: 0..3 (the model has 3 encoder layers)",
    )


def test_a_hub_id_is_said_unchecked_and_its_cost_unknown(tmp_path):
    run = run_validate(tmp_path, with_change("model.name", "bert-base-uncased", with_change("k", 9)))
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == (
        "note: model.name = 'bert-base-uncased' is a hub id, unchecked here: k, layers and heads are checked when "
        "prepare_model has read it"
    )
    assert "cost: unknown until prepare_model has read 'bert-base-uncased' (its depth sets the runs)" in run.stdout


def test_one_focus_trial_is_warned_of_in_one_line(tmp_path):
    run = run_validate(tmp_path, with_change("trials", 1))
    assert run.returncode == 0, run.stderr
    assert [line for line in run.stderr.splitlines() if "focus.json" in line] == [
        "warning: trials = 1 leaves metrics/focus.json without a confidence interval (one needs 2 trials or more)"
    ]


def cost_of(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("cost: "))


def test_the_cost_line_counts_runs_to_train_and_kept_and_estimates_their_time(tmp_path):
    params = on_tasks(grid_params(), ["rt_sentiment"])  # progressive k 0 and 3, one trial; focus k 3, two trials
    params["size"] = 8  # the study's size
    run = run_validate(tmp_path, params)
    assert run.returncode == 0, run.stderr
    # k 0 and 3, trial 0; the focus condition's trial 0 is the study's k 3, its trial 1 is new
    assert cost_of(run.stdout).startswith("cost: 3 runs, 3 to train, 0 kept (a result in data/runs); about ")
    assert "an estimate: one run measured on a 2-core Intel Xeon with AMX" in cost_of(run.stdout)
    focus_trial = focus_conditions(validate(params))[1]
    path = result_path(tmp_path / "data" / "runs" / "focus", focus_trial)
    path.parent.mkdir(parents=True)
    path.write_text("{}")  # a result file at its place: kept (the finetune stage checks its fingerprint)
    assert cost_of(run_validate(tmp_path, params).stdout).startswith("cost: 3 runs, 2 to train, 1 kept")


def test_the_estimate_scales_with_examples_epochs_and_model_size(tmp_path):
    def seconds(params: dict) -> float:
        config = validate(params)
        found = cost(config, named_model_shape(config.model.name), training_pools(config.data), tmp_path)
        assert found is not None and found.seconds is not None
        return found.seconds

    params = on_tasks(grid_params(), ["rt_sentiment"])
    params["studies"]["progressive"]["sizes"] = [2000]
    params["size"] = 2000
    once = seconds(params)
    assert seconds(with_change("train.epochs", 4, params)) == pytest.approx(4 * once)
    assert seconds(with_change("train.workers", 2, params)) == pytest.approx(once / 2)
    # embedded-base: 12 layers x 768^2 against 6 x 384^2
    assert seconds(with_change("model.name", "embedded-base", params)) == pytest.approx(8 * once)
