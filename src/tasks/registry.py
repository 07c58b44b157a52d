"""The task registry: every task the pipeline can train on, by name.

A task is what the rest of the pipeline needs to know to train and score on it: its
text fields, its kind (src/tasks/kinds.py: classification, regression or span QA), its
metrics (the first one is the task's headline number, the y axis of the figures) and where
its data come from (embedded: built offline from pinned PyPI artifacts; glue; squad).
"""

from __future__ import annotations

from dataclasses import dataclass

from src.tasks.kinds import KINDS, TaskKind


@dataclass(frozen=True)
class TaskSpec:
    name: str
    text_fields: tuple[str, ...]
    kind: TaskKind
    num_labels: int  # classes (1 for regression)
    metrics: tuple[str, ...]  # the first is the headline metric
    source: str  # "embedded" (built from PyPI artifacts), "glue" or "squad"

    @property
    def headline(self) -> str:
        return self.metrics[0]


_CLASSIFICATION = KINDS["classification"]
EMBEDDED = {
    name: TaskSpec(name, ("sentence",), _CLASSIFICATION, 2, ("accuracy",), "embedded")
    for name in ("rt_sentiment", "bigram_shift", "subjectivity", "tweet_sentiment")
}
_REGRESSION = KINDS["regression"]
_PAIR = ("sentence1", "sentence2")
# GLUE (text fields in the HF dataset's order; src/tasks/glue.py reads their files) with its
# official metrics: MCC for CoLA, F1 (and accuracy) for MRPC, correlations for STS-B.
GLUE = {
    "sst2": TaskSpec("sst2", ("sentence",), _CLASSIFICATION, 2, ("accuracy",), "glue"),
    "cola": TaskSpec("cola", ("sentence",), _CLASSIFICATION, 2, ("mcc", "accuracy"), "glue"),
    "mrpc": TaskSpec("mrpc", _PAIR, _CLASSIFICATION, 2, ("f1", "accuracy"), "glue"),
    "qnli": TaskSpec("qnli", ("question", "sentence"), _CLASSIFICATION, 2, ("accuracy",), "glue"),
    "rte": TaskSpec("rte", _PAIR, _CLASSIFICATION, 2, ("accuracy",), "glue"),
    "wnli": TaskSpec("wnli", _PAIR, _CLASSIFICATION, 2, ("accuracy",), "glue"),
    "stsb": TaskSpec("stsb", _PAIR, _REGRESSION, 1, ("pearson", "spearman"), "glue"),
}
# SQuAD 2.0's official F1 (the headline) and exact match, overall and HasAns / NoAns
# (src/tasks/metrics.py squad_scores computes them).
SQUAD_METRICS = ("squad_f1", "squad_exact", "HasAns_f1", "HasAns_exact", "NoAns_f1", "NoAns_exact")
TASKS: dict[str, TaskSpec] = {
    **EMBEDDED,
    **GLUE,
    "squad_v2": TaskSpec("squad_v2", ("question", "context"), KINDS["span_qa"], 2, SQUAD_METRICS, "squad"),
}
GLUE_TASK_NAMES = tuple(GLUE)


def get_task(name: str) -> TaskSpec:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}")
    return TASKS[name]
