"""What the validate stage can know before anything is downloaded, prepared or built, and the
one-line refusals it gives: the model's layers and heads, the folders a task reads, and how many
training examples each task has, checked against every size params.yaml asks for.

No torch, transformers or pandas here (src/tasks/glue.py and squad.py, which import pandas, are
imported only to read a folder that exists): `python -m stages.validate` refuses in a fresh clone
within seconds. The data stage and the finetune stages check the same things again on what they
build; the counts here are the ones they find (src/tasks/registry.py pins the hub's published
split sizes and the embedded tasks' labelled examples).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from src.config.schema import Config, DataConfig
from src.core.checks import refuse, require
from src.model.embedded import EMBEDDED_MODELS
from src.params.load import ModelLimits, prepared_model_limits
from src.tasks.registry import TASKS

# config.json keys of a model's depth and heads, by family (DistilBERT writes n_layers / n_heads)
LAYER_KEYS = ("num_hidden_layers", "n_layers", "num_layers")
HEAD_KEYS = ("num_attention_heads", "n_heads", "num_heads")
HIDDEN_KEYS = ("hidden_size", "dim", "d_model")
CARVED_TRAIN_SHARE = 0.5  # src/tasks/glue.py load_glue: a carved task trains on half of dev (eval_fraction 0.5)


@dataclass(frozen=True)
class ModelShape:
    """What validate knows of model.name: its limits (empty: not known offline), its width, and a
    note to print when its depth is not known."""

    limits: ModelLimits
    hidden_size: int | None = None
    note: str | None = None


def _first_int(config: dict, keys: tuple[str, ...]) -> int | None:
    found = [config[k] for k in keys if isinstance(config.get(k), int)]
    return found[0] if found else None


def named_model_shape(name: str) -> ModelShape:
    """model.name's shape before prepare_model has run: an embedded model's pinned shape
    (src/model/embedded.py), a local folder's config.json; a hub id cannot be read offline."""
    if name in EMBEDDED_MODELS:
        model = EMBEDDED_MODELS[name]
        return ModelShape(ModelLimits(model.num_layers, model.num_heads), model.hidden_size)
    later = "k, layers and heads are checked when prepare_model has read it"
    if not Path(name).is_dir():
        return ModelShape(ModelLimits(), note=f"note: model.name = {name!r} is a hub id, unchecked here: {later}")
    config_path = Path(name) / "config.json"
    try:
        config = json.loads(config_path.read_text())
    except (OSError, ValueError):  # prepare_model names what is missing or malformed
        return ModelShape(ModelLimits(), note=f"note: {config_path} is not readable JSON: {later}")
    layers, heads = _first_int(config, LAYER_KEYS), _first_int(config, HEAD_KEYS)
    if layers is None or heads is None:
        return ModelShape(ModelLimits(), note=f"note: {config_path} names no layer or head count: {later}")
    return ModelShape(ModelLimits(layers, heads), _first_int(config, HIDDEN_KEYS))


def model_shape(model_dir: Path, name: str) -> ModelShape:
    """The prepared model's shape (base.json) if `model_dir` holds the model named, else named_model_shape."""
    from src.artefacts.base_model import BaseModelRecord

    limits = prepared_model_limits(model_dir, name)
    if limits.num_layers is None:
        return named_model_shape(name)
    return ModelShape(limits, BaseModelRecord.read(model_dir).hidden_size)


@dataclass(frozen=True)
class Pool:
    """A task's training examples as the data stage will build them (`exact` False: at most)."""

    task: str
    examples: int
    exact: bool
    source: str  # how the count is known, for a refusal

    def limit(self, final: bool) -> int:
        """The largest training size a run may ask for: span QA as the final task keeps one question
        out to fit its no-answer threshold on (src/train/schedule.py check_sizes)."""
        return self.examples - 1 if final and TASKS[self.task].kind.fits_null_threshold else self.examples

    def allowed(self, final: bool) -> str:
        bound = "" if self.exact else "at most "
        qa = (
            ", less one: span QA fits its no-answer threshold on a question it does not train on"
            if self.limit(final) < self.examples
            else ""
        )
        return f"an integer from 1 to {self.limit(final)}: {self.task} has {bound}{self.examples} ({self.source}){qa}"


def is_placeholder(value: str | None) -> bool:
    """A value of the form <...>: what a printed command or a doc writes for the user to fill in."""
    return isinstance(value, str) and value.strip().startswith("<") and value.strip().endswith(">")


def training_pools(data: DataConfig) -> dict[str, Pool]:
    """Every task of data.tasks and its training examples; a folder a listed task reads that does not
    exist or lacks its files is refused here, naming the file."""
    for key, value in (("data.glue_dir", data.glue_dir), ("data.squad_dir", data.squad_dir)):
        require(
            not is_placeholder(value),
            key,
            value,
            "null (from the hub), or the path of your folder: this value is a placeholder to replace",
        )
    pools = {}
    for task in data.tasks:
        source = TASKS[task].source
        pool = (
            _embedded(task, data) if source == "embedded" else _glue(task, data) if source == "glue" else _squad(data)
        )
        if pool is not None:
            pools[task] = pool
    return pools


