"""params.yaml, validated as a whole before any stage computes anything.

Every stage calls `load_params` first, so a typo in any section fails the first
stage that runs, with one message naming the key, the bad value and what is allowed,
and nothing already computed is touched.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from src.condition import HEADS, RECIPES
from src.tasks import TASKS


class ParamsError(ValueError):
    pass


def _get(params: dict, key: str):
    node = params
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ParamsError(f"params.yaml: missing key {key!r}")
        node = node[part]
    return node


def _check(ok: bool, key: str, value, allowed: str) -> None:
    if not ok:
        raise ParamsError(f"params.yaml: {key} = {value!r} is invalid; allowed: {allowed}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # YAML `true` is not a count


def _is_number(value) -> bool:
    return _is_int(value) or isinstance(value, float)


def _int(params, key, minimum: int) -> int:
    value = _get(params, key)
    _check(_is_int(value) and value >= minimum, key, value, f"an integer >= {minimum}")
    return value


def _positive(params, key) -> float:
    value = _get(params, key)
    _check(_is_number(value) and value > 0, key, value, "a number > 0")
    return value


def _bool(params, key) -> bool:
    value = _get(params, key)
    _check(isinstance(value, bool), key, value, "true | false")
    return value


def _choice(params, key, choices) -> str:
    value = _get(params, key)
    _check(value in choices, key, value, " | ".join(choices))
    return value


def _list(params, key, item_ok, item_allowed: str) -> list:
    """A non-empty list without duplicates whose every item passes `item_ok`."""
    value = _get(params, key)
    _check(isinstance(value, list) and len(value) > 0, key, value, "a non-empty list")
    _check(len(set(map(str, value))) == len(value), key, value, "a list without duplicates")
    for i, item in enumerate(value):
        _check(item_ok(item), f"{key}[{i}]", item, item_allowed)
    return value


def _int_list(params, key, minimum: int) -> list:
    return _list(params, key, lambda v: _is_int(v) and v >= minimum, f"an integer >= {minimum}")


def _task_list(params, key) -> list:
    return _list(params, key, lambda v: v in TASKS, " | ".join(TASKS))


def validate(params: dict, num_layers: int | None = None) -> dict:
    """Check every key; with `num_layers` (known once the base model is prepared) check k too."""
    _choice(params, "task", TASKS)
    _int(params, "size", 1)
    _int(params, "k", 0)
    _int(params, "trials", 1)
    _choice(params, "recipe", RECIPES)
    _choice(params, "head", HEADS)
    _int(params, "seed", 0)

    name = _get(params, "model.name")
    _check(isinstance(name, str) and name.strip() != "", "model.name", name, "'embedded' or a Hugging Face model id")
    _int(params, "model.max_length", 8)

    data_tasks = _task_list(params, "data.tasks")
    glue_dir = _get(params, "data.glue_dir")
    _check(glue_dir is None or isinstance(glue_dir, str), "data.glue_dir", glue_dir, "null (the hub) or a folder path")
    _bool(params, "data.glue_carve_train_from_dev")
    _int(params, "data.eval_size", 1)
    _positive(params, "data.neutral_band")
    _int(params, "data.split_seed", 0)

    _positive(params, "train.lr")
    _int(params, "train.batch_size", 1)
    _int(params, "train.epochs", 1)
    _int(params, "train.small_size", 0)
    _int(params, "train.small_epochs", 1)
    weight_decay = _get(params, "train.weight_decay")
    _check(_is_number(weight_decay) and weight_decay >= 0, "train.weight_decay", weight_decay, "a number >= 0")
    _int(params, "train.eval_batch_size", 1)
    _bool(params, "train.group_by_length")

    _int(params, "probe.batch_size", 1)
    _int(params, "probe.epochs", 1)
    _positive(params, "probe.lr")
    _int(params, "probe.train_batch_size", 1)

    grid_tasks = _task_list(params, "grid.tasks")
    _int_list(params, "grid.sizes", 1)
    ks = _int_list(params, "grid.ks", 0)
    _int(params, "grid.trials", 1)

    for key, tasks in (("task", [params["task"]]), ("grid.tasks", grid_tasks)):
        missing = [t for t in tasks if t not in data_tasks]
        _check(not missing, key, missing if key == "grid.tasks" else params["task"], f"tasks listed in data.tasks {data_tasks}")
    if num_layers is not None:
        for key, values in (("k", [params["k"]]), ("grid.ks", ks)):
            bad = [v for v in values if not 0 <= v <= num_layers]
            _check(not bad, key, params["k"] if key == "k" else bad, f"0..{num_layers} (the model has {num_layers} encoder layers)")
    return params


def load_params(path: str | Path = "params.yaml", num_layers: int | None = None) -> dict:
    with open(path) as f:
        params = yaml.safe_load(f)
    if not isinstance(params, dict):
        raise ParamsError(f"{path}: expected a mapping of parameters")
    return validate(params, num_layers)


def epochs_for(train: dict, size: int) -> int:
    """Paper App. D: the smallest training sets train longer (5 epochs instead of 3)."""
    return train["small_epochs"] if size <= train["small_size"] else train["epochs"]
