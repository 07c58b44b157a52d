"""Every preset reports: its studies' runs, faked as finished results of a
bert-base-shaped model (a score per run that rises with the pretrained layers kept, per-example
predictions against the eval labels), go through the aggregate and report stages as
`dvc repro` runs them (python -m stages.<name>, the preset as params.yaml), and the report is
written with a verdict row for every claim. So no preset can train for days and then fail to
report, as the per-task sizes form did (`sizes: {rte: [2490]}` crashed the report's not-run
commands). Trials are capped at 3 per size and the report's bootstrap at 100 resamples to keep it
small; every other key is the preset's. With the bug back (verdicts.added_sizes slicing a mapping),
tamkin2020 and singh_giovanardi fail with its TypeError; huang2021 first found the heads'
percentile unit reading a field Unit no longer has, and tamkin2020 the epochs figure reading CoLA's
metric from SST-2's scores, both after every run had trained.
"""

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from src.claims.registry import CLAIMS
from tests.support import REPO, aggregate_and_report, printed_verdicts, write_finished_design

PRESETS = sorted((REPO / "presets").glob("*.yaml"))
MAX_TRIALS = 3


def tiny(preset: Path, studies: tuple[str, ...] | None = None) -> dict:
    """The preset with at most MAX_TRIALS trials at each size (the form, one count or one per size, kept),
    and only `studies` of its studies where given."""
    params = yaml.safe_load(preset.read_text())
    if studies is not None:
        params["studies"] = {name: params["studies"][name] for name in studies}
    params["trials"] = min(params["trials"], MAX_TRIALS)
    params["report"]["bootstrap_resamples"] = 100  # the least the schema takes: a smoke test of the report
    for study in params["studies"].values():
        trials = study.get("trials", 1)
        study["trials"] = (
            {size: min(n, MAX_TRIALS) for size, n in trials.items()}
            if isinstance(trials, dict)
            else min(trials, MAX_TRIALS)
        )
    return params


# These three write every run of their whole designs and judge 447, ~300 and the many units of tamkin2020's seven
# studies: they run with `-m slow`. The default suite has
# huang2021_squad (span QA) and the forms that set tamkin2020 apart, its progressive study's per-task sizes and
# its epochs study on three tasks, with the rest of its studies not run (so the report writes their commands
# from the per-task sizes).
SLOW = ("huang2021", "huang2021_decisive", "singh_giovanardi", "tamkin2020")
TAMKIN_FORMS = ("progressive", "epochs")


@pytest.mark.parametrize(
    "preset, studies",
    [
        pytest.param(p, None, marks=pytest.mark.slow, id=p.stem) if p.stem in SLOW else pytest.param(p, None, id=p.stem)
        for p in PRESETS
    ]
    + [pytest.param(REPO / "presets/tamkin2020.yaml", TAMKIN_FORMS, id="tamkin2020_progressive_and_epochs")],
)
def test_every_preset_aggregates_and_reports_with_a_verdict_for_every_claim(preset, studies, tmp_path, tiny_task_dir):
    write_finished_design(tmp_path, tiny(preset, studies), tiny_task_dir)
    report = aggregate_and_report(tmp_path)
    tally = json.loads((tmp_path / "metrics/verdicts.json").read_text())
    assert sum(tally.values()) == len(CLAIMS), tally
    # one printed line per claim: "<verdict>  <claim id>[  (<the planner's plan>)]"
    printed = printed_verdicts(report.stdout)
    assert sorted(printed) == sorted(claim.id for claim in CLAIMS), report.stdout[-3000:]
    counted = Counter(verdict.split(",")[0].replace(" ", "_") for verdict in printed.values())  # as verdicts.json
    assert counted == {name: n for name, n in tally.items() if n}, report.stdout[-3000:]
    markdown = (tmp_path / "metrics/report.md").read_text()
    assert [claim.id for claim in CLAIMS if claim.id not in markdown] == []
