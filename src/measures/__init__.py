"""What a finetuning run measures on its finished weights (docs/measures.md), one entry each:
the RunSettings flag that turns it on, the further settings its numbers depend on, the
RunResult field that holds it, and how it is made: what it takes from the weights the final
finetuning starts from (`at_start`), and its value from the finetuned model (`at_end`).
The engine (src/train/run.py) makes every measurement by iterating MEASUREMENTS.

Measuring never changes how a run trains, so this code is not in the training fingerprint
(src/train/run.py RECIPE), and a finished result that measured more than the settings ask for
now is still the run they describe: src/train/reuse.py keeps it and drops the measurements no
longer asked for, instead of training it again; one that measured less is measured on its kept
weights where it kept them (train.keep_weights), else trained again. Each measurement's code
has a digest of its own (reuse.measurement_code: this file and the module it runs), recorded
beside its numbers: one made by other code is measured again on kept weights, else kept and
called stale, never trained again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from src.measures.cka import layer_cka
from src.measures.criticality import layer_states, rewind_drops
from src.measures.heads import head_importance


@dataclass
class Measured:
    """What a measurement may read of one run (the engine fills it in)."""

    model: Any  # the Finetuner, at the start (at_start) or finetuned (at_end)
    task: Any  # TaskSpec
    train_split: Any  # the run's training subset
    eval_split: Any
    settings: Any  # RunSettings
    evaluation: dict  # the finetuned model's evaluation (at_end): scores, predictions, layer features
    pretrained_encoder: Callable[[], Any]  # the base encoder, loaded once per worker
    pretrained_features: Callable[[], np.ndarray]  # its per-layer eval features, pooled as the eval pass pools
    score: Callable[[Any], float]  # the headline score of the model as it is now on a split, as the run reports it
    # the base model's (0-based) layer each encoder position holds: fewer than the base's after
    # a `remove`, so position i is compared with the pretrained layer it kept, not with layer i
    source_layers: list[int]
    null_threshold: float | None = None  # span QA's fitted threshold, once fitted: score() uses it


def _cka(run: Measured, start) -> list[float]:
    # feature 0 is the embeddings, feature i the output of the layer at position i
    pretrained = run.pretrained_features()[:, [0, *(layer + 1 for layer in run.source_layers)]]
    return layer_cka(run.evaluation["layer_features"], pretrained.astype(np.float32))


def _criticality(run: Measured, initial) -> list[dict]:
    # Scored on the first N eval examples (criticality_examples; 0 = all; span QA: questions,
    # each with all its windows), the finetuned model on the same ones, so every drop is paired
    # example by example.
    scored = run.eval_split
    if 0 < run.settings.criticality_examples < run.eval_split.examples:
        scored = run.eval_split.of_examples(np.arange(run.settings.criticality_examples))
    finetuned = run.evaluation["scores"][run.task.headline] if scored is run.eval_split else run.score(scored)
    pretrained = layer_states(run.pretrained_encoder())
    return rewind_drops(
        run.model.encoder,
        [pretrained[layer] for layer in run.source_layers],
        initial,
        lambda: run.score(scored),
        finetuned,
    )


def _importance(run: Measured) -> list:
    return head_importance(run.model, run.task, run.train_split, run.settings.batch_size)


@dataclass(frozen=True)
class Measurement:
    setting: str  # the RunSettings flag that turns it on
    field: str  # the RunResult field that holds it (empty where the run did not measure it)
    at_end: Callable[[Measured, Any], Any]  # (the finetuned run, what at_start took) -> the field's value
    parameters: tuple[str, ...] = ()  # the other RunSettings fields its numbers depend on
    # what it reads of the weights the final finetuning starts from (which train.keep_weights
    # does not keep; the start is rebuilt from the condition unless a task came first)
    at_start: Callable[[Measured], Any] | None = None

    @property
    def reads_start(self) -> bool:
        return self.at_start is not None


MEASUREMENTS = (
    Measurement("cka", "layer_cka", _cka),  # layer 0 (embeddings)..L: finetuned vs pretrained
    # each layer rewound to its pretrained value and to its value at the start
    Measurement(
        "criticality",
        "criticality",
        _criticality,
        ("criticality_examples",),
        at_start=lambda run: layer_states(run.model.encoder),
    ),
    # before and after finetuning
    Measurement(
        "head_importance",
        "head_importance",
        lambda run, before: {"after": _importance(run), "before": before},
        (),
        at_start=_importance,
    ),
)
