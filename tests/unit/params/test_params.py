"""Bad parameters fail before any compute, with one message naming key, value and what is allowed.

Every case changes one key of the test grid (tests/support.py grid_params), not of the
shipped params.yaml: editing the experiment must not break these tests. The one test that
reads the shipped params.yaml is the first: it must validate.
"""

import pytest

from src.core.errors import ParamsError
from src.params.load import read_params, trials_below, validate
from src.tasks.registry import TASKS
from tests.support import DEFAULT_MODEL, DELETE, REPO, with_change


def test_the_shipped_params_yaml_is_valid_for_the_default_model():
    # The only test in the suite that reads the shipped params.yaml.
    config = validate(read_params(REPO / "params.yaml"), DEFAULT_MODEL)
    assert "progressive" in config.studies


def test_the_test_grid_is_valid_for_the_default_model(params):
    config = validate(params, DEFAULT_MODEL)
    assert set(config.studies) == set(params["studies"])


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("k", 7, "k = 7 is invalid; allowed: 0..6 (the model has 6 encoder layers)"),
        ("k", -1, "k = -1 is invalid; allowed: an integer >= 0"),
        ("k", "3", "k = '3' is invalid; allowed: an integer >= 0"),
        (
            "studies.progressive.ks",
            [0, 13],
            "studies.progressive.ks[1] = 13 is invalid; allowed: 0..6 (the model has 6 encoder layers)",
        ),
        ("task", "sst5", "task = 'sst5' is invalid; allowed: rt_sentiment | subjectivity | tweet_sentiment"),
        (
            "data.tasks",
            ["rt_sentiment", "sst5"],
            f"data.tasks[1] = 'sst5' is invalid; allowed: {' | '.join(TASKS)}",
        ),
        (
            "studies.blocks.tasks",
            ["rt_sentiment", "cola"],
            "studies.blocks.tasks[1] = 'cola' is invalid; allowed: tasks listed in data.tasks "
            "['rt_sentiment', 'subjectivity', 'tweet_sentiment']",
        ),
        ("recipe", "xavier", "recipe = 'xavier' is invalid; allowed: paper | authors_code"),
        ("pooling", "max", "pooling = 'max' is invalid; allowed: mean | cls"),
        ("size", 0, "size = 0 is invalid; allowed: an integer >= 1"),
        ("trials", 0, "trials = 0 is invalid; allowed: an integer >= 1"),
        ("studies.progressive.trials", True, "studies.progressive.trials = True is invalid; allowed: an integer >= 1"),
        ("train.lr", 0, "train.lr = 0 is invalid; allowed: a number > 0"),
        ("train.lr", "2e-5", "train.lr = '2e-5' is invalid; allowed: a number > 0"),
        ("train.batch_size", 0, "train.batch_size = 0 is invalid; allowed: an integer >= 1"),
        ("train.epochs", 0, "train.epochs = 0 is invalid; allowed: an integer >= 1"),
        ("studies.progressive.sizes", [], "studies.progressive.sizes = [] is invalid; allowed: a non-empty list"),
        (
            "studies.progressive.sizes",
            [50, 50],
            "studies.progressive.sizes = [50, 50] is invalid; allowed: a list without duplicates",
        ),
        (
            "studies.progressive.sizes",
            [50, -5],
            "studies.progressive.sizes[1] = -5 is invalid; allowed: an integer >= 1",
        ),
        (
            "studies.blocks.window",
            7,
            "studies.blocks.window = 7 is invalid; allowed: 1..6 (the model has 6 encoder layers)",
        ),
        (
            "studies.heads.heads",
            [0, 12],
            "studies.heads.heads[1] = 12 is invalid; allowed: heads 0..11 (the model has 12 attention heads per layer)",
        ),
        (
            "studies.single_layer.layers",
            [0, 1],
            "studies.single_layer.layers[0] = 0 is invalid; allowed: an integer >= 1",
        ),
        (
            "studies.lr_multiplier.reinit_lr_multiplier",
            0,
            "studies.lr_multiplier.reinit_lr_multiplier = 0 is invalid; allowed: a number > 0",
        ),
        (
            "studies.heads.keep_layernorm",
            True,
            "studies.heads.keep_layernorm = True is invalid; allowed: only on schemes that reinitialise whole layers "
            "(progressive, block, single_layer)",
        ),
        (
            "studies.blocks.ks",
            [0],
            "studies.blocks.ks = [0] is invalid; allowed: keys of a block study: scheme, tasks, sizes, trials, window, "
            "reinit_lr_multiplier, keep_layernorm, epochs, intermediate_tasks, seed_design, intermediate_size",
        ),
        (
            "studies.blocks.scheme",
            "window",
            "studies.blocks.scheme = 'window' is invalid; allowed: progressive | block | single_layer | permutation | "
            "head | remove",
        ),
        ("train.precision", "fp8", "train.precision = 'fp8' is invalid; allowed: auto | bf16 | fp16 | fp32"),
        ("executor.kind", "kubernetes", "executor.kind = 'kubernetes' is invalid; allowed: local | slurm | ray"),
        (
            "executor.address",
            "http://head:8265",
            "executor.address = 'http://head:8265' is invalid; allowed: auto | local (a fresh Ray cluster in this "
            "process) | ray://host:port",
        ),
        (
            "executor.gpus_per_run",
            -1,
            "executor.gpus_per_run = -1 is invalid; allowed: a number >= 0 (a fraction shares a GPU, Ray only; SLURM: "
            "an integer)",
        ),
        ("executor.runs_per_gpu", 0, "executor.runs_per_gpu = 0 is invalid; allowed: an integer >= 1"),
        ("executor.time_limit_min", 0, "executor.time_limit_min = 0 is invalid; allowed: an integer >= 1"),
        (
            "executor.log_dir",
            "",
            "executor.log_dir = '' is invalid; allowed: a folder on the filesystem the workers share",
        ),
        ("executor.max_retries", DELETE, "missing key 'executor.max_retries'"),
        ("data.glue_dir", 3, "data.glue_dir = 3 is invalid; allowed: null (the hub) or a folder path"),
        ("probe.epochs", DELETE, "missing key 'probe.epochs'"),
    ],
)
def test_bad_value_is_named_with_what_is_allowed(key, value, message):
    with pytest.raises(ParamsError) as error:
        validate(with_change(key, value), DEFAULT_MODEL)
    assert str(error.value) == f"params.yaml: {message}"


