"""Bad parameters fail before any compute, with one message naming key, value and what is allowed."""

import copy

import pytest
import yaml

from src.params import ParamsError, epochs_for, validate
from stages.build_data import check_sizes

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
    validate(copy.deepcopy(DEFAULT), num_layers=6)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("k", 7, "k = 7 is invalid; allowed: 0..6 (the model has 6 encoder layers)"),
        ("k", -1, "k = -1 is invalid; allowed: an integer >= 0"),
        ("k", "3", "k = '3' is invalid; allowed: an integer >= 0"),
        ("grid.ks", [0, 13], "grid.ks = [13] is invalid; allowed: 0..6"),
        ("task", "sst5", "task = 'sst5' is invalid; allowed: rt_sentiment | bigram_shift | sst2"),
        ("task", "sst2", "task = 'sst2' is invalid; allowed: tasks listed in data.tasks"),
        ("grid.tasks", ["rt_sentiment", "cola"], "grid.tasks = ['cola'] is invalid; allowed: tasks listed in data.tasks"),
        ("recipe", "xavier", "recipe = 'xavier' is invalid; allowed: paper | authors_code"),
        ("head", "max", "head = 'max' is invalid; allowed: mean | cls"),
        ("size", 0, "size = 0 is invalid; allowed: an integer >= 1"),
        ("trials", 0, "trials = 0 is invalid; allowed: an integer >= 1"),
        ("grid.trials", True, "grid.trials = True is invalid; allowed: an integer >= 1"),
        ("train.lr", 0, "train.lr = 0 is invalid; allowed: a number > 0"),
        ("train.lr", "2e-5", "train.lr = '2e-5' is invalid; allowed: a number > 0"),
        ("train.batch_size", 0, "train.batch_size = 0 is invalid"),
        ("train.epochs", 0, "train.epochs = 0 is invalid"),
        ("grid.sizes", [], "grid.sizes = [] is invalid; allowed: a non-empty list"),
        ("grid.sizes", [50, 50], "grid.sizes = [50, 50] is invalid; allowed: a list without duplicates"),
        ("grid.sizes", [50, -5], "grid.sizes[1] = -5 is invalid; allowed: an integer >= 1"),
        ("data.glue_dir", 3, "data.glue_dir = 3 is invalid"),
        ("probe.epochs", DELETE, "missing key 'probe.epochs'"),
    ],
)
def test_bad_value_is_named_with_what_is_allowed(key, value, message):
    with pytest.raises(ParamsError) as error:
        validate(with_change(key, value), num_layers=6)
    assert message in str(error.value)


def test_subset_larger_than_the_task_is_refused_before_finetuning():
    params = with_change("grid.sizes", [50, 20000])
    with pytest.raises(ParamsError, match="grid.sizes = 20000 is larger than the 9110 training examples of task 'rt_sentiment'"):
        check_sizes("rt_sentiment", 9110, params)
    check_sizes("rt_sentiment", 9110, DEFAULT)


def test_smallest_sizes_train_longer():
    train = {"epochs": 3, "small_epochs": 5, "small_size": 500}
    assert (epochs_for(train, 500), epochs_for(train, 5000)) == (5, 3)
