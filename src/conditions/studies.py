"""Studies: named sets of conditions, one per section of `studies:` in params.yaml.

Every experiment family of the seed studies is a study: a scheme with its arguments,
the tasks, sizes and trials to run it on, and optional modifiers (the registry in
src/schemes/registry.py). Each study is one DVC stage (`finetune@<study>`) that runs
the conditions listed here, so adding a section to params.yaml adds a stage, and this
file is the only place that turns params into conditions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from src.conditions.condition import CHAIN, Condition, crossed_streams
from src.config.schema import Config, StudyConfig, TrainConfig
from src.schemes.registry import SCHEMES, scheme_of


def study_conditions(
    study: StudyConfig,
    train: TrainConfig,
    recipe: str,
    pooling: str,
    num_layers: int,
    progressive: StudyConfig | None = None,
) -> list[Condition]:
    """Every condition `study` reports, references included unless `progressive` (the
    progressive study, when this is another study) already reports them."""
    conditions = []
    for task in study.tasks:
        for size in study.sizes_of(task):
            epochs = study.epochs or train.epochs_for(size)
            for trial in range(study.trials_at(size)):
                base: dict[str, Any] = {
                    "task": task,
                    "size": size,
                    "trial": trial,
                    "epochs": epochs,
                    "recipe": recipe,
                    "pooling": pooling,
                    "streams": crossed_streams(trial, study.seed_design),
                }
                for fields in SCHEMES[study.scheme].expand(study, num_layers):
                    modified = Condition(
                        **base,
                        **fields,
                        lr_multiplier=float(study.reinit_lr_multiplier or 1.0),
                        keep_layernorm=bool(study.keep_layernorm),
                    )
                    variants = [
                        replace(modified, **intermediate(chain, study.intermediate_size, size, epochs, train))
                        for chain in study.chains_before(task)
                    ] or [modified]
                    for variant in variants:
                        conditions += [variant, *variant.reported_references(num_layers)]
    reported = set() if progressive is None else set(study_conditions(progressive, train, recipe, pooling, num_layers))
    return [c for c in dict.fromkeys(conditions) if c not in reported]


def intermediate(chain: tuple[str, ...], size: int | str | None, final_size: int, epochs: int, train: TrainConfig):
    """The sequential fields of a condition: the chain, and each step's size and epochs when
    they differ from the final task's (none: today's conditions, their slugs and runs). A
    step's epochs follow its size as the final task's do (`full` counts as large)."""
    fields: dict[str, int | str] = {"intermediate_task": CHAIN.join(chain)}
    # the one size in words is "full" (core.checks.FULL): the whole training set, which counts as large
    step_epochs = train.epochs if isinstance(size, str) else train.epochs_for(size or final_size)
    if size is not None and (size, step_epochs) != (final_size, epochs):
        fields |= {"intermediate_size": size, "intermediate_epochs": step_epochs}
    return fields


def reported_conditions(
    studies: Mapping[str, StudyConfig], train: TrainConfig, recipe: str, pooling: str, num_layers: int
) -> dict[str, list[Condition]]:
    """study name -> the conditions it reports (params.yaml order)."""
    progressive = studies["progressive"]
    return {
        name: study_conditions(
            study, train, recipe, pooling, num_layers, None if name == "progressive" else progressive
        )
        for name, study in studies.items()
    }


def all_study_conditions(config: Config, num_layers: int) -> dict[str, list[Condition]]:
    return reported_conditions(config.studies, config.train, config.recipe, config.pooling, num_layers)


def head_references(config: Config, num_layers: int) -> set[Condition]:
    """The full-model conditions that studies of a per-head scheme compare their runs with
    (`full` of Condition.references, paired by trial): where `train.head_importance:
    head_studies` measures head importance, so that each head's importance meets the
    effect of reinitialising that head on the same task, size and trials."""
    return {
        condition.references(num_layers)["full"]
        for conditions in all_study_conditions(config, num_layers).values()
        for condition in conditions
        if scheme_of(condition.scheme).per_head
    }


def trained_conditions(reported: Mapping[str, list[Condition]], name: str, num_layers: int) -> list[Condition]:
    """The conditions study `name` trains: those whose training run (Condition.training_run)
    no earlier study in params.yaml, and no earlier condition of this study, trains. The
    same run is never trained twice in one repro; aggregate gives its result to every
    condition that shares it."""
    seen = set()
    for study, conditions in reported.items():
        trained = []
        for condition in conditions:
            run = condition.training_run(num_layers)
            if run not in seen:
                seen.add(run)
                trained.append(condition)
        if study == name:
            return trained
    raise KeyError(name)


def focus_conditions(config: Config) -> list[Condition]:
    """The focus condition's trials (`dvc exp run -S k=3`): progressive k on `task` at `size`."""
    epochs = config.train.epochs_for(config.size)
    return [
        Condition(config.task, config.size, trial, epochs, k=config.k, recipe=config.recipe, pooling=config.pooling)
        for trial in range(config.trials)
    ]