def test_a_study_below_the_calibrated_trials_is_valid_and_named_in_a_warning(params):
    for study in params["studies"].values():
        study["trials"] = 3
    params["studies"]["blocks"]["trials"] = 2
    params["studies"]["heads"]["trials"] = 1
    params["studies"]["single_layer"].update(sizes=[8, 16], trials={8: 3, 16: 1})  # one size below
    warnings = trials_below(validate(params).studies, 3)
    assert [w.split(" = ")[0] for w in warnings] == [
        f"studies.{name}.trials" for name in ("blocks", "single_layer", "heads")
    ]
    assert warnings[1] == (
        "studies.single_layer.trials = {8: 3, 16: 1} is below 3, the fewest trials the report's tests are calibrated "
        "at (docs/calibration.md): claims read from this study's runs give no verdict there"
    )
    params["studies"]["blocks"]["trials"] = params["studies"]["heads"]["trials"] = 3
    params["studies"]["single_layer"]["trials"] = 3
    assert trials_below(validate(params).studies, 3) == []


def test_limits_of_the_model_are_checked_only_once_it_is_known():
    params = with_change("studies.blocks.window", 7, with_change("k", 7))
    config = validate(params)  # before prepare_model: no limits yet
    assert (config.k, config.studies["blocks"].window) == (7, 7)


def test_smallest_sizes_train_longer(params):
    params["train"].update(epochs=3, small_epochs=5, small_size=500)
    train = validate(params).train
    assert (train.epochs_for(500), train.epochs_for(5000)) == (5, 3)
