"""params.yaml, validated as a whole before any stage computes anything.

The first stage, `validate`, and every stage after it call `load_params`, so a bad
value fails before any output is touched, with one message naming the key, the bad
value and what is allowed. The file is read as DVC reads it (YAML 1.2): `dvc exp run
-S train.lr=3e-5` writes `3e-05`, a number in YAML 1.2 and a string in YAML 1.1.
Every key `validate()` does not read is refused, with the nearest known name.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from pathlib import Path

from ruamel.yaml import YAML

from src.condition import POOLINGS, RECIPES
from src.errors import ParamsError
from src.glue import GLUE_TASKS
from src.tasks import TASKS

SCHEME_KEYS = {"progressive": ("ks",), "block": ("window",), "single_layer": ("layers",), "permutation": (), "head": ("layers", "heads")}
STUDY_SCHEMES = tuple(SCHEME_KEYS)
MODIFIER_KEYS = ("reinit_lr_multiplier", "keep_layernorm", "epochs", "intermediate_tasks")
# Allowed values defined here, not in the modules that use them: validate() must not import torch.
PRECISIONS = ("auto", "bf16", "fp16", "fp32")  # src/training.py resolve_precision
EXECUTOR_KINDS = ("local", "slurm", "ray")  # src/executors.py
MAX_RATING = 4  # the embedded tasks' crowd ratings are on -4..4
# Models whose position ids start after the padding id (RoBERTa's embeddings): of
# max_position_embeddings, pad_token_id + 1 are never used by a token.
PADDING_OFFSET_MODELS = ("roberta", "xlm-roberta", "camembert", "roberta-prelayernorm", "data2vec-text", "xmod")

_read: set[str] = set()  # every key path _get returned since validate() began: the schema


def _get(params: dict, key: str):
    node = params
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            typo = difflib.get_close_matches(part, [str(k) for k in node], n=1) if isinstance(node, dict) else []
            raise ParamsError(f"params.yaml: missing key {key!r}" + (f" (is {typo[0]} a typo of {part}?)" if typo else ""))
        node = node[part]
    _read.add(key)
    return node


def _check(ok: bool, key: str, value, allowed: str) -> None:
    if not ok:
        raise ParamsError(f"params.yaml: {key} = {value!r} is invalid; allowed: {allowed}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # YAML `true` is not a count


def _is_number(value) -> bool:
    return _is_int(value) or (isinstance(value, float) and math.isfinite(value))  # YAML 1.2 reads .nan and .inf


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


def validate(params: dict, num_layers: int | None = None, num_heads: int | None = None, max_positions: int | None = None) -> dict:
    """Check every key and refuse keys it does not read; with the model's limits (known
    once the base model is prepared) check k, layers, heads and max_length against them."""
    _read.clear()
    data_tasks = _task_list(params, "data.tasks")
    _choice(params, "task", data_tasks)
    _int(params, "size", 1)
    _int(params, "k", 0)
    _int(params, "trials", 1)
    _choice(params, "recipe", RECIPES)
    _choice(params, "pooling", POOLINGS)
    _int(params, "seed", 0)

    name = _get(params, "model.name")
    _check(isinstance(name, str) and name.strip() != "", "model.name", name, "'embedded' or a Hugging Face model id")
    max_length = _int(params, "model.max_length", 8)
    _check(max_positions is None or max_length <= max_positions, "model.max_length", max_length, f"8..{max_positions} (the model has {max_positions} positions)")

    glue_dir = _get(params, "data.glue_dir")
    _check(glue_dir is None or isinstance(glue_dir, str), "data.glue_dir", glue_dir, "null (the hub) or a folder path")
    # Carving train out of dev is per GLUE task: asked for QNLI, SST-2 must keep its train file.
    glue_tasks = [t for t in data_tasks if t in GLUE_TASKS]
    carve = _get(params, "data.glue_carve_train_from_dev")
    _check(isinstance(carve, list), "data.glue_carve_train_from_dev", carve, "a list of GLUE tasks whose train split is carved out of dev ([] for none)")
    _check(len(set(map(str, carve))) == len(carve), "data.glue_carve_train_from_dev", carve, "a list without duplicates")
    for i, task in enumerate(carve):
        _check(task in glue_tasks, f"data.glue_carve_train_from_dev[{i}]", task, f"GLUE tasks listed in data.tasks {glue_tasks}")
    _int(params, "data.eval_size", 1)
    band = _positive(params, "data.neutral_band")  # above the scale's maximum it would drop every sentence
    _check(band < MAX_RATING, "data.neutral_band", band, f"a number > 0 and < {MAX_RATING} (|mean rating| on the -{MAX_RATING}..{MAX_RATING} scale)")
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
    _choice(params, "train.precision", PRECISIONS)
    _int(params, "train.checkpoint_every", 0)
    _int(params, "train.workers", 1)
    _int(params, "train.threads", 1)

    # executor: where a finetune stage's runs execute (src/executors.py). Never part of a
    # fingerprint: every backend gives the same numbers.
    kind = _choice(params, "executor.kind", EXECUTOR_KINDS)
    address = _get(params, "executor.address")
    _check(isinstance(address, str) and (address in ("auto", "local") or address.startswith("ray://")), "executor.address", address, "auto | local (a fresh Ray cluster in this process) | ray://host:port")
    gpus_per_run = _get(params, "executor.gpus_per_run")
    _check(_is_number(gpus_per_run) and gpus_per_run >= 0 and (kind != "slurm" or _is_int(gpus_per_run)), "executor.gpus_per_run", gpus_per_run, "a number >= 0 (a fraction shares a GPU, Ray only; SLURM: an integer)")
    _int(params, "executor.runs_per_gpu", 1)
    partition = _get(params, "executor.partition")
    _check(partition is None or (isinstance(partition, str) and partition.strip() != ""), "executor.partition", partition, "null (the cluster's default) or a partition name")
    _int(params, "executor.time_limit_min", 1)
    _int(params, "executor.cpus_per_run", 1)
    _positive(params, "executor.mem_gb_per_run")
    _int(params, "executor.array_parallelism", 1)
    log_dir = _get(params, "executor.log_dir")
    _check(isinstance(log_dir, str) and log_dir.strip() != "", "executor.log_dir", log_dir, "a folder on the filesystem the workers share")
    _int(params, "executor.max_retries", 0)

    _list(params, "probe.tasks", lambda v: v in data_tasks, f"tasks listed in data.tasks {data_tasks}")
    _int(params, "probe.batch_size", 1)
    _int(params, "probe.epochs", 1)
    _positive(params, "probe.lr")
    _int(params, "probe.train_batch_size", 1)

    # how the report tests claims (src/claims.py)
    alpha = _get(params, "report.alpha")
    _check(_is_number(alpha) and 0 < alpha < 1, "report.alpha", alpha, "a number in (0, 1)")
    power = _get(params, "report.power")
    _check(_is_number(power) and 0 < power < 1, "report.power", power, "a number in (0, 1)")
    _positive(params, "report.single_layer_margin")
    margin = _get(params, "report.correlation_margin")
    _check(_is_number(margin) and 0 < margin < 1, "report.correlation_margin", margin, "a number in (0, 1)")
    _int(params, "report.bootstrap_resamples", 100)
    _int(params, "report.bootstrap_min_trials", 2)

    studies = _get(params, "studies")
    _check(isinstance(studies, dict) and "progressive" in studies, "studies", studies, "a mapping of named studies, including 'progressive'")
    for study in studies:
        _validate_study(params, f"studies.{study}", data_tasks, num_layers, num_heads)
    _check(studies["progressive"].get("scheme") == "progressive", "studies.progressive.scheme", studies["progressive"].get("scheme"), "progressive (Fig. 1)")
    if num_layers is not None:
        _check(params["k"] <= num_layers, "k", params["k"], f"0..{num_layers} (the model has {num_layers} encoder layers)")
    _refuse_unread(params, "")  # last: every check above has marked the keys it knows
    return params


def _nearest(name, known) -> str:
    close = difflib.get_close_matches(str(name), known, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _refuse_unread(node: dict, prefix: str) -> None:
    """Refuse a key that validate() never read: a typo (`tirals`) or `-S +train.max_steps=10`
    would otherwise be ignored without a word. A mapping read only as a whole is a value."""
    for name, value in node.items():
        key = f"{prefix}{name}"
        deeper = [k for k in _read if k.startswith(f"{key}.")]
        if key not in _read and not deeper:
            known = sorted({k[len(prefix):].split(".")[0] for k in _read if k.startswith(prefix)})
            _check(False, key, value, f"the keys known here: {', '.join(known)}{_nearest(name, known)}")
        if isinstance(value, dict) and deeper:
            _refuse_unread(value, f"{key}.")


def _validate_study(params: dict, key: str, data_tasks: list, num_layers: int | None, num_heads: int | None) -> None:
    _check(re.fullmatch(r"[a-z][a-z0-9_]*", key.split(".", 1)[1]) is not None, key, key.split(".", 1)[1], "a study name of lowercase letters, digits and _ (it names a stage and a folder)")
    study = _get(params, key)
    _check(isinstance(study, dict), key, study, "a mapping with scheme, tasks, sizes, trials")
    scheme = _choice(params, f"{key}.scheme", STUDY_SCHEMES)
    allowed = ("scheme", "tasks", "sizes", "trials", *SCHEME_KEYS[scheme], *MODIFIER_KEYS)
    unknown = [name for name in study if name not in allowed]
    _check(not unknown, f"{key}.{unknown[0] if unknown else ''}", study.get(unknown[0]) if unknown else None, f"keys of a {scheme} study: {', '.join(allowed)}{_nearest(unknown[0], allowed) if unknown else ''}")
    _list(params, f"{key}.tasks", lambda v: v in data_tasks, f"tasks listed in data.tasks {data_tasks}")
    _int_list(params, f"{key}.sizes", 1)
    _int(params, f"{key}.trials", 1)

    L, H = num_layers, num_heads
    if scheme == "progressive":
        _int_list(params, f"{key}.ks", 0)
        if L is not None:
            _check(all(k <= L for k in study["ks"]), f"{key}.ks", study["ks"], f"0..{L} (the model has {L} encoder layers)")
    if scheme == "block":
        window = _int(params, f"{key}.window", 1)
        _check(L is None or window <= L, f"{key}.window", window, f"1..{L} (the model has {L} encoder layers)")
    if scheme in ("single_layer", "head"):
        layers = _int_list(params, f"{key}.layers", 1)
        _check(L is None or max(layers) <= L, f"{key}.layers", layers, f"layers 1..{L} (the model has {L} encoder layers)")
    if scheme == "head":
        heads = _int_list(params, f"{key}.heads", 0)
        _check(H is None or max(heads) < H, f"{key}.heads", heads, f"heads 0..{H - 1 if H else ''} (the model has {H} attention heads per layer)")

    modifiers = [m for m in ("reinit_lr_multiplier", "keep_layernorm") if m in study]
    _check(not modifiers or scheme in ("progressive", "block", "single_layer"), f"{key}.{modifiers[0] if modifiers else ''}", study.get(modifiers[0]) if modifiers else None, "only on schemes that reinitialise whole layers (progressive, block, single_layer)")
    if "reinit_lr_multiplier" in study:
        _positive(params, f"{key}.reinit_lr_multiplier")
    if "keep_layernorm" in study:
        _bool(params, f"{key}.keep_layernorm")
    if "epochs" in study:
        _int(params, f"{key}.epochs", 1)
    if "intermediate_tasks" in study:
        _list(params, f"{key}.intermediate_tasks", lambda v: v in data_tasks, f"tasks listed in data.tasks {data_tasks}")


def read_params(path: str | Path = "params.yaml") -> dict:
    """params.yaml as DVC reads it: YAML 1.2 (ruamel.yaml's safe loader, as dvc uses)."""
    try:
        params = YAML(typ="safe", pure=True).load(Path(path))
    except Exception as error:  # ruamel's YAMLError: a syntax error, with line and column
        raise ParamsError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
    if not isinstance(params, dict):
        raise ParamsError(f"{path}: expected a mapping of parameters")
    return params


def load_params(path: str | Path = "params.yaml", num_layers: int | None = None, num_heads: int | None = None, max_positions: int | None = None) -> dict:
    return validate(read_params(path), num_layers, num_heads, max_positions)


def model_limits(model_dir: str | Path) -> dict:
    """num_layers, num_heads (as prepare_model recorded them in base.json: config keys
    differ by family) and max_positions (the longest input in tokens, from config.json) of
    a prepared base model; no torch import, so the validate stage stays cheap."""
    shape = json.loads((Path(model_dir) / "base.json").read_text())
    config = json.loads((Path(model_dir) / "config.json").read_text())
    positions = config["max_position_embeddings"]
    if config.get("model_type") in PADDING_OFFSET_MODELS:
        positions -= config.get("pad_token_id", 1) + 1  # RoBERTa: 514 - 2 = 512
    return {"num_layers": shape["num_layers"], "num_heads": shape["num_heads"], "max_positions": positions}


def epochs_for(train: dict, size: int) -> int:
    """Paper App. D: the smallest training sets train longer (5 epochs instead of 3)."""
    return train["small_epochs"] if size <= train["small_size"] else train["epochs"]
