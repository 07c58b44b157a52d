"""`dvc metrics diff <older commit>` compares the metrics files key by key: a key renamed or dropped reads as
one metric gone and another new, and the comparison across commits is lost. So the keys of
metrics/headline.json, verdicts.json and focus.json are pinned here, checked against their writers (README's
"One place per concept": `headline_metrics`, the report stage's `verdict_tally`, `FocusSummary.write`) and the
committed files. Changing one is a decision, taken here."""

import json

import pandas as pd
import pytest

from src.artefacts.focus import FocusSummary
from src.results.aggregate import headline_metrics
from stages.report import verdict_tally
from tests.support import REPO

HEADLINE = ["full", "scratch", "full_minus_scratch"]
VERDICTS = ["supported", "contradicted", "inconclusive", "no_verdict", "not_run"]
FOCUS = ["task", "size", "k", "metric", "mean", "ci95", "n", "diverged"]
FOCUS_WITHOUT_CI = [*FOCUS, "ci95_note"]  # fewer than 2 finished trials: ci95 is null, and the note says why


@pytest.mark.parametrize("roles", [("full", "scratch"), ()], ids=["both-references", "none"])
def test_headline_keys(roles):
    references = pd.DataFrame(
        [{"task": "sst2", "size": 128, "reference": role, "mean": 0.8, "n": 3} for role in roles],
        columns=["task", "size", "reference", "mean", "n"],
    )
    assert list(headline_metrics(references, "sst2", 128)) == HEADLINE


def test_verdicts_keys():
    assert list(verdict_tally([])) == VERDICTS  # every verdict is named, with 0 where no claim got it


@pytest.mark.parametrize("n, keys", [(3, FOCUS), (1, FOCUS_WITHOUT_CI)])
def test_focus_keys(tmp_path, n, keys):
    note = None if n >= 2 else "a confidence interval needs at least 2 finished runs; this condition has 1"
    FocusSummary("sst2", 128, 6, "accuracy", 0.8, 0.01 if n >= 2 else None, n, 0, note).write(tmp_path / "focus.json")
    assert list(json.loads((tmp_path / "focus.json").read_text())) == keys


@pytest.mark.parametrize(
    "name, keys", [("headline", [HEADLINE]), ("verdicts", [VERDICTS]), ("focus", [FOCUS, FOCUS_WITHOUT_CI])]
)
def test_the_committed_metrics_files_have_the_pinned_keys(name, keys):
    path = REPO / "metrics" / f"{name}.json"
    if not path.exists():
        pytest.skip(f"{path} not written yet")
    assert list(json.loads(path.read_text())) in keys
