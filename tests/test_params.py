"""Bad parameters fail before any compute, with one message naming key, value and what is allowed."""

import copy

import pytest
import yaml

from src.params import ParamsError, epochs_for, validate

with open("params.yaml") as f:
    DEFAULT = yaml.safe_load(f)


DELETE = object()


def with_change(key, value):
    params = copy.deepcopy(DEFAULT)
    node = params
    *path, last = key.split(".")
    for part in path:
        node = node[part]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return params


def test_default_params_are_valid():
    validate(copy.deepcopy(DEFAULT), num_layers=6, num_heads=12)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("k", 7, "k = 7 is invalid; allowed: 0..6 (the model has 6 encoder layers)"),
        ("k", -1, "k = -1 is invalid; allowed: an integer >= 0"),
        ("k", "3", "k = '3' is invalid; allowed: an integer >= 0"),
        ("studies.progressive.ks", [0, 13], "studies.progressive.ks = [0, 13] is invalid; allowed: 0..6"),
        ("task", "sst5", "task = 'sst5' is invalid; allowed: rt_sentiment | subjectivity | tweet_sentiment"),
        ("data.tasks", ["rt_sentiment", "sst5"], "data.tasks[1] = 'sst5' is invalid; allowed: rt_sentiment | bigram_shift | subjectivity | tweet_sentiment | sst2"),
        ("studies.blocks.tasks", ["rt_sentiment", "cola"], "studies.blocks.tasks[1] = 'cola' is invalid; allowed: tasks listed in data.tasks"),
        ("recipe", "xavier", "recipe = 'xavier' is invalid; allowed: paper | authors_code"),
        ("pooling", "max", "pooling = 'max' is invalid; allowed: mean | cls"),
        ("size", 0, "size = 0 is invalid; allowed: an integer >= 1"),
        ("trials", 0, "trials = 0 is invalid; allowed: an integer >= 1"),
        ("studies.progressive.trials", True, "studies.progressive.trials = True is invalid; allowed: an integer >= 1"),
        ("train.lr", 0, "train.lr = 0 is invalid; allowed: a number > 0"),
        ("train.lr", "2e-5", "train.lr = '2e-5' is invalid; allowed: a number > 0"),
        ("train.batch_size", 0, "train.batch_size = 0 is invalid"),
        ("train.epochs", 0, "train.epochs = 0 is invalid"),
        ("studies.progressive.sizes", [], "studies.progressive.sizes = [] is invalid; allowed: a non-empty list"),
        ("studies.progressive.sizes", [50, 50], "studies.progressive.sizes = [50, 50] is invalid; allowed: a list without duplicates"),
        ("studies.progressive.sizes", [50, -5], "studies.progressive.sizes[1] = -5 is invalid; allowed: an integer >= 1"),
        ("studies.blocks.window", 7, "studies.blocks.window = 7 is invalid; allowed: 1..6"),
        ("studies.heads.heads", [0, 12], "studies.heads.heads = [0, 12] is invalid; allowed: heads 0..11"),
        ("studies.single_layer.layers", [0, 1], "studies.single_layer.layers[0] = 0 is invalid; allowed: an integer >= 1"),
        ("studies.lr_multiplier.reinit_lr_multiplier", 0, "studies.lr_multiplier.reinit_lr_multiplier = 0 is invalid; allowed: a number > 0"),
        ("studies.heads.keep_layernorm", True, "studies.heads.keep_layernorm = True is invalid; allowed: only on schemes that reinitialise whole layers"),
        ("studies.blocks.ks", [0], "studies.blocks.ks = [0] is invalid; allowed: keys of a block study"),
        ("studies.blocks.scheme", "window", "studies.blocks.scheme = 'window' is invalid; allowed: progressive | block"),
        ("train.precision", "fp8", "train.precision = 'fp8' is invalid; allowed: auto | bf16 | fp16 | fp32"),
        ("executor.kind", "kubernetes", "executor.kind = 'kubernetes' is invalid; allowed: local | slurm | ray"),
        ("executor.address", "http://head:8265", "executor.address = 'http://head:8265' is invalid; allowed: auto | local"),
        ("executor.gpus_per_run", -1, "executor.gpus_per_run = -1 is invalid; allowed: a number >= 0"),
        ("executor.runs_per_gpu", 0, "executor.runs_per_gpu = 0 is invalid; allowed: an integer >= 1"),
        ("executor.time_limit_min", 0, "executor.time_limit_min = 0 is invalid; allowed: an integer >= 1"),
        ("executor.log_dir", "", "executor.log_dir = '' is invalid; allowed: a folder on the filesystem the workers share"),
        ("executor.max_retries", DELETE, "missing key 'executor.max_retries'"),
        ("data.glue_dir", 3, "data.glue_dir = 3 is invalid"),
        ("probe.epochs", DELETE, "missing key 'probe.epochs'"),
    ],
)
def test_bad_value_is_named_with_what_is_allowed(key, value, message):
    with pytest.raises(ParamsError) as error:
        validate(with_change(key, value), num_layers=6, num_heads=12)
    assert message in str(error.value)


def test_smallest_sizes_train_longer():
    train = {"epochs": 3, "small_epochs": 5, "small_size": 500}
    assert (epochs_for(train, 500), epochs_for(train, 5000)) == (5, 3)
