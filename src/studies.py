"""Studies: named sets of conditions, one per section of `studies:` in params.yaml.

Every experiment family of the seed studies is a study: a scheme with its arguments,
the tasks, sizes and trials to run it on, and optional modifiers. Each study is one
DVC stage (`finetune@<study>`) that runs the conditions listed here, so adding a
section to params.yaml adds a stage, and this file is the only place that turns
params into conditions.

Section keys:
  scheme: progressive (ks) | block (window) | single_layer (layers) | permutation | head (layers, heads)
  tasks, sizes, trials
  reinit_lr_multiplier (App. E), keep_layernorm (App. F): modifiers of layer schemes
  epochs: train this many epochs at every size, logging eval after each (App. D)
  intermediate_tasks: finetune on each of these first (sequential finetuning)
"""

from __future__ import annotations

from src.condition import Condition
from src.params import epochs_for


def _scheme_conditions(study: dict, base: dict, num_layers: int) -> list[Condition]:
    """The conditions of one (task, size, trial) before modifiers."""
    scheme = study["scheme"]
    if scheme == "progressive":
        return [Condition(**base, k=k) for k in study["ks"]]
    if scheme == "block":
        starts = range(1, num_layers - study["window"] + 2)
        return [Condition(**base, scheme=s, layer=start, window=study["window"]) for start in starts for s in ("block_reinit", "block_preserve")]
    if scheme == "single_layer":
        return [Condition(**base, scheme="single_layer", layer=layer) for layer in study["layers"]]
    if scheme == "permutation":
        return [Condition(**base, scheme="permutation")]
    return [Condition(**base, scheme="head", layer=layer, head_index=head) for layer in study["layers"] for head in study["heads"]]


def study_conditions(params: dict, name: str, num_layers: int) -> list[Condition]:
    """Every condition study `name` reports, references included unless the progressive
    study already reports them."""
    study = params["studies"][name]
    conditions = []
    for task in study["tasks"]:
        for size in study["sizes"]:
            epochs = study.get("epochs") or epochs_for(params["train"], size)
            for trial in range(study["trials"]):
                base = {"task": task, "size": size, "trial": trial, "epochs": epochs, "recipe": params["recipe"], "pooling": params["pooling"]}
                for condition in _scheme_conditions(study, base, num_layers):
                    modified = Condition(**{
                        **condition.as_dict(),
                        "lr_multiplier": float(study.get("reinit_lr_multiplier", 1.0)),
                        "keep_layernorm": study.get("keep_layernorm", False),
                    })
                    variants = [Condition(**{**modified.as_dict(), "intermediate_task": t}) for t in study.get("intermediate_tasks", []) if t != task] or [modified]
                    for variant in variants:
                        conditions += [variant, *variant.reported_references(num_layers)]
    progressive = set() if name == "progressive" else set(study_conditions(params, "progressive", num_layers))
    return [c for c in dict.fromkeys(conditions) if c not in progressive]


def trained_conditions(params: dict, name: str, num_layers: int) -> list[Condition]:
    """The conditions study `name` trains: those whose training run (Condition.training_run)
    no earlier study in params.yaml, and no earlier condition of this study, trains. The
    same run is never trained twice in one repro; aggregate gives its result to every
    condition that shares it."""
    seen = set()
    for study in params["studies"]:
        trained = []
        for condition in study_conditions(params, study, num_layers):
            run = condition.training_run(num_layers)
            if run not in seen:
                seen.add(run)
                trained.append(condition)
        if study == name:
            return trained
    raise KeyError(name)


def focus_condition(params: dict, trial: int) -> Condition:
    """The focus condition (`dvc exp run -S k=3`): progressive k on `task` at `size`."""
    epochs = epochs_for(params["train"], params["size"])
    return Condition(params["task"], params["size"], trial, epochs, k=params["k"], recipe=params["recipe"], pooling=params["pooling"])