def _embedded(task: str, data: DataConfig) -> Pool:
    """labelled examples at data.neutral_band (src/tasks/registry.py), less data.eval_size."""
    entries = TASKS[task].labelled
    band, labelled = [(b, n) for b, n in entries if b <= data.neutral_band][-1]
    exact = len(entries) == 1 or band == data.neutral_band
    at_band = "" if len(entries) == 1 else f" at data.neutral_band {data.neutral_band}"
    require(
        data.eval_size < labelled,
        "data.eval_size",
        data.eval_size,
        f"fewer than the {'' if exact else 'at most '}{labelled} examples of task {task!r}{at_band} (it would leave "
        "no training data)",
    )
    bound = "" if exact else "at most "
    source = f"{bound}{labelled} labelled{at_band}, less data.eval_size {data.eval_size}"
    return Pool(task, labelled - data.eval_size, exact, source)


def _lines(path: Path, header: bool) -> int:
    """Data rows of a GLUE TSV as src/tasks/glue.py reads them: lines after any final newlines, less the header."""
    body = path.read_bytes().replace(b"\r\n", b"\n").replace(b"\r", b"\n").rstrip(b"\n")
    return (body.count(b"\n") + 1 if body else 0) - int(header)


def _glue(task: str, data: DataConfig) -> Pool:
    carved = task in data.glue_carve_train_from_dev
    if data.glue_dir is None:
        train, dev = TASKS[task].published or (0, 0)
        if carved:
            return Pool(task, round(dev * CARVED_TRAIN_SHARE), True, f"half of the hub's {dev} validation rows")
        return Pool(task, train, True, "the hub's published train split")
    folder = Path(data.glue_dir)
    require(
        folder.is_dir(), "data.glue_dir", data.glue_dir, f"null (GLUE from the hub) or a folder that exists ({folder})"
    )
    from src.tasks.glue import GLUE_TASKS  # imports pandas: only for a folder that is there to read

    fmt = GLUE_TASKS[task]
    needed = ["dev.tsv"] if carved else ["train.tsv", "dev.tsv"]
    for name in needed:
        path = folder / fmt.folder / name
        require(
            path.is_file(),
            "data.glue_dir",
            data.glue_dir,
            f"a folder in the GLUE TSV layout with {' and '.join(f'{fmt.folder}/{n}' for n in needed)} for task "
            f"{task!r} ({path} is missing"
            + ("" if carved else f"; or add {task} to data.glue_carve_train_from_dev to train on half of dev")
            + ")",
        )
    header = fmt.header is not None
    if carved:
        dev_path = folder / fmt.folder / "dev.tsv"
        dev = _lines(dev_path, header)
        return Pool(task, round(dev * CARVED_TRAIN_SHARE), True, f"half of the {dev} rows of {dev_path}")
    train_path = folder / fmt.folder / "train.tsv"
    return Pool(task, _lines(train_path, header), True, f"the rows of {train_path}")


def _squad(data: DataConfig) -> Pool | None:
    task = "squad_v2"
    if data.squad_dir is None:
        return Pool(task, (TASKS[task].published or (0, 0))[0], True, "the hub's published train split")
    folder = Path(data.squad_dir)
    require(
        folder.is_dir(),
        "data.squad_dir",
        data.squad_dir,
        f"null (SQuAD 2.0 from the hub) or a folder that exists ({folder})",
    )
    from src.tasks.squad import FILES  # imports pandas: only for a folder that is there to read

    for name in FILES.values():
        require(
            (folder / name).is_file(),
            "data.squad_dir",
            data.squad_dir,
            f"a folder with {' and '.join(FILES.values())} ({folder / name} is missing)",
        )
    path = folder / FILES["train"]
    try:
        questions = sum(len(p["qas"]) for a in json.loads(path.read_bytes())["data"] for p in a["paragraphs"])
    except (ValueError, KeyError, TypeError):  # not the layout: the data stage names the file and the place
        return None
    return Pool(task, questions, True, f"the questions of {path}")


def asked_sizes(config: Config) -> Iterator[tuple[str, object, str, int, bool]]:
    """(key, its value as written, task, training size, whether the task is the run's final one) of
    every size params.yaml asks for: the focus condition's, each study's, and the intermediate
    tasks' of a sequential study."""
    yield "size", config.size, config.task, config.size, True
    for name, study in config.studies.items():
        for task in study.tasks:
            key = f"studies.{name}.sizes" + (f".{task}" if isinstance(study.sizes, dict) else "")
            for i, size in enumerate(study.sizes_of(task)):
                yield f"{key}[{i}]", size, task, size, True
                # StudyConfig's fields are made from the scheme registry (make_dataclass): mypy cannot see them
                step = study.intermediate_size  # type: ignore[attr-defined]
                for chain in study.chains_before(task):
                    for step_task in chain:
                        if step is None:  # each step trains the final task's size
                            yield f"{key}[{i}]", size, step_task, size, False
                        elif isinstance(step, int):  # `full`: the whole set, which always fits
                            yield f"studies.{name}.intermediate_size", step, step_task, step, False


def check_sizes(config: Config, pools: dict[str, Pool]) -> None:
    """Every training size against its task's examples, in one line naming the key."""
    for key, value, task, size, final in asked_sizes(config):
        pool = pools.get(task)
        if pool is not None and size > pool.limit(final):
            refuse(key, value, pool.allowed(final))


def focus_trials_warning(config: Config) -> list[str]:
    """metrics/focus.json's interval needs two finished trials (src/artefacts/focus.py)."""
    if config.trials >= 2:
        return []
    return [
        f"trials = {config.trials} leaves metrics/focus.json without a confidence interval (one needs 2 trials or more)"
    ]
