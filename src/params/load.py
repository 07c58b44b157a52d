"""params.yaml -> Config, validated as a whole before any stage computes anything.

The first stage, `validate`, and every stage after it call `load_config`, so a bad value
fails before any output is touched, with one message naming the key, the bad value and
what is allowed. The file is read as DVC reads it (YAML 1.2): `dvc exp run -S
train.lr=3e-5` writes `3e-05`, a number in YAML 1.2 and a string in YAML 1.1. Every key
that no section declares is refused, with the nearest known name.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TypeVar

from ruamel.yaml import YAML

from src.config.schema import (
    EXECUTOR_EXTRAS,
    EXECUTOR_KINDS,
    MAX_RATING,
    Config,
    DataConfig,
    ExecutorConfig,
    ModelConfig,
    ProbeConfig,
    ReportConfig,
    Section,
    StudyConfig,
    TrainConfig,
    forget_keys_read,
    keys_read,
)
from src.core import checks
from src.core.checks import refuse, require
from src.core.errors import ParamsError
from src.schemes.registry import MODIFIERS, SCHEMES, study_keys
from src.tasks.registry import GLUE_TASK_NAMES, TASKS

S = TypeVar("S", bound=Section)


@dataclass(frozen=True)
class ModelLimits:
    """What the prepared base model allows (None: not known yet, not checked)."""

    num_layers: int | None = None
    num_heads: int | None = None
    max_positions: int | None = None


def read_params(path: str | Path = "params.yaml") -> dict:
    """params.yaml as DVC reads it: YAML 1.2 (ruamel.yaml's safe loader, as dvc uses)."""
    try:
        params = YAML(typ="safe", pure=True).load(Path(path))
    except Exception as error:  # ruamel's YAMLError: a syntax error, with line and column
        raise ParamsError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
    if not isinstance(params, dict):
        raise ParamsError(f"{path}: expected a mapping of parameters")
    return params


def load_config(path: str | Path = "params.yaml", limits: ModelLimits = ModelLimits()) -> Config:
    return validate(read_params(path), limits)


def _get(node: dict, key: str, name: str):
    if name not in node:
        typo = difflib.get_close_matches(name, [str(k) for k in node], n=1)
        raise ParamsError(f"params.yaml: missing key {key!r}" + (f" (is {typo[0]} a typo of {name}?)" if typo else ""))
    return node[name]


def _section(cls: type[S], node, key: str, overrides: dict | None = None) -> S:
    """A section from its mapping: every field's check applied (`overrides`: checks that need
    other sections), then every key the section does not declare refused."""
    _mapping(node, key, cls)
    values = {}
    for f in fields(cls):
        check = (overrides or {}).get(f.name, f.metadata.get("check"))
        value = _get(node, f"{key}.{f.name}" if key else f.name, f.name)
        values[f.name] = check(value, f"{key}.{f.name}" if key else f.name) if check else value
    _refuse_unknown(node, key, [f.name for f in fields(cls)])
    section = cls(**values)
    object.__setattr__(section, "_key", key)
    return section


def _refuse_unknown(node: dict, key: str, known: list[str]) -> None:
    for name, value in node.items():
        if name not in known:
            listed = ", ".join(sorted(known))
            refuse(
                f"{key}.{name}" if key else name, value, f"the keys known here: {listed}{checks.nearest(name, known)}"
            )


def validate(params: dict, limits: ModelLimits = ModelLimits()) -> Config:
    """Check every key and refuse keys no section declares; with the model's limits (known
    once the base model is prepared) check k, layers, heads and max_length against them."""
    read_before = keys_read()  # a stage that validates twice (against the model) keeps what it read in between
    top = [f.name for f in fields(Config)]
    _refuse_unknown(params, "", top)
    data = _data(_get(params, "data", "data"))
    in_data = checks.member_of(data.tasks, f"tasks listed in data.tasks {list(data.tasks)}")
    focus_k = checks.integer(0)
    L = limits.num_layers

    def k_check(value, key):
        focus_k(value, key)
        require(L is None or value <= L, key, value, f"0..{L} (the model has {L} encoder layers)")
        return value

    # A probe predicts one label per sequence from a pooled layer; a span-QA task has none.
    sequence_tasks = [t for t in data.tasks if not TASKS[t].kind.token_level]
    probed = (
        in_data
        if len(sequence_tasks) == len(data.tasks)
        else checks.member_of(
            sequence_tasks,
            f"tasks listed in data.tasks that are not span QA {sequence_tasks} (a probe predicts one label per "
            "sequence; a span-QA task labels tokens)",
        )
    )

    focus = {"task": checks.choice(data.tasks), "k": k_check}
    scalars = {
        f.name: focus.get(f.name, f.metadata["check"])(_get(params, f.name, f.name), f.name)
        for f in fields(Config)
        if f.name not in SECTIONS
    }
    model = _section(ModelConfig, _get(params, "model", "model"), "model")
    require(
        limits.max_positions is None or model.max_length <= limits.max_positions,
        "model.max_length",
        model.max_length,
        f"8..{limits.max_positions} (the model has {limits.max_positions} positions)",
    )
    if any(TASKS[t].kind.token_level for t in data.tasks):
        # a window is [CLS] question [SEP] context [SEP] and must advance past the stride: even a
        # one-token question leaves no new context at a stride of max_length - 4
        require(
            data.qa_stride <= model.max_length - 5,
            "data.qa_stride",
            data.qa_stride,
            f"0..{model.max_length - 5} with model.max_length = {model.max_length} (a window holds [CLS], the "
            "question, two [SEP] and context beyond the stride)",
        )
    config = Config(
        **scalars,
        model=model,
        data=data,
        train=_section(TrainConfig, _get(params, "train", "train"), "train"),
        executor=_executor(_get(params, "executor", "executor")),
        probe=_section(ProbeConfig, _get(params, "probe", "probe"), "probe", {"tasks": checks.listing(probed)}),
        report=_section(ReportConfig, _get(params, "report", "report"), "report"),
        studies=_studies(_get(params, "studies", "studies"), in_data, limits),
    )
    forget_keys_read(keep=read_before)  # what a stage reads starts here, not in the checks above
    return config


SECTIONS = ("model", "data", "train", "executor", "probe", "report", "studies")


def _mapping(node, key: str, cls: type[Section]) -> dict:
    require(isinstance(node, dict), key, node, f"a mapping with keys {', '.join(f.name for f in fields(cls))}")
    return node


def _data(node) -> DataConfig:
    task_names = checks.listing(checks.member_of(TASKS, " | ".join(TASKS)))
    data_tasks = task_names(_get(_mapping(node, "data", DataConfig), "data.tasks", "tasks"), "data.tasks")
    glue_tasks = [t for t in data_tasks if t in GLUE_TASK_NAMES]
    carve = checks.listing(
        checks.member_of(glue_tasks, f"GLUE tasks listed in data.tasks {glue_tasks}"),
        allow_empty=True,
        empty_allowed="a list of GLUE tasks whose train split is carved out of dev ([] for none)",
    )

    def band(value, key):
        checks.positive(value, key)  # above the scale's maximum it would drop every sentence
        require(
            value < MAX_RATING,
            key,
            value,
            f"a number > 0 and < {MAX_RATING} (|mean rating| on the -{MAX_RATING}..{MAX_RATING} scale)",
        )
        return value

    return _section(
        DataConfig, node, "data", {"tasks": task_names, "glue_carve_train_from_dev": carve, "neutral_band": band}
    )


def _executor(node) -> ExecutorConfig:
    kind = checks.choice(EXECUTOR_KINDS)(
        _get(_mapping(node, "executor", ExecutorConfig), "executor.kind", "kind"), "executor.kind"
    )

    def address(value, key):
        ok = isinstance(value, str) and (value in ("auto", "local") or value.startswith("ray://"))
        require(ok, key, value, "auto | local (a fresh Ray cluster in this process) | ray://host:port")
        return value

    def gpus(value, key):
        ok = checks.is_number(value) and value >= 0 and (kind != "slurm" or checks.is_int(value))
        require(ok, key, value, "a number >= 0 (a fraction shares a GPU, Ray only; SLURM: an integer)")
        return value

    return _section(ExecutorConfig, node, "executor", {"address": address, "gpus_per_run": gpus})


def check_backend_installed(executor: ExecutorConfig) -> None:
    """The package `executor.kind`'s backend imports is installed: the validate stage asks,
    so a missing extra stops `dvc repro` before any model is prepared or data built."""
    module = EXECUTOR_EXTRAS.get(executor.kind)
    if module is not None and importlib.util.find_spec(module) is None:
        raise ParamsError(
            f"params.yaml: executor.kind = {executor.kind!r} needs the Python package {module}, which is not "
            "installed: pip install -r requirements-cluster.txt"
        )


WHOLE_LAYERS = (
    f"only on schemes that reinitialise whole layers ({', '.join(s.name for s in SCHEMES.values() if s.whole_layers)})"
)
STUDY_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _studies(node, in_data, limits: ModelLimits) -> dict[str, StudyConfig]:
    require(
        isinstance(node, dict) and "progressive" in node,
        "studies",
        node,
        "a mapping of named studies, including 'progressive'",
    )
    studies = {name: _study(name, study, in_data, limits) for name, study in node.items()}
    require(
        studies["progressive"].scheme == "progressive",
        "studies.progressive.scheme",
        studies["progressive"].scheme,
        "progressive (Fig. 1)",
    )
    return studies


def _study(name: str, node, in_data, limits: ModelLimits) -> StudyConfig:
    key = f"studies.{name}"
    require(
        STUDY_NAME.fullmatch(str(name)) is not None,
        key,
        name,
        "a study name of lowercase letters, digits and _ (it names a stage and a folder)",
    )
    require(isinstance(node, dict), key, node, "a mapping with scheme, tasks, sizes, trials")
    scheme = SCHEMES[checks.choice(SCHEMES)(_get(node, f"{key}.scheme", "scheme"), f"{key}.scheme")]
    allowed = study_keys(scheme)
    for unknown in [k for k in node if k not in allowed]:
        refuse(
            f"{key}.{unknown}",
            node[unknown],
            f"keys of a {scheme.name} study: {', '.join(allowed)}{checks.nearest(unknown, allowed)}",
        )
    tasks = checks.listing(in_data)(_get(node, f"{key}.tasks", "tasks"), f"{key}.tasks")
    sizes = _sizes(_get(node, f"{key}.sizes", "sizes"), f"{key}.sizes", tasks)
    every_size = sorted(
        {s for task_sizes in (sizes.values() if isinstance(sizes, dict) else [sizes]) for s in task_sizes}
    )
    values = {
        "tasks": tasks,
        "sizes": sizes,
        "trials": _trials(_get(node, f"{key}.trials", "trials"), f"{key}.trials", every_size),
    }
    for arg, study_key in scheme.keys.items():
        assert study_key.check is not None, f"scheme key {arg} has no check"  # only a modifier's check may be None
        values[arg] = study_key.check(_get(node, f"{key}.{arg}", arg), f"{key}.{arg}")
        limit = study_key.limit
        # a prepared model's limits are known together (model_limits), or none of them
        if limit is not None and limits.num_layers is not None and limits.num_heads is not None:
            bound = limit.bound(limits.num_layers, limits.num_heads)
            # a list is checked entry by entry, so the message names the one at fault
            entries = enumerate(values[arg]) if isinstance(values[arg], tuple) else [(None, values[arg])]
            for i, entry in entries:
                require(
                    limit.largest(entry if i is None else (entry,)) <= bound,
                    f"{key}.{arg}" if i is None else f"{key}.{arg}[{i}]",
                    node[arg] if i is None else node[arg][i],
                    limit.allowed(limits.num_layers, limits.num_heads),
                )
    for modifier in MODIFIERS.values():
        if modifier.key not in node:
            continue
        value = node[modifier.key]
        require(scheme.whole_layers or not modifier.whole_layers_only, f"{key}.{modifier.key}", value, WHOLE_LAYERS)
        check = modifier.check or checks.chains(in_data)
        values[modifier.key] = check(value, f"{key}.{modifier.key}")
    if "seed_design" in values:
        subsets, seeds = values["seed_design"]
        counts = set(values["trials"].values()) if isinstance(values["trials"], dict) else {values["trials"]}
        require(
            counts == {subsets * seeds},
            f"{key}.trials",
            values["trials"],
            f"subsets x seeds of seed_design = {subsets * seeds}",
        )
    require(
        "intermediate_size" not in node or "intermediate_tasks" in node,
        f"{key}.intermediate_size",
        node.get("intermediate_size"),
        "only in a study with intermediate_tasks",
    )
    study = StudyConfig(name=name, scheme=scheme.name, **values)
    object.__setattr__(study, "_key", key)
    return study


def _sizes(value, key: str, tasks: tuple[str, ...]) -> tuple[int, ...] | dict[str, tuple[int, ...]]:
    """One list of sizes for every task, or a mapping task -> its own list (Tamkin et al.: no CoLA at 50k)."""
    sizes = checks.listing(checks.integer(1))
    if not isinstance(value, dict):
        return sizes(value, key)
    require(
        sorted(map(str, value)) == sorted(tasks),
        key,
        value,
        f"a list of sizes for every task, or a mapping with one list of sizes per task of the study {list(tasks)}",
    )
    return {task: sizes(value[task], f"{key}.{task}") for task in tasks}


def trials_below(studies: dict[str, StudyConfig], fewest: int) -> list[str]:
    """One line per study that runs fewer than `fewest` trials at some size: valid params, but the report's tests
    of that study's runs cannot decide there (the validate stage prints them as warnings)."""
    return [
        f"studies.{name}.trials = {study.trials} is below {fewest}, the fewest trials the report's tests are "
        f"calibrated at (docs/calibration.md): claims read from this study's runs give no verdict there"
        for name, study in studies.items()
        if min(study.trials.values() if isinstance(study.trials, dict) else [study.trials]) < fewest
    ]


def _trials(value, key: str, sizes: list[int]) -> int | dict[int, int]:
    """One count for every size, or a mapping size -> its own count (Tamkin et al. App. B: 50 at 500, 3 elsewhere)."""
    if not isinstance(value, dict):
        return checks.integer(1)(value, key)
    # the keys are the sizes themselves, never `default`: DVC cannot hash a mapping of int and str keys
    require(
        all(checks.is_int(size) for size in value) and sorted(value) == sizes,
        key,
        value,
        f"an integer >= 1, or a mapping with one count per size of the study {sizes}",
    )
    return {size: checks.integer(1)(value[size], f"{key}.{size}") for size in sizes}


def model_limits(model_dir: str | Path) -> ModelLimits:
    """num_layers, num_heads and max_positions (the longest input in tokens) of a prepared
    base model, as prepare_model recorded them in base.json (config keys differ by family);
    no torch import, so the validate stage stays cheap."""
    from src.artefacts.base_model import BaseModelRecord

    shape = BaseModelRecord.read(Path(model_dir))
    return ModelLimits(shape.num_layers, shape.num_heads, shape.max_positions)


def prepared_model_limits(model_dir: Path, name: str) -> ModelLimits:
    """The prepared model's limits if `model_dir` holds the model params.yaml names (model.name),
    else none: not prepared yet, a partial folder, or another model (its prepare_model stage checks it)."""
    from src.artefacts.base_model import BaseModelRecord

    try:
        return model_limits(model_dir) if BaseModelRecord.read(model_dir).name == name else ModelLimits()
    except (OSError, ValueError, KeyError, TypeError):  # not prepared yet, or a partial folder
        return ModelLimits()
