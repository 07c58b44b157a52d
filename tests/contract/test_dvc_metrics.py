"""The metrics stay a handful of columns: dvc.yaml's `metrics:` are three small files (the focus
condition, the headline scores, the tally of verdicts), and the per-condition tables are outputs
(CSV, measures.json), never metrics. Before this, the metrics held every condition's mean: 134
columns in `dvc metrics show`, 295 in `dvc exp show`. The params (about 190) are columns too: README's
compare commands, run in tests/e2e/test_compare_experiments.py, print whole at 80 columns."""

import dataclasses

import pandas as pd
import yaml

from src.artefacts.focus import FocusSummary
from src.claims.summary import VERDICTS
from src.results.aggregate import headline_metrics
from stages.report import verdict_tally
from tests.support import REPO

MAX_KEYS = 9  # per metrics file (focus.json has 8, 9 with its note): each key is a column of `dvc exp show`


def leaves(value) -> int:
    return sum(map(leaves, value.values())) if isinstance(value, dict) else 1


def declared_metrics() -> list[str]:
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    return [
        next(iter(entry)) if isinstance(entry, dict) else entry
        for stage in stages.values()
        for entry in stage.get("do", stage).get("metrics", [])
    ]


def test_the_metrics_are_the_three_small_files():
    assert sorted(declared_metrics()) == ["metrics/focus.json", "metrics/headline.json", "metrics/verdicts.json"]


def test_each_metrics_file_has_at_most_a_handful_of_keys_however_large_the_run():
    references = pd.DataFrame(
        [
            {"task": task, "size": size, "reference": role, "mean": 0.8, "n": 3}
            for task in ("rt_sentiment", "mrpc", "sst2", "cola")
            for size in (128, 256, 1000, 10000)
            for role in ("full", "scratch")
        ]
    )
    headline = headline_metrics(references, "mrpc", 1000)
    assert leaves(headline) <= MAX_KEYS and headline["full_minus_scratch"] == 0.0
    tally = verdict_tally([VERDICTS[i % len(VERDICTS)] for i in range(36)])
    assert leaves(tally) == len(VERDICTS) <= MAX_KEYS and sum(tally.values()) == 36
    assert len(dataclasses.fields(FocusSummary)) <= MAX_KEYS
    for path in declared_metrics():  # the committed outputs, where a run has written them
        if (REPO / path).exists():
            assert leaves(yaml.safe_load((REPO / path).read_text())) <= MAX_KEYS, path


def test_headline_is_null_where_no_study_ran_the_focus_task_and_size():
    references = pd.DataFrame([{"task": "mrpc", "size": 128, "reference": "full", "mean": 0.8, "n": 3}])
    assert headline_metrics(references, "mrpc", 128) == {"full": 0.8, "scratch": None, "full_minus_scratch": None}


def test_a_verdict_outside_the_known_ones_is_counted_not_dropped():
    tally = verdict_tally(["supported", "something new"])
    assert tally["supported"] == 1 and tally["something_new"] == 1 and tally["not_run"] == 0
