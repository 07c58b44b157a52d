"""Bad params fail before any compute, with a message that says what is wrong and what is allowed.

One test (or one parametrized case) per input; every one asserts the message text. The bad
input of other kinds is tested where it belongs: tasks (unit/tasks/test_bad_task_data.py),
GLUE carving (unit/data/test_bad_glue_carving.py), conditions
(unit/conditions/test_bad_conditions.py), model folders and weights
(unit/model/test_bad_models.py), downloads (unit/core/test_bad_downloads.py), stages run as
subprocesses (e2e/test_bad_input_stages.py) and model folders through `dvc exp run`
(e2e/test_bad_input_model_folders.py). Complements unit/params/test_params.py,
unit/tasks/test_glue.py, unit/tasks/test_tasks.py, unit/model/test_reinit.py and
e2e/test_prepare_model.py: their cases (e.g. block window > L, head >= heads, unknown study
key, precision, pooling) are not repeated here.
"""

import re
from dataclasses import dataclass

import pytest
import yaml

from src.artefacts.base_model import BaseModelRecord
from src.core.errors import ParamsError
from src.model.families import max_positions
from src.params.load import ModelLimits, load_config, model_limits, read_params, validate
from src.schemes.registry import REMOVAL_ALLOWED
from tests.support import DELETE, H, L, grid_params, stage_params, with_change


def refused(params: dict, message: str):
    """validate() must raise ParamsError whose text contains `message` verbatim."""
    with pytest.raises(ParamsError, match=re.escape(message)):
        validate(params, ModelLimits(L, H))


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
                "params.yaml: studies.single_layer.layers[1] = 7 "
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
                ("remove-every-layer", [[1, 2, 3, 4, 5, 6]], "[0]", "[1, 2, 3, 4, 5, 6]", REMOVALS_ON_L),
                ("remove-layer-above-L", ["top2", [11, 9, 10]], "[1]", "[11, 9, 10]", REMOVALS_ON_L),
                ("remove-top-L", ["top1", "top6"], "[1]", "'top6'", REMOVALS_ON_L),
                ("remove-alternate-past-layer-1", ["alternate4"], "[0]", "'alternate4'", REMOVALS_ON_L),
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
        pytest.param(  # a boolean: this key takes a mode, not on/off
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
    # read, checked with its own message, and not refused as unknown.
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
    # prepare_model records the families' rule (src/model/families.py); params loading reads the record
    recorded = max_positions(config["model_type"], config["max_position_embeddings"], config["pad_token_id"])
    assert recorded == positions
    BaseModelRecord("m", "test", config["model_type"], 12, 768, 12, "sha", recorded).write(tmp_path)
    assert model_limits(tmp_path) == ModelLimits(num_layers=12, num_heads=12, max_positions=positions)


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


def test_a_missing_key_names_its_likely_typo(params):
    params["data"]["split_sed"] = params["data"].pop("split_seed")
    with pytest.raises(ParamsError) as error:
        validate(params)
    assert str(error.value) == "params.yaml: missing key 'data.split_seed' (is split_sed a typo of split_seed?)"


def test_params_file_that_is_not_a_mapping(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("- task\n- size\n")
    with pytest.raises(ParamsError, match=re.escape(f"{path}: expected a mapping of parameters")):
        read_params(path)


def test_params_are_checked_against_the_prepared_models_shape(tmp_path, tiny_model_dir):
    # what stages/finetune.py does first: model_limits(--model), then load_config(./params.yaml, limits)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(stage_params({"ks": [0, 4]})))
    with pytest.raises(
        ParamsError,
        match=re.escape(
            "params.yaml: studies.progressive.ks[1] = 4 is invalid; allowed: 0..3 (the model has 3 encoder layers)"
        ),
    ):
        load_config(path, model_limits(tiny_model_dir))
