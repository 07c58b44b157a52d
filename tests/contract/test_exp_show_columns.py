"""tools/exp_show's view keeps five metrics and hides the others by name (a new metric key would
otherwise widen `python -m tools.exp_show` past 120 columns whenever it changes): every key the metrics
files' writers write is kept, hidden, or a copy of a params key (focus.json's task, size and k, which
DVC names by path, so the view drops them with every other path column). Its width on experiments is
measured in tests/e2e/test_exp_show.py."""

import dataclasses

import pandas as pd

from src.artefacts.focus import FocusSummary
from src.results.aggregate import headline_metrics
from stages.report import verdict_tally
from tests.support import grid_params
from tools.exp_show import HIDDEN_METRICS, KEPT_METRICS


def written_metric_keys() -> set[str]:
    references = pd.DataFrame([{"task": "sst2", "size": 8, "reference": "full", "mean": 0.8, "n": 3}])
    return (
        {field.name for field in dataclasses.fields(FocusSummary)}
        | set(headline_metrics(references, "sst2", 8))
        | set(verdict_tally([]))
    )


def test_every_metric_key_is_kept_hidden_or_a_copy_of_a_params_key():
    assert not set(KEPT_METRICS) & set(HIDDEN_METRICS)
    unclassified = written_metric_keys() - set(KEPT_METRICS) - set(HIDDEN_METRICS)
    assert unclassified == {"task", "size", "k"} and unclassified <= set(grid_params())
